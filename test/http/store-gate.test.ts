/** The request's gated store (src/http/store-gate.ts): calls through the company's semaphore; a refusal ends the request's store work. */
import { describe, expect, it } from 'vitest';
import { gatedStore } from '../../src/http/store-gate.js';
import { ServiceError } from '../../src/model/errors.js';
import { CompanySemaphore } from '../../src/store/concurrency.js';
import type { Store } from '../../src/store/types.js';

describe('gatedStore', () => {
  function fakeStore() {
    const ran: string[] = [];
    const gates: (() => void)[] = [];
    let running = 0;
    let most = 0;
    const store = {
      dialect: 'sqlite',
      async getRouter(_companyId: string, id: string) {
        ran.push(id);
        most = Math.max(most, ++running);
        await new Promise<void>((r) => gates.push(r));
        running--;
        return null;
      },
    } as unknown as Store;
    return { store, ran, gates, most: () => most };
  }

  it("once a call of the request is refused, its waiting and later calls are refused without running; another request's are not", async () => {
    const { store: fake, ran, gates } = fakeStore();
    const sem = new CompanySemaphore({ running: 1, queued: 1 });
    const holder = gatedStore(fake, sem, 'a');
    expect(holder.dialect).toBe('sqlite');
    const first = holder.getRouter('a', 'r1');
    const queued = gatedStore(fake, sem, 'a').getRouter('a', 'r2'); // another request: the company's queue is full
    const request = gatedStore(fake, sem, 'a');
    const refused = request.getRouter('a', 'r3');
    await expect(refused).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    await expect(refused).rejects.toBeInstanceOf(ServiceError);
    await expect(request.getRouter('a', 'r4')).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    await Promise.resolve();
    gates.shift()!();
    await first;
    await new Promise((r) => setImmediate(r));
    gates.shift()!();
    await expect(queued).resolves.toBeNull();
    expect(ran).toEqual(['r1', 'r2']);
    // the share is free again, and a new request is not marked
    const next = gatedStore(fake, sem, 'a').getRouter('a', 'r5');
    await new Promise((r) => setImmediate(r));
    gates.shift()!();
    await expect(next).resolves.toBeNull();
    expect(ran).toEqual(['r1', 'r2', 'r5']);
  });

  it("a request's own fan-out (a page of 500 nodes, one call each) waits in the request's queue: never refused, at most the share at once", async () => {
    const { store: fake, ran, gates, most } = fakeStore();
    const sem = new CompanySemaphore({ running: 2, queued: 256 });
    const request = gatedStore(fake, sem, 'a');
    const calls = Array.from({ length: 500 }, (_, i) => request.getRouter('a', `r${i}`));
    for (let round = 0; round < 2_000 && ran.length < 500; round++) {
      await new Promise((r) => setImmediate(r));
      while (gates.length) gates.shift()!();
    }
    await expect(Promise.all(calls)).resolves.toHaveLength(500);
    expect(most()).toBe(2);
    expect(sem.state('a')).toEqual({ running: 0, queued: 0 });
  });
});
