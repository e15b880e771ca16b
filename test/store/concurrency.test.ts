/** The per-company store share (src/store/concurrency.ts): the pure admission table and the semaphore's order. */
import { describe, expect, it } from 'vitest';
import { COMPANY_STORE_LIMITS, CompanyBusyError, CompanySemaphore, admit, type Admission } from '../../src/store/concurrency.js';

describe('admit', () => {
  const limits = { running: 2, queued: 3 };
  const table: [running: number, queued: number, want: Admission][] = [
    [0, 0, 'run'],
    [1, 0, 'run'],
    [2, 0, 'queue'],
    [2, 2, 'queue'],
    [2, 3, 'refuse'],
    [2, 9, 'refuse'],
    // FIFO: a free slot with calls still waiting goes to them, not to a newcomer
    [1, 1, 'queue'],
    [0, 3, 'refuse'],
  ];
  it.each(table)('%i running, %i waiting: %s', (running, queued, want) => {
    expect(admit({ running, queued }, limits)).toBe(want);
  });

  it('the default is small and written once', () => {
    expect(COMPANY_STORE_LIMITS).toEqual({ running: 2, queued: 256 });
  });
});

describe('CompanySemaphore', () => {
  const deferred = () => {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  };

  it('runs `running` calls of a company at once, queues the next in order, refuses past the queue; other companies pass', async () => {
    const sem = new CompanySemaphore({ running: 2, queued: 2 });
    const gates = Array.from({ length: 4 }, deferred);
    const started: number[] = [];
    const calls = gates.map((g, i) =>
      sem.run('a', async () => {
        started.push(i);
        await g.promise;
        return i;
      }),
    );
    await Promise.resolve();
    expect(started).toEqual([0, 1]);
    expect(sem.state('a')).toEqual({ running: 2, queued: 2 });
    await expect(sem.run('a', async () => 'late')).rejects.toBeInstanceOf(CompanyBusyError);
    await expect(sem.run('b', async () => 'other company')).resolves.toBe('other company');
    gates[1]!.resolve();
    await calls[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    for (const g of gates) g.resolve();
    expect(await Promise.all(calls)).toEqual([0, 1, 2, 3]);
    expect(started).toEqual([0, 1, 2, 3]);
    expect(sem.state('a')).toEqual({ running: 0, queued: 0 });
  });

  it('a failed call frees its slot', async () => {
    const sem = new CompanySemaphore({ running: 1, queued: 0 });
    await expect(
      sem.run('a', async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(sem.run('a', async () => 1)).resolves.toBe(1);
    expect(sem.state('a')).toEqual({ running: 0, queued: 0 });
  });
});
