/** RoutingSnapshots.current(): the stored state at once, without rebuilding while the fingerprint is unchanged. */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';

const A = '11111111-1111-4111-8111-111111111111';
const ISSUER = 'certmgr-issuer-health-notification-config';
let store: Store;
let loads = 0;
beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  await store.migrate();
  loads = 0;
  const real = store.listRouters.bind(store);
  store.listRouters = (c: string) => (loads++, real(c));
});
afterEach(async () => {
  await store.close();
});

async function addRouter(filter: string, t: number) {
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
    eventTypeId: ISSUER,
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

describe('RoutingSnapshots.current', () => {
  it('reuses the snapshot (no reload, no recompile) while nothing changed, well within the TTL', async () => {
    await addRouter("data.issuerName == 'a'", 1);
    const snaps = new RoutingSnapshots(store, { ttlMs: 60_000, maxStaleMs: 600_000 });
    const first = await snaps.current(A);
    for (let i = 0; i < 5; i++) expect(await snaps.current(A)).toBe(first);
    expect(loads).toBe(1);
    expect(snaps.stats().evictions.snapshots.deleted).toBe(0);
    expect(snaps.companyStats(A).filters).toBe(1);
  });

  it('rebuilds at once, within the TTL, when the store changed behind it; get() shares the result', async () => {
    await addRouter("data.issuerName == 'a'", 1);
    const snaps = new RoutingSnapshots(store, { ttlMs: 60_000, maxStaleMs: 600_000 });
    const first = await snaps.current(A);
    await addRouter("data.issuerName == 'b'", 2);
    expect(await snaps.get(A)).toBe(first); // get() waits for the TTL
    const second = await snaps.current(A);
    expect(second).not.toBe(first);
    expect(second.byFamily.get(ISSUER)!.length).toBe(2);
    expect(await snaps.get(A)).toBe(second);
    expect(loads).toBe(2);
  });
});
