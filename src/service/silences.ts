/**
 * Silences (docs/silences.md): create, read, list by state, update (the operator) and expire. The
 * matcher is checked like a router filter (same CEL dialect and limits, INVALID_FILTER_EXPRESSION with its
 * line and column); nothing is written when any check fails.
 */
import { FILTER_LIMITS, FilterCompileError } from '../cel/index.js';
import type { EventTypeId } from '../events/families.js';
import { compileMatcher, SILENCE_LIMITS, type SilenceState } from '../silences/decide.js';
import type { SilencePatch, SilenceRecord } from '../store/types.js';
import { textIssue, timestampProblem } from '../validation/formats.js';
import type { ServiceContext } from './context.js';
import { ServiceError, badInput } from '../model/errors.js';
import { quotaLimit, requireQuota } from './quotas.js';
import { positionOf, requireEventTypeId } from './routers.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { isUuid, requireName, requirePageSize } from './validate.js';

export interface SilenceInput {
  matcher?: unknown;
  startsAt?: unknown;
  endsAt?: unknown;
  comment?: unknown;
  createdBy?: unknown;
  eventTypeId?: unknown;
  managedBy?: unknown;
}

/** Throws INVALID_FILTER_EXPRESSION with the compile error and its position; an empty matcher is refused. */
function requireMatcher(field: string, v: unknown, eventTypeId: EventTypeId | null): { matcher: string; eventTypeIds: EventTypeId[] } {
  if (typeof v !== 'string') throw badInput(field, `${field} must be a string (a CEL expression over type and data)`);
  if (v.trim() === '')
    throw new ServiceError('INVALID_FILTER_EXPRESSION', `${field} must not be empty: a silence of everything is written \`true\``, field, {
      line: 1,
      column: 1,
    });
  if (v.length > FILTER_LIMITS.maxLength)
    throw new ServiceError('INVALID_FILTER_EXPRESSION', `${field} is longer than ${FILTER_LIMITS.maxLength} characters`, field, {
      line: 1,
      column: FILTER_LIMITS.maxLength + 1,
    });
  const bad = textIssue(v, 'text');
  if (bad) throw new ServiceError('INVALID_FILTER_EXPRESSION', `${field} ${bad.message}`, field, positionOf(v, bad.index ?? 0));
  try {
    return { matcher: v.trim(), eventTypeIds: [...compileMatcher(v, eventTypeId).keys()] };
  } catch (e) {
    if (!(e instanceof FilterCompileError)) throw e;
    const where = eventTypeId === null ? ' (for every event family: give eventTypeId to check against one)' : '';
    throw new ServiceError('INVALID_FILTER_EXPRESSION', `${field}: ${e.message}${where}`, field, { line: e.line, column: e.column });
  }
}

function requireTime(field: string, v: unknown): number {
  if (typeof v !== 'string') throw badInput(field, `${field} must be an RFC 3339 timestamp string`);
  const p = timestampProblem(v, 'offset');
  if (p) throw badInput(field, `${field} ${p}`);
  const t = Date.parse(v);
  if (!Number.isFinite(t)) throw badInput(field, `${field} is not a time this service can represent`);
  return t;
}

function requireComment(field: string, v: unknown): string {
  if (typeof v !== 'string' || v.trim() === '') throw badInput(field, `${field} must be a non-empty string: say why`);
  return requireName(field, v, SILENCE_LIMITS.maxCommentLength);
}

/** The window's bounds: endsAt after startsAt, at most SILENCE_LIMITS.maxDurationMs long, not ended, not too far ahead. */
function checkWindow(prefix: string, startsAt: number, endsAt: number, now: number): void {
  if (endsAt <= startsAt) throw badInput(`${prefix}endsAt`, `${prefix}endsAt must be after ${prefix}startsAt`);
  if (endsAt - startsAt > SILENCE_LIMITS.maxDurationMs)
    throw badInput(`${prefix}endsAt`, `${prefix}endsAt: a silence lasts at most ${SILENCE_LIMITS.maxDurationMs / 86_400_000} days`);
  if (endsAt <= now) throw badInput(`${prefix}endsAt`, `${prefix}endsAt is in the past: the silence would never apply`);
  if (startsAt - now > SILENCE_LIMITS.maxStartAheadMs)
    throw badInput(`${prefix}startsAt`, `${prefix}startsAt is more than ${SILENCE_LIMITS.maxStartAheadMs / 86_400_000} days ahead`);
}

function optionalEventTypeId(field: string, v: unknown): EventTypeId | null {
  return v === undefined || v === null || v === '' ? null : requireEventTypeId(field, v);
}

/**
 * Creates a silence. `prefix` names the fields in errors ('input.' for GraphQL). startsAt defaults to now;
 * createdBy to the caller (the API key's id). When the company holds its quota, its ended silences are deleted,
 * those that ended first, to make room; only active and pending ones are refused past the quota.
 */
export async function createSilence(ctx: ServiceContext, input: SilenceInput, prefix = 'input.'): Promise<SilenceRecord> {
  const now = ctx.now();
  const eventTypeId = optionalEventTypeId(`${prefix}eventTypeId`, input.eventTypeId);
  const { matcher, eventTypeIds } = requireMatcher(`${prefix}matcher`, input.matcher, eventTypeId);
  const startsAt = input.startsAt == null ? now : requireTime(`${prefix}startsAt`, input.startsAt);
  if (input.endsAt == null) throw badInput(`${prefix}endsAt`, `${prefix}endsAt is required`);
  const endsAt = requireTime(`${prefix}endsAt`, input.endsAt);
  checkWindow(prefix, startsAt, endsAt, now);
  const comment = requireComment(`${prefix}comment`, input.comment);
  const createdBy =
    input.createdBy == null || input.createdBy === ''
      ? (ctx.caller ?? 'unknown')
      : requireName(`${prefix}createdBy`, input.createdBy, SILENCE_LIMITS.maxCreatedByLength);
  const managedBy = input.managedBy == null || input.managedBy === '' ? null : requireName(`${prefix}managedBy`, input.managedBy, 512);
  const rec = await ctx.store.transaction(async (tx) => {
    const count = await tx.countForQuota('silences', ctx.companyId);
    const limit = quotaLimit('silences', ctx.quotas);
    if (count >= limit) await tx.deleteOldestEndedSilences(ctx.companyId, now, count - limit + 1);
    await requireQuota(tx, ctx.companyId, 'silences', ctx.quotas);
    return tx.createSilence({
      id: ctx.newId(),
      companyId: ctx.companyId,
      matcher,
      eventTypeId,
      eventTypeIds,
      startsAt,
      endsAt,
      comment,
      createdBy,
      managedBy,
      createdAt: now,
      updatedAt: now,
      expiredAt: null,
    });
  });
  ctx.onChange?.('silences', ctx.companyId);
  return rec;
}

/**
 * Changes a silence that has not ended (the operator applying a changed NotificationSilence). The fields given
 * replace the stored ones and the whole silence is checked again; an ended silence cannot be changed.
 */
export async function updateSilence(ctx: ServiceContext, id: string, input: SilenceInput, prefix = 'input.'): Promise<SilenceRecord> {
  const rec = await ctx.store.transaction(async (tx) => {
    const cur = await tx.getSilence(ctx.companyId, id);
    if (!cur) throw new ServiceError('NOT_FOUND', `silence ${id} not found`, 'id');
    const now = ctx.now();
    if (cur.expiredAt !== null || cur.endsAt <= now) throw new ServiceError('CONFLICT', `silence ${id} has ended; create a new one`, 'id');
    const eventTypeId = input.eventTypeId !== undefined ? optionalEventTypeId(`${prefix}eventTypeId`, input.eventTypeId) : cur.eventTypeId;
    const { matcher, eventTypeIds } = requireMatcher(`${prefix}matcher`, input.matcher ?? cur.matcher, eventTypeId);
    const startsAt = input.startsAt == null ? cur.startsAt : requireTime(`${prefix}startsAt`, input.startsAt);
    const endsAt = input.endsAt == null ? cur.endsAt : requireTime(`${prefix}endsAt`, input.endsAt);
    checkWindow(prefix, startsAt, endsAt, now);
    const patch: SilencePatch = { matcher, eventTypeId, eventTypeIds, startsAt, endsAt };
    if (input.comment != null) patch.comment = requireComment(`${prefix}comment`, input.comment);
    if (input.createdBy != null && input.createdBy !== '')
      patch.createdBy = requireName(`${prefix}createdBy`, input.createdBy, SILENCE_LIMITS.maxCreatedByLength);
    if (input.managedBy !== undefined)
      patch.managedBy = input.managedBy === null || input.managedBy === '' ? null : requireName(`${prefix}managedBy`, input.managedBy, 512);
    const next = await tx.updateSilence(ctx.companyId, id, patch, now);
    if (!next) throw new ServiceError('NOT_FOUND', `silence ${id} not found`, 'id');
    return next;
  });
  ctx.onChange?.('silences', ctx.companyId, [id]);
  return rec;
}

/** Ends the silence now (idempotent: an ended silence is returned as it is). */
export async function expireSilence(ctx: ServiceContext, id: unknown): Promise<SilenceRecord> {
  if (!isUuid(id)) throw badInput('id', 'id must be a UUID');
  const rec = await ctx.store.expireSilence(ctx.companyId, id, ctx.now());
  if (!rec) throw new ServiceError('NOT_FOUND', `silence ${id} not found`, 'id');
  ctx.onChange?.('silences', ctx.companyId, [id]);
  return rec;
}

export async function getSilence(ctx: ServiceContext, id: string): Promise<SilenceRecord | null> {
  return ctx.store.getSilence(ctx.companyId, id);
}

export const encodeSilenceCursor = (s: Pick<SilenceRecord, 'createdAt' | 'id'>): string => encodeCursor(s.createdAt, s.id);

function decodeSilenceCursor(c: string): { createdAt: number; id: string } {
  const { n, text } = decodeCursor(c, 'silences', isUuid);
  return { createdAt: n, id: text };
}

/** One page of the company's silences in creation order, optionally of one state at now. */
export async function listSilences(
  ctx: ServiceContext,
  args: { state?: SilenceState | null; first?: number | null; after?: string | null },
): Promise<{ nodes: SilenceRecord[]; hasNextPage: boolean }> {
  const first = requirePageSize(args.first, 100);
  const rows = await ctx.store.listSilences(ctx.companyId, {
    state: args.state || undefined,
    now: ctx.now(),
    after: args.after ? decodeSilenceCursor(args.after) : undefined,
    limit: first + 1,
  });
  return { nodes: rows.slice(0, first), hasNextPage: rows.length > first };
}
