/** The prober's pure scheduling parts: the token bucket, the heap of due times, the spread and the next probe. */
import { describe, expect, it } from 'vitest';
import { DueHeap, TokenBucket, firstProbeSpreadMs, nextProbe } from '../../../src/emitter/serving/schedule.js';

describe('TokenBucket', () => {
  it('gives a burst, then one token per 1/rate s, and says how long until the next', () => {
    const b = new TokenBucket(10, 3, 0);
    expect([b.take(0), b.take(0), b.take(0)]).toEqual([0, 0, 0]);
    expect(b.take(0)).toBe(100);
    expect(b.take(40)).toBe(60);
    expect(b.take(100)).toBe(0);
    expect(b.take(100)).toBe(100);
    // idle for long: back to the burst, not more
    expect([b.take(10_000), b.take(10_000), b.take(10_000), b.take(10_000)]).toEqual([0, 0, 0, 100]);
  });

  it('taken as fast as it allows for a minute: never more than rate·T + burst in any window', () => {
    const rate = 50;
    const burst = 5;
    const b = new TokenBucket(rate, burst, 0);
    const taken: number[] = [];
    for (let t = 0; t <= 60_000;) {
      const wait = b.take(t);
      if (wait === 0) taken.push(t);
      else t += wait;
    }
    expect(taken.length).toBeLessThanOrEqual(rate * 60 + burst);
    expect(taken.length).toBeGreaterThanOrEqual(rate * 60);
    for (let i = 0; i < taken.length; i++) {
      const inSecond = taken.filter((t) => t >= taken[i]! && t < taken[i]! + 1000).length;
      expect(inSecond).toBeLessThanOrEqual(rate + burst);
    }
  });

  it('refuses a rate or burst that would never give a token', () => {
    expect(() => new TokenBucket(0, 1, 0)).toThrow(RangeError);
    expect(() => new TokenBucket(1, 0, 0)).toThrow(RangeError);
  });
});

describe('DueHeap', () => {
  it('pops in due order through adds, moves and removals (against a sorted list)', () => {
    let seed = 7;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const heap = new DueHeap<{ id: number; dueAt: number; heapAt: number }>();
    const live = new Map<number, { id: number; dueAt: number; heapAt: number }>();
    for (let i = 0; i < 2_000; i++) {
      const r = rand();
      if (r < 0.5 || live.size === 0) {
        const x = { id: i, dueAt: 0, heapAt: -1 };
        heap.set(x, Math.floor(rand() * 1_000));
        live.set(i, x);
      } else {
        const x = [...live.values()][Math.floor(rand() * live.size)]!;
        if (r < 0.75) heap.set(x, Math.floor(rand() * 1_000));
        else {
          heap.remove(x);
          heap.remove(x); // twice: no effect
          live.delete(x.id);
        }
      }
      expect(heap.size).toBe(live.size);
    }
    const want = [...live.values()].map((x) => x.dueAt).sort((a, b) => a - b);
    const got: number[] = [];
    for (let x = heap.pop(); x; x = heap.pop()) {
      expect(x.heapAt).toBe(-1);
      got.push(x.dueAt);
    }
    expect(got).toEqual(want);
  });
});

describe('firstProbeSpreadMs', () => {
  it.each([
    [0, 0],
    [1, 40],
    [100, 4_000],
    [3_750, 150_000],
    [7_500, 300_000],
    [10_000, 300_000],
  ])('%d endpoints at 50/s, interval 5m: %d ms', (n, want) => expect(firstProbeSpreadMs(n, 300_000, 50)).toBe(want));
});

describe('nextProbe', () => {
  it.each<[string, number, number, number[] | undefined, { dueAt: number; followUps: number[] | undefined }]>([
    ['one interval after the last start', 1_000, 1_500, undefined, { dueAt: 61_000, followUps: undefined }],
    ['a follow-up due earlier comes first', 1_000, 1_500, [20_000, 40_000], { dueAt: 20_000, followUps: [20_000, 40_000] }],
    ['a follow-up this probe covered is dropped', 20_000, 20_100, [20_000, 40_000], { dueAt: 40_000, followUps: [40_000] }],
    ['a follow-up after the next interval waits for it', 1_000, 1_100, [90_000], { dueAt: 61_000, followUps: [90_000] }],
    ['all covered', 40_000, 40_000, [20_000, 40_000], { dueAt: 100_000, followUps: undefined }],
  ])('%s', (_, startedAt, now, followUps, want) => expect(nextProbe(startedAt, now, 60_000, followUps)).toEqual(want));
});
