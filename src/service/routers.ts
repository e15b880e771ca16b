/**
 * Notification router operations, both API generations:
 *  - ROUTER: createNotificationRouter / updateNotificationRouter / deleteNotificationRouter
 *  - ROUTING_CONFIGURATION: createNotificationRoutingConfiguration / updateNotificationRoutingConfiguration
 * A router updated with the other generation's mutation is an error naming the right one.
 */
import { validateFilter } from '../cel/index.js';
import { EVENT_TYPE_IDS, isEventTypeId, type EventTypeId } from '../events/families.js';
import type { ConfigOps, RouterGeneration, RouterPatch, RouterRecord } from '../store/types.js';
import type { ServiceContext } from './context.js';
import { ServiceError, badInput } from '../model/errors.js';
import { codePointLength, textIssue } from '../validation/formats.js';
import { requireAllExist, requireIdList } from './ids.js';
import { requireQuota } from './quotas.js';
import { isUuid, requireName } from './validate.js';
import { applyRouterPolicy, type RouterPolicyInput } from './router-policy.js';
import { ROUTER_POLICY_DEFAULTS } from '../model/records.js';
import { requireTemplate } from './templates.js';

const UPDATE_MUTATION: Record<RouterGeneration, string> = {
  ROUTER: 'updateNotificationRouter',
  ROUTING_CONFIGURATION: 'updateNotificationRoutingConfiguration',
};
const CREATE_MUTATION: Record<RouterGeneration, string> = {
  ROUTER: 'createNotificationRouter',
  ROUTING_CONFIGURATION: 'createNotificationRoutingConfiguration',
};

export function requireEventTypeId(field: string, v: unknown): EventTypeId {
  if (!isEventTypeId(v)) throw badInput(field, `${field} must be one of ${EVENT_TYPE_IDS.join(', ')}; got ${JSON.stringify(v)}`);
  return v;
}

/** Throws INVALID_FILTER_EXPRESSION with the compile error and its position. */
export function requireFilter(field: string, v: unknown, eventTypeId: EventTypeId): string {
  if (v == null) return '';
  if (typeof v !== 'string') throw badInput(field, `${field} must be a string`);
  // Before the CEL parser: a NUL or a bidi override inside a string literal would otherwise be stored.
  const bad = textIssue(v, 'text');
  if (bad) throw new ServiceError('INVALID_FILTER_EXPRESSION', `${field} ${bad.message}`, field, positionOf(v, bad.index ?? 0));
  const r = validateFilter(v, eventTypeId);
  if (!r.ok)
    throw new ServiceError('INVALID_FILTER_EXPRESSION', `${field}: ${r.message}`, field, {
      line: r.line,
      column: r.column,
    });
  return v.trim();
}

/** 1-based line and column (in code points) of the UTF-16 `index` in `s`. */
export function positionOf(s: string, index: number): { line: number; column: number } {
  const before = s.slice(0, index);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: codePointLength(before.slice(lineStart)) + 1 };
}

async function requireIntegration(tx: ConfigOps, companyId: string, field: string, id: unknown): Promise<string> {
  if (!isUuid(id)) throw badInput(field, `${field} must be a UUID (canonical, not nil)`);
  const integ = await tx.getIntegration(companyId, id);
  if (!integ) throw new ServiceError('NOT_FOUND', `${field}: integration ${id} not found`, field);
  return integ.id;
}

export interface NewRouterInput extends RouterPolicyInput {
  name: unknown;
  eventTypeId: unknown;
  advancedFilterExpression?: unknown;
  integrationId: unknown;
  templateId?: unknown;
  enabled?: unknown;
  managedBy?: unknown;
}

export interface NewRouterFields {
  name: string;
  eventTypeId: string;
  filter: string;
  integrationId: string;
  enabled: string;
  templateId: string;
  /** prefix of the policy fields' names in errors ('' for top level) */
  policy: string;
}

export async function createRouter(
  ctx: ServiceContext,
  generation: RouterGeneration,
  input: NewRouterInput,
  fields: NewRouterFields,
): Promise<RouterRecord> {
  const name = requireName(fields.name, input.name);
  const eventTypeId = requireEventTypeId(fields.eventTypeId, input.eventTypeId);
  const filter = requireFilter(fields.filter, input.advancedFilterExpression, eventTypeId);
  if (input.enabled != null && typeof input.enabled !== 'boolean') throw badInput(fields.enabled, `${fields.enabled} must be a boolean`);
  if (input.templateId != null && !isUuid(input.templateId)) throw badInput(fields.templateId, `${fields.templateId} must be a UUID`);
  const policy = applyRouterPolicy(ROUTER_POLICY_DEFAULTS, input, eventTypeId, fields.policy);
  const rec = await ctx.store.transaction(async (tx) => {
    const integrationId = await requireIntegration(tx, ctx.companyId, fields.integrationId, input.integrationId);
    const templateId = input.templateId == null ? null : await requireTemplate(tx, ctx.companyId, fields.templateId, input.templateId);
    await requireQuota(tx, ctx.companyId, 'routers', ctx.quotas);
    const now = ctx.now();
    return tx.createRouter({
      id: ctx.newId(),
      companyId: ctx.companyId,
      name,
      eventTypeId,
      enabled: (input.enabled as boolean | null | undefined) ?? true,
      filter,
      integrationId,
      templateId,
      ...policy,
      generation,
      managedBy: input.managedBy == null ? null : requireName('managedBy', input.managedBy, 512),
      createdAt: now,
      updatedAt: now,
    });
  });
  ctx.onChange?.('routers', ctx.companyId);
  return rec;
}

export interface RouterUpdateInput extends RouterPolicyInput {
  enabled?: unknown;
  name?: unknown;
  eventTypeId?: unknown;
  advancedFilterExpression?: unknown;
  integrationId?: unknown;
  templateId?: unknown;
  managedBy?: unknown;
}

/**
 * Updates a router through the mutation of `generation`. Changing the event type revalidates the (new or kept)
 * filter against the new family. Nothing is written when any check fails.
 */
export async function updateRouter(
  ctx: ServiceContext,
  generation: RouterGeneration,
  id: string,
  input: RouterUpdateInput,
  prefix: string,
): Promise<RouterRecord> {
  const rec = await ctx.store.transaction(async (tx) => {
    const cur = await tx.getRouter(ctx.companyId, id);
    if (!cur) throw new ServiceError('NOT_FOUND', `router ${id} not found`, 'id');
    if (cur.generation !== generation)
      throw new ServiceError(
        'BAD_USER_INPUT',
        `router ${id} was created with ${CREATE_MUTATION[cur.generation]}; update it with ${UPDATE_MUTATION[cur.generation]}, not ${UPDATE_MUTATION[generation]}`,
        'id',
        { expectedMutation: UPDATE_MUTATION[cur.generation] },
      );
    const patch: RouterPatch = {};
    if (input.enabled != null) {
      if (typeof input.enabled !== 'boolean') throw badInput(`${prefix}.enabled`, `${prefix}.enabled must be a boolean`);
      patch.enabled = input.enabled;
    }
    if (input.name != null) patch.name = requireName(`${prefix}.name`, input.name);
    const eventTypeId = input.eventTypeId != null ? requireEventTypeId(`${prefix}.eventTypeId`, input.eventTypeId) : cur.eventTypeId;
    if (eventTypeId !== cur.eventTypeId) patch.eventTypeId = eventTypeId;
    if (input.advancedFilterExpression !== undefined || patch.eventTypeId) {
      const expr = input.advancedFilterExpression !== undefined ? input.advancedFilterExpression : cur.filter;
      patch.filter = requireFilter(`${prefix}.advancedFilterExpression`, expr, eventTypeId);
    }
    if (input.integrationId != null)
      patch.integrationId = await requireIntegration(tx, ctx.companyId, `${prefix}.integrationId`, input.integrationId);
    if (input.templateId !== undefined) {
      patch.templateId =
        input.templateId === null ? null : await requireTemplate(tx, ctx.companyId, `${prefix}.templateId`, input.templateId);
    }
    if (input.managedBy !== undefined)
      patch.managedBy = input.managedBy === null || input.managedBy === '' ? null : requireName('managedBy', input.managedBy, 512);
    const policy = applyRouterPolicy(cur, input, eventTypeId, prefix);
    if (JSON.stringify(policy.groupBy) !== JSON.stringify(cur.groupBy)) patch.groupBy = policy.groupBy;
    if (policy.groupWaitMs !== cur.groupWaitMs) patch.groupWaitMs = policy.groupWaitMs;
    if (policy.groupIntervalMs !== cur.groupIntervalMs) patch.groupIntervalMs = policy.groupIntervalMs;
    if (policy.repeatIntervalMs !== cur.repeatIntervalMs) patch.repeatIntervalMs = policy.repeatIntervalMs;
    if (policy.holdUnderIssuer !== cur.holdUnderIssuer) patch.holdUnderIssuer = policy.holdUnderIssuer;
    const next = await tx.updateRouter(ctx.companyId, id, patch, ctx.now());
    if (!next) throw new ServiceError('NOT_FOUND', `router ${id} not found`, 'id');
    return next;
  });
  ctx.onChange?.('routers', ctx.companyId, [id]);
  return rec;
}

export async function listRouters(ctx: ServiceContext): Promise<RouterRecord[]> {
  return ctx.store.listRouters(ctx.companyId);
}

/**
 * Deletes routers; any id not found for the company fails the whole call and deletes nothing. The ids are
 * deduplicated and capped (MAX_IDS_PER_CALL) and checked with one query.
 */
export async function deleteRouters(ctx: ServiceContext, ids: readonly unknown[]): Promise<string[]> {
  const wanted = requireIdList('ids', ids);
  const deleted = await ctx.store.transaction(async (tx) => {
    await requireAllExist(tx, 'routers', ctx.companyId, wanted);
    return tx.deleteRouters(ctx.companyId, wanted);
  });
  ctx.onChange?.('routers', ctx.companyId, deleted);
  return deleted;
}
