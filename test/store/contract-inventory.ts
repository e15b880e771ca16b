/**
 * The Store contract for the inventory tables (migration 6): run against both engines by sqlite.test.ts and
 * postgres.int.test.ts. Company ids are fresh per test; the cross-company queries (gauge, silence window) use
 * times no other test uses.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isServingProblem, worstServingStatus } from '../../src/inventory/serving.js';
import type { ServingStatus } from '../../src/model/serving.js';
import type { ClusterRecord, InventoryCertificateRecord, ServingEndpointRecord, Store } from '../../src/store/types.js';

const DAY = 86_400_000;

export function cluster(companyId: string, over: Partial<ClusterRecord> = {}): ClusterRecord {
  return {
    companyId,
    id: randomUUID(),
    name: 'prod',
    agentVersion: '1.0.0',
    epoch: randomUUID(),
    lastSeq: 1,
    snapshotComplete: true,
    firstSeenAt: 1_700_000_000_000,
    lastSeenAt: 1_700_000_000_000,
    certificateCount: 0,
    silentSince: null,
    ...over,
  };
}

function cert(
  companyId: string,
  clusterId: string,
  secretName: string,
  over: Partial<InventoryCertificateRecord> = {},
): InventoryCertificateRecord {
  return {
    companyId,
    clusterId,
    namespace: 'web',
    secretName,
    certificateName: secretName,
    certificateUid: randomUUID(),
    serial: 'ABCDEF',
    notBefore: 1_700_000_000_000,
    notAfter: 1_700_000_000_000 + 90 * DAY,
    subject: 'CN=a.example, O=Zürich ✓',
    commonName: 'a.example',
    dnsNames: ['a.example', 'b.example'],
    issuer: 'CN=CA',
    issuerRef: { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
    readyStatus: 'True',
    readyReason: 'Ready',
    applicationIds: ['app-1'],
    labels: { 'app.kubernetes.io/name': 'web' },
    chainNotAfter: 1_700_000_000_000 + 300 * DAY,
    ignored: false,
    expiryThresholds: null,
    runbookUrl: null,
    serving: null,
    epoch: 'e',
    updatedAt: 1_700_000_000_000,
    ...over,
  };
}
export { cert as inventoryCert };

/** An endpoint of a certificate (docs/serving.md) with this status. */
export function servingEndpoint(status: ServingStatus, over: Partial<ServingEndpointRecord> = {}): ServingEndpointRecord {
  const probed = !['pending', 'notProbed'].includes(status);
  return {
    host: 'shop.example',
    address: status === 'notProbed' ? null : '203.0.113.7:443',
    source: { kind: 'Ingress', namespace: 'web', name: 'shop' },
    status,
    reason: status === 'notProbed' ? 'no address: set notify.certmgr.io/probe-address' : null,
    servedSerial: probed ? 'ABCDEE' : null,
    servedNotAfter: probed ? 1_700_000_000_000 + 60 * DAY : null,
    checkedAt: probed ? 1_700_000_000_000 + 61_000 : null,
    ...over,
  };
}

const loc = (c: { namespace: string; secretName: string }) => `${c.namespace}/${c.secretName}`;

export function inventoryContract(name: string, makeStore: () => Promise<Store>): void {
  describe(`Store contract, inventory: ${name}`, () => {
    let store: Store;
    let A: string;
    let B: string;
    beforeEach(async () => {
      store = await makeStore();
      await store.migrate();
      A = `company-a-${randomUUID()}`;
      B = `company-b-${randomUUID()}`;
    });
    afterEach(async () => {
      await store.close();
    });

    it('clusters: put, lock (read) and list, scoped by company, keyset by id', async () => {
      const c1 = cluster(A, { id: '00000000-0000-4000-8000-000000000001' });
      const c2 = cluster(A, { id: '00000000-0000-4000-8000-000000000002', snapshotComplete: false });
      await store.putCluster(c2);
      await store.putCluster(c1);
      await store.putCluster(cluster(B, { id: c1.id, name: 'B’s' }));
      expect(await store.lockCluster(A, c1.id)).toEqual(c1);
      expect(await store.lockCluster(A, randomUUID())).toBeNull();
      expect(await store.listClusters(A, { limit: 10 })).toEqual([c1, c2]);
      expect(await store.listClusters(A, { limit: 1 })).toEqual([c1]);
      expect(await store.listClusters(A, { after: c1.id, limit: 10 })).toEqual([c2]);
      // a put replaces everything but firstSeenAt
      const again = { ...c1, name: 'renamed', lastSeq: 7, lastSeenAt: c1.lastSeenAt + 5, firstSeenAt: 1, certificateCount: 3 };
      await store.putCluster(again);
      expect(await store.lockCluster(A, c1.id)).toEqual({ ...again, firstSeenAt: c1.firstSeenAt });
      expect((await store.lockCluster(B, c1.id))?.name).toBe('B’s');
      expect(await store.certificateCountExcept(A, c2.id)).toBe(3);
      expect(await store.certificateCountExcept(A, c1.id)).toBe(0);
    });

    it('upsert round-trips every field, counts new rows, and replaces by location', async () => {
      const c = cluster(A);
      await store.putCluster(c);
      const full = cert(A, c.id, 'full', {
        serving: [
          servingEndpoint('ok'),
          servingEndpoint('stale', { host: 'ü.example', source: { kind: 'Gateway', namespace: 'infra', name: 'gw' } }),
          servingEndpoint('notProbed', { host: '*.example' }),
        ],
      });
      const empty = cert(A, c.id, 'empty', {
        certificateName: null,
        certificateUid: null,
        serial: null,
        notBefore: null,
        notAfter: null,
        subject: null,
        commonName: null,
        dnsNames: [],
        issuer: null,
        issuerRef: null,
        readyStatus: null,
        readyReason: null,
        applicationIds: [],
        labels: {},
        chainNotAfter: null,
      });
      expect(await store.upsertInventory(A, c.id, 'e1', [full, empty])).toBe(2);
      const listed = await store.listInventory(A, {}, null, 10);
      expect(listed).toEqual([
        { ...full, epoch: 'e1', clusterName: 'prod' },
        { ...empty, epoch: 'e1', clusterName: 'prod' },
      ]);
      const changed = { ...full, serial: '01', notAfter: full.notAfter! + DAY, labels: { x: 'y' }, serving: [] };
      expect(await store.upsertInventory(A, c.id, 'e2', [changed, cert(A, c.id, 'third')])).toBe(1);
      const again = await store.listInventory(A, {}, null, 10);
      expect(again.map(loc)).toEqual(['web/third', 'web/full', 'web/empty']);
      expect(again[1]).toEqual({ ...changed, epoch: 'e2', clusterName: 'prod' });
      expect(await store.listInventory(B, {}, null, 10)).toEqual([]);
    });

    it('bulk: 1,200 rows in one call (chunked multi-row statements), deletes by location, stale rows by epoch', async () => {
      const c = cluster(A);
      const rows = Array.from({ length: 1200 }, (_, i) =>
        cert(A, c.id, `s-${String(i).padStart(4, '0')}`, { notAfter: 1_800_000_000_000 + i }),
      );
      expect(await store.upsertInventory(A, c.id, 'old', rows)).toBe(1200);
      expect(await store.upsertInventory(A, c.id, 'new', rows.slice(0, 700))).toBe(0);
      // deletes: only this company's and cluster's rows, and only those that exist
      const other = cluster(A);
      await store.upsertInventory(A, other.id, 'x', [cert(A, other.id, 's-0000')]);
      await store.upsertInventory(B, c.id, 'x', [cert(B, c.id, 's-0001')]);
      expect(await store.deleteInventory(A, c.id, [...rows.slice(0, 600), { namespace: 'web', secretName: 'missing' }])).toBe(600);
      expect(await store.deleteInventoryOutsideEpoch(A, c.id, 'new')).toBe(500);
      const left = await store.listInventory(A, { clusterId: c.id }, null, 2000);
      expect(left.map((r) => r.secretName)).toEqual(rows.slice(600, 700).map((r) => r.secretName));
      expect((await store.listInventory(A, { clusterId: other.id }, null, 10)).length).toBe(1);
      expect((await store.listInventory(B, {}, null, 10)).length).toBe(1);
    });

    it('a transaction that throws writes no row and no cluster', async () => {
      const c = cluster(A);
      await expect(
        store.transaction(async (tx) => {
          await tx.lockCluster(A, c.id);
          await tx.upsertInventory(A, c.id, 'e', [cert(A, c.id, 'a')]);
          await tx.putCluster(c);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await store.lockCluster(A, c.id)).toBeNull();
      expect(await store.listInventory(A, {}, null, 10)).toEqual([]);
    });

    it('listing: notAfter order (nulls last), keyset pages, every filter', async () => {
      const c = cluster(A, { name: 'one' });
      await store.putCluster(c);
      const t = 1_900_000_000_000;
      await store.upsertInventory(A, c.id, 'e', [
        cert(A, c.id, 'b', { notAfter: t, readyStatus: 'False', applicationIds: ['x', 'app-2'] }),
        cert(A, c.id, 'a', { notAfter: t, readyStatus: 'Unknown', namespace: 'other' }),
        cert(A, c.id, 'c', { notAfter: t - DAY, readyStatus: null, applicationIds: [] }),
        cert(A, c.id, 'n2', { notAfter: null }),
        cert(A, c.id, 'n1', { notAfter: null, namespace: 'other' }),
      ]);
      const all = await store.listInventory(A, {}, null, 10);
      expect(all.map(loc)).toEqual(['web/c', 'other/a', 'web/b', 'other/n1', 'web/n2']);
      // every page boundary
      for (let size = 1; size <= 5; size++) {
        const seen: string[] = [];
        let after = null;
        for (;;) {
          const page = await store.listInventory(A, {}, after, size);
          seen.push(...page.map(loc));
          if (page.length < size) break;
          const last = page.at(-1)!;
          after = { notAfter: last.notAfter, clusterId: last.clusterId, namespace: last.namespace, secretName: last.secretName };
        }
        expect(seen, `pages of ${size}`).toEqual(all.map(loc));
      }
      const names = async (f: Parameters<Store['listInventory']>[1]) => (await store.listInventory(A, f, null, 10)).map(loc);
      expect(await names({ notAfterAtMost: t - DAY })).toEqual(['web/c']);
      expect(await names({ notAfterAtMost: t })).toEqual(['web/c', 'other/a', 'web/b']);
      expect(await names({ health: 'READY' })).toEqual(['other/n1', 'web/n2']);
      expect(await names({ health: 'NOT_READY' })).toEqual(['web/b']);
      expect(await names({ health: 'UNKNOWN' })).toEqual(['web/c', 'other/a']);
      expect(await names({ applicationId: 'app-2' })).toEqual(['web/b']);
      expect(await names({ applicationId: 'app' })).toEqual([]);
      expect(await names({ applicationId: 'app-1' })).toEqual(['other/a', 'other/n1', 'web/n2']);
      expect(await names({ namespace: 'other' })).toEqual(['other/a', 'other/n1']);
      expect(await names({ clusterId: randomUUID() })).toEqual([]);
    });

    it('every filter and pairs of filters page like the whole list filtered (each filter reads its own index, migration 16)', async () => {
      const c1 = cluster(A, { name: 'one' });
      const c2 = cluster(A, { name: 'two' });
      const t = 1_900_000_000_000;
      const rows = [c1, c2].flatMap((c) =>
        Array.from({ length: 12 }, (_, i) =>
          cert(A, c.id, `s${i}`, {
            namespace: ['web', 'db', 'ops'][i % 3]!,
            notAfter: i % 5 === 4 ? null : t + (i % 4) * DAY,
            readyStatus: (['True', 'False', 'Unknown', null] as const)[i % 4]!,
            applicationIds: i % 2 ? ['app-1', 'app-2', 'app-1'] : ['app-2'],
            serving: [
              null,
              [],
              [servingEndpoint('ok')],
              [servingEndpoint('ok'), servingEndpoint('stale')],
              [servingEndpoint('pending'), servingEndpoint('notProbed')],
              [servingEndpoint('unreachable')],
            ][i % 6]!,
          }),
        ),
      );
      await store.upsertInventory(A, c1.id, 'e', rows.slice(0, 12));
      await store.upsertInventory(A, c2.id, 'e', rows.slice(12));
      const all = await store.listInventory(A, {}, null, 100);
      const singles: Parameters<Store['listInventory']>[1][] = [
        { clusterId: c2.id },
        { namespace: 'db' },
        { applicationId: 'app-1' },
        { applicationId: 'app-2' },
        { health: 'UNKNOWN' },
        { notAfterAtMost: t + DAY },
        { servingStatus: 'stale' },
        { servingStatus: 'ok' },
        { servingProblem: true },
        { servingProblem: false },
      ];
      const filters = [...singles, ...singles.flatMap((a, i) => singles.slice(i + 1).map((b) => ({ ...a, ...b })))];
      const healthOf = (s: string | null) => (s === 'True' ? 'READY' : s === 'False' ? 'NOT_READY' : 'UNKNOWN');
      for (const f of filters) {
        const want = all.filter(
          (r) =>
            (f.clusterId === undefined || r.clusterId === f.clusterId) &&
            (f.namespace === undefined || r.namespace === f.namespace) &&
            (f.applicationId === undefined || r.applicationIds.includes(f.applicationId)) &&
            (f.health === undefined || healthOf(r.readyStatus) === f.health) &&
            (f.notAfterAtMost === undefined || (r.notAfter !== null && r.notAfter <= f.notAfterAtMost)) &&
            (f.servingStatus === undefined || worstServingStatus(r.serving) === f.servingStatus) &&
            (f.servingProblem === undefined ||
              (worstServingStatus(r.serving) !== null && isServingProblem(worstServingStatus(r.serving)) === f.servingProblem)),
        );
        const seen: typeof all = [];
        let after = null;
        for (;;) {
          const page = await store.listInventory(A, f, after, 3);
          seen.push(...page);
          if (page.length < 3) break;
          const last = page.at(-1)!;
          after = { notAfter: last.notAfter, clusterId: last.clusterId, namespace: last.namespace, secretName: last.secretName };
        }
        expect(
          seen.map((r) => `${r.clusterId}/${loc(r)}`),
          JSON.stringify(f),
        ).toEqual(want.map((r) => `${r.clusterId}/${loc(r)}`));
        expect(seen, JSON.stringify(f)).toEqual(want);
      }
    });

    it('the applicationId filter follows every write: new ids, a new notAfter, a removed row, a removed cluster', async () => {
      const c = cluster(A);
      const t = 1_900_000_000_000;
      await store.upsertInventory(A, c.id, 'e1', [cert(A, c.id, 'a', { notAfter: t }), cert(A, c.id, 'b', { notAfter: t + 1 })]);
      const names = async (applicationId: string) => (await store.listInventory(A, { applicationId }, null, 10)).map((r) => r.secretName);
      expect(await names('app-1')).toEqual(['a', 'b']);
      await store.upsertInventory(A, c.id, 'e1', [cert(A, c.id, 'a', { notAfter: t + 2, applicationIds: ['app-1', 'app-9'] })]);
      expect(await names('app-1')).toEqual(['b', 'a']);
      expect(await names('app-9')).toEqual(['a']);
      await store.upsertInventory(A, c.id, 'e1', [cert(A, c.id, 'a', { notAfter: t + 2, applicationIds: [] })]);
      expect(await names('app-1')).toEqual(['b']);
      expect(await names('app-9')).toEqual([]);
      await store.deleteInventory(A, c.id, [{ namespace: 'web', secretName: 'b' }]);
      expect(await names('app-1')).toEqual([]);
      await store.upsertInventory(A, c.id, 'e2', [cert(A, c.id, 'c', { epoch: 'e2' })]);
      await store.upsertInventory(A, c.id, 'e1', [cert(A, c.id, 'd')]);
      expect(await store.deleteInventoryOutsideEpoch(A, c.id, 'e2')).toBe(2);
      expect(await names('app-1')).toEqual(['c']);
      await store.putCluster(c);
      await store.deleteClusters(A, [c.id]);
      expect(await names('app-1')).toEqual([]);
    });

    it('the serving filters follow every write: a delta that turns an endpoint ok, a row without endpoints, a delete, a snapshot replace', async () => {
      const c = cluster(A);
      const t = 1_900_000_000_000;
      const names = async (f: Parameters<Store['listInventory']>[1]) =>
        (await store.listInventory(A, f, null, 10)).map((r) => `${r.secretName}:${r.serving?.map((e) => e.status).join('+') ?? '-'}`);
      await store.upsertInventory(A, c.id, 'e1', [
        cert(A, c.id, 'a', { notAfter: t, serving: [servingEndpoint('ok'), servingEndpoint('stale', { host: 'b.example' })] }),
        cert(A, c.id, 'b', { notAfter: t + 1, serving: [servingEndpoint('mismatch')] }),
        cert(A, c.id, 'c', { notAfter: t + 2 }),
      ]);
      expect(await names({ servingProblem: true })).toEqual(['a:ok+stale', 'b:mismatch']);
      expect(await names({ servingStatus: 'stale' })).toEqual(['a:ok+stale']);
      expect(await names({ servingProblem: false })).toEqual([]);
      // the consumer reloaded: the next delta reports both endpoints ok
      await store.upsertInventory(A, c.id, 'e1', [
        cert(A, c.id, 'a', { notAfter: t, serving: [servingEndpoint('ok'), servingEndpoint('ok', { host: 'b.example' })] }),
      ]);
      expect(await names({ servingProblem: true })).toEqual(['b:mismatch']);
      expect(await names({ servingStatus: 'stale' })).toEqual([]);
      expect(await names({ servingStatus: 'ok' })).toEqual(['a:ok+ok']);
      expect(await names({ servingProblem: false })).toEqual(['a:ok+ok']);
      // an agent that stops probing: no endpoints, in no serving filter
      await store.upsertInventory(A, c.id, 'e1', [cert(A, c.id, 'b', { notAfter: t + 1 })]);
      expect(await names({ servingProblem: true })).toEqual([]);
      expect(await names({})).toEqual(['a:ok+ok', 'b:-', 'c:-']);
      await store.deleteInventory(A, c.id, [{ namespace: 'web', secretName: 'a' }]);
      expect(await names({ servingStatus: 'ok' })).toEqual([]);
      // a new full sync: rows of the old epoch go, with their endpoints
      await store.upsertInventory(A, c.id, 'e2', [cert(A, c.id, 'd', { notAfter: t, serving: [servingEndpoint('expired')] })]);
      await store.upsertInventory(A, c.id, 'e1', [cert(A, c.id, 'e', { notAfter: t, serving: [servingEndpoint('expired')] })]);
      expect(await names({ servingStatus: 'expired' })).toEqual(['d:expired', 'e:expired']);
      expect(await store.deleteInventoryOutsideEpoch(A, c.id, 'e2')).toBe(3);
      expect(await names({ servingProblem: true })).toEqual(['d:expired']);
      expect(await store.listInventory(B, { servingProblem: true }, null, 10)).toEqual([]);
      // the expiry scan reads the rows with endpoints like any other
      expect((await store.listExpiryInventory(A, t, null, 10)).map((r) => r.secretName)).toEqual(['d']);
    });

    it('places: one certificate (issuer, serial) in several clusters, scoped by company', async () => {
      const c1 = cluster(A, { name: 'one' });
      const c2 = cluster(A, { name: 'two' });
      await store.putCluster(c1);
      await store.putCluster(c2);
      await store.upsertInventory(A, c1.id, 'e', [cert(A, c1.id, 'shared', { serial: 'AA' }), cert(A, c1.id, 'own', { serial: 'BB' })]);
      await store.upsertInventory(A, c2.id, 'e', [
        cert(A, c2.id, 'copy', { serial: 'AA' }),
        cert(A, c2.id, 'other-ca', { serial: 'AA', issuer: 'CN=Other' }),
      ]);
      await store.upsertInventory(B, c1.id, 'e', [cert(B, c1.id, 'b', { serial: 'AA' })]);
      const places = await store.listCertificatePlaces(
        A,
        [
          { issuer: 'CN=CA', serial: 'AA' },
          { issuer: 'CN=CA', serial: 'AA' },
        ],
        10,
      );
      expect(places.map((p) => `${p.clusterName}:${p.secretName}`).sort()).toEqual(['one:shared', 'two:copy']);
      expect(await store.listCertificatePlaces(A, [], 10)).toEqual([]);
      expect((await store.listCertificatePlaces(A, [{ issuer: 'CN=CA', serial: 'AA' }], 1)).length).toBe(1);
      // the limit is per certificate: a certificate in many places does not take the places of the others
      const both = await store.listCertificatePlaces(
        A,
        [
          { issuer: 'CN=CA', serial: 'AA' },
          { issuer: 'CN=CA', serial: 'BB' },
        ],
        1,
      );
      expect(both.map((p) => p.serial)).toEqual(['AA', 'BB']);
      expect(both[1]).toMatchObject({ clusterName: 'one', secretName: 'own' });
      // three certificates: the VALUES list is padded (a repeated pair), each place still listed once, in order
      const three = await store.listCertificatePlaces(
        A,
        [
          { issuer: 'CN=Other', serial: 'AA' },
          { issuer: 'CN=CA', serial: 'BB' },
          { issuer: 'CN=CA', serial: 'AA' },
        ],
        10,
      );
      expect(three.map((p) => `${p.issuer}/${p.serial}`)).toEqual(['CN=CA/AA', 'CN=CA/AA', 'CN=CA/BB', 'CN=Other/AA']);
      expect(three.map((p) => p.secretName).slice(2)).toEqual(['own', 'other-ca']);
    });

    it('notAfter counts (the days-left gauge): cumulative at each bound, over every company; rows without notAfter not counted', async () => {
      const t = 3_000_000_000_000 + Math.floor(Math.random() * 1_000_000_000) * 100; // a time range no other test uses
      const bounds = [t, t + 10, t + 20];
      const before = await store.inventoryNotAfterCounts(bounds);
      const c = cluster(A);
      await store.upsertInventory(A, c.id, 'e', [
        cert(A, c.id, 'a', { notAfter: t }),
        cert(A, c.id, 'b', { notAfter: t + 5 }),
        cert(A, c.id, 'c', { notAfter: t + 20 }),
        cert(A, c.id, 'd', { notAfter: t + 21 }),
        cert(A, c.id, 'n', { notAfter: null }),
      ]);
      await store.upsertInventory(B, c.id, 'e', [cert(B, c.id, 'a', { notAfter: t + 10 })]);
      const after = await store.inventoryNotAfterCounts(bounds);
      // rows of other tests lie before t (all of them, in this range): only differences are this test's
      expect(after.atOrBefore.map((n, i) => n - before.atOrBefore[i]!)).toEqual([1, 3, 4]);
      expect(after.total - before.total).toBe(5);
      expect(await store.inventoryNotAfterCounts([])).toEqual({ atOrBefore: [], total: after.total });
    });

    it('silence: counts silent and reporting clusters; lists the clusters to mark; marks each once, a report clears', async () => {
      const t = 1_000_000_000 + Math.floor(Math.random() * 1_000_000_000) * 10; // a time range no other test uses
      const before = await store.clusterCounts(t);
      const c1 = cluster(A, { lastSeenAt: t - 10 });
      const c2 = cluster(B, { lastSeenAt: t - 5 });
      const c3 = cluster(A, { lastSeenAt: t });
      for (const c of [c1, c2, c3]) await store.putCluster(c);
      const after = await store.clusterCounts(t);
      expect(after.silent - before.silent).toBe(2);
      expect(after.reporting - before.reporting).toBe(1);
      const mine = (cs: ClusterRecord[]) => cs.map((c) => c.id).filter((id) => [c1.id, c2.id, c3.id].includes(id));
      expect(mine(await store.clustersToMarkSilent(t, 1000))).toEqual([c1.id, c2.id]); // oldest first
      expect(await store.markClusterSilent(A, c1.id, t - 11, t)).toBe(false); // a report came in between
      expect(await store.markClusterSilent(B, c1.id, t - 10, t)).toBe(false); // another company's id
      expect(await store.markClusterSilent(A, c1.id, t - 10, t)).toBe(true);
      expect(await store.markClusterSilent(A, c1.id, t - 10, t + 1)).toBe(false); // marked already: never twice
      expect((await store.lockCluster(A, c1.id))?.silentSince).toBe(t);
      expect(mine(await store.clustersToMarkSilent(t, 1000))).toEqual([c2.id]);
      await store.putCluster({ ...c1, lastSeenAt: t + 1, silentSince: null }); // the report that ends the silence
      expect((await store.lockCluster(A, c1.id))?.silentSince).toBeNull();
    });
  });
}
