/**
 * Order per key (issue 8): what the head-of-key claim costs. Drains N queued deliveries through the store
 * alone (claim up to 8, mark delivered; no HTTP), once with every delivery on its own key and once with all
 * of them on ONE key (the worst case: one in flight at a time, and every claim skips the key's blocked rows).
 * SQLite file; PostgreSQL too when DATABASE_URL is set.
 *   node --import tsx bench/order.ts
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store/index.js';
import type { NewDelivery, Store } from '../src/store/types.js';

const N = Number(process.env.ORDER_BENCH_N ?? 2000);

async function drain(store: Store, oneKey: boolean): Promise<{ ms: number; claims: number }> {
  const companyId = randomUUID();
  const integrationId = randomUUID();
  const t0 = Date.now();
  const events = Array.from({ length: N }, () => ({
    id: randomUUID(),
    companyId,
    type: 'evt.healthstatus.certmgr-issuer.notready',
    data: {},
    receivedAt: t0,
  }));
  const ds: NewDelivery[] = events.map((e, i) => ({
    id: randomUUID(),
    companyId,
    eventId: e.id,
    routerId: randomUUID(),
    routerName: 'r',
    integrationId,
    createdAt: t0,
    orderKey: oneKey ? 'certmgr:issuer:c:ns:one' : `certmgr:issuer:c:ns:${i}`,
    orderAt: t0 - N + i,
    orderSeq: t0 * 1000 + (i % 1000),
  }));
  await store.transaction(async (tx) => {
    await tx.insertEvents(events);
    await tx.insertDeliveries(ds);
  });
  const started = performance.now();
  let done = 0;
  let claims = 0;
  while (done < N) {
    const batch = await store.claimDeliveries(Date.now(), 8, 60_000);
    claims++;
    for (const d of batch) await store.markDelivered(d.id, d.attempts, Date.now(), 200);
    done += batch.length;
    if (batch.length === 0) throw new Error('nothing claimable before the queue was drained');
  }
  return { ms: performance.now() - started, claims };
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cmn-bench-order-'));
  const targets: Array<[string, () => Promise<Store>]> = [['sqlite', () => openStore(`sqlite:${join(dir, `${randomUUID()}.db`)}`)]];
  if (process.env.DATABASE_URL)
    targets.push(['postgres', () => openStore(process.env.DATABASE_URL!, { schema: `bench_order_${process.pid}` })]);
  try {
    console.log(`| engine | ${N} deliveries on | drain time | claims | per delivery |`);
    console.log('|---|---|---|---|---|');
    for (const [name, open] of targets) {
      for (const oneKey of [false, true]) {
        const store = await open();
        await store.migrate();
        try {
          const r = await drain(store, oneKey);
          console.log(
            `| ${name} | ${oneKey ? 'one key' : 'distinct keys'} | ${r.ms.toFixed(0)} ms | ${r.claims} | ${((r.ms * 1000) / N).toFixed(0)} µs |`,
          );
        } finally {
          await store.close();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
