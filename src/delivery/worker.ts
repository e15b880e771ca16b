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
import type { Notifiers } from '../integrations/index.js';
import type { DeliveryResult, Notification } from '../integrations/types.js';
import type { Logger } from '../log/logger.js';
import { LogLimiter, type LogCause, type LogLevel } from '../log/limiter.js';
import type { ClaimedDelivery, DeliveryOutcome, IntegrationRecord, SupersedeCheck } from '../store/types.js';
import type { TemplateRenderer } from '../templates/renderer.js';
import { decide, errorOf, type Decision } from './backoff.js';
import { Batcher } from './batcher.js';
import { integrationGone, integrationsOfBatch, checkClaim, type IntegrationOf } from './claim.js';
import { createMetrics, type WorkerMetrics } from './metrics.js';
import {
  ATTEMPT_GRACE_MS,
  workerOptions,
  type DeliveryWorkerDeps,
  type DeliveryWorkerOptions,
  type DeliveryWorkerStore,
} from './options.js';
import { orderModeOf } from './order.js';
import { triageClaims } from './poison.js';
import { RateLimiter } from './rate-limit.js';
import { Recorder, UNKNOWN_TYPE } from './record.js';
import { renderNotification } from './render.js';
import { SendSlots, sendAttempt } from './send.js';
import { DeliverySignal } from './signal.js';

export { DELIVERY_METRICS } from './metrics.js';
export type { DeliveryWorkerDeps, DeliveryWorkerOptions, DeliveryWorkerStore } from './options.js';

const MAX_DUE_HINTS = 1024;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class DeliveryWorker {
  readonly options: DeliveryWorkerOptions;
  readonly #store: DeliveryWorkerStore;
  readonly #notifiers: Notifiers;
  /** Notified when deliveries are due now (kick(), ingestion, the group flusher, ...): claim at once. */
  readonly #signal: DeliverySignal;
  readonly #log: Logger;
  readonly #metrics: WorkerMetrics | undefined;
  readonly #clock: () => number;
  readonly #rng: () => number;
  readonly #getIntegration: (companyId: string, integrationId: string) => Promise<IntegrationRecord | null>;
  /** getIntegration was given: the records the claims carry are not used. */
  readonly #ownIntegrationReads: boolean;
  readonly #limiter: RateLimiter;
  readonly #logLimiter: LogLimiter;
  readonly #owner: string | null;
  readonly #templates: Pick<TemplateRenderer, 'render'> | undefined;

  #running = false;
  #loop: Promise<void> | undefined;
  /** Claimed deliveries being processed (until their outcome is written): at most 6 × concurrency. */
  #inFlight = new Set<Promise<void>>();
  /** Of those, the ones whose attempt has not ended (waiting for a send slot, or sending): at most 3 × concurrency. */
  #unsent = 0;
  /** Sends in progress (at most concurrency) and the claimed deliveries waiting for one, in claim order. */
  readonly #slots: SendSlots;
  #abort = new AbortController();
  #wake: (() => void) | undefined;
  /** While the loop sleeps: wake it no later than `at` (epoch ms). */
  #wakeBy: ((at: number) => void) | undefined;
  /**
   * Due times of deliveries this worker retried or deferred, ascending (hints: polling still covers
   * everything; only the earliest MAX_DUE_HINTS are kept).
   */
  #dueHints: number[] = [];
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
  readonly #recorder: Recorder;

  constructor(deps: DeliveryWorkerDeps) {
    this.options = workerOptions(deps.options);
    this.#store = deps.store;
    this.#notifiers = deps.notifiers;
    this.#signal = deps.signal ?? new DeliverySignal();
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
    this.#slots = new SendSlots(this.options.concurrency);
    this.#recorder = new Recorder({
      outcomes: this.#outcomes,
      metrics: this.#metrics,
      log: this.#log,
      admit: (level, d, cause) => this.#admit(level, d, cause),
      clock: this.#clock,
      noteDue: (at) => this.#noteDue(at),
    });
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

  /** Wakes the worker now: the same as notifying its signal. Cheap; safe any time. */
  kick(): void {
    this.#signal.notify();
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
      // a notify() from here on means deliveries this claim may miss: loop again instead of sleeping
      this.#signal.take();
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
        const integrationOf = integrationsOfBatch(this.#getIntegration, this.#ownIntegrationReads);
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
      if (this.#signal.take()) continue;
      // Sleep for the poll interval (after failed claims: back off, up to 10 intervals), or less when
      // a retry or a rate-limited delivery of ours falls due sooner, or until the signal is notified.
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
          stopListening();
          this.#wake = undefined;
          this.#wakeBy = undefined;
          resolve();
        };
        this.#wake = done;
        const stopListening = this.#signal.onNotify(done);
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
  async #sendAlone(d: ClaimedDelivery, others: readonly ClaimedDelivery[], integrationOf: IntegrationOf): Promise<void> {
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
  #track(d: ClaimedDelivery, integrationOf: IntegrationOf): void {
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

  /** `attempted`: called when the attempt has ended (only its outcome is left to write). */
  async #process(d: ClaimedDelivery, integrationOf: IntegrationOf, attempted: () => void): Promise<void> {
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
      return this.#recorder.record(d, UNKNOWN_TYPE, { kind: 'dead', error: integrationGone(d), statusCode: null });
    }
    const type = integration.type;
    const checked = checkClaim(d, integration);
    if (checked.kind === 'dead') {
      if (checked.poisoned) this.#metrics?.poisoned.inc({ integration_type: type });
      return this.#recorder.record(d, type, { kind: 'dead', error: checked.error, statusCode: null });
    }
    if (checked.kind === 'retry')
      return this.#recorder.record(d, type, this.#decide({ outcome: 'retry', error: checked.error }, d, this.#clock()));

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

    let notification: Notification;
    try {
      notification = await renderNotification(d, checked.event, integration, this.#templates);
    } catch (err) {
      // the store could not be read: leave the claim (retaken after its lease), as for the integration
      this.#limiter.release(d.id);
      if (this.#admit('error', d, 'delivery_store_error'))
        this.#log.error({ err, deliveryId: d.id }, 'delivery worker: could not load the router template');
      return;
    }
    await this.#slots.take();
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
      result = await sendAttempt(this.#notifiers, type, notification, this.options.attemptTimeoutMs, this.#abort.signal);
      this.#metrics?.attemptDuration.observe({ integration_type: type }, (performance.now() - started) / 1000);
    } finally {
      this.#slots.free();
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
    return this.#recorder.record(d, type, decision);
  }

  #decide(result: DeliveryResult, d: ClaimedDelivery, at: number): Decision {
    return decide(result, d, at, {
      maxAgeMs: this.options.maxAgeMs,
      baseMs: this.options.baseDelayMs,
      capMs: this.options.maxDelayMs,
      rng: this.#rng,
    });
  }

  /** Per-delivery log lines are rate-limited per tenant and cause (a storm of one tenant's failures). */
  #admit(level: LogLevel, d: ClaimedDelivery, cause: LogCause): boolean {
    return this.#logLimiter.admit(this.#log, level, d.companyId, cause);
  }
}
