/** The delivery worker's options (validated, with their defaults) and what it is given. */
import type { Notifiers } from '../integrations/index.js';
import type { Logger } from '../log/logger.js';
import type { LogLimiter } from '../log/limiter.js';
import type { Registry } from 'prom-client';
import type { ConfigOps, DeliveryQueueOps, IntegrationRecord, IntegrationType } from '../store/types.js';
import type { TemplateRenderer } from '../templates/renderer.js';
import { DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_AGE_MS, DEFAULT_MAX_DELAY_MS } from './backoff.js';
import type { RateLimit, RateLimiter } from './rate-limit.js';
import type { DeliverySignal } from './signal.js';

export interface DeliveryWorkerOptions {
  /**
   * Sends in flight at once. Default 8. The worker holds at most three times as many claims not yet sent: the
   * next batch (up to twice as many) is claimed while the current sends run; and six times as many in all, as
   * outcomes are written behind the sends (a slow outcome write does not hold back the next claims, and the
   * claims stay whole batches while outcomes wait).
   */
  concurrency: number;
  /** Most rows claimed per claim query. Default = 2 × concurrency. */
  batchSize: number;
  /** How often to look for due work when idle. Default 500 ms; its signal wakes the worker at once. */
  pollIntervalMs: number;
  /** Per-attempt timeout (the notifiers have their own; this is the worker's hard stop). Default 10 s. */
  attemptTimeoutMs: number;
  /** How long a claim holds a row before another worker may take it. Default 3 × (attemptTimeoutMs + 1 s grace). */
  leaseMs: number;
  /** Give up (DEAD) when the next attempt would be later than createdAt + maxAgeMs. Default 24 h. */
  maxAgeMs: number;
  /** Backoff: ceiling of the first retry's delay. Default 1 s. */
  baseDelayMs: number;
  /** Backoff: largest delay ceiling. Default 10 min. */
  maxDelayMs: number;
  /** Per-type overrides of DEFAULT_RATE_LIMITS. */
  rateLimits: Partial<Record<IntegrationType, RateLimit>>;
  /** stop(): how long to wait for sends in flight before aborting them. Default attemptTimeoutMs. */
  shutdownTimeoutMs: number;
}

/** What the worker needs from the store. */
export type DeliveryWorkerStore = DeliveryQueueOps & Pick<ConfigOps, 'getIntegration'>;

export interface DeliveryWorkerDeps {
  store: DeliveryWorkerStore;
  /** The process's notifiers (one per integration type, shared with the service's test sends). */
  notifiers: Notifiers;
  /** Notified by whoever commits deliveries due now (src/main.ts hands it to them); default: only kick() notifies. */
  signal?: DeliverySignal;
  logger: Logger;
  /** Registry to register the delivery metrics on (one worker per registry). Omit for no metrics. */
  metrics?: Registry;
  /** Per-tenant, per-cause limit of the per-delivery log lines (shared with ingestion). Default: the worker's own. */
  logLimiter?: LogLimiter;
  /** Epoch-ms clock. Default Date.now. */
  clock?: () => number;
  /** [0, 1) random source for backoff jitter. Default Math.random. */
  rng?: () => number;
  /**
   * The current integration record. Default: the one the claim read in its transaction
   * (ClaimedDelivery.integration), else store.getIntegration. Given, it is always called.
   */
  getIntegration?: (companyId: string, integrationId: string) => Promise<IntegrationRecord | null>;
  /**
   * Owner of this worker's claims, stable across a restart of the same pod/process and unique among live
   * ones (two live workers under one id would take each other's claims at start: duplicates, never losses).
   * Omit: claims are unnamed and only ever retaken after their lease.
   */
  instanceId?: string;
  /** Renders the router's template into Notification.rendered (src/templates/renderer.ts); omit: no templates. */
  templates?: Pick<TemplateRenderer, 'render'>;
  /** A limiter shared with other senders (testIntegration); default a new one from options.rateLimits. */
  rateLimiter?: RateLimiter;
  options?: Partial<DeliveryWorkerOptions>;
}

/** The worker's defaults (serve's deliveryWorkers, deliveryTimeout, deliveryMaxAge and deliveryRetryBase read them). */
export const DEFAULT_WORKER_OPTIONS = {
  concurrency: 8,
  pollIntervalMs: 500,
  attemptTimeoutMs: 10_000,
  maxAgeMs: DEFAULT_MAX_AGE_MS,
  baseDelayMs: DEFAULT_BASE_DELAY_MS,
  maxDelayMs: DEFAULT_MAX_DELAY_MS,
} as const;

/** An attempt whose notifier ignores its abort is given up this long after its timeout: a claim must outlast both. */
export const ATTEMPT_GRACE_MS = 1_000;

export function workerOptions(o: Partial<DeliveryWorkerOptions> = {}): DeliveryWorkerOptions {
  const positive = (v: number | undefined, d: number, what: string): number => {
    if (v === undefined) return d;
    if (!Number.isFinite(v) || v <= 0) throw new RangeError(`delivery worker: ${what} must be a positive number`);
    return v;
  };
  const concurrency = Math.floor(positive(o.concurrency, DEFAULT_WORKER_OPTIONS.concurrency, 'concurrency'));
  const attemptTimeoutMs = positive(o.attemptTimeoutMs, DEFAULT_WORKER_OPTIONS.attemptTimeoutMs, 'attemptTimeoutMs');
  // An attempt is given up at the latest ATTEMPT_GRACE_MS after its timeout (a notifier may ignore its abort), so
  // a claim must outlast both: three of them by default (a claimed row waits at most two for its send slot).
  const attemptMaxMs = attemptTimeoutMs + ATTEMPT_GRACE_MS;
  const leaseMs = positive(o.leaseMs, attemptMaxMs * 3, 'leaseMs');
  if (leaseMs <= attemptMaxMs) {
    throw new RangeError(
      `delivery worker: leaseMs must be longer than attemptTimeoutMs + ${ATTEMPT_GRACE_MS} ms (an attempt, given up at most ${ATTEMPT_GRACE_MS} ms after its timeout, must end before its claim expires)`,
    );
  }
  return {
    concurrency: Math.max(1, concurrency),
    batchSize: Math.max(1, Math.floor(positive(o.batchSize, 2 * concurrency, 'batchSize'))),
    pollIntervalMs: positive(o.pollIntervalMs, DEFAULT_WORKER_OPTIONS.pollIntervalMs, 'pollIntervalMs'),
    attemptTimeoutMs,
    leaseMs,
    maxAgeMs: positive(o.maxAgeMs, DEFAULT_WORKER_OPTIONS.maxAgeMs, 'maxAgeMs'),
    baseDelayMs: positive(o.baseDelayMs, DEFAULT_WORKER_OPTIONS.baseDelayMs, 'baseDelayMs'),
    maxDelayMs: positive(o.maxDelayMs, DEFAULT_WORKER_OPTIONS.maxDelayMs, 'maxDelayMs'),
    rateLimits: o.rateLimits ?? {},
    shutdownTimeoutMs: o.shutdownTimeoutMs !== undefined && o.shutdownTimeoutMs >= 0 ? o.shutdownTimeoutMs : attemptTimeoutMs,
  };
}
