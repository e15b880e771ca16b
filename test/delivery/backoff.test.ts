import { describe, expect, it } from 'vitest';
import { decide, humanDuration, nextAttemptDelay, type Decision } from '../../src/delivery/backoff.js';
import type { DeliveryResult } from '../../src/integrations/types.js';

const fixed = (r: number) => () => r;
const HOUR = 3_600_000;

describe('nextAttemptDelay (full jitter)', () => {
  it.each([
    // attempt, rng, opts, expected
    [1, 0, {}, 0],
    [1, 0.5, {}, 500],
    [1, 0.999, {}, 999],
    [2, 0.5, {}, 1_000],
    [3, 0.5, {}, 2_000],
    [10, 0.5, {}, 256_000],
    [11, 0.5, {}, 300_000], // ceiling capped at 600 s
    [1000, 0.5, {}, 300_000], // no overflow for absurd attempt numbers
    [0, 0.5, {}, 500], // treated as the first
    [3, 0.5, { baseMs: 10 }, 20],
    [5, 0.999, { baseMs: 10, capMs: 50 }, 49],
    [2, 1.5, {}, 2_000], // a misbehaving rng is clamped to the ceiling
    [2, Number.NaN, {}, 0],
  ] as const)('attempt %i, rng %f, %o -> %i ms', (attempt, r, opts, expected) => {
    expect(nextAttemptDelay(attempt, fixed(r), opts)).toBe(expected);
  });

  it('stays within [0, min(cap, base * 2^(n-1))) for random draws', () => {
    for (let n = 1; n <= 20; n++) {
      const ceiling = Math.min(600_000, 1000 * 2 ** (n - 1));
      for (let k = 0; k < 200; k++) {
        const d = nextAttemptDelay(n, Math.random);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThan(ceiling);
      }
    }
  });
});

describe('decide', () => {
  const T0 = 1_700_000_000_000;
  const opts = { rng: fixed(0.5), maxAgeMs: 24 * HOUR };
  const d = (attempts: number, createdAt = T0) => ({ attempts, createdAt });

  it.each<[string, DeliveryResult, ReturnType<typeof d>, number, Decision]>([
    ['2xx is delivered', { outcome: 'delivered', statusCode: 202 }, d(1), T0, { kind: 'delivered', statusCode: 202 }],
    ['delivered without a status (SMTP accepted)', { outcome: 'delivered' }, d(3), T0, { kind: 'delivered', statusCode: null }],
    [
      '400 is dead at once',
      { outcome: 'dead', statusCode: 400, error: 'HTTP 400 Bad Request' },
      d(1),
      T0,
      { kind: 'dead', error: 'HTTP 400 Bad Request', statusCode: 400 },
    ],
    ['dead without an error text', { outcome: 'dead', statusCode: 404 }, d(1), T0, { kind: 'dead', error: 'HTTP 404', statusCode: 404 }],
    [
      '503: jittered backoff',
      { outcome: 'retry', statusCode: 503, error: 'HTTP 503 Service Unavailable' },
      d(3),
      T0 + 10_000,
      { kind: 'retry', at: T0 + 10_000 + 2_000, error: 'HTTP 503 Service Unavailable', statusCode: 503 },
    ],
    [
      '429: Retry-After wins when longer than the backoff',
      { outcome: 'retry', statusCode: 429, retryAfterMs: 30_000, error: 'HTTP 429 Too Many Requests' },
      d(1),
      T0,
      { kind: 'retry', at: T0 + 30_000, error: 'HTTP 429 Too Many Requests', statusCode: 429 },
    ],
    [
      '429: the backoff wins when longer than Retry-After',
      { outcome: 'retry', statusCode: 429, retryAfterMs: 1_000, error: 'HTTP 429' },
      d(6),
      T0,
      { kind: 'retry', at: T0 + 16_000, error: 'HTTP 429', statusCode: 429 },
    ],
    [
      'network error (no status)',
      { outcome: 'retry', error: 'network error: connection refused (ECONNREFUSED)' },
      d(1),
      T0,
      { kind: 'retry', at: T0 + 500, error: 'network error: connection refused (ECONNREFUSED)', statusCode: null },
    ],
    [
      'next attempt exactly at the maximum age: still retried',
      { outcome: 'retry', statusCode: 500, error: 'HTTP 500' },
      d(1),
      T0 + 24 * HOUR - 500,
      { kind: 'retry', at: T0 + 24 * HOUR, error: 'HTTP 500', statusCode: 500 },
    ],
    [
      'next attempt past the maximum age: dead, saying why',
      { outcome: 'retry', statusCode: 503, error: 'HTTP 503 Service Unavailable' },
      d(42),
      T0 + 24 * HOUR - 1_000,
      {
        kind: 'dead',
        error: 'gave up after 42 attempts over 23h59m: HTTP 503 Service Unavailable',
        statusCode: 503,
      },
    ],
    [
      'a Retry-After beyond the maximum age also ends it',
      { outcome: 'retry', statusCode: 429, retryAfterMs: 25 * HOUR, error: 'HTTP 429' },
      d(1),
      T0 + 2_000,
      { kind: 'dead', error: 'gave up after 1 attempt over 2s: HTTP 429', statusCode: 429 },
    ],
  ])('%s', (_name, result, delivery, now, expected) => {
    expect(decide(result, delivery, now, opts)).toEqual(expected);
  });

  it('small base delays and max age (as the tests use)', () => {
    const r = decide({ outcome: 'retry', statusCode: 503 }, d(2), T0 + 100, { rng: fixed(0.5), baseMs: 20, capMs: 200, maxAgeMs: 300 });
    expect(r).toEqual({ kind: 'retry', at: T0 + 120, error: 'HTTP 503', statusCode: 503 });
    const dead = decide({ outcome: 'retry', statusCode: 503 }, d(9), T0 + 290, { rng: fixed(0.5), baseMs: 20, capMs: 200, maxAgeMs: 300 });
    expect(dead).toEqual({ kind: 'dead', error: 'gave up after 9 attempts over 290ms: HTTP 503', statusCode: 503 });
  });
});

describe('humanDuration', () => {
  it.each([
    [0, '0ms'],
    [250, '250ms'],
    [1_000, '1s'],
    [1_500, '1.5s'],
    [59_940, '59.9s'],
    [65_000, '1m5s'],
    [120_000, '2m'],
    [5_400_000, '1h30m'],
    [24 * HOUR, '1d'],
    [51 * HOUR, '2d3h'],
    [-5, '0ms'],
  ])('%i -> %s', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });
});
