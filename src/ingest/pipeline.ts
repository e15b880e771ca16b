/**
 * Event ingestion as named stages: parse (parse.ts, called by the HTTP route) → route → silence → group → remind,
 * planned per event outside the transaction, → write, the plan in ONE transaction. What is accepted (202) is
 * durable: the delivery worker takes it from the store.
 */
import { orderOfEvent } from '../delivery/order.js';
import { familyOfType, type InternalEvent } from '../events/families.js';
import { TimeSlicer } from '../routing/slicer.js';
import type { SilenceOps } from '../store/types.js';
import type { KeyedDelivery } from '../silences/decide.js';
import type { IngestContext, IngestDeps, IngestRun, PlannedEvent, Snapshot } from './stage.js';
import { routeEvent } from './route.js';
import { silenceDeliveries } from './silence.js';
import { groupMatches } from './group.js';
import { remindCandidates } from './remind.js';
import { writePlanned, type IngestWriteOps, type Written } from './write.js';

export type { IngestDeps } from './stage.js';

export interface AcceptedEvent {
  id: string;
  deliveries: number;
}

export async function acceptEvents(ctx: IngestContext, events: InternalEvent[], deps: IngestDeps): Promise<AcceptedEvent[]> {
  const snap = await deps.snapshots.get(ctx.companyId);
  const now = ctx.now();
  const planned = await planEvents({ ctx, reader: ctx.store, snap, deps, now, slicer: new TimeSlicer() }, events);
  // the worker is woken at the commit, so the send does not wait for the commit's fsync; the 202 does
  const written = await ctx.store.ingestTransaction(
    (tx) => writePlanned(tx, ctx, planned, now, deps),
    () => deps.deliverySignal?.notify(),
  );
  return reportAccepted(planned, deps, written, false);
}

/**
 * The same ingestion inside the caller's transaction, for a caller that writes more in it (the expiry scan:
 * its marks), so the events are accepted exactly when the rest is written. `snap` is read before the
 * transaction (the routing snapshot reads the store). Call `committed()` once the transaction has committed.
 */
export async function acceptEventsInTransaction(
  ctx: IngestContext,
  tx: SilenceOps & IngestWriteOps,
  snap: Snapshot,
  events: InternalEvent[],
  deps: IngestDeps,
): Promise<{ accepted: AcceptedEvent[]; unmatched: number; committed(): void }> {
  const now = ctx.now();
  const planned = await planEvents({ ctx, reader: tx, snap, deps, now, slicer: new TimeSlicer() }, events);
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

/**
 * Each event through route → silence → group → remind. Routing is CPU-bound and a batch may hold 1,000 events:
 * the stages share one time slicer, so other tenants' requests and /healthz are served in between (each
 * evaluation is bounded by the filter cost budget).
 */
async function planEvents(run: IngestRun, events: InternalEvent[]): Promise<PlannedEvent[]> {
  run.deps.log.debug({ events: events.length }, 'routing events');
  const planned: PlannedEvent[] = [];
  // the deliveries planned in this request per (integration, order key): the recovery exception looks at them too
  const plannedByKey = new Map<string, KeyedDelivery[]>();
  for (const [index, event] of events.entries()) {
    const eventId = run.ctx.newId();
    // order per key: the correlation key, the event's own time and the acceptance sequence
    const order = orderOfEvent(event, run.now, index);
    const family = familyOfType(event.type).eventTypeId;
    const { matched, deliveries } = await routeEvent(run, event, eventId, family, order);
    await silenceDeliveries(run, event, deliveries, plannedByKey);
    const { grouped, rows, holds } = groupMatches(event, eventId, order, matched, deliveries);
    const reminders = remindCandidates(event, family, eventId, order, matched, rows);
    planned.push({ event, eventId, family, deliveries: rows, reminders, grouped, holds, order });
  }
  run.deps.log.debug({ events: events.length }, 'routed events');
  return planned;
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
  if (wake) deps.deliverySignal?.notify();
  return planned.map((p) => ({ id: p.eventId, deliveries: p.deliveries.length + (written.passedRows.get(p.eventId) ?? 0) }));
}
