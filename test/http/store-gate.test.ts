/** The request's gated store (src/http/store-gate.ts): calls through the company's semaphore; a refusal ends the request's store work. */
import { describe, expect, it } from 'vitest';
import { gatedStore } from '../../src/http/store-gate.js';
import { ServiceError } from '../../src/service/errors.js';
import { CompanySemaphore } from '../../src/store/concurrency.js';
import type { Store } from '../../src/store/types.js';

describe('gatedStore', () => {
  it("once a call of the request is refused, its waiting and later calls are refused without running; another request's are not", async () => {
    const ran: string[] = [];
    const gates: (() => void)[] = [];
    const fake = {
      dialect: 'sqlite',
      async getRouter(_companyId: string, id: string) {
        ran.push(id);
        await new Promise<void>((r) => gates.push(r));
        return null;
      },
    } as unknown as Store;
    const sem = new CompanySemaphore({ running: 1, queued: 1 });
    const request = gatedStore(fake, sem, 'a');
    expect(request.dialect).toBe('sqlite');
    const first = request.getRouter('a', 'r1');
    const waiting = request.getRouter('a', 'r2');
    const refused = request.getRouter('a', 'r3');
    await expect(refused).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    await expect(refused).rejects.toBeInstanceOf(ServiceError);
    await expect(request.getRouter('a', 'r4')).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    await Promise.resolve();
    gates.shift()!();
    await first;
    await expect(waiting).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    expect(ran).toEqual(['r1']);
    // the share is free again, and a new request is not marked
    const next = gatedStore(fake, sem, 'a').getRouter('a', 'r5');
    await new Promise((r) => setImmediate(r));
    gates.shift()!();
    await expect(next).resolves.toBeNull();
    expect(ran).toEqual(['r1', 'r5']);
  });
});
