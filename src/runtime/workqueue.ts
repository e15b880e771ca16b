/**
 * A keyed work queue in the spirit of client-go's: a key is queued at most once (dedupe), never processed by
 * two workers at once (a key added while in flight is processed again afterwards), processed by at most
 * `concurrency` workers, retried with per-key exponential backoff on failure, and re-added after
 * `requeueAfter` on request. Handlers receive only the key (level-triggered).
 */
import { backoffDelay, realClock, type BackoffPolicy, type Clock } from './timers.js';

export interface Result {
  /** come back after this many ms (a resync or a wait on something that is not watched) */
  requeueAfter?: number;
}

export interface WorkQueueOptions {
  name: string;
  concurrency?: number;
  backoff?: BackoffPolicy | undefined;
  clock?: Clock;
  rand?: () => number;
  handler: (key: string) => Promise<Result | void>;
  /** called after a failed attempt with the delay before the retry */
  onError?: (key: string, err: unknown, retryInMs: number, failures: number) => void;
  /** called after every attempt */
  onDone?: (key: string, outcome: 'success' | 'requeue' | 'error', ms: number) => void;
}

/** setTimeout's largest delay (~24.8 days); a later key is looked at again when this timer fires */
const MAX_TIMER_MS = 2 ** 31 - 1;
const DEFAULT_QUEUE_BACKOFF: BackoffPolicy = { baseMs: 50, maxMs: 5 * 60_000, jitter: 0.1 };

export class WorkQueue {
  /** FIFO of ready keys from `head` on: `shift()` on an array of 100,000 keys (a large-object array V8 cannot
   * trim in place) moved the whole array per key, 6 of the initial sync's CPU seconds at 100,000 Certificates */
  private ready: string[] = [];
  private head = 0;
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly again = new Set<string>();
  /** key → when its delayed add is due; the heap orders them and one timer waits for the earliest */
  private readonly delayed = new Map<string, number>();
  private readonly timers = new DueHeap();
  private timer: { at: number; handle: unknown } | undefined;
  private readonly failures = new Map<string, number>();
  private readonly clock: Clock;
  private readonly concurrency: number;
  private readonly backoff: BackoffPolicy;
  private active = 0;
  private running = false;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly opts: WorkQueueOptions) {
    this.clock = opts.clock ?? realClock;
    this.concurrency = Math.max(1, opts.concurrency ?? 1);
    this.backoff = opts.backoff ?? DEFAULT_QUEUE_BACKOFF;
  }

  get name(): string {
    return this.opts.name;
  }

  /** Start processing (keys added before are kept). */
  start(): void {
    if (this.stopped) return;
    this.running = true;
    this.pump();
  }

  /** Queue `key` now (no-op if already queued; deferred if in flight). */
  add(key: string): void {
    if (this.stopped) return;
    if (this.processing.has(key)) {
      this.again.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.ready.push(key);
    this.pump();
  }

  /** Queue `key` after `ms`; an earlier pending delayed add wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) return this.add(key);
    const at = this.clock.now() + ms;
    const cur = this.delayed.get(key);
    if (cur !== undefined && cur <= at) return;
    // one timer for all keys (a Timeout and a closure per key add up when every healthy Certificate waits for
    // its resync); the entry a moved key leaves in the heap is skipped when it comes up
    this.delayed.set(key, at);
    this.timers.push(at, key);
    if (this.timers.size > 2 * this.delayed.size + 64) this.timers.rebuild(this.delayed);
    this.arm();
  }

  /** The timer waits for the earliest due key. */
  private arm(): void {
    const next = this.timers.peekAt();
    if (next === undefined || this.stopped) return;
    if (this.timer && this.timer.at <= next) return;
    if (this.timer) this.clock.clearTimeout(this.timer.handle);
    const timer = {
      at: next,
      handle: this.clock.setTimeout(() => this.fire(timer), Math.min(Math.max(0, next - this.clock.now()), MAX_TIMER_MS)),
    };
    this.timer = timer;
  }

  private fire(timer: { at: number; handle: unknown }): void {
    if (this.timer !== timer) return;
    this.timer = undefined;
    const now = this.clock.now();
    for (let e = this.timers.peek(); e && e.at <= now; e = this.timers.peek()) {
      this.timers.pop();
      if (this.delayed.get(e.key) !== e.at) continue; // moved earlier (already added) or dropped
      this.delayed.delete(e.key);
      this.add(e.key);
    }
    this.arm();
  }

  /** Queue `key` after its next backoff delay; returns the delay. */
  addRateLimited(key: string): number {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const delay = backoffDelay(n, this.backoff, this.opts.rand);
    this.addAfter(key, delay);
    return delay;
  }

  /** Reset the key's backoff. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  numFailures(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** queued (ready) + in flight */
  get length(): number {
    return this.ready.length - this.head + this.processing.size;
  }

  get pendingDelayed(): number {
    return this.delayed.size;
  }

  isProcessing(key: string): boolean {
    return this.processing.has(key);
  }

  /** Resolves when nothing is queued or in flight (delayed keys don't count). */
  whenIdle(): Promise<void> {
    if (this.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Stop taking keys; wait for in-flight handlers. Delayed adds are dropped. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.running = false;
    if (this.timer) this.clock.clearTimeout(this.timer.handle);
    this.timer = undefined;
    this.delayed.clear();
    this.timers.rebuild(this.delayed);
    this.ready.length = 0;
    this.head = 0;
    this.queued.clear();
    this.again.clear();
    if (this.processing.size === 0) return;
    await new Promise<void>((r) => this.idleWaiters.push(r));
  }

  private pump(): void {
    if (!this.running) return;
    while (this.active < this.concurrency && this.head < this.ready.length) {
      const key = this.ready[this.head++]!;
      // drop the taken prefix once it is most of the array (amortised O(1) per key)
      if (this.head === this.ready.length) {
        this.ready.length = 0;
        this.head = 0;
      } else if (this.head >= 1024 && this.head * 2 >= this.ready.length) {
        this.ready = this.ready.slice(this.head);
        this.head = 0;
      }
      this.queued.delete(key);
      this.processing.add(key);
      this.active++;
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    const t0 = this.clock.now();
    let outcome: 'success' | 'requeue' | 'error' = 'success';
    try {
      const r = await this.opts.handler(key);
      this.forget(key);
      if (r?.requeueAfter !== undefined && r.requeueAfter >= 0 && !this.stopped) {
        outcome = 'requeue';
        this.addAfter(key, r.requeueAfter);
      }
    } catch (err) {
      outcome = 'error';
      if (!this.stopped) {
        const delay = this.addRateLimited(key);
        this.opts.onError?.(key, err, delay, this.failures.get(key) ?? 0);
      }
    } finally {
      this.processing.delete(key);
      this.active--;
      this.opts.onDone?.(key, outcome, this.clock.now() - t0);
      if (this.again.delete(key)) this.add(key);
      this.pump();
      if (this.length === 0 && this.idleWaiters.length) {
        const w = this.idleWaiters;
        this.idleWaiters = [];
        for (const r of w) r();
      }
    }
  }
}

interface Due {
  at: number;
  /** insertion order: keys due at the same time are added in the order they were delayed */
  seq: number;
  key: string;
}

/** A binary min-heap of delayed keys by due time (then insertion order). */
class DueHeap {
  private a: Due[] = [];
  private seq = 0;

  get size(): number {
    return this.a.length;
  }

  peek(): Due | undefined {
    return this.a[0];
  }

  peekAt(): number | undefined {
    return this.a[0]?.at;
  }

  push(at: number, key: string): void {
    const a = this.a;
    const e: Due = { at, seq: this.seq++, key };
    let i = a.length;
    a.push(e);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(e, a[p]!)) break;
      a[i] = a[p]!;
      i = p;
    }
    a[i] = e;
  }

  pop(): Due | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (top === undefined || last === undefined || a.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const c = l + 1 < a.length && before(a[l + 1]!, a[l]!) ? l + 1 : l;
      if (!before(a[c]!, last)) break;
      a[i] = a[c]!;
      i = c;
    }
    a[i] = last;
    return top;
  }

  /** Only the live entries (`delayed`), in their order: drops what moved keys left behind. */
  rebuild(delayed: ReadonlyMap<string, number>): void {
    const live = this.a.filter((e) => delayed.get(e.key) === e.at).sort((x, y) => (before(x, y) ? -1 : 1));
    const seen = new Set<string>();
    this.a = live.filter((e) => !seen.has(e.key) && (seen.add(e.key), true)); // sorted: a valid heap
  }
}

const before = (x: Due, y: Due): boolean => x.at < y.at || (x.at === y.at && x.seq < y.seq);
