/** The emitter's own metrics; one set per registry, since the emitter starts again at every leadership term. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { HealthMetrics } from './health/controller.js';
import type { SenderMetrics } from '../client/events.js';
import type { InventoryMetrics } from './inventory/reporter.js';
import type { InventoryOutcome } from '../client/inventory.js';

export interface EmitterMetrics {
  sender: SenderMetrics;
  health: HealthMetrics;
  inventory: InventoryMetrics;
  listPage(informer: string): void;
  /** a whole list done (start, relist): with streamed lists one page is not one list */
  listDone(informer: string): void;
}

const metricsByRegistry = new WeakMap<Registry, EmitterMetrics>();

/**
 * Whether an inventory report's outcome proves the emitter is in sync with the hub: the hub has its state (applied,
 * or a retry it already had). The reporter sends an empty delta as a heartbeat when idle, so this advances at
 * least every heartbeat interval while the emitter works: the dead man's switch of docs/runbooks.md.
 */
export function reportIsSync(outcome: InventoryOutcome['kind']): boolean {
  return outcome === 'applied' || outcome === 'duplicate';
}

export function metricsFor(registry: Registry): EmitterMetrics {
  const have = metricsByRegistry.get(registry);
  if (have) return have;
  const accepted = new Counter({
    name: 'certmgr_notify_emitter_events_total',
    help: 'Events the emitter sent and the service accepted, by type',
    labelNames: ['type'],
    registers: [registry],
  });
  const failed = new Counter({
    name: 'certmgr_notify_emitter_send_failures_total',
    help: 'Failed POST /v1/events attempts (retried), by reason',
    labelNames: ['reason'],
    registers: [registry],
  });
  const pending = new Gauge({
    name: 'certmgr_notify_emitter_pending_events',
    help: 'Events waiting for the service to accept them',
    registers: [registry],
  });
  const dropped = new Counter({
    name: 'certmgr_notify_emitter_dropped_events_total',
    help: 'Events refused because --max-pending-events were already waiting for the service (derived again when their reconcile is retried)',
    registers: [registry],
  });
  const unhealthy = new Gauge({
    name: 'certmgr_notify_emitter_unhealthy_resources',
    help: 'Resources whose .notready was emitted and not yet resolved, by kind',
    labelNames: ['kind'],
    registers: [registry],
  });
  const reports = new Counter({
    name: 'certmgr_notify_inventory_reports_total',
    help: 'Inventory reports sent to the hub, by kind (snapshot, delta) and outcome (applied, duplicate, resync, unsupported, rejected, throttled, retry)',
    labelNames: ['kind', 'outcome'],
    registers: [registry],
  });
  const resyncs = new Counter({
    name: 'certmgr_notify_inventory_resyncs_total',
    help: 'Full inventory snapshots started, by reason (start, resync-required, gap, rejected, unsupported)',
    labelNames: ['reason'],
    registers: [registry],
  });
  const certificates = new Gauge({
    name: 'certmgr_notify_inventory_certificates',
    help: 'TLS Secrets in the last inventory snapshot',
    registers: [registry],
  });
  const pendingChanges = new Gauge({
    name: 'certmgr_notify_inventory_pending_changes',
    help: 'Coalesced inventory changes not yet reported',
    registers: [registry],
  });
  const lastSync = new Gauge({
    name: 'certmgr_notify_emitter_last_sync_timestamp_seconds',
    help: 'When the hub last accepted an inventory report of this emitter (snapshot, delta or idle heartbeat), Unix time; 0 before the first',
    registers: [registry],
  });
  const pages = new Counter({
    name: 'certmgr_notify_informer_list_pages_total',
    help: 'LIST pages read by the emitter informers (paginated lists)',
    labelNames: ['informer'],
    registers: [registry],
  });
  const lists = new Counter({
    name: 'certmgr_notify_informer_lists_total',
    help: 'Whole LISTs done by the emitter informers (the first, and every relist)',
    labelNames: ['informer'],
    registers: [registry],
  });
  const m: EmitterMetrics = {
    sender: {
      accepted: (type) => accepted.inc({ type }),
      failedAttempt: (reason) => failed.inc({ reason }),
      pending: (n) => pending.set(n),
      dropped: (n) => dropped.inc(n),
    },
    health: { unhealthy: (kind, n) => unhealthy.set({ kind }, n) },
    inventory: {
      report: (kind, outcome) => {
        reports.inc({ kind, outcome });
        if (reportIsSync(outcome)) lastSync.setToCurrentTime();
      },
      resync: (reason) => resyncs.inc({ reason }),
      certificates: (n) => certificates.set(n),
      pendingChanges: (n) => pendingChanges.set(n),
    },
    listPage: (informer) => pages.inc({ informer }),
    listDone: (informer) => lists.inc({ informer }),
  };
  metricsByRegistry.set(registry, m);
  return m;
}
