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
