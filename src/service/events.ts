/**
 * Event ingestion: validate, route, and write the events with their (event, router) deliveries in ONE
 * transaction. What is accepted (202) is durable: the delivery worker takes it from the store.
 */
import type { Logger } from 'pino';
import type { LogLimiter } from '../log/limiter.js';
import { validateEvent } from '../events/schemas.js';
import { orderOfEvent } from '../delivery/order.js';
import { familyOfType, type EventTypeId, type InternalEvent } from '../events/families.js';
import { eventMonitored, matchRoutersSliced } from '../routing/match.js';
import { TimeSlicer } from '../routing/slicer.js';
import type { RoutingMetrics } from '../routing/metrics.js';
import type { RoutingSnapshots } from '../routing/snapshot.js';
import type { NewDelivery, StoreOps } from '../store/types.js';
import { addGroupMembers, isGrouped, type GroupedMatch } from '../grouping/ingest.js';
import type { ServiceContext, ServiceRuntime } from './context.js';
import { ValidationErrors, type FieldError } from './errors.js';

export const MAX_EVENTS_PER_REQUEST = 1000;

export interface IngestDeps {
  snapshots: RoutingSnapshots;
  metrics: RoutingMetrics;
  log: Logger;
  /** Rate-limits the per-event warn lines per tenant and cause (finding 8); without it every line is written. */
  logLimiter?: LogLimiter;
  /** Wakes the delivery worker after a commit. */
  onAccepted?: () => void;
}

/** The ingestion parts of a running service, for every path that accepts events (API, expiry scan, silence). */
export function ingestDepsOf(rt: ServiceRuntime, log: Logger): IngestDeps {
  return {
    snapshots: rt.snapshots,
    metrics: rt.routingMetrics,
    log,
    ...(rt.logLimiter ? { logLimiter: rt.logLimiter } : {}),
    onAccepted: () => rt.kickDelivery(),
  };
}

export interface AcceptedEvent {
  id: string;
  deliveries: number;
}

/** Validates one event or an array of up to 1,000; throws ValidationErrors naming index and field. */
export function parseEvents(body: unknown): InternalEvent[] {
  const many = Array.isArray(body);
  const list = many ? (body as unknown[]) : [body];
  if (many && list.length === 0)
    throw new ValidationErrors([
      { code: 'BAD_USER_INPUT', field: '', message: 'no events: send one event { type, data } or a non-empty array' },
    ]);
  if (list.length > MAX_EVENTS_PER_REQUEST)
    throw new ValidationErrors([
      { code: 'BAD_USER_INPUT', field: '', message: `at most ${MAX_EVENTS_PER_REQUEST} events per request, got ${list.length}` },
    ]);
  const errors: FieldError[] = [];
  const events: InternalEvent[] = [];
  list.forEach((e, i) => {
    const r = validateEvent(e);
    if (r.ok && familyOfType(r.event.type).origin === 'hub') {
      // the hub's own families (docs/inventory.md "Silent clusters as events") state what only the hub knows
      const field = many ? `[${i}].type` : 'type';
      errors.push({
        code: 'BAD_USER_INPUT',
        field,
        message: `${many ? `event ${i}: ` : ''}type ${r.event.type} is emitted by the hub itself, not accepted from clients`,
      });
    } else if (r.ok) events.push(r.event);
    else
      for (const err of r.errors) {
        const field = many ? `[${i}]${err.path ? '.' + err.path : ''}` : err.path;
        errors.push({ code: 'BAD_USER_INPUT', field, message: `${many ? `event ${i}: ` : ''}${err.path || 'event'} ${err.message}` });
      }
  });
  if (errors.length) throw new ValidationErrors(errors.slice(0, 100));
  return events;
}

interface PlannedEvent {
  event: InternalEvent;
  eventId: string;
  family: EventTypeId;
  deliveries: NewDelivery[];
  /** Matches of routers with groupBy: members of a group, no delivery row (docs/grouping.md). */
  grouped: GroupedMatch[];
}

type Snapshot = Awaited<ReturnType<RoutingSnapshots['get']>>;

export async function acceptEvents(ctx: ServiceContext, events: InternalEvent[], deps: IngestDeps): Promise<AcceptedEvent[]> {
  const snap = await deps.snapshots.get(ctx.companyId);
  const now = ctx.now();
  const planned = await planEvents(ctx, snap, events, deps, now);
  const capped = await ctx.store.transaction((tx) => writePlanned(tx, ctx, planned, now));
  return reportAccepted(planned, deps, capped);
}

/**
 * The same ingestion inside the caller's transaction, for a caller that writes more in it (the expiry scan:
 * its marks), so the events are accepted exactly when the rest is written. `snap` is read before the
 * transaction (the routing snapshot reads the store). Call `committed()` once the transaction has committed.
 */
export async function acceptEventsInTransaction(
  ctx: ServiceContext,
  tx: StoreOps,
  snap: Snapshot,
  events: InternalEvent[],
  deps: IngestDeps,
): Promise<{ accepted: AcceptedEvent[]; committed(): void }> {
  const now = ctx.now();
  const planned = await planEvents(ctx, snap, events, deps, now);
  const capped = await writePlanned(tx, ctx, planned, now);
  let reported = false;
  return {
    accepted: planned.map((p) => ({ id: p.eventId, deliveries: p.deliveries.length })),
    committed() {
      if (!reported) reportAccepted(planned, deps, capped);
      reported = true;
    },
  };
}

async function planEvents(
  ctx: ServiceContext,
  snap: Snapshot,
  events: InternalEvent[],
  deps: IngestDeps,
  now: number,
): Promise<PlannedEvent[]> {
  // Routing is CPU-bound and a batch may hold 1,000 events: route in time slices so other tenants' requests
  // and /healthz are served in between (each evaluation is bounded by the filter cost budget).
  const slicer = new TimeSlicer();
  deps.log.debug({ events: events.length }, 'routing events');
  const planned: PlannedEvent[] = [];
  for (const [index, event] of events.entries()) {
    const eventId = ctx.newId();
    // order per key (issue 8): the correlation key, the event's own time and the acceptance sequence
    const order = orderOfEvent(event, now, index);
    const family = familyOfType(event.type).eventTypeId;
    if (!eventMonitored(event, snap.monitoring)) deps.metrics.notMonitored.inc();
    const { matched, errors } = await matchRoutersSliced(event, snap, slicer);
    for (const e of errors) {
      deps.metrics.celErrors.inc({ event_type_id: family });
      if (deps.logLimiter && !deps.logLimiter.admit(deps.log, 'warn', ctx.companyId, 'filter_evaluation')) continue;
      deps.log.warn(
        { companyId: ctx.companyId, routerId: e.router.id, eventId, eventType: event.type, error: e.error },
        'filter evaluation failed; no notification',
      );
    }
    const grouped: GroupedMatch[] = matched.filter(isGrouped).map((router) => ({ router, eventId, event, order }));
    const deliveries: NewDelivery[] = matched
      .filter((r) => !isGrouped(r))
      .map((r) => ({
        id: ctx.newId(),
        companyId: ctx.companyId,
        eventId,
        routerId: r.id,
        routerName: r.name,
        integrationId: r.integrationId,
        createdAt: now,
        ...order,
      }));
    planned.push({ event, eventId, family, deliveries, grouped });
  }
  deps.log.debug({ events: events.length }, 'routed events');
  return planned;
}

/** Returns how many group members went past their group's member limit. */
async function writePlanned(tx: StoreOps, ctx: ServiceContext, planned: PlannedEvent[], now: number): Promise<number> {
  if (!planned.length) return 0;
  const companyId = ctx.companyId;
  const deliveries = planned.flatMap((p) => p.deliveries);
  await tx.insertEvents(planned.map((p) => ({ id: p.eventId, companyId, type: p.event.type, data: p.event.data, receivedAt: now })));
  if (deliveries.length) await tx.insertDeliveries(deliveries);
  const grouped = planned.flatMap((p) => p.grouped);
  return grouped.length ? addGroupMembers(tx, companyId, grouped, now, () => ctx.newId()) : 0;
}

function reportAccepted(planned: PlannedEvent[], deps: IngestDeps, capped = 0): AcceptedEvent[] {
  for (const p of planned) {
    deps.metrics.eventsReceived.inc({ type: p.event.type });
    const matches = p.deliveries.length + p.grouped.length;
    if (matches) deps.metrics.matches.inc({ event_type_id: p.family }, matches);
  }
  if (capped) deps.metrics.groupMembersCapped.inc(capped);
  deps.onAccepted?.();
  return planned.map((p) => ({ id: p.eventId, deliveries: p.deliveries.length }));
}
