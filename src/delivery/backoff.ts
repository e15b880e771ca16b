/**
 * Retry scheduling, pure: what to do with a delivery after an attempt.
 *
 * - delivered: done.
 * - dead (the notifier says the failure is permanent: other 4xx, 3xx, bad configuration): dead at once.
 * - retry (429, 5xx, network errors, timeouts): again after max(full-jitter exponential backoff,
 *   Retry-After), unless that would be later than createdAt + maxAge: then dead, with an error that
 *   says so ("gave up after N attempts over X: <last error>").
 *
 * Full jitter (AWS architecture blog, "Exponential Backoff And Jitter"): the delay after attempt n is
 * uniform in [0, min(cap, base * 2^(n-1))). It spreads a burst of failures (a receiver outage hits
 * every queued delivery at once) instead of retrying them in lock-step.
 */
import type { DeliveryResult } from '../integrations/types.js';
import type { DeliveryRecord } from '../store/types.js';

export const DEFAULT_BASE_DELAY_MS = 1_000;
export const DEFAULT_MAX_DELAY_MS = 600_000;
export const DEFAULT_MAX_AGE_MS = 24 * 60 * 60 * 1000;

export interface BackoffOptions {
  /** Ceiling of the first retry's delay. Default 1 s. */
  baseMs?: number;
  /** Upper bound of the delay ceiling. Default 10 min. */
  capMs?: number;
}

/**
 * Delay before the next attempt, after `attempt` (1-based) attempts have failed.
 * `rng` returns a number in [0, 1) (Math.random by default in the worker; injectable for tests).
 */
export function nextAttemptDelay(attempt: number, rng: () => number, opts: BackoffOptions = {}): number {
  const base = Math.max(0, opts.baseMs ?? DEFAULT_BASE_DELAY_MS);
  const cap = Math.max(0, opts.capMs ?? DEFAULT_MAX_DELAY_MS);
  const exponent = Math.min(Math.max(Math.floor(attempt) - 1, 0), 60); // 2^60 ms is already past any cap
  const ceiling = Math.min(cap, base * 2 ** exponent);
  const r = rng();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0;
  return Math.floor(unit * ceiling);
}

export type Decision =
  | { kind: 'delivered'; statusCode: number | null }
  | { kind: 'retry'; at: number; error: string; statusCode: number | null }
  | { kind: 'dead'; error: string; statusCode: number | null };

export interface DecideOptions extends BackoffOptions {
  /** Give up when the next attempt would start later than createdAt + maxAgeMs. Default 24 h. */
  maxAgeMs?: number;
  /** Default Math.random. */
  rng?: () => number;
}

/** The error text of a failed result: the notifier's, else the status, else a generic one. */
export function errorOf(result: DeliveryResult): string {
  if (result.error) return result.error;
  if (result.statusCode !== undefined) return `HTTP ${result.statusCode}`;
  return result.outcome === 'dead' ? 'permanent failure' : 'temporary failure';
}

/** What to do after an attempt. `delivery.attempts` counts the attempt that produced `result`. */
export function decide(
  result: DeliveryResult,
  delivery: Pick<DeliveryRecord, 'attempts' | 'createdAt'>,
  now: number,
  opts: DecideOptions = {},
): Decision {
  const statusCode = result.statusCode ?? null;
  switch (result.outcome) {
    case 'delivered':
      return { kind: 'delivered', statusCode };
    case 'dead':
      return { kind: 'dead', error: errorOf(result), statusCode };
    case 'retry': {
      const backoff = nextAttemptDelay(delivery.attempts, opts.rng ?? Math.random, opts);
      const retryAfter = result.retryAfterMs !== undefined && result.retryAfterMs > 0 ? result.retryAfterMs : 0;
      const at = now + Math.max(backoff, retryAfter);
      const maxAge = opts.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
      if (at > delivery.createdAt + maxAge) {
        const n = delivery.attempts;
        return {
          kind: 'dead',
          error: `gave up after ${n} attempt${n === 1 ? '' : 's'} over ${humanDuration(now - delivery.createdAt)}: ${errorOf(result)}`,
          statusCode,
        };
      }
      return { kind: 'retry', at, error: errorOf(result), statusCode };
    }
    default: {
      const never: never = result.outcome;
      return { kind: 'dead', error: `unknown delivery outcome ${String(never)}`, statusCode };
    }
  }
}

/** 250ms, 1.5s, 1m5s, 1h30m, 24h, 2d3h: short and readable, for error texts and logs. */
export function humanDuration(ms: number): string {
  const v = Math.max(0, Math.round(ms));
  if (v < 1000) return `${v}ms`;
  if (v < 60_000) {
    const s = v / 1000;
    return `${Number.isInteger(s) ? s : s.toFixed(1).replace(/\.0$/, '')}s`;
  }
  const totalS = Math.floor(v / 1000);
  const d = Math.floor(totalS / 86_400);
  const h = Math.floor((totalS % 86_400) / 3600);
  const m = Math.floor((totalS % 3600) / 60);
  const s = totalS % 60;
  if (d > 0) return `${d}d${h ? `${h}h` : ''}`;
  if (h > 0) return `${h}h${m ? `${m}m` : ''}`;
  return `${m}m${s ? `${s}s` : ''}`;
}
