/**
 * Reconcile metrics of every controller (the operator's CRD controllers and the emitter's health and expiry
 * controllers), labelled by controller. One set per registry: roles start again at every leadership term and
 * share the process registry, and prom-client refuses a second registration of a name.
 * The names keep their `operator` prefix (dashboards and docs use them).
 */
import { Counter, Histogram, type Registry } from 'prom-client';

export interface ReconcileMetrics {
  observe(controller: string, outcome: 'success' | 'requeue' | 'error', seconds: number): void;
}

const byRegistry = new WeakMap<Registry, ReconcileMetrics>();

export function reconcileMetricsFor(registry: Registry): ReconcileMetrics {
  const have = byRegistry.get(registry);
  if (have) return have;
  const total = new Counter({
    name: 'certmgr_notify_operator_reconcile_total',
    help: 'Reconciles by controller and result (success, requeue, error)',
    labelNames: ['controller', 'result'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'certmgr_notify_operator_reconcile_duration_seconds',
    help: 'Reconcile duration by controller',
    labelNames: ['controller'],
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const m: ReconcileMetrics = {
    observe(controller, result, seconds) {
      total.inc({ controller, result });
      duration.observe({ controller }, seconds);
    },
  };
  byRegistry.set(registry, m);
  return m;
}
