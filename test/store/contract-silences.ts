/**
 * The Store contract for silences and the SILENCED delivery status (migration 11): run against both engines by
 * sqlite.test.ts and postgres.int.test.ts. Company ids are fresh per test.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SilenceRecord, Store } from '../../src/store/types.js';
import { eventRecord, newDelivery } from './contract.js';

const T = 1_800_000_000_000;
const H = 3_600_000;

function silenceRecord(companyId: string, over: Partial<SilenceRecord> = {}): SilenceRecord {
  return {
    id: randomUUID(),
    companyId,
    matcher: 'data.clusterName == "prod"',
    eventTypeId: null,
    eventTypeIds: ['certmgr-issuer-health-notification-config', 'certmgr-cert-resource-health-notification-config'],
    startsAt: T,
    endsAt: T + 2 * H,
    comment: 'upgrade of the ingress controller ✓',
    createdBy: 'ops@example.com',
    managedBy: null,
    createdAt: T - H,
    updatedAt: T - H,
    expiredAt: null,
    ...over,
  };
}

export function silencesContract(name: string, makeStore: () => Promise<Store>): void {
  describe(`Store contract, silences: ${name}`, () => {
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

    it('round-trips every field; another company sees nothing', async () => {
      const s = silenceRecord(A, { eventTypeId: 'certmgr-issuer-health-notification-config', managedBy: 'operator:ns/x' });
      expect(await store.createSilence(s)).toEqual(s);
      expect(await store.getSilence(A, s.id)).toEqual(s);
      expect(await store.getSilence(B, s.id)).toBeNull();
      expect(await store.listSilences(B, { now: T, limit: 10 })).toEqual([]);
      expect(await store.updateSilence(B, s.id, { comment: 'x' }, T)).toBeNull();
      expect(await store.expireSilence(B, s.id, T)).toBeNull();
    });

    it('refuses endsAt <= startsAt', async () => {
      await expect(store.createSilence(silenceRecord(A, { endsAt: T }))).rejects.toThrow();
      expect(await store.listSilences(A, { now: T, limit: 10 })).toEqual([]);
    });

    it('lists by state at a time, in creation order, with keyset pages', async () => {
      const pending = await store.createSilence(silenceRecord(A, { startsAt: T + H, endsAt: T + 2 * H, createdAt: 1 }));
      const active = await store.createSilence(silenceRecord(A, { startsAt: T - H, endsAt: T + H, createdAt: 2 }));
      const ended = await store.createSilence(silenceRecord(A, { startsAt: T - 2 * H, endsAt: T, createdAt: 3 }));
      const expired = await store.createSilence(silenceRecord(A, { startsAt: T - H, endsAt: T + H, expiredAt: T - 1, createdAt: 4 }));
      const ids = (l: SilenceRecord[]) => l.map((s) => s.id);
      expect(ids(await store.listSilences(A, { state: 'PENDING', now: T, limit: 10 }))).toEqual([pending.id]);
      expect(ids(await store.listSilences(A, { state: 'ACTIVE', now: T, limit: 10 }))).toEqual([active.id]);
      expect(ids(await store.listSilences(A, { state: 'EXPIRED', now: T, limit: 10 }))).toEqual([ended.id, expired.id]);
      expect(ids(await store.listSilences(A, { now: T, limit: 10 }))).toEqual([pending.id, active.id, ended.id, expired.id]);
      const page1 = await store.listSilences(A, { now: T, limit: 2 });
      const last = page1.at(-1)!;
      const page2 = await store.listSilences(A, { now: T, limit: 2, after: { createdAt: last.createdAt, id: last.id } });
      expect(ids([...page1, ...page2])).toEqual([pending.id, active.id, ended.id, expired.id]);
      expect(ids(await store.listLiveSilences(A, T, 10))).toEqual([pending.id, active.id]);
    });

    it('expires once: a second expire (or an ended silence) is unchanged', async () => {
      const s = await store.createSilence(silenceRecord(A, { startsAt: T - H, endsAt: T + H }));
      const e = await store.expireSilence(A, s.id, T);
      expect(e).toMatchObject({ id: s.id, expiredAt: T, updatedAt: T, endsAt: T + H });
      expect(await store.expireSilence(A, s.id, T + 10)).toEqual(e);
      const ended = await store.createSilence(silenceRecord(A, { startsAt: T - 2 * H, endsAt: T - H }));
      expect(await store.expireSilence(A, ended.id, T)).toEqual(ended);
    });

    it('updates the allowed fields only', async () => {
      const s = await store.createSilence(silenceRecord(A));
      const u = await store.updateSilence(
        A,
        s.id,
        { comment: 'new', endsAt: T + 5 * H, eventTypeIds: ['cert-expiry-ext-notification-config'], ...({ companyId: B } as object) },
        T + 1,
      );
      expect(u).toEqual({
        ...s,
        comment: 'new',
        endsAt: T + 5 * H,
        eventTypeIds: ['cert-expiry-ext-notification-config'],
        updatedAt: T + 1,
      });
      expect(await store.getSilence(A, s.id)).toEqual(u);
    });

    it('counts silences for the quota and deletes the oldest ended ones to make room', async () => {
      const a = await store.createSilence(silenceRecord(A, { startsAt: T - 3 * H, endsAt: T - 2 * H }));
      const b = await store.createSilence(silenceRecord(A, { startsAt: T - 3 * H, endsAt: T - H, expiredAt: T - 2.5 * H }));
      const live = await store.createSilence(silenceRecord(A));
      await store.createSilence(silenceRecord(B, { startsAt: T - 3 * H, endsAt: T - 2 * H }));
      expect(await store.countForQuota('silences', A)).toBe(3);
      // b ended first (expired at T - 2.5h), then a
      expect(await store.deleteOldestEndedSilences(A, T, 1)).toBe(1);
      expect(await store.getSilence(A, b.id)).toBeNull();
      expect(await store.deleteOldestEndedSilences(A, T, 5)).toBe(1);
      expect(await store.getSilence(A, a.id)).toBeNull();
      expect(await store.getSilence(A, live.id)).not.toBeNull();
      expect(await store.countForQuota('silences', B)).toBe(1);
    });

    it('stores SILENCED deliveries (never claimed, not blocking their key) and the previous delivery of a key', async () => {
      const integrationId = randomUUID();
      const silenceId = randomUUID();
      const ev1 = eventRecord(A);
      const ev2 = eventRecord(A);
      const ev3 = eventRecord(A);
      await store.insertEvents([ev1, ev2, ev3]);
      const key = `k-${randomUUID()}`;
      const d1 = newDelivery(ev1, { integrationId, orderKey: key, orderAt: 1, orderSeq: 1 });
      const d2 = newDelivery(ev2, { integrationId, orderKey: key, orderAt: 2, orderSeq: 2, silenceId });
      const d3 = newDelivery(ev3, { integrationId, orderKey: key, orderAt: 3, orderSeq: 3 });
      await store.insertDeliveries([d2]);
      const [silenced] = await store.listDeliveries(A, { eventId: ev2.id });
      expect(silenced).toMatchObject({ status: 'SILENCED', silenceId, attempts: 0 });
      expect(await store.listDeliveries(A, { status: 'SILENCED' })).toHaveLength(1);
      expect(await store.previousDelivery(A, integrationId, key, { orderAt: 3, orderSeq: 3, id: d3.id })).toEqual({
        status: 'SILENCED',
        orderAt: 2,
        orderSeq: 2,
        id: d2.id,
      });
      expect(await store.previousDelivery(A, integrationId, key, { orderAt: 2, orderSeq: 2, id: d2.id })).toBeNull();
      expect(await store.previousDelivery(B, integrationId, key, { orderAt: 3, orderSeq: 3, id: d3.id })).toBeNull();
      await store.insertDeliveries([d1, d3]);
      expect((await store.previousDelivery(A, integrationId, key, { orderAt: 2, orderSeq: 2, id: d2.id }))?.status).toBe('PENDING');
      // claims: d1 (the head), and d3 once d1 is done; the SILENCED d2 is never claimed nor in the way
      const far = T * 2;
      const first = await store.claimDeliveries(far, 1000, 60_000);
      const mine = first.filter((c) => c.companyId === A);
      expect(mine.map((c) => c.id)).toEqual([d1.id]);
      expect(await store.markDelivered(d1.id, 1, far, 200)).toBe(true);
      const second = (await store.claimDeliveries(far, 1000, 60_000)).filter((c) => c.companyId === A);
      expect(second.map((c) => c.id)).toEqual([d3.id]);
      const [after] = await store.listDeliveries(A, { eventId: ev2.id });
      expect(after).toMatchObject({ status: 'SILENCED', attempts: 0 });
      const stats = await store.deliveryStats();
      expect(Object.keys(stats).sort()).toEqual(['DEAD', 'IN_FLIGHT', 'PENDING']);
    });

    it('a newer SILENCED delivery does not supersede an older one (it carries no state to the receiver)', async () => {
      const integrationId = randomUUID();
      const ev1 = eventRecord(A);
      const ev2 = eventRecord(A);
      await store.insertEvents([ev1, ev2]);
      const key = `k-${randomUUID()}`;
      const d1 = newDelivery(ev1, { integrationId, orderKey: key, orderAt: 1, orderSeq: 1 });
      const d2 = newDelivery(ev2, { integrationId, orderKey: key, orderAt: 2, orderSeq: 2, silenceId: randomUUID() });
      await store.insertDeliveries([d1, d2]);
      const far = T * 2;
      const [c] = (await store.claimDeliveries(far, 1000, 60_000)).filter((x) => x.companyId === A);
      expect(c?.id).toBe(d1.id);
      expect(await store.supersede(d1.id, 1, far, 'supersede')).toBe(false);
    });

    it('the routing fingerprint changes with the company silences', async () => {
      const before = await store.routingFingerprint(A);
      const s = await store.createSilence(silenceRecord(A));
      const created = await store.routingFingerprint(A);
      expect(created).not.toBe(before);
      await store.expireSilence(A, s.id, T + 5);
      expect(await store.routingFingerprint(A)).not.toBe(created);
    });
  });
}
