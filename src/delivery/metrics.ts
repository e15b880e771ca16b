/** The delivery worker's Prometheus metrics (registered once per registry). */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DeliveryQueueOps, DeliveryStats } from '../store/types.js';
import { POISON_AFTER_ABANDONED } from './poison.js';

const GAUGED_STATUSES: ReadonlyArray<keyof DeliveryStats> = ['PENDING', 'IN_FLIGHT', 'DEAD'];

/** Metric names (all registered by the worker). */
export const DELIVERY_METRICS = {
  deliveries: 'certmgr_notify_deliveries_total',
  attemptDuration: 'certmgr_notify_delivery_attempt_duration_seconds',
  queueDepth: 'certmgr_notify_delivery_queue_depth',
  oldestDue: 'certmgr_notify_delivery_oldest_due_seconds',
  deadLetters: 'certmgr_notify_delivery_dead_letters_total',
  rateLimited: 'certmgr_notify_delivery_rate_limited_total',
  leaseLost: 'certmgr_notify_delivery_lease_lost_total',
  superseded: 'certmgr_notify_deliveries_superseded_total',
  poisoned: 'certmgr_notify_deliveries_poisoned_total',
} as const;

export interface WorkerMetrics {
  deliveries: Counter<'integration_type' | 'outcome'>;
  attemptDuration: Histogram<'integration_type'>;
  deadLetters: Counter<'integration_type'>;
  rateLimited: Counter<'integration_type'>;
  leaseLost: Counter<'integration_type'>;
  superseded: Counter<'integration_type'>;
  poisoned: Counter<'integration_type'>;
}

function existing<T>(registry: Registry, name: string): T | undefined {
  return registry.getSingleMetric(name) as T | undefined;
}

export function createMetrics(
  registry: Registry,
  store: Pick<DeliveryQueueOps, 'deliveryStats' | 'oldestPendingAge'>,
  clock: () => number,
): WorkerMetrics {
  const r = [registry];
  const m: WorkerMetrics = {
    deliveries:
      existing(registry, DELIVERY_METRICS.deliveries) ??
      new Counter({
        name: DELIVERY_METRICS.deliveries,
        help: 'Delivery attempts by integration type and outcome (delivered, retry, dead)',
        labelNames: ['integration_type', 'outcome'],
        registers: r,
      }),
    attemptDuration:
      existing(registry, DELIVERY_METRICS.attemptDuration) ??
      new Histogram({
        name: DELIVERY_METRICS.attemptDuration,
        help: 'Duration of one delivery attempt (the request to the receiver)',
        labelNames: ['integration_type'],
        buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers: r,
      }),
    deadLetters:
      existing(registry, DELIVERY_METRICS.deadLetters) ??
      new Counter({
        name: DELIVERY_METRICS.deadLetters,
        help: 'Deliveries that ended DEAD (permanent failure, maximum age, integration deleted or disabled)',
        labelNames: ['integration_type'],
        registers: r,
      }),
    rateLimited:
      existing(registry, DELIVERY_METRICS.rateLimited) ??
      new Counter({
        name: DELIVERY_METRICS.rateLimited,
        help: 'Deliveries deferred by the per-integration rate limit (queued, not dropped)',
        labelNames: ['integration_type'],
        registers: r,
      }),
    leaseLost:
      existing(registry, DELIVERY_METRICS.leaseLost) ??
      new Counter({
        name: DELIVERY_METRICS.leaseLost,
        help: 'Attempt outcomes not recorded because the claim had expired and the delivery was claimed again',
        labelNames: ['integration_type'],
        registers: r,
      }),
    superseded:
      existing(registry, DELIVERY_METRICS.superseded) ??
      new Counter({
        name: DELIVERY_METRICS.superseded,
        help: 'Deliveries not sent because a newer notification for the same integration and resource made them obsolete',
        labelNames: ['integration_type'],
        registers: r,
      }),
    poisoned:
      existing(registry, DELIVERY_METRICS.poisoned) ??
      new Counter({
        name: DELIVERY_METRICS.poisoned,
        help: `Deliveries dead-lettered unsent (POISONED) because their process died or stalled while they were in flight ${POISON_AFTER_ABANDONED} times`,
        labelNames: ['integration_type'],
        registers: r,
      }),
  };
  if (!existing(registry, DELIVERY_METRICS.queueDepth)) {
    new Gauge({
      name: DELIVERY_METRICS.queueDepth,
      help: 'Deliveries in the store by status: PENDING and IN_FLIGHT (the queue), DEAD (dead letters)',
      labelNames: ['status'],
      registers: r,
      async collect() {
        try {
          const stats = await store.deliveryStats();
          for (const s of GAUGED_STATUSES) this.set({ status: s }, stats[s]);
        } catch {
          // store closed or unreachable: keep the last values rather than failing the scrape
        }
      },
    });
  }
  if (!existing(registry, DELIVERY_METRICS.oldestDue)) {
    new Gauge({
      name: DELIVERY_METRICS.oldestDue,
      help: 'How long the most overdue due PENDING delivery has been waiting (0 when the queue keeps up)',
      registers: r,
      async collect() {
        try {
          this.set((await store.oldestPendingAge(clock())) / 1000);
        } catch {
          // as above
        }
      },
    });
  }
  return m;
}
