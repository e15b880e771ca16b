/**
 * Sends internal events to the service's `POST /v1/events` (through the client's ServiceHttp), in batches.
 *
 * - `send(events)` resolves once the service accepted them (202) and rejects only when this process stops
 *   or the service rejects an event as invalid (400, naming its index): nothing is ever dropped silently.
 * - No fixed wait: when no request is in flight, what was sent goes out on the next turn of the event loop
 *   (`setImmediate`: the sends of one tick, e.g. a burst of reconciles, share a request). While a request is in
 *   flight, sends queue up and go out together as soon as it is answered, up to `batchMax` events a request
 *   (the service takes 1,000): batches form only under load. One request at a time, in order (a second
 *   concurrent request could overtake a retrying one; the hub keeps the order it receives).
 * - Network errors, timeouts, 408/429/5xx and 401/403/404 (a key being rotated, a service starting) are
 *   retried with exponential backoff and jitter for as long as it takes; the events wait in memory.
 *   413 splits the batch.
 * - Every event is checked with `validateEvent` (what the service applies) before it is queued.
 * - At most `maxPending` events wait (a long outage of the service). Past that a new `send` is refused at once
 *   (EventQueueFullError, counted as dropped); nothing already waiting is dropped, so what waits still goes out
 *   in order. The emitter writes its state only after a 202, so a refused event is derived again from the
 *   resource's latest state when its reconcile is retried: nothing that must be said (a `.active` resolving an
 *   open incident) is lost, it is said later.
 */
import type { Logger } from 'pino';
import type { InternalEvent } from '../events/families.js';
import { validateEvent } from '../events/schemas.js';
import { backoffDelay, realClock, sleep, type BackoffPolicy, type Clock } from '../runtime/timers.js';
import { ServiceUnreachableError, errorEntries } from './errors.js';
import { ServiceHttp, type ServiceHttpOptions } from './http.js';

export interface EventSink {
  send(events: InternalEvent[]): Promise<AcceptedEvent[]>;
}

export interface AcceptedEvent {
  id: string;
  deliveries: number;
}

export class EventRejectedError extends Error {
  constructor(
    message: string,
    readonly event: InternalEvent,
  ) {
    super(message);
    this.name = 'EventRejectedError';
  }
}

export class EventQueueFullError extends Error {
  constructor(max: number) {
    super(`${max} events are already waiting for the service (--max-pending-events); this one is refused and derived again on retry`);
    this.name = 'EventQueueFullError';
  }
}

export class SenderStoppedError extends Error {
  constructor() {
    super('event sender stopped before the service accepted the event');
    this.name = 'SenderStoppedError';
  }
}

export interface SenderMetrics {
  accepted(type: string): void;
  failedAttempt(reason: string): void;
  pending(n: number): void;
  /** events refused because `maxPending` were waiting */
  dropped?(n: number): void;
}

export interface EventSenderOptions extends ServiceHttpOptions {
  log: Logger;
  clock?: Clock;
  /** events per request; default 100 */
  batchMax?: number | undefined;
  /** default 500 ms doubling to 30 s, 20 % jitter */
  backoff?: BackoffPolicy | undefined;
  metrics?: SenderMetrics;
  /** events waiting for the service at most; default DEFAULT_MAX_PENDING_EVENTS */
  maxPending?: number | undefined;
}

interface Pending {
  event: InternalEvent;
  resolve: (a: AcceptedEvent) => void;
  reject: (e: Error) => void;
}

type Outcome =
  | { kind: 'accepted'; accepted: AcceptedEvent[] }
  | { kind: 'rejected'; indexes: Map<number, string> | 'all'; message: string }
  | { kind: 'tooLarge' }
  | { kind: 'retry'; reason: string; retryAfterMs?: number | undefined };

/** Events waiting for the service at most, unless configured: a bound on memory while the service is unreachable. */
export const DEFAULT_MAX_PENDING_EVENTS = 10_000;
const DEFAULT_SEND_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000, jitter: 0.2 };

export class EventSender implements EventSink {
  private readonly queue: Pending[] = [];
  private readonly clock: Clock;
  private readonly http: ServiceHttp;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  /** a dispatch is armed for the next turn of the event loop */
  private armed: NodeJS.Immediate | undefined;
  private stopped = false;
  private batchMax: number;
  readonly stats = { requests: 0, accepted: 0, failures: 0, dropped: 0 };

  constructor(private readonly opts: EventSenderOptions) {
    this.clock = opts.clock ?? realClock;
    this.http = new ServiceHttp(opts);
    this.batchMax = Math.min(1000, Math.max(1, opts.batchMax ?? 100));
  }

  get pending(): number {
    return this.queue.length;
  }

  send(events: InternalEvent[]): Promise<AcceptedEvent[]> {
    if (this.stopped) return Promise.reject(new SenderStoppedError());
    for (const e of events) {
      const v = validateEvent(e);
      if (!v.ok)
        return Promise.reject(
          new EventRejectedError(`invalid ${e.type} event: ${v.errors.map((x) => `${x.path} ${x.message}`).join('; ')}`, e),
        );
    }
    const max = this.opts.maxPending ?? DEFAULT_MAX_PENDING_EVENTS;
    if (this.queue.length + events.length > max) {
      this.stats.dropped += events.length;
      this.opts.metrics?.dropped?.(events.length);
      return Promise.reject(new EventQueueFullError(max));
    }
    const all = events.map(
      (event) =>
        new Promise<AcceptedEvent>((resolve, reject) => {
          this.queue.push({ event, resolve, reject });
        }),
    );
    this.opts.metrics?.pending(this.queue.length);
    this.schedule();
    return Promise.all(all);
  }

  /** Rejects everything still queued (SenderStoppedError) and aborts the request in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.armed !== undefined) clearImmediate(this.armed);
    this.armed = undefined;
    this.abort.abort();
    await this.running?.catch(() => {});
    this.failAll();
  }

  private failAll(): void {
    const err = new SenderStoppedError();
    for (const p of this.queue.splice(0)) p.reject(err);
    this.opts.metrics?.pending(0);
  }

  private schedule(): void {
    if (this.running || this.armed !== undefined || this.stopped) return;
    // not a timer: the clock's setTimeout(0) is ≥ 1 ms, and a fake clock would hold every send until it ticks
    this.armed = setImmediate(() => {
      this.armed = undefined;
      if (this.running || this.stopped || !this.queue.length) return;
      // the loop sends what queued up meanwhile as soon as each request is answered
      this.running = this.loop().finally(() => {
        this.running = undefined;
        if (this.queue.length && !this.stopped) this.schedule();
      });
    });
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (this.queue.length && !this.stopped) {
      const batch = this.queue.slice(0, this.batchMax);
      const outcome = await this.post(batch.map((p) => p.event));
      if (this.stopped) return;
      switch (outcome.kind) {
        case 'accepted': {
          failures = 0;
          this.queue.splice(0, batch.length);
          batch.forEach((p, i) => {
            this.opts.metrics?.accepted(p.event.type);
            p.resolve(outcome.accepted[i] ?? { id: '', deliveries: 0 });
          });
          this.stats.accepted += batch.length;
          this.batchMax = Math.min(1000, Math.max(this.batchMax, this.opts.batchMax ?? 100));
          break;
        }
        case 'rejected': {
          // drop the bad events (they would be rejected forever), keep the rest queued
          failures = 0;
          const bad = outcome.indexes === 'all' ? new Map(batch.map((_, i) => [i, outcome.message])) : outcome.indexes;
          const rejected = batch.filter((_, i) => bad.has(i));
          for (const p of rejected) {
            const i = batch.indexOf(p);
            this.queue.splice(this.queue.indexOf(p), 1);
            this.opts.log.error(
              { eventType: p.event.type, error: bad.get(i) },
              'the service rejected an event as invalid; it is not retried',
            );
            p.reject(new EventRejectedError(bad.get(i) ?? outcome.message, p.event));
          }
          break;
        }
        case 'tooLarge':
          this.batchMax = Math.max(1, Math.floor(batch.length / 2));
          if (batch.length === 1) {
            // one event too large for the service: it will never be accepted
            const p = this.queue.shift()!;
            p.reject(new EventRejectedError('event too large for the service (413)', p.event));
          }
          break;
        case 'retry': {
          failures++;
          this.stats.failures++;
          this.opts.metrics?.failedAttempt(outcome.reason.split(' ')[0] ?? 'error');
          const delay = Math.max(backoffDelay(failures, this.opts.backoff ?? DEFAULT_SEND_BACKOFF), outcome.retryAfterMs ?? 0);
          this.opts.log.warn(
            { error: outcome.reason, events: batch.length, retryInMs: delay, attempt: failures },
            'sending events to the service failed; retrying',
          );
          await sleep(this.clock, delay, this.abort.signal);
          break;
        }
      }
      this.opts.metrics?.pending(this.queue.length);
    }
  }

  private async post(events: InternalEvent[]): Promise<Outcome> {
    this.stats.requests++;
    let res;
    try {
      res = await this.http.request('/v1/events', { body: JSON.stringify(events), signal: this.abort.signal });
    } catch (e) {
      const u = ServiceUnreachableError.of(e);
      return { kind: 'retry', reason: `${u.timedOut ? 'timeout' : 'network'} ${u.detail}`.trim() };
    }
    const text = res.text;
    if (res.status === 202 || res.status === 200) {
      try {
        const body = JSON.parse(text) as { events?: AcceptedEvent[] };
        return { kind: 'accepted', accepted: body.events ?? [] };
      } catch {
        return { kind: 'accepted', accepted: [] };
      }
    }
    if (res.status === 413) return { kind: 'tooLarge' };
    if (res.status === 400) return rejectedOutcome(text, events.length);
    const retryAfter = Number(res.headers.get('retry-after'));
    return {
      kind: 'retry',
      reason: `HTTP ${res.status} ${firstErrorMessage(text) ?? ''}`.trim(),
      retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, 300_000) : undefined,
    };
  }
}

const firstErrorMessage = (text: string): string | undefined => errorEntries(text)[0]?.message;

/** 400: `errors[].field` is `[i].data.x` for an array body; errors without an index reject the whole batch. */
function rejectedOutcome(text: string, n: number): Outcome {
  const errors = errorEntries(text);
  const indexes = new Map<number, string>();
  for (const e of errors) {
    const m = /^\[(\d+)\]/.exec(e.field ?? '');
    if (m && Number(m[1]) < n) indexes.set(Number(m[1]), e.message ?? 'invalid');
  }
  const message =
    errors
      .map((e) => e.message)
      .filter(Boolean)
      .join('; ') || `HTTP 400 ${text.slice(0, 200)}`;
  return { kind: 'rejected', indexes: indexes.size ? indexes : 'all', message };
}
