/** Routing + delivery parts of a running service: snapshots, notifiers, metrics, the delivery worker's signal. */
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { ServeConfig } from '../config.js';
import { RateLimiter, type RateLimit } from '../delivery/rate-limit.js';
import type { DeliverySignal } from '../delivery/signal.js';
import type { IngestDeps } from '../ingest/pipeline.js';
import { createEgressRefusedCounter, EgressPolicy } from '../integrations/egress.js';
import { createNotifier, Notifiers } from '../integrations/index.js';
import { LogLimiter } from '../log/limiter.js';
import { createRoutingMetrics, registerRoutingCacheMetrics } from '../routing/metrics.js';
import { DEFAULT_ROUTING_CACHE_LIMITS, RoutingSnapshots } from '../routing/snapshot.js';
import type { ServiceRuntime } from './context.js';
import type { IntegrationType, Store } from '../store/types.js';

export function createRuntime(opts: {
  store: Store;
  cfg: ServeConfig;
  log: Logger;
  registry: Registry;
  /** Notified after deliveries are committed; the delivery worker waits on it (src/main.ts). */
  deliverySignal: Pick<DeliverySignal, 'notify'>;
  /** Per-integration-type overrides of the delivery rate limits (benches lift them; users get the defaults). */
  rateLimits?: Partial<Record<IntegrationType, RateLimit>> | undefined;
}): ServiceRuntime & { logLimiter: LogLimiter } {
  // One policy (and so one pooled dispatcher) for every tenant destination of this process.
  const refused = createEgressRefusedCounter(opts.registry);
  const egress = new EgressPolicy(opts.cfg.egressAllow, { onRefused: (reason, stage) => refused.inc({ reason, stage }) });
  const notifierOptions = {
    egress,
    incidentEventsUrl: opts.cfg.incidentEventsUrl,
    opsgenieApiUrl: opts.cfg.opsgenieApiUrl,
    timeoutMs: opts.cfg.deliveryTimeoutMs,
    userAgent: 'certmgr-notify',
    smtpFrom: opts.cfg.smtpFrom,
    smtpSenderDomains: opts.cfg.smtpSenderDomains,
    smtpUrl: opts.cfg.smtpUrl || undefined,
    publicUrl: opts.cfg.publicUrl,
  };
  // a company's compiled filters fit its router quota (2 per router: an update briefly holds old and new) and its
  // silences' matchers (one per family a silence applies to: at most 4)
  const filters = DEFAULT_ROUTING_CACHE_LIMITS.filters;
  const maxEntriesPerTenant = Math.max(filters.maxEntriesPerTenant, 2 * opts.cfg.maxRoutersPerCompany + 4 * opts.cfg.maxSilencesPerCompany);
  const snapshots = new RoutingSnapshots(opts.store, {
    limits: { filters: { ...filters, maxEntriesPerTenant, maxEntries: Math.max(filters.maxEntries, maxEntriesPerTenant) } },
  });
  registerRoutingCacheMetrics(opts.registry, () => snapshots.stats());
  return {
    snapshots,
    routingMetrics: createRoutingMetrics(opts.registry),
    notifiers: new Notifiers((type) => createNotifier(type, notifierOptions)),
    egress,
    emailSenderDomains: opts.cfg.smtpSenderDomains,
    // Shared with the delivery worker: test sends spend the same per-integration budget.
    rateLimiter: new RateLimiter(opts.rateLimits),
    maxIntegrationRate: opts.cfg.maxIntegrationRate,
    deliverySignal: opts.deliverySignal,
    publicUrl: opts.cfg.publicUrl,
    log: opts.log,
    logLimiter: new LogLimiter(opts.log, {
      limits: { perMinute: opts.cfg.logRateLimitPerMinute, burst: opts.cfg.logRateBurst },
      registry: opts.registry,
    }),
  };
}

/** The ingestion parts of a running service, for every path that accepts events (API, expiry scan, silence). */
export function ingestDepsOf(rt: ServiceRuntime, log: Logger): IngestDeps {
  return {
    snapshots: rt.snapshots,
    metrics: rt.routingMetrics,
    log,
    logLimiter: rt.logLimiter,
    deliverySignal: rt.deliverySignal,
  };
}
