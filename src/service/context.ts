import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { RateLimiter } from '../delivery/rate-limit.js';
import type { DeliverySignal } from '../delivery/signal.js';
import type { EgressPolicy } from '../integrations/egress.js';
import type { Notifiers } from '../integrations/index.js';
import type { LogLimiter } from '../log/limiter.js';
import type { RoutingMetrics } from '../routing/metrics.js';
import type { RoutingSnapshots } from '../routing/snapshot.js';
import type { Store } from '../store/types.js';
import type { Quotas } from './quotas.js';
import type { ApiKeyScope } from '../config.js';

/** Process-wide parts the event and delivery operations need (absent in a config-only service). */
export interface ServiceRuntime {
  snapshots: RoutingSnapshots;
  routingMetrics: RoutingMetrics;
  /** The process's notifiers, shared with the delivery worker (test sends go out as deliveries do). */
  notifiers: Notifiers;
  /** Where tenant-given URLs may point (--egress-allow over the default deny-list). */
  egress: EgressPolicy;
  /** Sender domains an EMAIL integration's from may use (--smtp-sender-domains, else the domain of --smtp-from). */
  emailSenderDomains?: readonly string[];
  /** Per-integration send budget, shared by the delivery worker and testIntegration. */
  rateLimiter: RateLimiter;
  /** maxIntegrationRate (--limits-file): the highest rateLimit.perSecond a tenant may set (0 or absent: no bound). */
  maxIntegrationRate?: number;
  /** --public-url: the template variable consoleUrl (simulateRouting renders as the worker does). */
  publicUrl?: string | undefined;
  /** Wakes the delivery worker after deliveries were committed (events accepted, a retry). */
  deliverySignal: Pick<DeliverySignal, 'notify'>;
  log: Logger;
  /** Shared per-tenant, per-cause log rate limit of the per-event and per-delivery log sites. */
  logLimiter?: LogLimiter;
}

/** What every service operation needs; built once per request with the caller's company. */
export interface ServiceContext {
  store: Store;
  companyId: string;
  now: () => number;
  newId: () => string;
  /** Called after a committed change to routers or integrations (routing index invalidation); changedIds: records deleted or updated. */
  onChange?:
    ((what: 'integrations' | 'routers' | 'monitoring' | 'silences', companyId: string, changedIds?: readonly string[]) => void) | undefined;
  /** Who calls (the API key's id), when known: the default author of what it creates (a silence's createdBy). */
  caller?: string | undefined;
  /** The API key's scope, when the request came with one (the console's viewer query). */
  scope?: ApiKeyScope | undefined;
  /** Per-company quotas (defaults: DEFAULT_QUOTAS). */
  quotas?: Partial<Quotas> | undefined;
  runtime?: ServiceRuntime | undefined;
  /** Inventory: a cluster whose agent has not reported for this long is silent (default 900000). */
  clusterSilenceAfterMs?: number | undefined;
}

export function serviceContext(store: Store, companyId: string, extra: Partial<ServiceContext> = {}): ServiceContext {
  return { store, companyId, now: Date.now, newId: randomUUID, ...extra };
}
