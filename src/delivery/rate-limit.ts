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

interface Bucket {
  limit: RateLimit;
  /** May be negative: reserved slots not yet refilled. */
  tokens: number;
  updatedAt: number;
}

interface Reservation {
  bucketKey: string;
  at: number;
}

/**
 * Hard caps on the limiter's memory (issue 7, bounded state): one bucket per integration (bounded by the
 * per-company integration quota times the companies) and one reservation per deferred delivery. At the cap,
 * full buckets are dropped first (lossless: a new bucket starts full), then the least recently used one;
 * the oldest reservation is cancelled (its token goes back; the delivery pays again when it comes back).
 */
export interface RateLimiterCaps {
  maxBuckets: number;
  maxReservations: number;
}
const DEFAULT_RATE_LIMITER_CAPS: Readonly<RateLimiterCaps> = { maxBuckets: 100_000, maxReservations: 100_000 };

/** Idle buckets and stale reservations are forgotten after this long. */
const FORGET_AFTER_MS = 10 * 60 * 1000;
const SWEEP_EVERY_MS = 60 * 1000;

function validLimit(l: RateLimit, what: string): RateLimit {
  if (!(l.ratePerSec > 0) || !Number.isFinite(l.ratePerSec) || !(l.burst >= 1) || !Number.isFinite(l.burst)) {
    throw new RangeError(`rate limit for ${what}: ratePerSec must be > 0 and burst >= 1`);
  }
  return { ratePerSec: l.ratePerSec, burst: l.burst };
}

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

  limitFor(type: IntegrationType): RateLimit {
    return this.#limits[type];
  }

  /**
   * Takes a token for one send to `integrationId` at time `now` (epoch ms). Returns 0 when the send
   * may go now, else the number of ms to wait. With a `key` (the delivery id), a wait reserves the
   * slot: the same key at or after `now + wait` gets 0 without taking another token.
   */
  take(integrationId: string, type: IntegrationType, now: number, key?: string): number {
    this.#sweep(now);
    const bucketKey = `${type}/${integrationId}`;
    if (key !== undefined) {
      const r = this.#reservations.get(key);
      if (r && r.bucketKey === bucketKey) {
        if (now >= r.at) {
          this.#reservations.delete(key);
          return 0;
        }
        return Math.ceil(r.at - now);
      }
    }
    const b = this.#bucket(bucketKey, type, now);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    const perTokenMs = 1000 / b.limit.ratePerSec;
    if (key === undefined) return Math.max(1, Math.ceil((1 - b.tokens) * perTokenMs));
    b.tokens -= 1;
    const wait = Math.max(1, Math.ceil(-b.tokens * perTokenMs));
    this.#reservations.set(key, { bucketKey, at: now + wait });
    while (this.#reservations.size > this.#caps.maxReservations) {
      const oldest = this.#reservations.keys().next().value;
      if (oldest === undefined || oldest === key) break;
      this.release(oldest);
    }
    return wait;
  }

  /** Cancels a reservation that will not be used (e.g. the deferral did not apply): its token goes back. */
  release(key: string): void {
    const r = this.#reservations.get(key);
    if (!r) return;
    this.#reservations.delete(key);
    const b = this.#buckets.get(r.bucketKey);
    if (b) b.tokens = Math.min(b.limit.burst, b.tokens + 1);
  }

  /** Number of buckets and reservations held (for tests and debugging). */
  get size(): { buckets: number; reservations: number } {
    return { buckets: this.#buckets.size, reservations: this.#reservations.size };
  }

  #bucket(bucketKey: string, type: IntegrationType, now: number): Bucket {
    let b = this.#buckets.get(bucketKey);
    if (!b) {
      if (this.#buckets.size >= this.#caps.maxBuckets) this.#shed(now);
      const limit = this.#limits[type];
      b = { limit, tokens: limit.burst, updatedAt: now };
      this.#buckets.set(bucketKey, b);
      return b;
    }
    // keep the map in recency order (least recently used first) for #shed
    this.#buckets.delete(bucketKey);
    this.#buckets.set(bucketKey, b);
    if (now > b.updatedAt) {
      b.tokens = Math.min(b.limit.burst, b.tokens + ((now - b.updatedAt) * b.limit.ratePerSec) / 1000);
      b.updatedAt = now;
    }
    return b;
  }

  /** At the bucket cap: drops every full bucket (lossless), else the least recently used one. */
  #shed(now: number): void {
    for (const [k, b] of this.#buckets) {
      if (b.tokens + ((now - b.updatedAt) * b.limit.ratePerSec) / 1000 >= b.limit.burst) this.#buckets.delete(k);
    }
    while (this.#buckets.size >= this.#caps.maxBuckets) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest === undefined) break;
      this.#buckets.delete(oldest);
    }
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < SWEEP_EVERY_MS) return;
    this.#lastSweep = now;
    for (const [k, r] of this.#reservations) if (now - r.at > FORGET_AFTER_MS) this.#reservations.delete(k);
    for (const [k, b] of this.#buckets) {
      const full = b.tokens + ((now - b.updatedAt) * b.limit.ratePerSec) / 1000 >= b.limit.burst;
      if (full && now - b.updatedAt > FORGET_AFTER_MS) this.#buckets.delete(k);
    }
  }
}
