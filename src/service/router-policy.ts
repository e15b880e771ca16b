/**
 * A router's notification policy (docs/signal.md): grouping (groupBy, groupWait, groupInterval),
 * reminders (repeatInterval) and holding under the issuer (holdUnderIssuer, docs/grouping.md). Pure checks of the API input; the same bounds are in the CRD schema.
 */
import { FAMILY_FIELD_TREES } from '../events/schemas.js';
import type { EventTypeId } from '../events/families.js';
import type { FieldNode } from '../events/field-tree.js';
import type { RouterRecord } from '../model/records.js';
import { formatInterval, parseInterval } from '../validation/interval.js';
import { badInput } from '../model/errors.js';

const ROUTER_POLICY_LIMITS = {
  /** fields in groupBy */
  groupByFields: 8,
  groupWaitMinMs: 0,
  groupWaitMaxMs: 3_600_000,
  groupIntervalMinMs: 1_000,
  groupIntervalMaxMs: 86_400_000,
  /** a reminder costs one delivery per open resource and interval: at most one a minute */
  repeatIntervalMinMs: 60_000,
  repeatIntervalMaxMs: 90 * 86_400_000,
} as const;
const L = ROUTER_POLICY_LIMITS;
const EXPIRATION_FAMILY: EventTypeId = 'cert-expiry-ext-notification-config';
/** the family whose events name an issuer they depend on (holdUnderIssuer) */
const CERTIFICATE_FAMILY: EventTypeId = 'certmgr-cert-resource-health-notification-config';

export type RouterPolicy = Pick<RouterRecord, 'groupBy' | 'groupWaitMs' | 'groupIntervalMs' | 'repeatIntervalMs' | 'holdUnderIssuer'>;

export interface RouterPolicyInput {
  groupBy?: unknown;
  groupWait?: unknown;
  groupInterval?: unknown;
  /** null or '' turns reminders off */
  repeatInterval?: unknown;
  /** a boolean; null leaves it as it is */
  holdUnderIssuer?: unknown;
}

/** The node of `path` ('type' or 'data.a.b') in the family's field tree, or undefined. */
function fieldAt(eventTypeId: EventTypeId, path: string): FieldNode | undefined {
  if (path === 'type') return { kind: 'string' };
  const [root, ...rest] = path.split('.');
  if (root !== 'data' || rest.length === 0) return undefined;
  let node: FieldNode | undefined = FAMILY_FIELD_TREES[eventTypeId];
  for (const name of rest) node = node?.kind === 'object' ? node.fields.get(name) : undefined;
  return node;
}

function requireGroupBy(field: string, v: unknown, eventTypeId: EventTypeId): string[] {
  if (!Array.isArray(v)) throw badInput(field, `${field} must be a list of event fields such as "data.issuerName"`);
  if (v.length > L.groupByFields) throw badInput(field, `${field} has ${v.length} fields; at most ${L.groupByFields}`);
  const seen = new Set<string>();
  v.forEach((p, i) => {
    const at = `${field}[${i}]`;
    if (typeof p !== 'string' || p.length > 256) throw badInput(at, `${at} must be an event field path such as "data.issuerName"`);
    const node = fieldAt(eventTypeId, p);
    if (!node) throw badInput(at, `${at}: ${JSON.stringify(p)} is not a field of ${eventTypeId} events (use "type" or "data.<field>")`);
    if (node.kind === 'object' || node.kind === 'array')
      throw badInput(at, `${at}: ${p} is ${node.kind === 'object' ? 'an object' : 'a list'}; group by a single-valued field`);
    if (seen.has(p)) throw badInput(at, `${at}: ${p} is listed twice`);
    seen.add(p);
  });
  return [...seen];
}

function requireInterval(field: string, v: unknown, min: number, max: number): number {
  const ms = typeof v === 'string' ? parseInterval(v) : undefined;
  if (ms === undefined)
    throw badInput(field, `${field} must be an interval such as "30s", "5m", "4h" or "1h30m"; got ${JSON.stringify(v)}`);
  if (ms < min || ms > max)
    throw badInput(field, `${field} must be between ${formatInterval(min)} and ${formatInterval(max)}; got ${v as string}`);
  return ms;
}

/**
 * The policy after applying `input` to `current` (create: the defaults). Fields left out keep their value;
 * throws BAD_USER_INPUT naming `${prefix}.<field>`.
 */
export function applyRouterPolicy(current: RouterPolicy, input: RouterPolicyInput, eventTypeId: EventTypeId, prefix: string): RouterPolicy {
  const at = (f: string) => (prefix ? `${prefix}.${f}` : f);
  const next: RouterPolicy = { ...current, groupBy: [...current.groupBy] };
  if (input.groupBy != null) next.groupBy = requireGroupBy(at('groupBy'), input.groupBy, eventTypeId);
  else if (next.groupBy.some((p) => !fieldAt(eventTypeId, p)))
    // the event type changed under a kept groupBy
    next.groupBy = requireGroupBy(at('groupBy'), next.groupBy, eventTypeId);
  if (input.groupWait != null) next.groupWaitMs = requireInterval(at('groupWait'), input.groupWait, L.groupWaitMinMs, L.groupWaitMaxMs);
  if (input.groupInterval != null)
    next.groupIntervalMs = requireInterval(at('groupInterval'), input.groupInterval, L.groupIntervalMinMs, L.groupIntervalMaxMs);
  if (input.repeatInterval === null || input.repeatInterval === '') next.repeatIntervalMs = null;
  else if (input.repeatInterval !== undefined)
    next.repeatIntervalMs = requireInterval(at('repeatInterval'), input.repeatInterval, L.repeatIntervalMinMs, L.repeatIntervalMaxMs);
  if (next.repeatIntervalMs !== null && eventTypeId === EXPIRATION_FAMILY)
    throw badInput(
      at('repeatInterval'),
      `${at('repeatInterval')}: expiration events have no reminders (their thresholds are the reminders)`,
    );
  if (input.holdUnderIssuer != null) {
    if (typeof input.holdUnderIssuer !== 'boolean')
      throw badInput(at('holdUnderIssuer'), `${at('holdUnderIssuer')} must be a boolean; got ${JSON.stringify(input.holdUnderIssuer)}`);
    next.holdUnderIssuer = input.holdUnderIssuer;
  }
  if (next.holdUnderIssuer && eventTypeId !== CERTIFICATE_FAMILY)
    throw badInput(
      at('holdUnderIssuer'),
      `${at('holdUnderIssuer')}: only ${CERTIFICATE_FAMILY} routers hold events under their issuer; this router receives ${eventTypeId} events`,
    );
  return next;
}
