/**
 * The per-company shares on the request path (src/http/store-gate.ts), on both engines: one company's 30-alias
 * certificates requests run COMPANY_GRAPHQL_LIMITS.running at a time (the next ones wait), their store calls at
 * most COMPANY_STORE_LIMITS.running at once (the rest wait in order, each request's own beyond the share in its own
 * queue); a request past the requests' queue is
 * refused at once with 429 TOO_MANY_REQUESTS, another company's request is answered while the first company's
 * calls are held, and every waiting request is answered in full once they are let go. Company A's store calls
 * are held by a gate the test opens; no timing.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPANY_GRAPHQL_LIMITS, requestSemaphoreOf, semaphoreOf } from '../../src/http/store-gate.js';
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
    const { running: cap } = COMPANY_STORE_LIMITS;
    const { running: requestsRunning, queued: requestsQueued } = COMPANY_GRAPHQL_LIMITS;
    // as many 30-alias requests as run and wait: their store calls hold `cap` slots, the rest wait
    const first = Array.from({ length: requestsRunning + requestsQueued }, () => post(svc, KEY_A));
    await expect.poll(() => held.length).toBe(cap);
    // each request has at most `cap` calls in the company's queue (the rest of its aliases wait in its own)
    await expect.poll(() => semaphoreOf(store).state(COMPANY_A)).toEqual({ running: cap, queued: requestsRunning * cap - cap });
    await expect.poll(() => requestSemaphoreOf(store).state(COMPANY_A)).toEqual({ running: requestsRunning, queued: requestsQueued });
    // one more is refused at once, before it runs
    const over = await post(svc, KEY_A);
    expect(over.status).toBe(429);
    expect(over.body.errors?.map((e) => e.extensions?.code)).toEqual(['TOO_MANY_REQUESTS']);
    // the other company is not behind A's queues
    const b = await post(svc, KEY_B);
    expect(b.status).toBe(200);
    expect(b.body.errors).toBeUndefined();
    // open the gate: every waiting request is answered in full, A's store calls never more than `cap` at once
    hold = false;
    for (const r of held.splice(0)) r();
    const done = await Promise.all(first);
    expect(done.map((d) => d.status)).toEqual(first.map(() => 200));
    expect(done.filter((d) => d.body.errors)).toEqual([]);
    expect(maxRunning).toBe(cap);
    expect(semaphoreOf(store).state(COMPANY_A)).toEqual({ running: 0, queued: 0 });
  });
});
