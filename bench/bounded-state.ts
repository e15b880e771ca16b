/**
 * Bounded state (issue 7, finding 2), in one process on SQLite in memory:
 *  1. one company creates disabled routers with distinct ~1.8 KB filters in batches, has them compiled (what
 *     simulateRouting does) and deletes them; prints the cache size and heap after every 2,000 filters;
 *  2. 10,000 more companies keep one router each, so the caches run at their caps and evict: prints the cost of an
 *     insert under pressure (the eviction scans the companies).
 * Run alone: node --expose-gc --import tsx bench/bounded-state.ts [filters, default 20000]
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { compileFilter } from '../src/cel/index.js';
import { RoutingSnapshots, filterBytes } from '../src/routing/snapshot.js';
import { TenantLru } from '../src/routing/tenant-lru.js';
import { openStore } from '../src/store/index.js';
import type { Store } from '../src/store/types.js';
import { ROUTER_POLICY_DEFAULTS } from '../src/model/records.js';

const FAMILY = 'certmgr-issuer-health-notification-config' as const;
const MiB = 1024 * 1024;
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const heap = () => (gc(), Math.round(process.memoryUsage().heapUsed / MiB));

async function integration(store: Store, companyId: string): Promise<string> {
  const t = Date.now();
  const i = await store.createIntegration({
    id: randomUUID(),
    companyId,
    name: 'i',
    type: 'WEBHOOK',
    enabled: true,
    config: {},
    secrets: { url: 'http://127.0.0.1:9/' },
    managedBy: null,
    createdAt: t,
    updatedAt: t,
  });
  return i.id;
}

async function router(store: Store, companyId: string, integrationId: string, filter: string): Promise<string> {
  const t = Date.now();
  const r = await store.createRouter({
    id: randomUUID(),
    companyId,
    name: 'r',
    eventTypeId: FAMILY,
    enabled: false,
    filter,
    integrationId,
    templateId: null,
    generation: 'ROUTER',
    ...ROUTER_POLICY_DEFAULTS,
    managedBy: null,
    createdAt: t,
    updatedAt: t,
  });
  return r.id;
}

/** Heap per compiled filter, by expression length: the basis of filterBytes(). */
function filterHeap(): void {
  for (const len of [100, 600, 1_800]) {
    const keep: unknown[] = [];
    let chars = 0;
    const before = (gc(), process.memoryUsage().heapUsed);
    for (let i = 0; i < 2_000; i++) {
      const parts: string[] = [];
      for (let k = 0; parts.join(' || ').length < len - 60 && parts.length < 140; k++) parts.push(`data.issuerName == 'n${i}_${k}xxxx'`);
      const e = parts.join(' || ');
      chars += e.length;
      keep.push(compileFilter(e, FAMILY));
    }
    const used = (gc(), process.memoryUsage().heapUsed) - before;
    console.log(
      `compiled filters of ${Math.round(chars / 2_000)} characters: ${Math.round(used / keep.length)} B each (filterBytes estimates ${filterBytes('x'.repeat(Math.round(chars / 2_000)))} B)`,
    );
  }
}

export async function run(total = 20_000): Promise<void> {
  filterHeap();
  const store = await openStore('sqlite::memory:');
  await store.migrate();
  const snaps = new RoutingSnapshots(store);
  const A = randomUUID();
  const ia = await integration(store, A);
  console.log(`heap at start: ${heap()} MiB`);
  const batch = 500;
  let maxHeap = 0;
  for (let done = 0; done < total; done += batch) {
    const ids: string[] = [];
    for (let i = 0; i < batch; i++) ids.push(await router(store, A, ia, `data.issuerName == '${done + i}-${'x'.repeat(1_750)}'`));
    snaps.invalidate(A);
    await snaps.get(A); // compiles all of them, like simulateRouting
    await store.deleteRouters(A, ids);
    snaps.invalidate(A, ids);
    if ((done + batch) % 2_000 === 0) {
      const h = heap();
      maxHeap = Math.max(maxHeap, h);
      const s = snaps.stats();
      console.log(
        `${done + batch} filters compiled and deleted: filter cache ${s.filters.entries} entries / ${Math.round(s.filters.bytes / MiB)} MiB, heap ${h} MiB`,
      );
    }
  }
  console.log(`max heap ${maxHeap} MiB (before the fix the cache kept every filter: ~44,000 of them crashed the service)`);
  await store.close();

  // eviction cost at the caps: 10,000 companies in the snapshot cache, then 20,000 more inserts (worst case of
  // 'largest': every tenant ties, so each eviction reads every tenant's oldest entry)
  for (const policy of ['lru', 'largest'] as const) {
    const lru = new TenantLru<number>(
      { maxEntries: 10_000, maxBytes: 1024 * MiB, maxEntriesPerTenant: 1, maxBytesPerTenant: 256 * MiB },
      undefined,
      policy,
    );
    for (let i = 0; i < 10_000; i++) lru.set(`c${i}`, '', i, 100_000);
    let worst = 0;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 20_000; i++) {
      const s = process.hrtime.bigint();
      lru.set(`n${i}`, '', i, 100_000);
      worst = Math.max(worst, Number(process.hrtime.bigint() - s) / 1e6);
    }
    const avg = Number(process.hrtime.bigint() - t0) / 1e6 / 20_000;
    console.log(`TenantLru (${policy}) at 10,000 companies: insert with eviction avg ${avg.toFixed(3)} ms, worst ${worst.toFixed(2)} ms`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run(Number(process.argv[2] ?? 20_000));
