import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One registry per process role instance (tests start several apps in one process). */
export interface HttpMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  duration: Histogram<'method' | 'route'>;
}

export function createHttpMetrics(registry = new Registry(), withDefaults = true): HttpMetrics {
  if (withDefaults) collectDefaultMetrics({ register: registry, prefix: 'certmgr_notify_' });
  return {
    registry,
    requests: new Counter({
      name: 'certmgr_notify_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'certmgr_notify_http_request_duration_seconds',
      help: 'HTTP request latency',
      labelNames: ['method', 'route'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
}

/**
 * certmgr_notify_egress_refused_total{reason,stage}: tenant destinations the egress policy refused. `reason` is a
 * coarse class (EgressRefusal: denied_address, metadata_host, userinfo, scheme, port, invalid_url, no_host), never
 * the address; `stage` is create_update (the early check) or connect (a send: pre-send check or connect time).
 */
export function createEgressRefusedCounter(registry: Registry): Counter<'reason' | 'stage'> {
  return new Counter({
    name: 'certmgr_notify_egress_refused_total',
    help: 'Tenant destinations refused by the egress policy, by coarse reason and stage (create_update or connect)',
    labelNames: ['reason', 'stage'],
    registers: [registry],
  });
}
