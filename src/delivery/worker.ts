/**
 * The delivery worker: drains the outbox (store `deliveries`) into the integrations, at least once.
 *
 *   loop:  claim up to batchSize due deliveries (while ≤ concurrency are held)  ──►  for each, concurrently:
 *            integration gone or disabled ─────────────► DEAD (visible: API, metric, warn log)
 *            a newer one for the key makes it obsolete ─► SUPERSEDED (not sent; attempt not counted)
 *            rate limited ─────────────────────────────► deferred (PENDING at its slot; attempt not counted; slots
 *                                                          go round-robin across the routers sharing the integration)
 *            notifier.send(notification, signal) ──────► decide(): DELIVERED | PENDING at T | DEAD
 *
 * Round trips: one claim statement per batch (joined with the events; it also says whether a newer
 * delivery of the key was already sent, so the 'in-order' fence runs only then), one integration read per
 * integration per batch, and the fences and outcomes of attempts that end together grouped into one statement each
 * (batcher.ts: flushed when the previous flush is done, no fixed wait). The next batch is claimed while the
 * current one sends (at most 3 × concurrency claims held; a claim still ours for a whole attempt is sent, else it
 * is handed back uncounted).
 *
 * Durability: a delivery is only DELIVERED after the receiver said so; a crash at any point leaves
 * the row PENDING or IN_FLIGHT, and an IN_FLIGHT row whose lease expired is claimed again (by this
 * or another process). The receiver then sees the same delivery id again (webhook-id, dedup_key,
 * Message-ID): at-least-once with a stable idempotency key.
 *
 * Leases and fencing: a claim holds the row for `leaseMs` (default 3 × (attemptTimeoutMs + 1 s grace), so an
 * attempt always ends well before its lease). Outcomes are written with the attempt number the
 * claim returned, and the store ignores them if the row moved on (see DeliveryQueueOps).
 *
 * Order per key (delivery/order.ts): the claim hands out only the oldest open delivery of
 * each (integration, correlation key), so a key has one delivery in flight at a time and a receiver
 * sees a key's notifications in event order; right before sending, the store atomically supersedes
 * the claimed delivery if a newer one of its key made it obsolete (INCIDENT_MGMT: any newer one;
 * other types: a newer one already sent). Blocked keys are skipped, never waited on.
 *
 * Fast recovery: claims carry the worker's instance id (--instance-id, default the hostname, which is the
 * pod name in Kubernetes and survives a container restart). A worker starting under an id takes back that
 * id's claims at once (they belong to a process that is gone: no lease to wait for); a graceful stop hands
 * back whatever it still holds. Claims of other ids are retaken only when their lease ends.
 *
 * Multiple workers (processes/replicas) may share one PostgreSQL store: claims use
 * FOR UPDATE SKIP LOCKED. The rate limiter is per process.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { isEventType } from '../events/families.js';
import type { DeliveryResult, Notification, Notifier } from '../integrations/types.js';
import type { Logger } from '../log/logger.js';
import { LogLimiter, type LogCause, type LogLevel } from '../log/limiter.js';
import type {
  ClaimedDelivery,
  DeliveryOutcome,
  DeliveryQueueOps,
  DeliveryStats,
  IntegrationRecord,
  IntegrationType,
  StoreOps,
  SupersedeCheck,
} from '../store/types.js';
import { Batcher } from './batcher.js';
import { FailureLogWindow } from './failure-log.js';
import { decide, DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_AGE_MS, DEFAULT_MAX_DELAY_MS, errorOf, type Decision } from './backoff.js';
import { orderModeOf } from './order.js';
import { POISON_AFTER_ABANDONED, poisonedError, triageClaims } from './poison.js';
import { RateLimiter, type RateLimit } from './rate-limit.js';
import { SecretKeyError } from '../store/secret-box.js';
import type { TemplateRenderer } from '../templates/renderer.js';
import { parseSnapshot } from '../grouping/snapshot.js';

/** A group notification's `group` (and `reminder` for a repeat) from the snapshot its delivery was written with. */
function groupOf(d: ClaimedDelivery): Pick<Notification, 'group' | 'reminder'> {
  const snap = d.groupSnapshot === undefined ? null : parseSnapshot(d.groupSnapshot);
  return snap ? { group: snap.group, ...(snap.reminder ? { reminder: true } : {}) } : {};
}

/** Why the integration's secrets (decrypted on first access) cannot be read, or null. The message names row and key id only. */
function unreadableSecrets(integration: IntegrationRecord): string | null {
  try {
    void integration.secrets;
    return null;
  } catch (err) {
    if (err instanceof SecretKeyError) return `cannot decrypt the integration's secrets: ${err.message}`;
    throw err;
  }
}

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
  /** How often to look for due work when idle. Default 500 ms; kick() wakes the worker at once. */
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
export type DeliveryWorkerStore = DeliveryQueueOps & Pick<StoreOps, 'getIntegration'>;

export interface DeliveryWorkerDeps {
  store: DeliveryWorkerStore;
  /** The notifier for an integration type (called once per type; the result is cached). */
  notifiers: (type: IntegrationType) => Notifier;
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

const DEFAULT_WORKER_OPTIONS = {
  concurrency: 8,
  pollIntervalMs: 500,
  attemptTimeoutMs: 10_000,
  maxAgeMs: DEFAULT_MAX_AGE_MS,
  baseDelayMs: DEFAULT_BASE_DELAY_MS,
  maxDelayMs: DEFAULT_MAX_DELAY_MS,
} as const;

/** An attempt whose notifier ignores its abort is given up this long after its timeout: a claim must outlast both. */
const ATTEMPT_GRACE_MS = 1_000;

function workerOptions(o: Partial<DeliveryWorkerOptions> = {}): DeliveryWorkerOptions {
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

interface WorkerMetrics {
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

function createMetrics(registry: Registry, store: DeliveryWorkerStore, clock: () => number): WorkerMetrics {
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

const UNKNOWN_TYPE = 'unknown';
const MAX_DUE_HINTS = 1024;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class DeliveryWorker {
  readonly options: DeliveryWorkerOptions;
  readonly #store: DeliveryWorkerStore;
  readonly #notifierOf: (type: IntegrationType) => Notifier;
  readonly #notifiers = new Map<IntegrationType, Notifier>();
  readonly #log: Logger;
  readonly #metrics: WorkerMetrics | undefined;
  readonly #clock: () => number;
  readonly #rng: () => number;
  readonly #getIntegration: (companyId: string, integrationId: string) => Promise<IntegrationRecord | null>;
  /** getIntegration was given: the records the claims carry are not used. */
  readonly #ownIntegrationReads: boolean;
  readonly #limiter: RateLimiter;
  readonly #logLimiter: LogLimiter;
  /** A failed attempt's warn line: at most one per integration per minute (failure-log.ts). */
  readonly #failureLog = new FailureLogWindow();
  readonly #owner: string | null;
  readonly #templates: Pick<TemplateRenderer, 'render'> | undefined;

  #running = false;
  #loop: Promise<void> | undefined;
  /** Claimed deliveries being processed (until their outcome is written): at most 6 × concurrency. */
  #inFlight = new Set<Promise<void>>();
  /** Of those, the ones whose attempt has not ended (waiting for a send slot, or sending): at most 3 × concurrency. */
  #unsent = 0;
  /** Sends in progress (at most concurrency) and the claimed deliveries waiting for one, in claim order. */
  #sending = 0;
  #sendWaiters: (() => void)[] = [];
  #abort = new AbortController();
  #wake: (() => void) | undefined;
  /** While the loop sleeps: wake it no later than `at` (epoch ms). */
  #wakeBy: ((at: number) => void) | undefined;
  /**
   * Due times of deliveries this worker retried or deferred, ascending (hints: polling still covers
   * everything; only the earliest MAX_DUE_HINTS are kept).
   */
  #dueHints: number[] = [];
  #kicked = false;
  /** The last claim filled every free slot, so more may be due: a finished send should claim again. */
  #backlog = false;
  #claimFailures = 0;
  /**
   * Write-behind (batcher.ts): the fences and the outcomes of attempts that end while a statement runs go
   * together in the next one. A caller still waits for its own row's result, so nothing is sent before its fence
   * and a slot is only freed once its outcome is written (or known not written: then its lease expires, at least once).
   */
  readonly #fences: Batcher<SupersedeCheck, boolean>;
  readonly #outcomes: Batcher<DeliveryOutcome, boolean>;

  constructor(deps: DeliveryWorkerDeps) {
    this.options = workerOptions(deps.options);
    this.#store = deps.store;
    this.#notifierOf = deps.notifiers;
    this.#log = deps.logger.child({ component: 'delivery-worker' });
    this.#logLimiter = deps.logLimiter ?? new LogLimiter(this.#log, deps.metrics ? { registry: deps.metrics } : {});
    this.#clock = deps.clock ?? Date.now;
    this.#rng = deps.rng ?? Math.random;
    this.#getIntegration = deps.getIntegration ?? ((c, i) => deps.store.getIntegration(c, i));
    this.#ownIntegrationReads = deps.getIntegration !== undefined;
    this.#limiter = deps.rateLimiter ?? new RateLimiter(this.options.rateLimits);
    this.#owner = deps.instanceId || null;
    this.#templates = deps.templates;
    this.#metrics = deps.metrics ? createMetrics(deps.metrics, deps.store, this.#clock) : undefined;
    this.#fences = new Batcher((items) => this.#store.supersedeMany(items, this.#clock()));
    this.#outcomes = new Batcher((items) => this.#store.recordOutcomes(items, this.#clock()));
  }

  get running(): boolean {
    return this.#running;
  }

  /** Claimed deliveries in progress right now (waiting for a send slot, sending, or having their outcome written). */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Starts claiming and sending. Idempotent. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#abort = new AbortController();
    this.#loop = this.#run();
  }

  /** Wakes the worker now (e.g. right after ingestion committed new deliveries). Cheap; safe any time. */
  kick(): void {
    this.#kicked = true;
    this.#wake?.();
  }

  /**
   * Graceful stop: claims nothing more, waits up to `timeoutMs` for the sends in flight, then
   * aborts the rest (they go back to PENDING, due at once, for the next process). Resolves when
   * every send has been recorded or abandoned (an abandoned claim is retaken after its lease).
   */
  async stop(timeoutMs: number = this.options.shutdownTimeoutMs): Promise<void> {
    if (!this.#loop) return;
    this.#running = false;
    this.#wake?.();
    await this.#loop;
    this.#loop = undefined;
    const all = Promise.allSettled([...this.#inFlight]);
    const finished = await Promise.race([all.then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!finished) {
      this.#log.warn({ inFlight: this.#inFlight.size }, 'delivery worker: aborting sends still in flight at shutdown');
      this.#abort.abort();
      await Promise.race([all, sleep(2_000)]);
    }
    // Whatever is still claimed (a send that ignored the abort, an outcome the store did not take) goes back
    // now, due at once for the next process, instead of after its lease.
    await this.#releaseOwn('stop');
  }

  /** Hands back this instance's IN_FLIGHT claims (at start: a previous process under this id died holding them). */
  async #releaseOwn(when: 'start' | 'stop'): Promise<void> {
    if (!this.#owner) return;
    try {
      const released = await this.#store.releaseClaims(this.#owner, this.#clock(), when === 'start');
      if (released > 0)
        this.#log.info(
          { released, instanceId: this.#owner },
          when === 'start'
            ? 'delivery worker: took back the claims a previous process of this instance held; sending them now'
            : 'delivery worker: released the claims still held at shutdown',
        );
    } catch (err) {
      // not fatal: those claims are retaken when their leases end
      this.#log.warn({ err, instanceId: this.#owner }, `delivery worker: could not release this instance's claims at ${when}`);
    }
  }

  async #run(): Promise<void> {
    await this.#releaseOwn('start');
    while (this.#running) {
      this.#kicked = false;
      const at = this.#clock();
      let passed = 0;
      while (passed < this.#dueHints.length && this.#dueHints[passed]! <= at) passed++;
      if (passed) this.#dueHints.splice(0, passed);
      // Claim while at most `concurrency` claims are held (the sends in progress), up to three times that: the
      // next batches are ready when send slots free, a claim statement serves up to 2 × concurrency sends (issue
      // 12: half the claims per delivery), and a claimed row waits at most two attempts for its slot (the lease is
      // three; a row whose lease is too short by then is handed back uncounted).
      // Rows whose attempt ended and whose outcome is being written (behind, batched) count only against the
      // 6 × concurrency bound on what is held: waiting for the store's write must not keep the next batch waiting
      // (nor shrink it: with 4 ×, claims averaged 6 rows instead of 16 on SQLite, each with its commit).
      const C = this.options.concurrency;
      let full = this.#unsent > C || this.#inFlight.size >= 6 * C;
      if (!full) {
        const limit = Math.min(3 * C - this.#unsent, 6 * C - this.#inFlight.size, this.options.batchSize);
        let batch: ClaimedDelivery[] = [];
        try {
          batch = await this.#store.claimDeliveries(this.#clock(), limit, this.options.leaseMs, this.#owner);
          this.#claimFailures = 0;
        } catch (err) {
          this.#claimFailures++;
          // Log the first failure and then every 20th, so a database outage doesn't flood the log.
          if (this.#claimFailures === 1 || this.#claimFailures % 20 === 0) {
            this.#log.error({ err, failures: this.#claimFailures }, 'delivery worker: claiming deliveries failed');
          }
        }
        // The record the claim read (no round trip), else one read per integration per claim batch (the record
        // decrypts its secrets once).
        const integrations = new Map<string, Promise<IntegrationRecord | null>>();
        const integrationOf = (d: ClaimedDelivery) => {
          if (d.integration !== undefined && !this.#ownIntegrationReads) return Promise.resolve(d.integration);
          const key = `${d.companyId}/${d.integrationId}`;
          let p = integrations.get(key);
          if (!p) integrations.set(key, (p = this.#getIntegration(d.companyId, d.integrationId)));
          return p;
        };
        const { poisoned, alone, rest } = triageClaims(batch);
        for (const d of poisoned) this.#track(d, integrationOf);
        if (alone) {
          await this.#sendAlone(alone, rest, integrationOf);
          continue;
        }
        for (const d of rest) this.#track(d, integrationOf);
        full = batch.length === limit;
      }
      this.#backlog = full;
      if (!this.#running) break;
      if (full && this.#unsent <= C && this.#inFlight.size < 6 * C) continue;
      if (this.#kicked) continue;
      // Sleep for the poll interval (after failed claims: back off, up to 10 intervals), or less when
      // a retry or a rate-limited delivery of ours falls due sooner, or until kicked.
      const sleepMs = this.#claimFailures
        ? this.options.pollIntervalMs * Math.min(10, 2 ** Math.min(this.#claimFailures, 4))
        : Math.min(
            this.options.pollIntervalMs,
            this.#dueHints.length === 0 ? Infinity : Math.max(0, this.#dueHints[0]! - this.#clock()) + 1,
          );
      await new Promise<void>((resolve) => {
        let fireAt = Date.now() + sleepMs;
        let timer = setTimeout(() => done(), sleepMs);
        const done = () => {
          clearTimeout(timer);
          this.#wake = undefined;
          this.#wakeBy = undefined;
          resolve();
        };
        this.#wake = done;
        this.#wakeBy = (at) => {
          // `at` is on the worker's clock; the timer runs on the real one: convert via the delay.
          const inMs = Math.max(0, at - this.#clock());
          if (this.#claimFailures || Date.now() + inMs >= fireAt) return;
          clearTimeout(timer);
          fireAt = Date.now() + inMs;
          timer = setTimeout(() => done(), inMs + 1);
        };
      });
    }
  }

  /**
   * A delivery whose claim was abandoned before (its process died while it was in flight, perhaps because of it) is
   * sent with nothing else in flight, so that if it kills this process again only its own claim is abandoned. The
   * rest of its batch goes back uncounted and is claimed again after it.
   */
  async #sendAlone(
    d: ClaimedDelivery,
    others: readonly ClaimedDelivery[],
    integrationOf: (d: ClaimedDelivery) => Promise<IntegrationRecord | null>,
  ): Promise<void> {
    const now = this.#clock();
    await Promise.allSettled(others.map((o) => this.#store.deferDelivery(o.id, o.attempts, now, now)));
    await Promise.allSettled([...this.#inFlight]);
    if (this.#admit('warn', d, 'delivery_abandoned'))
      this.#log.warn(
        { deliveryId: d.id, companyId: d.companyId, abandonedClaims: d.abandonedClaims },
        'delivery worker: sending alone a delivery whose process died or stalled while it was in flight',
      );
    this.#track(d, integrationOf);
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Resolves when this delivery may send (at most `concurrency` sends at once; waiters in claim order). */
  #sendSlot(): Promise<void> {
    if (this.#sending < this.options.concurrency) {
      this.#sending++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.#sendWaiters.push(resolve));
  }

  #freeSendSlot(): void {
    const next = this.#sendWaiters.shift();
    if (next)
      next(); // the slot passes on
    else this.#sending--;
  }

  #noteDue(at: number): void {
    const hints = this.#dueHints;
    let lo = 0;
    let hi = hints.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (hints[mid]! <= at) lo = mid + 1;
      else hi = mid;
    }
    if (lo < MAX_DUE_HINTS) {
      hints.splice(lo, 0, at);
      if (hints.length > MAX_DUE_HINTS) hints.pop();
    }
    this.#wakeBy?.(at);
  }

  /** Processes a claimed delivery. An ordered one heads a key, so its end may unblock the key's next one: claim again at once. */
  #track(d: ClaimedDelivery, integrationOf: (d: ClaimedDelivery) => Promise<IntegrationRecord | null>): void {
    this.#unsent++;
    let unsent = true;
    const attempted = () => {
      if (!unsent) return;
      unsent = false;
      this.#unsent--;
      if (this.#backlog) this.#wake?.();
    };
    const tracked = this.#process(d, integrationOf, attempted)
      .catch((err: unknown) => this.#log.error({ err }, 'delivery worker: unexpected error'))
      .finally(() => {
        this.#inFlight.delete(tracked);
        attempted();
        if (d.orderKey !== null) this.kick();
        else if (this.#backlog) this.#wake?.();
      });
    this.#inFlight.add(tracked);
  }

  #notifier(type: IntegrationType): Notifier {
    let n = this.#notifiers.get(type);
    if (!n) {
      n = this.#notifierOf(type);
      this.#notifiers.set(type, n);
    }
    return n;
  }

  /** `attempted`: called when the attempt has ended (only its outcome is left to write). */
  async #process(
    d: ClaimedDelivery,
    integrationOf: (d: ClaimedDelivery) => Promise<IntegrationRecord | null>,
    attempted: () => void,
  ): Promise<void> {
    let integration: IntegrationRecord | null;
    try {
      integration = await integrationOf(d);
    } catch (err) {
      // The store is unreachable: leave the claim; it is retaken when its lease expires.
      if (this.#admit('error', d, 'delivery_store_error'))
        this.#log.error({ err, deliveryId: d.id }, 'delivery worker: could not load the integration');
      return;
    }
    if (!integration) {
      return this.#record(d, UNKNOWN_TYPE, {
        kind: 'dead',
        error: `integration ${d.integrationId} no longer exists (deleted after the event was accepted)`,
        statusCode: null,
      });
    }
    const type = integration.type;
    if (d.abandonedClaims >= POISON_AFTER_ABANDONED) {
      this.#metrics?.poisoned.inc({ integration_type: type });
      return this.#record(d, type, { kind: 'dead', error: poisonedError(d.abandonedClaims), statusCode: null });
    }
    if (!integration.enabled) {
      return this.#record(d, type, {
        kind: 'dead',
        error: `integration "${integration.name}" (${integration.id}) is disabled`,
        statusCode: null,
      });
    }
    if (!isEventType(d.event.type)) {
      return this.#record(d, type, { kind: 'dead', error: `unknown event type ${d.event.type}`, statusCode: null });
    }

    const unreadable = unreadableSecrets(integration);
    if (unreadable) {
      // wrong or missing key (an operator's mistake): retried with backoff, so fixing the key file delivers it
      return this.#record(d, type, this.#decide({ outcome: 'retry', error: unreadable }, d, this.#clock()));
    }

    // The fence at send time: an obsolete delivery is not sent (before the rate limiter: it costs no slot).
    // Nothing to check for an unordered row (no order key), nor in 'in-order' mode when the claim saw no newer one
    // sent (none can be sent while this one is open: see ClaimedDelivery.newerSent).
    const mode = orderModeOf(type);
    try {
      if (
        d.orderKey !== null &&
        (mode === 'supersede' || d.newerSent) &&
        (await this.#fences.add({ id: d.id, attemptNo: d.attempts, mode }))
      ) {
        this.#metrics?.superseded.inc({ integration_type: type });
        if (this.#admit('debug', d, 'delivery_superseded'))
          this.#log.debug(
            { deliveryId: d.id, companyId: d.companyId, integrationId: d.integrationId },
            'delivery superseded by a newer one for the same key; not sent',
          );
        return;
      }
    } catch (err) {
      // Unknown whether a newer one exists: don't send; the claim is retaken when its lease expires.
      if (this.#admit('error', d, 'delivery_store_error'))
        this.#log.error({ err, deliveryId: d.id }, 'delivery worker: could not check for a newer delivery');
      return;
    }

    const now = this.#clock();
    // the integration's own limit, else its type's; fair across the routers that share it (rate-limit.ts)
    const wait = this.#limiter.take(integration.id, type, now, d.id, { limit: integration.rateLimit, flow: d.routerId });
    if (wait > 0) {
      this.#metrics?.rateLimited.inc({ integration_type: type });
      try {
        const applied = await this.#store.deferDelivery(d.id, d.attempts, now + wait, now);
        if (applied) this.#noteDue(now + wait);
        else {
          this.#limiter.release(d.id);
          this.#metrics?.leaseLost.inc({ integration_type: type });
        }
      } catch (err) {
        this.#limiter.release(d.id);
        if (this.#admit('error', d, 'delivery_store_error'))
          this.#log.error({ err, deliveryId: d.id }, 'delivery worker: could not defer a rate-limited delivery');
      }
      return;
    }

    if (this.#abort.signal.aborted) {
      // Shutting down before anything was sent: hand the claim back without counting the attempt.
      await this.#store.deferDelivery(d.id, d.attempts, now, now).catch(() => {}); // else: lease expiry
      return;
    }

    const notification: Notification = {
      id: d.id,
      eventId: d.eventId,
      event: { type: d.event.type, data: d.event.data },
      occurredAt: d.event.receivedAt,
      router: { id: d.routerId, name: d.routerName },
      integration,
      attempt: d.attempts,
      ...(d.reminder ? { reminder: true } : {}),
      ...groupOf(d),
    };
    try {
      // a template that does not render sends the default message (counted by the renderer), never a dead letter
      const rendered = await this.#templates?.render(d.companyId, notification);
      if (rendered) notification.rendered = rendered;
    } catch (err) {
      // the store could not be read: leave the claim (retaken after its lease), as for the integration
      this.#limiter.release(d.id);
      if (this.#admit('error', d, 'delivery_store_error'))
        this.#log.error({ err, deliveryId: d.id }, 'delivery worker: could not load the router template');
      return;
    }
    await this.#sendSlot();
    let result: DeliveryResult;
    try {
      // Waited for a slot: still ours for a whole attempt (its timeout and the grace after it: a notifier that
      // ignores its abort must not hold the id past the claim, when another replica may send it), and not
      // shutting down? Else hand it back (not counted).
      const at = this.#clock();
      if (this.#abort.signal.aborted || at + this.options.attemptTimeoutMs + ATTEMPT_GRACE_MS > d.leaseUntil) {
        this.#limiter.release(d.id);
        await this.#store.deferDelivery(d.id, d.attempts, at, at).catch(() => {}); // else: lease expiry
        return;
      }
      const started = performance.now();
      result = await this.#send(type, notification);
      this.#metrics?.attemptDuration.observe({ integration_type: type }, (performance.now() - started) / 1000);
    } finally {
      this.#freeSendSlot();
      attempted();
    }

    const at = this.#clock();
    let decision: Decision;
    if (this.#abort.signal.aborted && result.outcome === 'retry') {
      // Interrupted by shutdown: not the receiver's fault; due again at once for the next process.
      decision = {
        kind: 'retry',
        at,
        error: `attempt interrupted by shutdown (${errorOf(result)})`,
        statusCode: result.statusCode ?? null,
      };
    } else {
      decision = this.#decide(result, d, at);
    }
    return this.#record(d, type, decision);
  }

  #decide(result: DeliveryResult, d: ClaimedDelivery, at: number): Decision {
    return decide(result, d, at, {
      maxAgeMs: this.options.maxAgeMs,
      baseMs: this.options.baseDelayMs,
      capMs: this.options.maxDelayMs,
      rng: this.#rng,
    });
  }

  /** One attempt; never throws, never outlives attemptTimeoutMs (+ a short grace) or an abort. */
  async #send(type: IntegrationType, n: Notification): Promise<DeliveryResult> {
    const timeoutMs = this.options.attemptTimeoutMs;
    // One controller and one timer per attempt (AbortSignal.any + AbortSignal.timeout cost more than the send's
    // own setup): aborted at the timeout or at shutdown; a notifier that ignores its signal must not hold the slot
    // past the lease (or past shutdown), so the attempt is given up ATTEMPT_GRACE_MS later.
    const attempt = new AbortController();
    const shutdown = this.#abort.signal;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const guard = new Promise<DeliveryResult>((resolve) => {
      const give = (error: string) => {
        clearTimeout(timer);
        timer = setTimeout(() => resolve({ outcome: 'retry', error }), ATTEMPT_GRACE_MS);
      };
      timer = setTimeout(() => {
        attempt.abort(new DOMException(`attempt timed out after ${timeoutMs} ms`, 'TimeoutError'));
        give(`attempt timed out after ${timeoutMs} ms`);
      }, timeoutMs);
      onAbort = () => {
        attempt.abort(shutdown.reason);
        give('aborted');
      };
      if (shutdown.aborted) onAbort();
      else shutdown.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const notifier = this.#notifier(type);
      return await Promise.race([notifier.send(n, attempt.signal), guard]);
    } catch (err) {
      const name = err instanceof Error ? err.name : typeof err;
      return { outcome: 'retry', error: `internal error in the ${type} notifier (${name})` };
    } finally {
      clearTimeout(timer);
      if (onAbort) shutdown.removeEventListener('abort', onAbort);
    }
  }

  async #record(d: ClaimedDelivery, type: IntegrationType | typeof UNKNOWN_TYPE, decision: Decision): Promise<void> {
    let applied: boolean;
    const { id, attempts: attemptNo } = d;
    try {
      applied = await this.#outcomes.add(
        decision.kind === 'retry'
          ? { id, attemptNo, kind: 'retry', nextAttemptAt: decision.at, error: decision.error, statusCode: decision.statusCode }
          : decision.kind === 'dead'
            ? { id, attemptNo, kind: 'dead', error: decision.error, statusCode: decision.statusCode }
            : { id, attemptNo, kind: 'delivered', statusCode: decision.statusCode },
      );
    } catch (err) {
      // Not recorded: the claim expires and the delivery is attempted again (at-least-once).
      if (this.#admit('error', d, 'delivery_store_error'))
        this.#log.error({ err, deliveryId: d.id, outcome: decision.kind }, 'delivery worker: could not record the outcome');
      return;
    }
    const labels = { integration_type: type };
    if (!applied) {
      this.#metrics?.leaseLost.inc(labels);
      if (this.#admit('warn', d, 'delivery_lease_lost'))
        this.#log.warn(
          { deliveryId: d.id, attempt: d.attempts, outcome: decision.kind },
          'delivery worker: outcome not recorded; the claim had expired and the delivery was claimed again',
        );
      return;
    }
    this.#metrics?.deliveries.inc({ ...labels, outcome: decision.kind });
    if (decision.kind === 'retry') this.#noteDue(decision.at);
    const fields = {
      deliveryId: d.id,
      companyId: d.companyId,
      eventId: d.eventId,
      routerId: d.routerId,
      integrationId: d.integrationId,
      integrationType: type,
      attempts: d.attempts,
      statusCode: decision.statusCode,
    };
    if (decision.kind === 'dead') {
      this.#metrics?.deadLetters.inc(labels);
      if (this.#admit('warn', d, 'delivery_dead_letter')) this.#log.warn({ ...fields, error: decision.error }, 'delivery dead-lettered');
    } else if (decision.kind === 'retry') {
      // why a notification has not arrived yet, long before its dead letter: the error as the notifier classified
      // it (a status code or a network error code, never the URL or a secret)
      const window = this.#log.isLevelEnabled('warn') ? this.#failureLog.take(d.integrationId, this.#clock()) : ({ ok: false } as const);
      if (window.ok && this.#admit('warn', d, 'delivery_retry'))
        this.#log.warn(
          {
            ...fields,
            error: decision.error,
            nextAttemptAt: new Date(decision.at).toISOString(),
            // this integration's failed attempts not logged since its previous line (at most one a minute)
            ...(window.suppressed ? { suppressed: window.suppressed } : {}),
          },
          'delivery attempt failed; will retry',
        );
    } else if (this.#admit('debug', d, 'delivery_delivered')) {
      this.#log.debug(fields, 'delivered');
    }
  }

  /** Per-delivery log lines are rate-limited per tenant and cause (a storm of one tenant's failures). */
  #admit(level: LogLevel, d: ClaimedDelivery, cause: LogCause): boolean {
    return this.#logLimiter.admit(this.#log, level, d.companyId, cause);
  }
}
