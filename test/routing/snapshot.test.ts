/** Routing snapshots: reuse while nothing changed, rebuild when another writer changed the company's routing. */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';

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
    id: randomUUID(), companyId: A, name: 'i', type: 'WEBHOOK', enabled: true, config: {}, secrets: { url: 'http://127.0.0.1:9/x' },
    managedBy: null, createdAt: t, updatedAt: t,
  });
  return store.createRouter({
    id: randomUUID(), companyId: A, name: 'r', eventTypeId: 'certmgr-issuer-health-notification-config', enabled: true, filter,
    integrationId: integ.id, templateId: null, generation: 'ROUTER', managedBy: null, createdAt: t, updatedAt: t,
  });
}

const routers = async (s: RoutingSnapshots) => (await s.get(A)).byFamily.get('certmgr-issuer-health-notification-config')!.map((r) => r.record);

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
