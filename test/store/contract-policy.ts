/**
 * Store contract, per-resource policy (migration 14, docs/annotations.md): the inventory's ignored / own
 * thresholds / runbook URL columns, the expiry scan's own-threshold range and its largest own threshold. Run for
 * SQLite (sqlite.test.ts) and PostgreSQL (postgres.int.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InventoryCertificateRecord, Store } from '../../src/store/types.js';

const DAY = 86_400_000;
const T0 = 1_800_000_000_000;
const CLUSTER = '00000000-0000-4000-8000-00000000000c';

function rec(companyId: string, secretName: string, over: Partial<InventoryCertificateRecord> = {}): InventoryCertificateRecord {
  return {
    companyId,
    clusterId: CLUSTER,
    namespace: 'web',
    secretName,
    certificateName: secretName,
    certificateUid: null,
    serial: `S${secretName.toUpperCase().replace(/[^0-9A-F]/g, '')}0`,
    notBefore: T0 - 90 * DAY,
    notAfter: T0,
    subject: null,
    commonName: null,
    dnsNames: [`${secretName}.example`],
    issuer: 'CN=CA',
    issuerRef: null,
    readyStatus: null,
    readyReason: null,
    applicationIds: [],
    labels: {},
    chainNotAfter: null,
    ignored: false,
    expiryThresholds: null,
    runbookUrl: null,
    epoch: 'e',
    updatedAt: T0,
    ...over,
  };
}

export function policyContract(name: string, makeStore: () => Promise<Store>): void {
  describe(`Store contract, per-resource policy: ${name}`, () => {
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

    it('ignored, own thresholds and the runbook URL are stored, listed, replaced and cleared', async () => {
      const url = 'https://wiki.example.com/runbooks/tls?team=web&x=%C3%BC';
      await store.upsertInventory(A, CLUSTER, 'e', [
        rec(A, 'a', { ignored: true, expiryThresholds: [7, 3, 1], runbookUrl: url }),
        rec(A, 'b'),
      ]);
      const listed = await store.listInventory(A, {}, null, 10);
      expect(listed.map((c) => [c.secretName, c.ignored, c.expiryThresholds, c.runbookUrl])).toEqual([
        ['a', true, [7, 3, 1], url],
        ['b', false, null, null],
      ]);
      const due = await store.listExpiryInventory(A, T0, null, 10);
      expect(due.map((r) => [r.secretName, r.ignored, r.expiryThresholds, r.runbookUrl, r.dnsNames])).toEqual([
        ['a', true, [7, 3, 1], url, ['a.example']],
        ['b', false, null, null, ['b.example']],
      ]);
      // an agent's next report without the annotations clears them
      await store.upsertInventory(A, CLUSTER, 'e', [rec(A, 'a')]);
      const again = await store.listInventory(A, {}, null, 10);
      expect(again.map((c) => [c.secretName, c.ignored, c.expiryThresholds, c.runbookUrl])).toEqual([
        ['a', false, null, null],
        ['b', false, null, null],
      ]);
      expect(await store.maxOwnExpiryThreshold(A)).toBeNull();
    });

    it('the largest own threshold of the company (null: none)', async () => {
      expect(await store.maxOwnExpiryThreshold(A)).toBeNull();
      await store.upsertInventory(A, CLUSTER, 'e', [
        rec(A, 'a', { expiryThresholds: [7, 3] }),
        rec(A, 'b', { expiryThresholds: [90] }),
        rec(A, 'c'),
      ]);
      await store.upsertInventory(B, CLUSTER, 'e', [rec(B, 'a', { expiryThresholds: [365] })]);
      expect(await store.maxOwnExpiryThreshold(A)).toBe(90);
      expect(await store.maxOwnExpiryThreshold(B)).toBe(365);
    });

    it('shares of the lifetime: stored as written, read back with notBefore; the range in days from the row’s lifetime', async () => {
      const now = T0;
      await store.upsertInventory(A, CLUSTER, 'e', [
        // 10% of 400 days: 40 days, beyond the company's 30
        rec(A, 'year-in', { notBefore: now + 39 * DAY - 400 * DAY, notAfter: now + 39 * DAY, expiryThresholds: ['10%'] }),
        rec(A, 'year-out', { notBefore: now + 41 * DAY - 400 * DAY, notAfter: now + 41 * DAY, expiryThresholds: ['10%'] }),
        // 33% of 6 days: 2 days (rounded up), within the company's 30 but not its own
        rec(A, 'mtls-out', { notBefore: now + 3 * DAY - 6 * DAY, notAfter: now + 3 * DAY, expiryThresholds: [1, '33%'] }),
        // no lifetime: the share gives no rule, the company's range applies
        rec(A, 'unknown', { notBefore: null, notAfter: now + 20 * DAY, expiryThresholds: ['33%'] }),
      ]);
      const max = await store.maxOwnExpiryThreshold(A);
      expect(max).toBe(40);
      const rows = await store.listExpiryInventory(A, now + 30 * DAY, null, 100, { now, notAfterMax: now + max! * DAY });
      expect(rows.map((r) => [r.secretName, r.expiryThresholds, r.notBefore])).toEqual([
        ['unknown', ['33%'], null],
        ['year-in', ['10%'], now + 39 * DAY - 400 * DAY],
      ]);
      const listed = await store.listInventory(A, {}, null, 10);
      expect(listed.map((c) => [c.secretName, c.expiryThresholds])).toEqual([
        ['mtls-out', [1, '33%']],
        ['unknown', ['33%']],
        ['year-in', ['10%']],
        ['year-out', ['10%']],
      ]);
    });

    it('with own thresholds, a row is in the scan range by its own largest threshold, the others by the company’s', async () => {
      const now = T0;
      await store.upsertInventory(A, CLUSTER, 'e', [
        rec(A, 'plain-in', { notAfter: now + 20 * DAY }),
        rec(A, 'plain-out', { notAfter: now + 40 * DAY }),
        rec(A, 'own-far-in', { notAfter: now + 80 * DAY, expiryThresholds: [90, 7] }),
        rec(A, 'own-far-out', { notAfter: now + 100 * DAY, expiryThresholds: [90] }),
        rec(A, 'own-short-out', { notAfter: now + 20 * DAY, expiryThresholds: [3, 1] }),
        rec(A, 'own-short-in', { notAfter: now + 2 * DAY, expiryThresholds: [3] }),
      ]);
      const companyHorizon = now + 30 * DAY;
      const own = { now, notAfterMax: now + 90 * DAY };
      const names = (rows: { secretName: string }[]) => rows.map((r) => r.secretName);
      expect(names(await store.listExpiryInventory(A, companyHorizon, null, 100, own))).toEqual(['own-short-in', 'plain-in', 'own-far-in']);
      // keyset pages of one read the same rows once each
      const paged: string[] = [];
      let after = null;
      for (;;) {
        const page = await store.listExpiryInventory(A, companyHorizon, after, 1, own);
        const last = page[page.length - 1];
        if (!last) break;
        paged.push(last.secretName);
        after = { notAfter: last.notAfter, clusterId: last.clusterId, namespace: last.namespace, secretName: last.secretName };
      }
      expect(paged).toEqual(['own-short-in', 'plain-in', 'own-far-in']);
      // without `own` (a company without own thresholds): the company's range only, as before
      expect(names(await store.listExpiryInventory(A, companyHorizon, null, 100))).toEqual(['own-short-in', 'own-short-out', 'plain-in']);
    });
  });
}
