/**
 * Log rate limiting per tenant (companyId) and cause, for the log sites that fire once per event or per
 * delivery: one tenant's always-failing filters times a large event batch must not write a line each and bury
 * every other tenant's lines.
 *
 * A token bucket per (tenant, cause): `burst` lines at once, then `perMinute`. A dropped line is counted
 * in certmgr_notify_log_suppressed_total{cause} and remembered; the next line let through for that key (or
 * the periodic flush) first writes "N similar messages suppressed". The map of buckets is bounded (least
 * recently used key evicted; its pending count is still summarized), so hostile tenant ids cannot grow it.
 * Debug lines that are not enabled cost nothing and use no tokens.
 *
 * No library: the one we would want (a keyed, bounded, dropping token bucket with a drop count) is a few
 * lines; the delivery rate limiter (src/delivery/rate-limit.ts) queues instead of dropping.
 */
import { Counter, type Registry } from 'prom-client';
import type { Logger } from './logger.js';

/** Every per-event / per-delivery log site has a cause; the metric label takes only these values. */
export const LOG_CAUSES = [
  'filter_evaluation',
  'delivery_dead_letter',
  'delivery_retry',
  'delivery_delivered',
  'delivery_lease_lost',
  'delivery_superseded',
  'delivery_store_error',
  'delivery_abandoned',
  'cluster_silence',
  'reminder_cap',
  'silence_evaluation',
] as const;
export type LogCause = (typeof LOG_CAUSES)[number];

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export const LOG_SUPPRESSED_METRIC = 'certmgr_notify_log_suppressed_total';

export interface LogLimits {
  /** Sustained lines per minute per (tenant, cause). */
  perMinute: number;
  /** Lines at once after a quiet period. */
  burst: number;
  /** Most (tenant, cause) keys remembered. */
  maxKeys: number;
}

/** Unless configured (serve: logRatePerMinute and logRateBurst in --limits-file). */
export const DEFAULT_LOG_LIMITS: Readonly<LogLimits> = { perMinute: 60, burst: 20, maxKeys: 10_000 };

interface Bucket {
  tokens: number;
  at: number;
  /** Dropped since the last line let through (or the last summary). */
  suppressed: number;
  level: LogLevel;
}

export interface Suppressed {
  tenant: string;
  cause: LogCause;
  level: LogLevel;
  count: number;
}

/** The pure part: buckets keyed by tenant and cause, bounded, with the time passed in. */
export class LogBuckets {
  readonly #limits: LogLimits;
  readonly #buckets = new Map<string, Bucket & { tenant: string; cause: LogCause }>();
  /** Pending counts of evicted keys, summarized at the next flush. */
  readonly #evicted: Suppressed[] = [];

  constructor(limits: Partial<LogLimits> = {}) {
    const l = { ...DEFAULT_LOG_LIMITS, ...limits };
    if (!(l.perMinute > 0) || !(l.burst >= 1) || !(l.maxKeys >= 1))
      throw new RangeError('log limits: perMinute must be > 0, burst and maxKeys >= 1');
    this.#limits = l;
  }

  get size(): number {
    return this.#buckets.size;
  }

  /**
   * Whether a line may be written now. When it may, `suppressed` is how many lines of this key were dropped
   * before it (the caller writes the summary first); the count is then reset.
   */
  take(tenant: string, cause: LogCause, level: LogLevel, now: number): { ok: true; suppressed: number } | { ok: false } {
    const key = `${tenant}\u0000${cause}`;
    let b = this.#buckets.get(key);
    if (b) {
      this.#buckets.delete(key); // re-inserted below: Map order is the LRU order
      b.tokens = Math.min(this.#limits.burst, b.tokens + (Math.max(0, now - b.at) * this.#limits.perMinute) / 60_000);
      b.at = now;
    } else {
      if (this.#buckets.size >= this.#limits.maxKeys) {
        const [oldKey, old] = this.#buckets.entries().next().value!;
        this.#buckets.delete(oldKey);
        if (old.suppressed > 0) this.#evicted.push({ tenant: old.tenant, cause: old.cause, level: old.level, count: old.suppressed });
      }
      b = { tokens: this.#limits.burst, at: now, suppressed: 0, level, tenant, cause };
    }
    this.#buckets.set(key, b);
    if (b.tokens < 1) {
      b.suppressed++;
      b.level = level;
      return { ok: false };
    }
    b.tokens -= 1;
    const suppressed = b.suppressed;
    b.suppressed = 0;
    return { ok: true, suppressed };
  }

  /** Takes every pending suppressed count (for the summary lines of a periodic flush). */
  drain(): Suppressed[] {
    const out = this.#evicted.splice(0);
    for (const b of this.#buckets.values()) {
      if (b.suppressed > 0) {
        out.push({ tenant: b.tenant, cause: b.cause, level: b.level, count: b.suppressed });
        b.suppressed = 0;
      }
    }
    return out;
  }
}

/** The shell: buckets + metric + summary lines, shared by the ingestion path and the delivery worker. */
export class LogLimiter {
  readonly #buckets: LogBuckets;
  readonly #log: Logger;
  readonly #counter: Counter<'cause'> | undefined;
  readonly #clock: () => number;
  #timer: NodeJS.Timeout | undefined;

  constructor(log: Logger, opts: { limits?: Partial<LogLimits>; registry?: Registry; clock?: () => number; flushEveryMs?: number } = {}) {
    this.#buckets = new LogBuckets(opts.limits);
    this.#log = log;
    this.#clock = opts.clock ?? Date.now;
    if (opts.registry) {
      const existing = opts.registry.getSingleMetric(LOG_SUPPRESSED_METRIC) as Counter<'cause'> | undefined;
      this.#counter =
        existing ??
        new Counter({
          name: LOG_SUPPRESSED_METRIC,
          help: 'Log lines not written because their tenant and cause exceeded the log rate limit (logRatePerMinute and logRateBurst in --limits-file)',
          labelNames: ['cause'],
          registers: [opts.registry],
        });
      for (const cause of LOG_CAUSES) this.#counter.inc({ cause }, 0);
    }
    const every = opts.flushEveryMs ?? 60_000;
    if (every > 0) {
      this.#timer = setInterval(() => this.flush(), every);
      this.#timer.unref();
    }
  }

  /**
   * Whether the caller may write its line (at `level`, on `log`) for this tenant and cause. Writes the
   * "N similar messages suppressed" summary first when lines were dropped before it.
   */
  admit(log: Logger, level: LogLevel, tenant: string, cause: LogCause): boolean {
    if (!log.isLevelEnabled(level)) return false;
    const r = this.#buckets.take(tenant, cause, level, this.#clock());
    if (!r.ok) {
      this.#counter?.inc({ cause });
      return false;
    }
    if (r.suppressed > 0) summary(log, { tenant, cause, level, count: r.suppressed });
    return true;
  }

  /** Writes the summaries of everything dropped and not yet summarized (periodically and at close). */
  flush(): void {
    for (const s of this.#buckets.drain()) summary(this.#log, s);
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.flush();
  }
}

function summary(log: Logger, s: Suppressed): void {
  log[s.level](
    { companyId: s.tenant, cause: s.cause, suppressed: s.count },
    `${s.count} similar messages suppressed (log rate limit per tenant and cause)`,
  );
}
