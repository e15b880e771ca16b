/**
 * Per-integration rate limits: one token bucket per integration, pure (the caller passes the time).
 *
 * Queue, never drop: when a bucket is empty, take() returns how long to wait and the worker defers
 * the delivery (gives its claim back without counting an attempt) until then.
 *
 * Reservations: a limited take() with a key (the delivery id) books the next free slot (the bucket
 * goes into debt) and remembers it. When that delivery comes back at its slot it is let through
 * without paying again. So a backlog of N deliveries for one Slack channel is spread over N slots
 * and each delivery is deferred once, instead of all of them being deferred to the same instant
 * and re-deferred every time (O(N²) store writes).
 *
 * The limiter lives in the worker's memory: each process (replica) has its own buckets, and a restart
 * starts with full buckets. Receivers' 429 + Retry-After remain the backstop (retried, never dropped).
 */
import { INTEGRATIONS } from '../integrations/registry.js';
import type { RateLimit } from '../integrations/types.js';
import type { IntegrationType } from '../store/types.js';

export type { RateLimit } from '../integrations/types.js';

/** Defaults per integration type: each type's descriptor (src/integrations/<type>.ts) says why its numbers. */
export const DEFAULT_RATE_LIMITS: Readonly<Record<IntegrationType, RateLimit>> = Object.fromEntries(
  Object.values(INTEGRATIONS).map((d) => [d.type, d.rateLimit]),
) as Record<IntegrationType, RateLimit>;

/** A limit of 0 per second: unlimited (an integration's own setting, for one's own receivers). */
const UNLIMITED: Readonly<RateLimit> = Object.freeze({ ratePerSec: 0, burst: 1 });

interface Reservation {
  key: string;
  bucketKey: string;
  /** The fair-queueing tag (start-time fair queueing over flows): the queue is ordered by (tag, seq). */
  tag: number;
  seq: number;
  /** When its delivery was last told to come back (a reservation not seen for long after that is forgotten). */
  at: number;
}

interface Bucket {
  limit: RateLimit;
  /** May be negative: reserved slots not yet used (each reservation is paid for when it is made). */
  tokens: number;
  updatedAt: number;
  /** Reservations not yet used, in the order their slots come: the i-th one's slot is the i-th after the bucket's debt. */
  queue: ReservationQueue;
  /** Each flow's (router's) last tag in the queue. */
  lastTag: Map<string, number>;
  /** The tag of the last reservation used: the virtual time of an empty queue. */
  served: number;
  seq: number;
}

/**
 * Hard caps on the limiter's memory (bounded state): one bucket per integration (bounded by the
 * per-company integration quota times the companies) and one reservation per deferred delivery. At the cap,
 * full buckets with nothing reserved are dropped first (lossless: a new bucket starts full), then the least
 * recently used one (its reservations with it: those deliveries pay again when they come back); the oldest
 * reservation is cancelled (its token goes back; the delivery pays again when it comes back).
 */
export interface RateLimiterCaps {
  maxBuckets: number;
  maxReservations: number;
}
const DEFAULT_RATE_LIMITER_CAPS: Readonly<RateLimiterCaps> = { maxBuckets: 100_000, maxReservations: 100_000 };

/** Idle buckets and stale reservations are forgotten after this long. */
const FORGET_AFTER_MS = 10 * 60 * 1000;
const SWEEP_EVERY_MS = 60 * 1000;

/** A limit as the limiter uses it: ratePerSec 0 (unlimited) or > 0 with burst >= 1; anything else throws. */
function validLimit(l: RateLimit, what: string): RateLimit {
  if (l.ratePerSec === 0) return UNLIMITED;
  if (!(l.ratePerSec > 0) || !Number.isFinite(l.ratePerSec) || !(l.burst >= 1) || !Number.isFinite(l.burst)) {
    throw new RangeError(`rate limit for ${what}: ratePerSec must be 0 (unlimited) or > 0, and burst >= 1`);
  }
  return { ratePerSec: l.ratePerSec, burst: l.burst };
}

/** What a send is: the integration's own limit (absent or null: its type's), and its flow (the router) for fairness. */
export interface TakeOptions {
  limit?: RateLimit | null | undefined;
  flow?: string | undefined;
}

const byTag = (a: Reservation, b: Reservation) => a.tag - b.tag || a.seq - b.seq;

/**
 * One bucket's reservations ordered by (tag, seq): an array read from `head` on, so that taking the first one (the
 * usual case: slots are used in order) moves nothing, and one near the front moves only those before it.
 */
class ReservationQueue {
  #items: (Reservation | undefined)[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  at(i: number): Reservation {
    return this.#items[this.#head + i]!;
  }

  /** Where `r` is, or -1 (binary search by its tag and seq). */
  indexOf(r: Reservation): number {
    let lo = this.#head;
    let hi = this.#items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (byTag(this.#items[mid]!, r) < 0) lo = mid + 1;
      else hi = mid;
    }
    return this.#items[lo] === r ? lo - this.#head : -1;
  }

  /** Puts `r` after every reservation of a smaller or equal tag; returns its position. */
  insert(r: Reservation): number {
    let lo = this.#head;
    let hi = this.#items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#items[mid]!.tag <= r.tag) lo = mid + 1;
      else hi = mid;
    }
    if (lo === this.#items.length) this.#items.push(r);
    else this.#items.splice(lo, 0, r);
    return lo - this.#head;
  }

  removeAt(i: number): void {
    if (i < this.size / 2) {
      // the ones before it move back by one: the front moves, not the (long) rest
      for (let j = this.#head + i; j > this.#head; j--) this.#items[j] = this.#items[j - 1];
      this.#items[this.#head++] = undefined;
      if (this.#head === this.#items.length) this.#items = [];
      else if (this.#head > 1024 && this.#head * 2 > this.#items.length) this.#items = this.#items.slice(this.#head);
      else return;
      this.#head = 0;
    } else this.#items.splice(this.#head + i, 1);
  }

  *[Symbol.iterator](): Iterator<Reservation> {
    for (let j = this.#head; j < this.#items.length; j++) yield this.#items[j]!;
  }
}

/**
 * Per-integration token buckets with fair reservations.
 *
 * Fairness: the reservations of one bucket are a queue ordered by start-time fair queueing over flows (the
 * routers): a reservation's tag is max(the queue head's tag, its flow's last tag + 1), so flows take turns, and
 * a flow with nothing queued gets the head's tag and goes right behind it (and behind the other flows' reservations
 * of that tag): a storm on one router delays another router's next send by at most one slot per busy router.
 * Within a flow, reservations keep their order; the store hands out one open delivery per correlation key at a
 * time, so a key's next one queues behind the flow's other keys (round-robin by key).
 *
 * A reservation's slot is its position: the i-th one in the queue may go once the bucket has refilled its debt
 * down to the reservations behind it. A newcomer placed ahead moves those behind it one slot later; when they
 * come back at their old slot they are told to wait one more (and are deferred again).
 */
export class RateLimiter {
  readonly #limits: Record<IntegrationType, RateLimit>;
  readonly #buckets = new Map<string, Bucket>();
  readonly #reservations = new Map<string, Reservation>();
  #lastSweep = -Infinity;

  readonly #caps: RateLimiterCaps;

  constructor(overrides: Partial<Record<IntegrationType, RateLimit>> = {}, caps: Partial<RateLimiterCaps> = {}) {
    this.#caps = { ...DEFAULT_RATE_LIMITER_CAPS, ...caps };
    const limits = { ...DEFAULT_RATE_LIMITS };
    for (const [type, l] of Object.entries(overrides) as [IntegrationType, RateLimit | undefined][]) {
      if (l) limits[type] = validLimit(l, type);
    }
    this.#limits = limits;
  }

  /** The type's limit (its default, or this limiter's override for the type). */
  limitFor(type: IntegrationType): RateLimit {
    return this.#limits[type];
  }

  /**
   * The limit a send to an integration pays against: its own (`own`, ratePerSec 0 unlimited), else its type's. An
   * own limit that is not one (a row written around the API's checks) falls back to the type's: sends go on.
   */
  effective(type: IntegrationType, own?: RateLimit | null): RateLimit {
    if (!own) return this.#limits[type];
    try {
      return validLimit(own, type);
    } catch {
      return this.#limits[type];
    }
  }

  /**
   * Takes a token for one send to `integrationId` at time `now` (epoch ms). Returns 0 when the send
   * may go now, else the number of ms to wait. With a `key` (the delivery id), a wait reserves a
   * slot: the same key gets 0 at its slot without taking another token (see the class comment for the order).
   */
  take(integrationId: string, type: IntegrationType, now: number, key?: string, opts: TakeOptions = {}): number {
    this.#sweep(now);
    const bucketKey = `${type}/${integrationId}`;
    const limit = this.effective(type, opts.limit);
    if (limit.ratePerSec === 0) {
      // unlimited: nothing to pay, nothing to wait for (a reservation from before the change is let go)
      if (key !== undefined) this.#drop(key, true);
      return 0;
    }
    const b = this.#bucket(bucketKey, limit, now);
    if (key !== undefined) {
      const r = this.#reservations.get(key);
      if (r && r.bucketKey === bucketKey) {
        const i = b.queue.indexOf(r);
        if (i >= 0) {
          const wait = this.#waitAt(b, i, now);
          if (wait > 0) {
            r.at = now + wait;
            return wait;
          }
          b.queue.removeAt(i);
          this.#reservations.delete(key);
          b.served = Math.max(b.served, r.tag);
          if (b.queue.size === 0) b.lastTag.clear();
          return 0;
        }
        this.#reservations.delete(key);
      }
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    const perTokenMs = 1000 / b.limit.ratePerSec;
    if (key === undefined) return Math.max(1, Math.ceil((1 - b.tokens) * perTokenMs));
    const flow = opts.flow ?? '';
    const head = b.queue.size ? b.queue.at(0).tag : b.served;
    const tag = Math.max(head, (b.lastTag.get(flow) ?? -Infinity) + 1);
    b.lastTag.set(flow, tag);
    const r: Reservation = { key, bucketKey, tag, seq: ++b.seq, at: now };
    b.queue.insert(r);
    b.tokens -= 1;
    this.#reservations.set(key, r);
    while (this.#reservations.size > this.#caps.maxReservations) {
      const oldest = this.#reservations.keys().next().value;
      if (oldest === undefined || oldest === key) break;
      this.release(oldest);
    }
    // (its position after the cap may have cancelled one ahead of it)
    const wait = Math.max(1, this.#waitAt(b, b.queue.indexOf(r), now));
    r.at = now + wait;
    return wait;
  }

  /** Cancels a reservation that will not be used (e.g. the deferral did not apply): its token goes back. */
  release(key: string): void {
    this.#drop(key, true);
  }

  /** Number of buckets and reservations held (for tests and debugging). */
  get size(): { buckets: number; reservations: number } {
    return { buckets: this.#buckets.size, reservations: this.#reservations.size };
  }

  /** ms until the i-th reservation of `b` may go: once the bucket's debt is down to the reservations behind it. */
  #waitAt(b: Bucket, i: number, now: number): number {
    const behind = b.queue.size - 1 - i;
    const missing = -behind - tokensAt(b, now);
    // (a hair under a whole ms is float noise, not one more ms)
    return missing <= 0 ? 0 : Math.ceil(missing * (1000 / b.limit.ratePerSec) - 1e-6);
  }

  /** Removes a reservation; `refund`: its token goes back (it was never used). */
  #drop(key: string, refund: boolean): void {
    const r = this.#reservations.get(key);
    if (!r) return;
    this.#reservations.delete(key);
    const b = this.#buckets.get(r.bucketKey);
    if (!b) return;
    const i = b.queue.indexOf(r);
    if (i >= 0) b.queue.removeAt(i);
    if (refund) b.tokens = Math.min(b.limit.burst, b.tokens + 1);
    if (b.queue.size === 0) b.lastTag.clear();
  }

  #bucket(bucketKey: string, limit: RateLimit, now: number): Bucket {
    let b = this.#buckets.get(bucketKey);
    if (!b) {
      if (this.#buckets.size >= this.#caps.maxBuckets) this.#shed(now);
      b = { limit, tokens: limit.burst, updatedAt: now, queue: new ReservationQueue(), lastTag: new Map(), served: 0, seq: 0 };
      this.#buckets.set(bucketKey, b);
      return b;
    }
    // keep the map in recency order (least recently used first) for #shed
    this.#buckets.delete(bucketKey);
    this.#buckets.set(bucketKey, b);
    if (now > b.updatedAt) {
      b.tokens = tokensAt(b, now);
      b.updatedAt = now;
    }
    // the integration's limit was changed: the new one applies from now (the debt stays, the burst is the new one)
    if (limit.ratePerSec !== b.limit.ratePerSec || limit.burst !== b.limit.burst) {
      b.limit = limit;
      b.tokens = Math.min(limit.burst, b.tokens);
    }
    return b;
  }

  #full(b: Bucket, now: number): boolean {
    return b.queue.size === 0 && tokensAt(b, now) >= b.limit.burst;
  }

  #forget(bucketKey: string, b: Bucket): void {
    this.#buckets.delete(bucketKey);
    for (const r of b.queue) this.#reservations.delete(r.key);
  }

  /** At the bucket cap: drops every full bucket (lossless), else the least recently used one. */
  #shed(now: number): void {
    for (const [k, b] of this.#buckets) if (this.#full(b, now)) this.#forget(k, b);
    while (this.#buckets.size >= this.#caps.maxBuckets) {
      const oldest = this.#buckets.entries().next().value;
      if (oldest === undefined) break;
      this.#forget(oldest[0], oldest[1]);
    }
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < SWEEP_EVERY_MS) return;
    this.#lastSweep = now;
    for (const [k, b] of this.#buckets) {
      // a reservation whose slot came and that was not seen for long after it was told to come back (its delivery
      // went elsewhere): forgotten, its slot spent (the ones behind keep theirs). Due ones are a prefix.
      for (let i = 0; i < b.queue.size && this.#waitAt(b, i, now) === 0;) {
        const r = b.queue.at(i);
        if (now - r.at > FORGET_AFTER_MS) {
          b.queue.removeAt(i);
          this.#reservations.delete(r.key);
        } else i++;
      }
      if (b.queue.size === 0) b.lastTag.clear();
      if (this.#full(b, now) && now - b.updatedAt > FORGET_AFTER_MS) this.#forget(k, b);
    }
  }
}

/** The bucket's tokens at `now` (refilled since its last update, never above the burst; no refill from the past). */
function tokensAt(b: Bucket, now: number): number {
  return now > b.updatedAt ? Math.min(b.limit.burst, b.tokens + ((now - b.updatedAt) * b.limit.ratePerSec) / 1000) : b.tokens;
}
