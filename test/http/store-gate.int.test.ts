/**
 * The per-company store share on the request path (src/http/store-gate.ts), on both engines: the 30-alias
 * certificates request of one company holds at most COMPANY_STORE_LIMITS.running store calls at once, its other
 * calls wait in order, a request beyond the queue bound is refused with TOO_MANY_REQUESTS (429 when nothing
 * resolved), and another company's request is answered while the first company's calls are held. Company A's
 * store calls are held by a gate the test opens; no timing.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPANY_STORE_LIMITS } from '../../src/store/concurrency.js';
import type { Store } from '../../src/store/types.js';
import { COMPANY_A, COMPANY_B, KEY_A, KEY_B, startTestService, type StoreKind, type TestService } from '../support/service.js';
import { cluster, inventoryCert } from '../store/contract-inventory.js';

const ALIASES = 30;
const query = `{ ${Array.from({ length: ALIASES }, (_, i) => `c${i}: certificates(first: 10, filter: {applicationId: "app-1"}) { nodes { secretName } }`).join(' ')} }`;

async function post(
  svc: TestService,
  key: string,
): Promise<{ status: number; body: { data?: unknown; errors?: { extensions?: { code?: string } }[] } }> {
  const res = await fetch(`${svc.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'svc-api-key': key },
    body: JSON.stringify({ query }),
  });
  return { status: res.status, body: (await res.json()) as never };
}

describe.each<StoreKind>(['sqlite', 'postgres'])('store share per company (%s)', (kind) => {
  let svc: TestService;
  let store: Store;
  const held: (() => void)[] = [];
  let running = 0;
  let maxRunning = 0;
  let hold = true;

  beforeAll(async () => {
    svc = await startTestService(kind);
    store = svc.store;
    for (const company of [COMPANY_A, COMPANY_B]) {
      const c = cluster(company);
      await store.putCluster(c);
      await store.upsertInventory(company, c.id, c.epoch, [inventoryCert(company, c.id, `s-${randomUUID()}`)]);
    }
    // company A's listings wait for the test; B's run at once
    const list = store.listInventory.bind(store);
    store.listInventory = async (companyId, ...rest) => {
      if (companyId !== COMPANY_A) return list(companyId, ...rest);
      running++;
      maxRunning = Math.max(maxRunning, running);
      try {
        if (hold) await new Promise<void>((r) => held.push(r));
        return await list(companyId, ...rest);
      } finally {
        running--;
      }
    };
  });

  afterAll(async () => {
    hold = false;
    for (const r of held) r();
    await svc?.close();
  });

  it('caps one company, queues in order, refuses past the queue; the other company is answered meanwhile', async () => {
    const { running: cap, queued: bound } = COMPANY_STORE_LIMITS;
    // enough requests of 30 aliases to fill the running slots and the queue, and one more
    const full = Math.ceil((cap + bound) / ALIASES);
    const first = Array.from({ length: full }, () => post(svc, KEY_A));
    await expect.poll(() => held.length).toBe(cap);
    const over = await post(svc, KEY_A);
    // every alias of the last request was refused at once (nothing resolved: 429)
    expect(over.status).toBe(429);
    expect(over.body.errors?.length).toBeGreaterThan(0);
    expect(over.body.errors!.every((e) => e.extensions?.code === 'TOO_MANY_REQUESTS')).toBe(true);
    // the other company is not behind A's queue
    const b = await post(svc, KEY_B);
    expect(b.status).toBe(200);
    expect(b.body.errors).toBeUndefined();
    // open the gate: A's queued calls run, never more than `cap` at once
    hold = false;
    for (const r of held.splice(0)) r();
    const done = await Promise.all(first);
    const answered = done.flatMap((d) => (d.body.errors ? [] : [d]));
    // the requests that fit wholly in running + queued were answered in full
    expect(answered.length).toBeGreaterThanOrEqual(Math.floor((cap + bound) / ALIASES));
    expect(maxRunning).toBe(cap);
    // and the share is free again
    hold = false;
    const again = await post(svc, KEY_A);
    expect(again.status).toBe(200);
    expect(again.body.errors).toBeUndefined();
  });
});
