/** Routing + delivery parts of a running service: snapshots, notifiers, metrics and (leader-only) the worker. */
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { ServeConfig } from '../config/config.js';
import { createNotifier } from '../integrations/index.js';
import { LogLimiter } from '../log/limiter.js';
import type { Notifier } from '../integrations/types.js';
import { createRoutingMetrics } from '../routing/metrics.js';
import { RoutingSnapshots } from '../routing/snapshot.js';
import type { ServiceRuntime } from '../service/context.js';
import type { IntegrationType, Store } from '../store/types.js';

export function createRuntime(opts: { store: Store; cfg: ServeConfig; log: Logger; registry: Registry; kick?: () => void }): ServiceRuntime {
  const notifiers = new Map<IntegrationType, Notifier>();
  const notifierOptions = {
    incidentEventsUrl: opts.cfg.incidentEventsUrl,
    timeoutMs: opts.cfg.deliveryTimeoutMs,
    userAgent: 'certmgr-notify',
    smtpFrom: opts.cfg.smtpFrom,
    ...(opts.cfg.smtpUrl ? { smtpUrl: opts.cfg.smtpUrl } : {}),
  };
  return {
    snapshots: new RoutingSnapshots(opts.store),
    routingMetrics: createRoutingMetrics(opts.registry),
    notifierFor(type) {
      let n = notifiers.get(type);
      if (!n) notifiers.set(type, (n = createNotifier(type, notifierOptions)));
      return n;
    },
    kickDelivery: () => opts.kick?.(),
    log: opts.log,
    logLimiter: new LogLimiter(opts.log, {
      limits: { perMinute: opts.cfg.logRateLimitPerMinute, burst: opts.cfg.logRateBurst },
      registry: opts.registry,
    }),
  };
}
