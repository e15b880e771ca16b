/** Routing snapshots: reuse while nothing changed, rebuild when another writer changed the company's routing. */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';

const A = '11111111-1111-4111-8111-111111111111';
let store: Store;
let now = 1_000_000;
beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  await store.migrate();
});
afterEach(async () => {
  await store.close();
});

async function addRouter(filter = '', t = now) {
  const integ = await store.createIntegration({
    id: randomUUID(),
    companyId: A,
    name: 'i',
    type: 'WEBHOOK',
    enabled: true,
    config: {},
    secrets: { url: 'http://127.0.0.1:9/x' },
    managedBy: null,
    createdAt: t,
    updatedAt: t,
  });
  return store.createRouter({
    id: randomUUID(),
    companyId: A,
    name: 'r',
    eventTypeId: 'certmgr-issuer-health-notification-config',
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

const routers = async (s: RoutingSnapshots) =>
  (await s.get(A)).byFamily.get('certmgr-issuer-health-notification-config')!.map((r) => r.record);

describe('RoutingSnapshots', () => {
  it('keeps the same snapshot past the TTL while the fingerprint is unchanged', async () => {
    await addRouter();
    const snaps = new RoutingSnapshots(store, { ttlMs: 10, maxStaleMs: 1_000, now: () => now });
    const first = await snaps.get(A);
    now += 50;
    expect(await snaps.get(A)).toBe(first);
    now += 50;
    expect(await snaps.get(A)).toBe(first);
  });

  it('rebuilds once another writer changed a router, even with an older clock', async () => {
    const r = await addRouter();
    const snaps = new RoutingSnapshots(store, { ttlMs: 10, maxStaleMs: 1_000, now: () => now });
    const first = await snaps.get(A);
    // a write from "another replica" whose clock is behind: updated_at goes down, the sum still changes
    await store.updateRouter(A, r.id, { enabled: false }, now - 500_000);
    now += 5;
    expect(await snaps.get(A)).toBe(first); // within the TTL
    now += 20;
    const second = await snaps.get(A);
    expect(second).not.toBe(first);
    expect((await routers(snaps))[0]!.enabled).toBe(false);
  });

  it('sees created and deleted routers, and invalidate() reloads at once', async () => {
    const snaps = new RoutingSnapshots(store, { ttlMs: 10, maxStaleMs: 1_000, now: () => now });
    expect(await routers(snaps)).toHaveLength(0);
    const r = await addRouter();
    snaps.invalidate(A);
    expect(await routers(snaps)).toHaveLength(1);
    await store.deleteRouters(A, [r.id]);
    now += 20;
    expect(await routers(snaps)).toHaveLength(0);
  });

  it('rebuilds after maxStaleMs regardless', async () => {
    await addRouter();
    const snaps = new RoutingSnapshots(store, { ttlMs: 10, maxStaleMs: 100, now: () => now });
    const first = await snaps.get(A);
    now += 150;
    expect(await snaps.get(A)).not.toBe(first);
  });
});

describe('RoutingSnapshots: bounded compiled-filter cache', () => {
  const B = '22222222-2222-4222-8222-222222222222';
  const FAMILY = 'certmgr-issuer-health-notification-config' as const;
  // ~1.8 KB distinct filters, as in the finding
  const bigFilter = (i: number) => `data.issuerName == 'f${i}-${'x'.repeat(1_750)}'`;

  async function router(companyId: string, filter: string, integrationId: string) {
    return store.createRouter({
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
      createdAt: now,
      updatedAt: now,
    });
  }
  async function integration(companyId: string) {
    const i = await store.createIntegration({
      id: randomUUID(),
      companyId,
      name: 'i',
      type: 'WEBHOOK',
      enabled: true,
      config: {},
      secrets: { url: 'http://127.0.0.1:9/x' },
      managedBy: null,
      createdAt: now,
      updatedAt: now,
    });
    return i.id;
  }

  it('create, compile, delete many distinct filters: the cache stays within its bounds and deleted filters go', async () => {
    const limits = { filters: { maxEntries: 40, maxBytes: 4 * 1024 * 1024, maxEntriesPerTenant: 25, maxBytesPerTenant: 2 * 1024 * 1024 } };
    const snaps = new RoutingSnapshots(store, { ttlMs: 0, maxStaleMs: 0, now: () => now, limits });
    const ia = await integration(A);
    let maxSeen = 0;
    for (let round = 0; round < 20; round++) {
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push((await router(A, bigFilter(round * 10 + i), ia)).id);
      snaps.invalidate(A);
      await snaps.get(A); // what simulateRouting does: compiles every router, disabled ones too
      const s = snaps.stats().filters;
      maxSeen = Math.max(maxSeen, s.entries);
      expect(s.entries).toBeLessThanOrEqual(25);
      expect(s.bytes).toBeLessThanOrEqual(2 * 1024 * 1024);
      await store.deleteRouters(A, ids);
      snaps.invalidate(A, ids); // the service passes the deleted ids
      expect(snaps.companyStats(A).filters).toBe(0);
    }
    expect(maxSeen).toBe(10);
    expect(snaps.stats().evictions.filters.deleted).toBe(200);
  });

  it('filters of routers deleted by another replica are dropped at the next rebuild', async () => {
    const snaps = new RoutingSnapshots(store, { ttlMs: 0, maxStaleMs: 0, now: () => now });
    const ia = await integration(A);
    const keep = await router(A, "data.issuerName == 'keep'", ia);
    const gone = await router(A, "data.issuerName == 'gone'", ia);
    const shared = await router(A, "data.issuerName == 'keep'", ia);
    await snaps.get(A);
    expect(snaps.companyStats(A).filters).toBe(2);
    // the same filter is still used by `keep`: deleting `shared` must not evict it
    await store.deleteRouters(A, [shared.id]);
    snaps.invalidate(A, [shared.id]);
    expect(snaps.companyStats(A).filters).toBe(2);
    await store.deleteRouters(A, [gone.id]); // no invalidate: "another replica"
    now += 1;
    await snaps.get(A);
    expect(snaps.companyStats(A).filters).toBe(1);
    expect(keep.id).toBeTruthy();
  });

  it('one company filling its share does not evict another company’s compiled filters', async () => {
    const limits = {
      filters: { maxEntries: 30, maxBytes: 64 * 1024 * 1024, maxEntriesPerTenant: 20, maxBytesPerTenant: 32 * 1024 * 1024 },
    };
    const snaps = new RoutingSnapshots(store, { ttlMs: 60_000, maxStaleMs: 60_000, now: () => now, limits });
    const ib = await integration(B);
    for (let i = 0; i < 8; i++) await router(B, `data.issuerName == 'b${i}'`, ib);
    await snaps.get(B);
    const ia = await integration(A);
    for (let i = 0; i < 60; i++) await router(A, bigFilter(i), ia);
    await snaps.get(A);
    expect(snaps.companyStats(B).filters).toBe(8);
    expect(snaps.companyStats(A).filters).toBeLessThanOrEqual(20);
    expect(snaps.stats().filters.entries).toBeLessThanOrEqual(30);
    // A's routers all still route (compiled for its snapshot even when they are not all kept in the cache)
    const snapA = await snaps.get(A);
    expect(snapA.byFamily.get(FAMILY)!.filter((r) => r.filter !== null)).toHaveLength(60);
  });

  it('caps the companies whose snapshots are cached', async () => {
    const limits = {
      snapshots: { maxEntries: 3, maxBytes: 64 * 1024 * 1024, maxEntriesPerTenant: 1, maxBytesPerTenant: 32 * 1024 * 1024 },
    };
    const snaps = new RoutingSnapshots(store, { now: () => now, limits });
    for (let i = 0; i < 10; i++) await snaps.get(`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    expect(snaps.stats().snapshots.entries).toBe(3);
    expect(snaps.stats().evictions.snapshots.global_cap).toBe(7);
  });
});
