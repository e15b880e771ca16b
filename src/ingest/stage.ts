/**
 * What every ingestion stage shares: the run of one request (company, store reader, routing snapshot, clock,
 * time slicer) and the event as the stages build it up, stage by stage (pipeline.ts composes them).
 */
import type { Logger } from 'pino';
import type { LogLimiter } from '../log/limiter.js';
import type { EventOrder } from '../delivery/order.js';
import type { DeliverySignal } from '../delivery/signal.js';
import type { EventTypeId, InternalEvent } from '../events/families.js';
import type { TimeSlicer } from '../routing/slicer.js';
import type { RoutingMetrics } from '../routing/metrics.js';
import type { RoutingSnapshots } from '../routing/snapshot.js';
import type { NewDelivery, SilenceOps, Store } from '../store/types.js';
import type { ReminderCandidate } from '../reminders/ingest.js';
import type { GroupedMatch } from '../grouping/ingest.js';
import type { HoldCandidate } from '../grouping/hold-ingest.js';

/** The request ingestion runs for (a ServiceContext is one): the company, its store, the clock and the ids. */
export interface IngestContext {
  store: SilenceOps & Pick<Store, 'ingestTransaction'>;
  companyId: string;
  now: () => number;
  newId: () => string;
}

export interface IngestDeps {
  snapshots: RoutingSnapshots;
  metrics: RoutingMetrics;
  log: Logger;
  /** Rate-limits the per-event warn lines per tenant and cause; without it every line is written. */
  logLimiter?: LogLimiter | undefined;
  /** Notified after a commit that wrote deliveries: wakes the delivery worker. */
  deliverySignal?: Pick<DeliverySignal, 'notify'>;
}

export type Snapshot = Awaited<ReturnType<RoutingSnapshots['get']>>;

/** One request's ingestion: what every stage reads. */
export interface IngestRun {
  ctx: IngestContext;
  /** the store the plan reads (outside the transaction, or the caller's transaction) */
  reader: SilenceOps;
  snap: Snapshot;
  deps: IngestDeps;
  now: number;
  slicer: TimeSlicer;
}

export interface PlannedEvent {
  event: InternalEvent;
  eventId: string;
  family: EventTypeId;
  deliveries: NewDelivery[];
  /** the remind stage: the (event, router) pairs of routers that keep reminders (docs/reminders.md) */
  reminders: ReminderCandidate[];
  /** Matches of routers with groupBy: members of a group, no delivery row (docs/grouping.md). */
  grouped: GroupedMatch[];
  /** Matches of routers with holdUnderIssuer: decided in the transaction (docs/grouping.md "Held under the issuer"). */
  holds: HoldCandidate[];
  /** Its order fields: the health page's resource key and position (health.ts). */
  order: EventOrder;
}
