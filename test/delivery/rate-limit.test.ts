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
    // k3 past the cap cancels k1 (its token back): k3 is told the slot it has then, right behind k2
    expect(['k1', 'k2', 'k3'].map((k) => l.take('r', 'SLACK', T, k))).toEqual([1000, 2000, 2000]);
    expect(l.size.reservations).toBe(2);
    expect(l.take('r', 'SLACK', T + 1000, 'k2')).toBe(0);
    expect(l.take('r', 'SLACK', T + 1000, 'k3')).toBe(1000);
  });

  it('rejects nonsense limits; 0 per second is unlimited', () => {
    expect(() => new RateLimiter({ SLACK: { ratePerSec: -1, burst: 1 } })).toThrow(RangeError);
    expect(() => new RateLimiter({ SLACK: { ratePerSec: Infinity, burst: 1 } })).toThrow(RangeError);
    expect(() => new RateLimiter({ SLACK: { ratePerSec: 1, burst: 0.5 } })).toThrow(RangeError);
    const l = new RateLimiter({ SLACK: { ratePerSec: 0, burst: 1 } });
    expect(Array.from({ length: 1000 }, (_, i) => l.take('s', 'SLACK', T, `k${i}`))).toEqual(Array(1000).fill(0));
    expect(l.size.reservations).toBe(0);
  });

  it("an integration's own limit wins over its type's; 0 is unlimited; a changed limit applies from then on", () => {
    const l = new RateLimiter({ WEBHOOK: { ratePerSec: 1000, burst: 1000 } });
    const own = { ratePerSec: 2, burst: 1 };
    expect(l.effective('WEBHOOK', own)).toEqual(own);
    expect(l.effective('WEBHOOK', null)).toEqual({ ratePerSec: 1000, burst: 1000 });
    expect(l.take('w', 'WEBHOOK', T, 'a', { limit: own })).toBe(0);
    expect(l.take('w', 'WEBHOOK', T, 'b', { limit: own })).toBe(500);
    expect(l.take('w', 'WEBHOOK', T, 'c', { limit: own })).toBe(1000);
    // the user lifts it (0: unlimited): everything goes, the reservation made before is let go
    expect(l.take('w', 'WEBHOOK', T, 'c', { limit: { ratePerSec: 0, burst: 1 } })).toBe(0);
    expect(l.take('w', 'WEBHOOK', T, 'd', { limit: { ratePerSec: 0, burst: 1 } })).toBe(0);
    // and sets a slower one: the debt stays, the slots are the new rate's
    expect(l.take('w', 'WEBHOOK', T, 'b', { limit: { ratePerSec: 1, burst: 1 } })).toBe(1000);
    // a stored limit that is not one: the type's applies (sends go on)
    expect(l.effective('WEBHOOK', { ratePerSec: -2, burst: 1 })).toEqual({ ratePerSec: 1000, burst: 1000 });
  });

  describe('fair reservations: round-robin by flow (router)', () => {
    /** The order the reserved keys may go in: advance slot by slot, each slot letting the due one through. */
    function drain(l: RateLimiter, keys: readonly string[], from: number, flowOf: (k: string) => string, slotMs: number): string[] {
      const out: string[] = [];
      const left = new Set(keys);
      for (let t = from; left.size && t < from + slotMs * (keys.length + 2); t += slotMs) {
        for (const k of left) {
          if (l.take('s', 'SLACK', t, k, { flow: flowOf(k) }) === 0) {
            out.push(k);
            left.delete(k);
          }
        }
      }
      return out;
    }

    it("a storm of 200 on router A: router B's one goes right after the head, A keeps its order", () => {
      const l = new RateLimiter({ SLACK: { ratePerSec: 5, burst: 1 } });
      const flowOf = (k: string) => k[0]!;
      expect(l.take('s', 'SLACK', T, 'A000', { flow: 'A' })).toBe(0);
      const storm = Array.from({ length: 199 }, (_, i) => `A${String(i + 1).padStart(3, '0')}`);
      const waits = storm.map((k) => l.take('s', 'SLACK', T, k, { flow: 'A' }));
      expect(waits.slice(0, 3)).toEqual([200, 400, 600]);
      expect(waits.at(-1)).toBe(199 * 200);
      // two slots later (A001, A002 went), B's first: behind the head only (one slot), not behind the 197 left
      expect(l.take('s', 'SLACK', T + 200, 'A001', { flow: 'A' })).toBe(0);
      expect(l.take('s', 'SLACK', T + 400, 'A002', { flow: 'A' })).toBe(0);
      expect(l.take('s', 'SLACK', T + 400, 'B', { flow: 'B' })).toBe(400);
      // A's reservations behind B moved one slot: coming back at the old slot, told to wait one more
      expect(l.take('s', 'SLACK', T + 800, 'A004', { flow: 'A' })).toBe(200);
      const order = drain(l, [...storm.slice(2), 'B'], T + 600, flowOf, 200);
      expect(order.slice(0, 2)).toEqual(['A003', 'B']);
      expect(order.filter((k) => k !== 'B')).toEqual(storm.slice(2));
      expect(l.size.reservations).toBe(0);
    });

    it('table: busy flows take turns, a newcomer waits at most one slot per busy flow', () => {
      const cases: Array<{ name: string; reserve: string[]; want: string[] }> = [
        { name: 'one flow: FIFO', reserve: ['A1', 'A2', 'A3'], want: ['A1', 'A2', 'A3'] },
        { name: 'two flows arriving in blocks: alternate', reserve: ['A1', 'A2', 'A3', 'B1', 'B2'], want: ['A1', 'B1', 'A2', 'B2', 'A3'] },
        { name: 'three flows', reserve: ['A1', 'A2', 'B1', 'C1', 'C2'], want: ['A1', 'B1', 'C1', 'A2', 'C2'] },
        {
          name: 'a late flow goes behind the current round',
          reserve: ['A1', 'B1', 'A2', 'B2', 'C1'],
          want: ['A1', 'B1', 'C1', 'A2', 'B2'],
        },
      ];
      for (const c of cases) {
        const l = new RateLimiter({ SLACK: { ratePerSec: 1, burst: 1 } });
        expect(l.take('s', 'SLACK', T, 'first')).toBe(0);
        for (const k of c.reserve) expect(l.take('s', 'SLACK', T, k, { flow: k[0] })).toBeGreaterThan(0);
        expect(
          drain(l, c.reserve, T, (k) => k[0]!, 1000),
          c.name,
        ).toEqual(c.want);
      }
    });

    it('a long backlog: used in order and out of order near the front, every one goes at its slot, once', () => {
      const l = new RateLimiter({ SLACK: { ratePerSec: 10, burst: 1 } }, { maxReservations: 10_000 });
      expect(l.take('s', 'SLACK', T, 'k0', { flow: 'A' })).toBe(0);
      const n = 3000;
      for (let i = 1; i <= n; i++) expect(l.take('s', 'SLACK', T, `k${i}`, { flow: 'A' })).toBe(i * 100);
      // the second one comes back before the first (both due): each goes once, the rest keep their slots
      expect(l.take('s', 'SLACK', T + 200, 'k2', { flow: 'A' })).toBe(0);
      expect(l.take('s', 'SLACK', T + 200, 'k1', { flow: 'A' })).toBe(0);
      for (let i = 3; i <= n; i++) expect(l.take('s', 'SLACK', T + i * 100, `k${i}`, { flow: 'A' }), `k${i}`).toBe(0);
      expect(l.size.reservations).toBe(0);
      expect(l.take('s', 'SLACK', T + n * 100, 'late', { flow: 'B' })).toBe(100);
    });

    it('a released reservation moves the ones behind it up; a stale one is forgotten without moving the others', () => {
      const l = new RateLimiter({ SLACK: { ratePerSec: 1, burst: 1 } });
      l.take('s', 'SLACK', T);
      expect(['a', 'b', 'c'].map((k) => l.take('s', 'SLACK', T, k, { flow: 'A' }))).toEqual([1000, 2000, 3000]);
      l.release('b');
      expect(l.take('s', 'SLACK', T, 'c', { flow: 'A' })).toBe(2000);
      // 'a' never comes back; long after, 'c' is still let through at once
      expect(l.take('s', 'SLACK', T + 3_600_000, 'c', { flow: 'A' })).toBe(0);
      expect(l.size.reservations).toBe(0);
    });
  });
});
