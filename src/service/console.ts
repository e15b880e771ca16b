/**
 * The console's operations (docs/console.md): who the key is, a filter check without saving, the recent
 * events, the unhealthy resources, and putting a dead letter back in the queue. All company-scoped and bounded.
 */
import { isEventType, type InternalEvent } from '../events/families.js';
import { viewOf } from '../model/event-view.js';
import type { DeliveryRecord, EventCursor, EventRecord, UnhealthyCursor, UnhealthyResourceRecord } from '../store/types.js';
import type { ServiceContext } from './context.js';
import { ServiceError } from '../model/errors.js';
import { requireEventTypeId, requireFilter } from './routers.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { isUuid, requirePageSize } from './validate.js';

/** Deliveries shown per unhealthy resource (newest first). */
export const STREAK_DELIVERIES = 10;
/** The filter's field name in createNotificationRouter: validateFilter words its errors the same way. */
const FILTER_FIELD = 'filterConfig.advancedFilterExpression';

export function viewer(ctx: ServiceContext): { companyId: string; scope: string } {
  return { companyId: ctx.companyId, scope: ctx.scope ?? 'admin' };
}

export interface FilterCheck {
  valid: boolean;
  error: string | null;
  line: number | null;
  column: number | null;
}

/** createNotificationRouter's filter check (text check, parse, type check, cost budget), saving nothing. */
export function validateFilter(eventTypeId: unknown, expression: unknown): FilterCheck {
  const family = requireEventTypeId('eventTypeId', eventTypeId);
  try {
    requireFilter(FILTER_FIELD, expression, family);
    return { valid: true, error: null, line: null, column: null };
  } catch (e) {
    if (!(e instanceof ServiceError) || e.code !== 'INVALID_FILTER_EXPRESSION') throw e;
    const at = (k: string) => (typeof e.details?.[k] === 'number' ? (e.details[k] as number) : null);
    return { valid: false, error: e.message, line: at('line'), column: at('column') };
  }
}

export const encodeEventCursor = (e: Pick<EventRecord, 'receivedAt' | 'id'>) => encodeCursor(e.receivedAt, e.id);

export async function listEvents(
  ctx: ServiceContext,
  args: { first?: number | null; after?: string | null; type?: string | null },
): Promise<{ nodes: EventRecord[]; hasNextPage: boolean }> {
  const first = requirePageSize(args.first, 20);
  let after: EventCursor | null = null;
  if (args.after != null) {
    const c = decodeCursor(args.after, 'events', isUuid);
    after = { receivedAt: c.n, id: c.text };
  }
  const type = args.type ?? undefined;
  // an unknown type matches nothing; say so rather than answer an empty page
  if (type !== undefined && !isEventType(type))
    throw new ServiceError(
      'BAD_USER_INPUT',
      `type must be an event type (see eventTypes' types); got ${JSON.stringify(type.slice(0, 100))}`,
      'type',
    );
  const rows = await ctx.store.listEvents(ctx.companyId, type !== undefined ? { type } : {}, after, first + 1);
  return { nodes: rows.slice(0, first), hasNextPage: rows.length > first };
}

export const encodeUnhealthyCursor = (r: Pick<UnhealthyResourceRecord, 'since' | 'resourceKey'>) => encodeCursor(r.since, r.resourceKey);

export async function listUnhealthyResources(
  ctx: ServiceContext,
  args: { first?: number | null; after?: string | null },
): Promise<{ nodes: UnhealthyResourceRecord[]; hasNextPage: boolean }> {
  const first = requirePageSize(args.first, 100);
  let after: UnhealthyCursor | null = null;
  if (args.after != null) {
    const c = decodeCursor(args.after, 'unhealthyResources', (key) => key !== '');
    after = { since: c.n, resourceKey: c.text };
  }
  const rows = await ctx.store.listUnhealthyResources(ctx.companyId, after, first + 1);
  return { nodes: rows.slice(0, first), hasNextPage: rows.length > first };
}

/** The resource an unhealthy row is about, as the console shows it (from its newest event). */
export function resourceOf(e: Pick<EventRecord, 'type' | 'data'>): {
  kind: string;
  namespace: string | null;
  name: string;
  cluster: string | null;
  reason: string | null;
  message: string | null;
} {
  const v = viewOf(e as InternalEvent);
  if (v.kind === 'certificateExpiration')
    return {
      kind: 'Certificate',
      namespace: v.namespace,
      name: v.certificateName ?? '',
      cluster: v.clusterName,
      reason: null,
      message: v.message,
    };
  const cluster = v.cluster.name || v.cluster.id || null;
  const base = { cluster, reason: v.reason, message: v.message };
  if (v.kind === 'agent') return { kind: 'Agent', namespace: null, name: cluster ?? '', ...base };
  const namespace = v.resource.namespace || null;
  // an issuer event without a namespace is about a ClusterIssuer (cluster-scoped)
  const kind = v.kind === 'certificate' ? 'Certificate' : namespace === null ? 'ClusterIssuer' : 'Issuer';
  return { kind, namespace, name: v.resource.name, ...base };
}

export function streakDeliveries(ctx: ServiceContext, r: UnhealthyResourceRecord): Promise<DeliveryRecord[]> {
  return ctx.store.listStreakDeliveries(
    ctx.companyId,
    r.resourceKey,
    { orderAt: r.sinceOrderAt, orderSeq: r.sinceOrderSeq },
    STREAK_DELIVERIES,
  );
}

/**
 * Puts a DEAD delivery back in the queue (PENDING, due now, attempts and lastError kept) and wakes the worker. The
 * worker's order rules apply when it is claimed: behind a newer notification already sent for its key it ends
 * SUPERSEDED (docs/reliability.md).
 */
export async function retryDelivery(ctx: ServiceContext, id: unknown): Promise<DeliveryRecord> {
  if (!isUuid(id)) throw new ServiceError('BAD_USER_INPUT', 'id must be a UUID (canonical, not nil)', 'id');
  const r = await ctx.store.retryDeadDelivery(ctx.companyId, id, ctx.now());
  if (r === null) throw new ServiceError('NOT_FOUND', `delivery ${id} not found`, 'id');
  if ('status' in r)
    throw new ServiceError('BAD_USER_INPUT', `delivery ${id} is ${r.status}: only a DEAD delivery can be retried`, 'id', {
      status: r.status,
    });
  ctx.runtime?.deliverySignal.notify();
  return r.retried;
}
