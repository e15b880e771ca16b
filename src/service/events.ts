/**
 * Event ingestion: validate, route, and write the events with their (event, router) deliveries in ONE
 * transaction. What is accepted (202) is durable: the delivery worker takes it from the store.
 */
import type { Logger } from 'pino';
import type { LogLimiter } from '../log/limiter.js';
import { validateEvent } from '../events/schemas.js';
import { orderOfEvent, type EventOrder } from '../delivery/order.js';
import { foldHealth } from './health.js';
import { familyOfType, type EventTypeId, type InternalEvent } from '../events/families.js';
import { eventMonitored, matchRoutersSliced, silenceCandidates } from '../routing/match.js';
import { TimeSlicer } from '../routing/slicer.js';
import type { RoutingMetrics } from '../routing/metrics.js';
import type { RoutingSnapshots } from '../routing/snapshot.js';
import type { NewDelivery, StoreOps } from '../store/types.js';
import { applyReminders, reminderCandidates, type ReminderCandidate } from '../reminders/ingest.js';
import {
  mergeSilenceMatches,
  newestEarlierStatus,
  silenceFor,
  silenceVerdict,
  type CompiledSilence,
  type KeyedDelivery,
  type SilenceMatch,
} from '../silences/decide.js';
import { addGroupMembers, isGrouped, type GroupedMatch } from '../grouping/ingest.js';
import { applyHolds, holdsUnderIssuer, moveIssuerHolds, type HoldCandidate } from '../grouping/hold-ingest.js';
import type { ServiceContext, ServiceRuntime } from './context.js';
import { ValidationErrors, type FieldError } from './errors.js';

export const MAX_EVENTS_PER_REQUEST = 1000;

export interface IngestDeps {
  snapshots: RoutingSnapshots;
  metrics: RoutingMetrics;
  log: Logger;
  /** Rate-limits the per-event warn lines per tenant and cause; without it every line is written. */
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
  /** step 4, reminders (docs/reminders.md): the (event, router) pairs of routers that keep reminders */
  reminders: ReminderCandidate[];
  /** Matches of routers with groupBy: members of a group, no delivery row (docs/grouping.md). */
  grouped: GroupedMatch[];
  /** Matches of routers with holdUnderIssuer: decided in the transaction (docs/grouping.md "Held under the issuer"). */
  holds: HoldCandidate[];
  /** Its order fields: the health page's resource key and position (src/service/health.ts). */
  order: EventOrder;
}

type Snapshot = Awaited<ReturnType<RoutingSnapshots['get']>>;

export async function acceptEvents(ctx: ServiceContext, events: InternalEvent[], deps: IngestDeps): Promise<AcceptedEvent[]> {
  const snap = await deps.snapshots.get(ctx.companyId);
  const now = ctx.now();
  const planned = await planEvents(ctx, ctx.store, snap, events, deps, now);
  // the worker is woken at the commit, so the send does not wait for the commit's fsync; the 202 does
  const written = await ctx.store.ingestTransaction(
    (tx) => writePlanned(tx, ctx, planned, now, deps),
    () => deps.onAccepted?.(),
  );
  return reportAccepted(planned, deps, written, false);
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
): Promise<{ accepted: AcceptedEvent[]; unmatched: number; committed(): void }> {
  const now = ctx.now();
  const planned = await planEvents(ctx, tx, snap, events, deps, now);
  const written = await writePlanned(tx, ctx, planned, now, deps);
  let reported = false;
  return {
    accepted: planned.map((p) => ({ id: p.eventId, deliveries: p.deliveries.length + (written.passedRows.get(p.eventId) ?? 0) })),
    unmatched: unmatchedEvents(planned),
    committed() {
      if (!reported) reportAccepted(planned, deps, written);
      reported = true;
    },
  };
}

/**
 * Events no enabled router matched: no delivery row, no group member (a silenced match is a match: its row is
 * recorded SILENCED). The expiry scan counts these (certmgr_notify_expiration_events_unrouted_total).
 */
export function unmatchedEvents(planned: readonly (Pick<PlannedEvent, 'deliveries' | 'grouped'> & { holds?: unknown[] })[]): number {
  return planned.filter((p) => p.deliveries.length === 0 && p.grouped.length === 0 && !p.holds?.length).length;
}

async function planEvents(
  ctx: ServiceContext,
  reader: StoreOps,
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
  // the deliveries planned in this request per (integration, order key): the recovery exception looks at them too
  const plannedByKey = new Map<string, KeyedDelivery[]>();
  for (const [index, event] of events.entries()) {
    const eventId = ctx.newId();
    // order per key: the correlation key, the event's own time and the acceptance sequence
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
    const deliveries: NewDelivery[] = matched.map((r) => ({
      id: ctx.newId(),
      companyId: ctx.companyId,
      eventId,
      routerId: r.id,
      routerName: r.name,
      integrationId: r.integrationId,
      createdAt: now,
      ...order,
    }));
    // step 1, silences: decided for every matched router, grouped or not
    await applySilences(ctx, reader, snap, event, deliveries, plannedByKey, deps, now, slicer);
    // step 2, grouping: a grouped router's match that is not silenced becomes a group member (no delivery row).
    // A grouped router's recovery is never silenced: its trigger may have gone out in a group notification, and
    // the group must see every member recover to resolve (docs/silences.md).
    const routerOf = new Map(matched.map((r) => [r.id, r]));
    // Step 3, holding under the issuer: a holding router's certificate match is decided in the transaction (it reads
    // the issuer's health as this batch leaves it); not held, it goes on as below. Silenced like grouping's.
    const grouped: GroupedMatch[] = [];
    const rows: NewDelivery[] = [];
    const holds: HoldCandidate[] = [];
    for (const d of deliveries) {
      const router = routerOf.get(d.routerId)!;
      const toGroup = isGrouped(router) && (!d.silenceId || event.type.endsWith('.active'));
      if (holdsUnderIssuer(router) && (!d.silenceId || event.type.endsWith('.active')))
        holds.push({ router, eventId, event, order, fallback: toGroup ? { kind: 'group' } : { kind: 'row', delivery: d } });
      else if (toGroup) grouped.push({ router, eventId, event, order });
      else rows.push(d);
    }
    // step 4, reminders: a silenced (event, router) opens no reminder (an .active still closes one: reminders/ingest.ts)
    const silencedRouters = new Set(rows.filter((d) => d.silenceId).map((d) => d.routerId));
    const reminders = reminderCandidates(event, family, eventId, order, matched, (r) => !silencedRouters.has(r.id));
    planned.push({ event, eventId, family, deliveries: rows, reminders, grouped, holds, order });
  }
  deps.log.debug({ events: events.length }, 'routed events');
  return planned;
}

/**
 * Pipeline step 1 (docs/silences.md): an active silence whose matcher accepts the event turns its
 * deliveries SILENCED, except a recovery whose trigger was sent (the newest earlier delivery of the same
 * (integration, order key) exists and is not SILENCED). The store is read only for a silenced recovery.
 */
async function applySilences(
  ctx: ServiceContext,
  reader: StoreOps,
  snap: Snapshot,
  event: InternalEvent,
  deliveries: NewDelivery[],
  plannedByKey: Map<string, KeyedDelivery[]>,
  deps: IngestDeps,
  now: number,
  slicer: TimeSlicer,
): Promise<void> {
  const keyOf = (d: NewDelivery) => `${d.integrationId}\u0000${d.orderKey ?? ''}`;
  const match =
    deliveries.length && snap.silences?.length ? await silenceForSliced(event, silenceCandidates(snap, event), now, slicer) : null;
  for (const e of match?.errors ?? []) {
    if (deps.logLimiter && !deps.logLimiter.admit(deps.log, 'warn', ctx.companyId, 'silence_evaluation')) continue;
    deps.log.warn(
      { companyId: ctx.companyId, silenceId: e.silence.id, eventType: event.type, error: e.error },
      'silence matcher failed; not silenced',
    );
  }
  for (const d of deliveries) {
    const key = keyOf(d);
    const self = { orderAt: d.orderAt ?? now, orderSeq: d.orderSeq ?? now * 1000, id: d.id };
    let planned = plannedByKey.get(key);
    if (!planned) plannedByKey.set(key, (planned = []));
    if (match?.silence) {
      const previous =
        event.type.endsWith('.active') && d.orderKey
          ? newestEarlierStatus(self, [await reader.previousDelivery(ctx.companyId, d.integrationId, d.orderKey, self), ...planned])
          : null;
      const silence = silenceVerdict(event.type, match.silence, previous);
      if (silence) d.silenceId = silence.id;
    }
    if (d.orderKey) planned.push({ ...self, status: d.silenceId ? 'SILENCED' : 'PENDING' });
  }
}

/** Silences evaluated per event: up to the company's quota, each within the CEL budget; yield between chunks. */
const SILENCE_CHUNK = 32;

async function silenceForSliced(
  event: InternalEvent,
  silences: readonly CompiledSilence[],
  now: number,
  slicer: TimeSlicer,
): Promise<SilenceMatch> {
  let m: SilenceMatch = { silence: null, errors: [] };
  for (let i = 0; i < silences.length; i += SILENCE_CHUNK) {
    m = mergeSilenceMatches(m, silenceFor(event, silences.slice(i, i + SILENCE_CHUNK), now));
    if (slicer.due()) await slicer.yield();
  }
  return m;
}

interface Written {
  /** group or hold members past their member limit */
  capped: number;
  /** delivery rows of hold candidates not held, per event */
  passedRows: Map<string, number>;
}

async function writePlanned(tx: StoreOps, ctx: ServiceContext, planned: PlannedEvent[], now: number, deps: IngestDeps): Promise<Written> {
  const passedRows = new Map<string, number>();
  if (!planned.length) return { capped: 0, passedRows };
  const companyId = ctx.companyId;
  const deliveries = planned.flatMap((p) => p.deliveries);
  await tx.insertEvents(planned.map((p) => ({ id: p.eventId, companyId, type: p.event.type, data: p.event.data, receivedAt: now })));
  if (deliveries.length) await tx.insertDeliveries(deliveries);
  // the console's health page (after the events: a health row references its event)
  const health = foldHealth(
    companyId,
    planned.map((p) => ({ eventId: p.eventId, type: p.event.type, order: p.order, receivedAt: now })),
  );
  if (health.length) await tx.putResourceHealth(health);
  // after the health rows: holds read the issuer's and the certificate's health as this batch leaves them
  const issuerKeys = planned.filter((p) => p.event.type.startsWith('evt.healthstatus.certmgr-issuer.')).map((p) => p.order.orderKey);
  await moveIssuerHolds(tx, companyId, [...new Set(issuerKeys)], now);
  const holds = await applyHolds(
    tx,
    companyId,
    planned.flatMap((p) => p.holds),
    now,
    () => ctx.newId(),
  );
  const passed = holds.passed.flatMap((c) => (c.fallback.kind === 'row' ? [c.fallback.delivery] : []));
  if (passed.length) await tx.insertDeliveries(passed);
  for (const d of passed) passedRows.set(d.eventId, (passedRows.get(d.eventId) ?? 0) + 1);
  // after the events: a reminder row references its event. A held failure opens no reminder (the hold is the
  // issuer's incident); its recovery still closes one.
  const reminders = await applyReminders(
    tx,
    companyId,
    planned.flatMap((p) => p.reminders.map((r) => (holds.held.has(`${r.eventId}\u0000${r.router.id}`) ? { ...r, sent: false } : r))),
    now,
  );
  if (reminders.refused && (!deps.logLimiter || deps.logLimiter.admit(deps.log, 'warn', companyId, 'reminder_cap')))
    deps.log.warn(
      { companyId, refused: reminders.refused },
      'open reminders at their cap (docs/reminders.md#limits): no reminder for these resources',
    );
  // in acceptance order (a group applies its members in that order): the grouped matches and the passed hold
  // candidates of grouped routers
  const grouped = [
    ...planned.flatMap((p) => p.grouped),
    ...holds.passed
      .filter((c) => c.fallback.kind === 'group')
      .map(({ router, eventId, event, order }) => ({ router, eventId, event, order })),
  ].sort((a, b) => a.order.orderSeq - b.order.orderSeq);
  const capped = holds.capped + (grouped.length ? await addGroupMembers(tx, companyId, grouped, now, () => ctx.newId()) : 0);
  return { capped, passedRows };
}

function reportAccepted(planned: PlannedEvent[], deps: IngestDeps, written: Written, wake = true): AcceptedEvent[] {
  const capped = written.capped;
  for (const p of planned) {
    deps.metrics.eventsReceived.inc({ type: p.event.type });
    const matches = p.deliveries.length + p.grouped.length + p.holds.length;
    if (matches) deps.metrics.matches.inc({ event_type_id: p.family }, matches);
    // counted once committed, like the others
    const silenced = p.deliveries.filter((d) => d.silenceId !== undefined).length;
    if (silenced) deps.metrics.silenced.inc({ event_type_id: p.family }, silenced);
  }
  if (capped) deps.metrics.groupMembersCapped.inc(capped);
  if (wake) deps.onAccepted?.();
  return planned.map((p) => ({ id: p.eventId, deliveries: p.deliveries.length + (written.passedRows.get(p.eventId) ?? 0) }));
}
