import { describe, expect, it } from 'vitest';
import { DEFAULT_RATE_LIMITS, RateLimiter } from '../../src/delivery/rate-limit.js';

const T = 1_700_000_000_000;

describe('RateLimiter (token bucket per integration)', () => {
  it('defaults per type', () => {
    expect(DEFAULT_RATE_LIMITS).toEqual({
      SLACK: { ratePerSec: 1, burst: 3 },
      TEAMS: { ratePerSec: 2, burst: 4 },
      WEBHOOK: { ratePerSec: 20, burst: 40 },
      INCIDENT_MGMT: { ratePerSec: 2, burst: 10 },
      EMAIL: { ratePerSec: 5, burst: 10 },
      OPSGENIE: { ratePerSec: 1, burst: 10 },
      GOOGLE_CHAT: { ratePerSec: 1, burst: 3 },
      DISCORD: { ratePerSec: 0.5, burst: 5 },
      GENERIC_WEBHOOK: { ratePerSec: 20, burst: 40 },
      ALERTMANAGER: { ratePerSec: 100, burst: 500 },
    });
    const l = new RateLimiter({ SLACK: { ratePerSec: 5, burst: 1 } });
    expect(l.limitFor('SLACK')).toEqual({ ratePerSec: 5, burst: 1 });
    expect(l.limitFor('EMAIL')).toEqual(DEFAULT_RATE_LIMITS.EMAIL);
  });

  it('Slack: a burst of 3, then 1 per second', () => {
    const l = new RateLimiter();
    expect([0, 1, 2].map(() => l.take('s1', 'SLACK', T))).toEqual([0, 0, 0]);
    expect(l.take('s1', 'SLACK', T)).toBe(1000);
    expect(l.take('s1', 'SLACK', T + 400)).toBe(600);
    expect(l.take('s1', 'SLACK', T + 1000)).toBe(0);
    expect(l.take('s1', 'SLACK', T + 1000)).toBe(1000);
    // After a quiet period the bucket is full again, but never above the burst.
    expect([0, 1, 2, 3].map(() => l.take('s1', 'SLACK', T + 60_000))).toEqual([0, 0, 0, 1000]);
  });

  it('buckets are per integration', () => {
    const l = new RateLimiter({ SLACK: { ratePerSec: 1, burst: 1 } });
    expect(l.take('a', 'SLACK', T)).toBe(0);
    expect(l.take('a', 'SLACK', T)).toBe(1000);
    expect(l.take('b', 'SLACK', T)).toBe(0);
  });

  it('with a key, a wait reserves the next free slot: a backlog is spread, each item deferred once', () => {
    const l = new RateLimiter({ SLACK: { ratePerSec: 1, burst: 1 } });
    expect(l.take('s', 'SLACK', T, 'd0')).toBe(0);
    const waits = ['d1', 'd2', 'd3', 'd4'].map((k) => l.take('s', 'SLACK', T, k));
    expect(waits).toEqual([1000, 2000, 3000, 4000]);
    // Early return (another worker looked too soon): wait for the rest of the slot, no new booking.
    expect(l.take('s', 'SLACK', T + 500, 'd2')).toBe(1500);
    // At its slot each one goes without paying again; a newcomer queues behind the whole backlog.
    expect(l.take('s', 'SLACK', T + 1000, 'd1')).toBe(0);
    expect(l.take('s', 'SLACK', T + 1000, 'new')).toBe(4000);
    expect(l.take('s', 'SLACK', T + 2000, 'd2')).toBe(0);
    expect(l.take('s', 'SLACK', T + 3000, 'd3')).toBe(0);
    expect(l.take('s', 'SLACK', T + 4000, 'd4')).toBe(0);
    expect(l.take('s', 'SLACK', T + 5000, 'new')).toBe(0);
    expect(l.size.reservations).toBe(0);
    expect(l.take('s', 'SLACK', T + 5000, 'late')).toBe(1000);
  });

  it('release gives a reserved token back', () => {
    const l = new RateLimiter({ WEBHOOK: { ratePerSec: 10, burst: 1 } });
    expect(l.take('w', 'WEBHOOK', T, 'a')).toBe(0);
    expect(l.take('w', 'WEBHOOK', T, 'b')).toBe(100);
    l.release('b');
    l.release('unknown');
    expect(l.take('w', 'WEBHOOK', T, 'c')).toBe(100);
  });

  it('fractional rates and a clock that goes backwards', () => {
    const l = new RateLimiter({ INCIDENT_MGMT: { ratePerSec: 2, burst: 1 } });
    expect(l.take('p', 'INCIDENT_MGMT', T)).toBe(0);
    expect(l.take('p', 'INCIDENT_MGMT', T)).toBe(500);
    expect(l.take('p', 'INCIDENT_MGMT', T - 10_000)).toBe(500); // no refill from the past
    expect(l.take('p', 'INCIDENT_MGMT', T + 500)).toBe(0);
  });

  it('forgets idle buckets and stale reservations', () => {
    const l = new RateLimiter({ SLACK: { ratePerSec: 1, burst: 1 } });
    l.take('x', 'SLACK', T);
    l.take('x', 'SLACK', T, 'never-comes-back');
    expect(l.size).toEqual({ buckets: 1, reservations: 1 });
    l.take('y', 'SLACK', T + 60 * 60 * 1000);
    expect(l.size).toEqual({ buckets: 1, reservations: 0 });
  });

  it('bounded: at the bucket cap full buckets go first, then the least recently used; reservations are capped', () => {
    const l = new RateLimiter({ SLACK: { ratePerSec: 1, burst: 1 } }, { maxBuckets: 3, maxReservations: 2 });
    // a and b are emptied (they carry state); c is untouched after its refill
    expect(l.take('a', 'SLACK', T)).toBe(0);
    expect(l.take('b', 'SLACK', T)).toBe(0);
    expect(l.take('c', 'SLACK', T - 5_000)).toBe(0);
    expect(l.size.buckets).toBe(3);
    // a fourth integration: c is full again by now, dropping it loses nothing; a and b keep their state
    expect(l.take('d', 'SLACK', T)).toBe(0);
    expect(l.size.buckets).toBe(3);
    expect(l.take('a', 'SLACK', T)).toBe(1000);
    expect(l.take('b', 'SLACK', T)).toBe(1000);
    // 10,000 integrations later the map still holds 3
    for (let i = 0; i < 10_000; i++) l.take(`x${i}`, 'SLACK', T);
    expect(l.size.buckets).toBe(3);
    // reservations: the oldest is cancelled past the cap
    l.take('r', 'SLACK', T);
    for (const k of ['k1', 'k2', 'k3']) l.take('r', 'SLACK', T, k);
    expect(l.size.reservations).toBe(2);
  });

  it('rejects nonsense limits', () => {
    expect(() => new RateLimiter({ SLACK: { ratePerSec: 0, burst: 1 } })).toThrow(RangeError);
    expect(() => new RateLimiter({ SLACK: { ratePerSec: 1, burst: 0.5 } })).toThrow(RangeError);
  });
});
