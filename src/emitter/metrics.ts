/** The emitter's own metrics; one set per registry, since the emitter starts again at every leadership term. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ExpiryMetrics } from './expiry/controller.js';
import type { HealthMetrics } from './health/controller.js';
import type { SenderMetrics } from '../client/events.js';

export interface EmitterMetrics {
  sender: SenderMetrics;
  health: HealthMetrics;
  expiry: ExpiryMetrics;
}

const metricsByRegistry = new WeakMap<Registry, EmitterMetrics>();

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
  const unhealthy = new Gauge({
    name: 'certmgr_notify_emitter_unhealthy_resources',
    help: 'Resources whose .notready was emitted and not yet resolved, by kind',
    labelNames: ['kind'],
    registers: [registry],
  });
  const scanned = new Counter({
    name: 'certmgr_notify_emitter_expiry_evaluations_total',
    help: 'TLS Secret evaluations by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const m: EmitterMetrics = {
    sender: {
      accepted: (type) => accepted.inc({ type }),
      failedAttempt: (reason) => failed.inc({ reason }),
      pending: (n) => pending.set(n),
    },
    health: { unhealthy: (kind, n) => unhealthy.set({ kind }, n) },
    expiry: { scanned: (outcome) => scanned.inc({ outcome }) },
  };
  metricsByRegistry.set(registry, m);
  return m;
}
