import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/runtime/timers.js';
import { WorkQueue, type Result } from '../../src/runtime/workqueue.js';
import { FakeClock, flush } from './fake-clock.js';

describe('backoffDelay', () => {
  it.each([
    [1, { baseMs: 100, maxMs: 10_000 }, 100],
    [2, { baseMs: 100, maxMs: 10_000 }, 200],
    [5, { baseMs: 100, maxMs: 10_000 }, 1_600],
    [8, { baseMs: 100, maxMs: 10_000 }, 10_000],
    [1_000, { baseMs: 100, maxMs: 10_000 }, 10_000],
    [0, { baseMs: 100, maxMs: 10_000 }, 100],
    [3, { baseMs: 100, maxMs: 10_000, jitter: 0.5 }, 600], // rand = 1 → +50 %
  ])('failure %i with %o → %i ms', (n, p, want) => {
    expect(backoffDelay(n, p, () => 1)).toBe(want);
  });
  it('jitter stays within [d, d·(1+jitter)]', () => {
    for (let i = 0; i < 50; i++) {
      const d = backoffDelay(3, { baseMs: 100, maxMs: 10_000, jitter: 0.2 });
      expect(d).toBeGreaterThanOrEqual(400);
      expect(d).toBeLessThanOrEqual(480);
    }
  });
});

/** A handler whose calls the test resolves by hand. */
function controllable() {
  const calls: { key: string; resolve: (r?: Result) => void; reject: (e: unknown) => void }[] = [];
  const handler = (key: string) => new Promise<Result | void>((resolve, reject) => calls.push({ key, resolve, reject }));
  return { calls, handler };
}

describe('WorkQueue', () => {
  it('dedupes keys queued before they are picked up', async () => {
    const seen: string[] = [];
    const q = new WorkQueue({ name: 't', handler: async (k) => void seen.push(k) });
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    q.start();
    await flush();
    expect(seen).toEqual(['a', 'b']);
  });

  it('never runs one key twice at once; an add while in flight runs once more afterwards', async () => {
    const { calls, handler } = controllable();
    const q = new WorkQueue({ name: 't', concurrency: 4, handler });
    q.start();
    q.add('a');
    await flush();
    q.add('a');
    q.add('a');
    await flush();
    expect(calls.map((c) => c.key)).toEqual(['a']);
    expect(q.isProcessing('a')).toBe(true);
    calls[0]!.resolve();
    await flush();
    expect(calls.map((c) => c.key)).toEqual(['a', 'a']);
    calls[1]!.resolve();
    await flush();
    expect(calls).toHaveLength(2);
  });

  it('many keys run once each in the order queued, keys added while the queue drains included; length counts them', async () => {
    const { calls, handler } = controllable();
    const q = new WorkQueue({ name: 't', concurrency: 3, handler });
    const keys = Array.from({ length: 5000 }, (_, i) => `k${i}`);
    for (const k of keys.slice(0, 4000)) q.add(k);
    q.start();
    await flush();
    expect(q.length).toBe(4000);
    let next = 4000;
    for (let done = 0; done < calls.length; done++) {
      // every 3rd completion queues a new key (past the taken prefix the queue drops) and re-adds a queued one
      if (done % 3 === 0 && next < keys.length) {
        q.add(keys[next++]!);
        q.add(keys[Math.min(next, keys.length) - 1]!);
      }
      calls[done]!.resolve();
      await flush();
    }
    expect(calls.map((c) => c.key)).toEqual(keys);
    expect(q.length).toBe(0);
    q.add('again');
    await flush();
    expect(calls.at(-1)!.key).toBe('again');
    expect(q.length).toBe(1);
  });

  it('bounds concurrency', async () => {
    const { calls, handler } = controllable();
    const q = new WorkQueue({ name: 't', concurrency: 2, handler });
    q.start();
    for (const k of ['a', 'b', 'c', 'd']) q.add(k);
    await flush();
    expect(calls.map((c) => c.key)).toEqual(['a', 'b']);
    calls[0]!.resolve();
    await flush();
    expect(calls.map((c) => c.key)).toEqual(['a', 'b', 'c']);
  });

  it('retries failures with per-key exponential backoff; success forgets', async () => {
    const clock = new FakeClock();
    let fail = 3;
    const times: number[] = [];
    const errors: number[] = [];
    const q = new WorkQueue({
      name: 't',
      clock,
      backoff: { baseMs: 100, maxMs: 1_000 },
      handler: async () => {
        times.push(clock.now());
        if (fail-- > 0) throw new Error('boom');
      },
      onError: (_k, _e, retryIn) => errors.push(retryIn),
    });
    q.start();
    const t0 = clock.now();
    q.add('a');
    await clock.advance(5_000);
    expect(times.map((t) => t - t0)).toEqual([0, 100, 300, 700]);
    expect(errors).toEqual([100, 200, 400]);
    expect(q.numFailures('a')).toBe(0);
  });

  it('backoff is per key', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({
      name: 't',
      clock,
      backoff: { baseMs: 100, maxMs: 1_000 },
      handler: async (k) => {
        if (k === 'bad') throw new Error('x');
      },
    });
    q.start();
    q.add('bad');
    await clock.advance(350);
    q.add('good');
    await flush();
    expect(q.numFailures('bad')).toBe(3);
    expect(q.numFailures('good')).toBe(0);
  });

  it('requeueAfter comes back after the delay; an earlier delayed add wins', async () => {
    const clock = new FakeClock();
    const times: number[] = [];
    let n = 0;
    const q = new WorkQueue({
      name: 't',
      clock,
      handler: async () => {
        times.push(clock.now());
        return n++ === 0 ? { requeueAfter: 1_000 } : {};
      },
    });
    q.start();
    const t0 = clock.now();
    q.add('a');
    await flush();
    q.addAfter('a', 5_000); // later than the pending 1 s: ignored
    await clock.advance(10_000);
    expect(times.map((t) => t - t0)).toEqual([0, 1_000]);
    expect(q.pendingDelayed).toBe(0);
  });

  it('holds keys until started; stop waits for in-flight work and drops the rest', async () => {
    const clock = new FakeClock();
    const { calls, handler } = controllable();
    const q = new WorkQueue({ name: 't', clock, concurrency: 1, handler });
    q.add('a');
    q.add('b');
    q.addAfter('c', 100);
    await flush();
    expect(calls).toHaveLength(0);
    q.start();
    await flush();
    expect(calls.map((c) => c.key)).toEqual(['a']);
    let stopped = false;
    const stopping = q.stop().then(() => (stopped = true));
    await flush();
    expect(stopped).toBe(false);
    calls[0]!.resolve();
    await stopping;
    await clock.advance(1_000);
    expect(calls.map((c) => c.key)).toEqual(['a']);
    q.add('d');
    await flush();
    expect(calls).toHaveLength(1);
  });

  it('whenIdle resolves once nothing is queued or in flight', async () => {
    const { calls, handler } = controllable();
    const q = new WorkQueue({ name: 't', concurrency: 1, handler });
    q.start();
    q.add('a');
    q.add('b');
    let idle = false;
    const w = q.whenIdle().then(() => (idle = true));
    await flush();
    calls[0]!.resolve();
    await flush();
    expect(idle).toBe(false);
    calls[1]!.resolve();
    await w;
    expect(q.length).toBe(0);
  });
});

describe('WorkQueue delayed adds: one timer for all keys', () => {
  it('many delayed keys wait on one timer and come up in due order (ties in the order delayed); a moved key once', async () => {
    const clock = new FakeClock();
    const seen: string[] = [];
    const q = new WorkQueue({ name: 't', clock, concurrency: 1, handler: async (k) => void seen.push(k) });
    q.start();
    const delays = [500, 100, 300, 100, 900, 200, 700, 300];
    delays.forEach((ms, i) => q.addAfter(`k${i}`, ms));
    q.addAfter('k4', 50); // k4 moves from 900 to 50
    q.addAfter('k1', 800); // later than its pending 100: ignored
    expect(clock.pending).toBe(1);
    expect(q.pendingDelayed).toBe(8);
    await clock.advance(1_000);
    expect(seen).toEqual(['k4', 'k1', 'k3', 'k5', 'k2', 'k7', 'k0', 'k6']);
    expect(q.pendingDelayed).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('a key not yet due stays delayed while earlier ones come up; stop() drops the rest and the timer', async () => {
    const clock = new FakeClock();
    const seen: string[] = [];
    const q = new WorkQueue({ name: 't', clock, handler: async (k) => void seen.push(k) });
    q.start();
    for (let i = 0; i < 1_000; i++) q.addAfter(`k${i}`, 1_000 + (i % 10) * 100);
    for (let i = 0; i < 1_000; i++) q.addAfter(`k${i}`, 10); // every key moved: the stale entries are compacted
    q.addAfter('late', 60_000);
    await clock.advance(100);
    expect(seen).toHaveLength(1_000);
    expect(new Set(seen).size).toBe(1_000);
    await clock.advance(5_000);
    expect(seen).toHaveLength(1_000); // no second add from the entries the moves left behind
    expect(q.pendingDelayed).toBe(1);
    expect(clock.pending).toBe(1);
    await q.stop();
    expect(clock.pending).toBe(0);
    expect(q.pendingDelayed).toBe(0);
  });
});
