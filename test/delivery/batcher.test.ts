import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/delivery/batcher.js';

/** A flush that records its groups and answers item × 10, failing a group that holds `poison`. */
function recorder(poison?: number) {
  const groups: number[][] = [];
  let release: (() => void) | undefined;
  let hold = false;
  const flush = async (items: number[]) => {
    groups.push(items);
    if (hold) await new Promise<void>((r) => (release = r));
    if (poison !== undefined && items.includes(poison)) throw new Error(`bad ${poison}`);
    return items.map((i) => i * 10);
  };
  return {
    groups,
    flush,
    holdNext: () => (hold = true),
    release: () => {
      hold = false;
      release?.();
    },
  };
}

describe('Batcher (write-behind)', () => {
  it('calls made in the same turn go in one flush; each caller gets its own result', async () => {
    const r = recorder();
    const b = new Batcher(r.flush);
    expect(await Promise.all([b.add(1), b.add(2), b.add(3)])).toEqual([10, 20, 30]);
    expect(r.groups).toEqual([[1, 2, 3]]);
  });

  it('calls made while a flush runs wait for it and go together in the next one', async () => {
    const r = recorder();
    const b = new Batcher(r.flush);
    r.holdNext();
    const first = b.add(1);
    await new Promise((res) => setImmediate(res)); // the first flush has started and is held
    const later = [b.add(2), b.add(3)];
    await new Promise((res) => setImmediate(res));
    expect(r.groups).toEqual([[1]]); // no second flush while the first runs
    r.release();
    expect(await first).toBe(10);
    expect(await Promise.all(later)).toEqual([20, 30]);
    expect(r.groups).toEqual([[1], [2, 3]]);
  });

  it('a failed group is retried item by item: only the bad item fails', async () => {
    const r = recorder(2);
    const b = new Batcher(r.flush);
    const results = await Promise.allSettled([b.add(1), b.add(2), b.add(3)]);
    expect(results.map((x) => (x.status === 'fulfilled' ? x.value : (x.reason as Error).message))).toEqual([10, 'bad 2', 30]);
    expect(r.groups).toEqual([[1, 2, 3], [1], [2], [3]]);
  });

  it('at most `max` items per flush', async () => {
    const r = recorder();
    const b = new Batcher(r.flush, 2);
    expect(await Promise.all([1, 2, 3, 4, 5].map((i) => b.add(i)))).toEqual([10, 20, 30, 40, 50]);
    expect(r.groups).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('a flush that answers too few results fails the items left without one', async () => {
    const b = new Batcher(async (items: number[]) => items.slice(1));
    const results = await Promise.allSettled([b.add(1)]);
    expect(results[0]!.status).toBe('rejected');
  });
});
