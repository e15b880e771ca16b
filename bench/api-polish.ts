/**
 * API polish (issue 7 follow-up), in one process on SQLite in memory:
 *  1. what one simulateRouting call costs in snapshot work for a company with N routers: the old
 *     invalidate() + get() (reload every router, rebuild the snapshot) against current() (one fingerprint query);
 *  2. capText on a 1 MiB message (the cap reads only the head).
 * Run alone: npx tsx bench/api-polish.ts [routers, default 1000]
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { RoutingSnapshots } from '../src/routing/snapshot.js';
import { capText } from '../src/http/errors.js';
import { openStore } from '../src/store/index.js';
import { ROUTER_POLICY_DEFAULTS } from '../src/model/records.js';

const FAMILY = 'certmgr-issuer-health-notification-config' as const;
const A = '11111111-1111-4111-8111-111111111111';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function timeMs(f: () => Promise<unknown> | unknown, runs = 15): Promise<number> {
  const t: number[] = [];
  for (let i = 0; i < runs; i++) {
    const s = process.hrtime.bigint();
    await f();
    t.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  return median(t);
}

export async function run(n = Number(process.env.BENCH_ROUTERS ?? 1000)): Promise<void> {
  const store = await openStore('sqlite::memory:');
  await store.migrate();
  const t = Date.now();
  const integ = await store.createIntegration({
    id: randomUUID(),
    companyId: A,
    name: 'i',
    type: 'WEBHOOK',
    enabled: true,
    config: {},
    secrets: { url: 'http://127.0.0.1:9/' },
    managedBy: null,
    createdAt: t,
    updatedAt: t,
  });
  for (let i = 0; i < n; i++) {
    const filter = `data.issuerName == 'issuer-${i}' && data.namespace.startsWith('team-${i % 50}') && data.statusReason != 'Ignored${i}'`;
    await store.createRouter({
      id: randomUUID(),
      companyId: A,
      name: `r${i}`,
      eventTypeId: FAMILY,
      enabled: true,
      filter,
      integrationId: integ.id,
      templateId: null,
      generation: 'ROUTER',
      ...ROUTER_POLICY_DEFAULTS,
      managedBy: null,
      createdAt: t,
      updatedAt: t,
    });
  }
  const snaps = new RoutingSnapshots(store);
  await snaps.get(A);
  const old = await timeMs(async () => {
    snaps.invalidate(A);
    await snaps.get(A);
  });
  const cur = await timeMs(() => snaps.current(A));
  console.log(
    `routers=${n} simulate snapshot work per call (median of 15): invalidate+get ${old.toFixed(2)} ms, current() ${cur.toFixed(2)} ms`,
  );
  const big = 'x'.repeat(1024 * 1024);
  console.log(`capText(1 MiB) median ${(await timeMs(() => capText(big), 101)).toFixed(4)} ms`);
  await store.close();
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) await run(Number(process.argv[2] ?? 1000));
