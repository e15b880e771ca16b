/**
 * The Store contract for the console (migration 15): the events listing, the resource health rows and
 * the dead-letter retry. Run against both engines by sqlite.test.ts and postgres.int.test.ts; company ids are
 * fresh per test.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventRecord, ResourceHealthWrite, Store } from '../../src/store/types.js';
import { eventRecord, integration, newDelivery } from './contract.js';

const T = 1_800_000_000_000;
const KEY = 'certmgr:issuer:cluster-1:ns:le-prod';

export function consoleContract(name: string, makeStore: () => Promise<Store>): void {
  describe(`Store contract, console: ${name}`, () => {
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

    const event = async (companyId: string, over: Partial<EventRecord> = {}) => {
      const e = eventRecord(companyId, over);
      await store.insertEvent(e);
      return e;
    };
    /** Claims until `id` is among the claimed (other contracts may share the store and leave due rows). */
    const claim = async (now: number, id: string) => {
      for (let i = 0; i < 50; i++) {
        const got = (await store.claimDeliveries(now, 1000, 60_000)).find((c) => c.id === id);
        if (got) return got;
      }
      throw new Error(`delivery ${id} was never claimed`);
    };
    const write = (e: EventRecord, over: Partial<ResourceHealthWrite> = {}): ResourceHealthWrite => ({
      companyId: e.companyId,
      resourceKey: KEY,
      eventId: e.id,
      orderAt: e.receivedAt,
      orderSeq: e.receivedAt * 1000,
      since: e.type.endsWith('.notready') ? { at: e.receivedAt, orderAt: e.receivedAt, orderSeq: e.receivedAt * 1000 } : null,
      fresh: false,
      ...over,
    });

    it('lists events newest first, by type, in pages; another company sees none of them', async () => {
      const e1 = await event(A, { receivedAt: T });
      const e2 = await event(A, { receivedAt: T + 1, type: 'evt.healthstatus.certmgr-issuer.active' });
      const e3 = await event(A, { receivedAt: T + 2 });
      await event(B, { receivedAt: T + 3 });
      expect((await store.listEvents(A, {}, null, 10)).map((e) => e.id)).toEqual([e3.id, e2.id, e1.id]);
      expect(await store.listEvents(A, {}, null, 1)).toEqual([e3]);
      expect((await store.listEvents(A, {}, { receivedAt: e3.receivedAt, id: e3.id }, 10)).map((e) => e.id)).toEqual([e2.id, e1.id]);
      const notready = await store.listEvents(A, { type: 'evt.healthstatus.certmgr-issuer.notready' }, null, 10);
      expect(notready.map((e) => e.id)).toEqual([e3.id, e1.id]);
      expect((await store.listEvents(B, {}, null, 10)).map((e) => e.companyId)).toEqual([B]);
    });

    it('resource health: a streak keeps its first .notready; an .active ends it; an older event changes nothing', async () => {
      const n1 = await event(A, { receivedAt: T });
      await store.putResourceHealth([write(n1, { fresh: true })]);
      const first = await store.listUnhealthyResources(A, null, 10);
      expect(first).toEqual([{ resourceKey: KEY, since: T, sinceOrderAt: T, sinceOrderSeq: T * 1000, event: n1 }]);
      expect(await store.listUnhealthyResources(B, null, 10)).toEqual([]);

      // a later .notready of the same streak: newest event moves, since stays
      const n2 = await event(A, { receivedAt: T + 10 });
      await store.putResourceHealth([write(n2)]);
      expect(await store.listUnhealthyResources(A, null, 10)).toEqual([{ ...first[0], event: n2 }]);

      // an event older than the stored one is ignored
      const old = await event(A, { receivedAt: T - 10, type: 'evt.healthstatus.certmgr-issuer.active' });
      await store.putResourceHealth([write(old, { fresh: true })]);
      expect((await store.listUnhealthyResources(A, null, 10))[0]!.event.id).toBe(n2.id);

      // recovered
      const a = await event(A, { receivedAt: T + 20, type: 'evt.healthstatus.certmgr-issuer.active' });
      await store.putResourceHealth([write(a, { fresh: true })]);
      expect(await store.listUnhealthyResources(A, null, 10)).toEqual([]);

      // a new streak (not fresh: nothing open is stored) starts at its own first .notready
      const n3 = await event(A, { receivedAt: T + 30 });
      await store.putResourceHealth([write(n3)]);
      expect(await store.listUnhealthyResources(A, null, 10)).toMatchObject([{ since: T + 30, event: { id: n3.id } }]);
    });

    it('resource health: longest unhealthy first, then by key, in pages', async () => {
      const ev = await Promise.all([T + 5, T, T].map((t) => event(A, { receivedAt: t })));
      await store.putResourceHealth([
        write(ev[0]!, { resourceKey: 'k-c' }),
        write(ev[1]!, { resourceKey: 'k-b' }),
        write(ev[2]!, { resourceKey: 'k-a' }),
      ]);
      const page1 = await store.listUnhealthyResources(A, null, 2);
      expect(page1.map((r) => r.resourceKey)).toEqual(['k-a', 'k-b']);
      const page2 = await store.listUnhealthyResources(A, { since: T, resourceKey: 'k-b' }, 2);
      expect(page2.map((r) => r.resourceKey)).toEqual(['k-c']);
    });

    it("a streak's deliveries: its key, from its first position, to the company's integrations, newest first", async () => {
      const integ = await store.createIntegration(integration(A));
      const e0 = await event(A, { receivedAt: T });
      const e1 = await event(A, { receivedAt: T + 10 });
      const before = newDelivery(e0, { integrationId: integ.id, orderKey: KEY, orderAt: T, orderSeq: T * 1000, createdAt: T });
      const inStreak = [1, 2, 3].map((i) =>
        newDelivery(e1, {
          integrationId: integ.id,
          orderKey: KEY,
          orderAt: T + 10,
          orderSeq: (T + 10) * 1000,
          createdAt: T + 10 + i,
          routerId: randomUUID(),
        }),
      );
      const otherKey = newDelivery(e1, { integrationId: integ.id, orderKey: 'other', orderAt: T + 10, orderSeq: 1, createdAt: T + 50 });
      const goneIntegration = newDelivery(e1, { orderKey: KEY, orderAt: T + 10, orderSeq: (T + 10) * 1000, createdAt: T + 60 });
      await store.insertDeliveries([before, ...inStreak, otherKey, goneIntegration]);
      const from = { orderAt: T + 10, orderSeq: (T + 10) * 1000 };
      const got = await store.listStreakDeliveries(A, KEY, from, 10);
      // one event's deliveries share its position: latest first in the resource's order, then by id
      const byId = inStreak
        .map((d) => d.id)
        .sort()
        .reverse();
      expect(got.map((d) => d.id)).toEqual(byId);
      expect((await store.listStreakDeliveries(A, KEY, from, 2)).map((d) => d.id)).toEqual(byId.slice(0, 2));
      expect(await store.listStreakDeliveries(B, KEY, from, 10)).toEqual([]);
    });

    it('retries a DEAD delivery only: PENDING, due now, attempts and lastError kept; claimable again; company-scoped', async () => {
      const e = await event(A, { receivedAt: T });
      const d = newDelivery(e, { createdAt: T });
      await store.insertDeliveries([d]);
      expect(await store.retryDeadDelivery(A, d.id, T + 1)).toEqual({ status: 'PENDING' });
      const claimed = await claim(T + 1, d.id);
      expect(await store.markDead(d.id, claimed.attempts, T + 2, 'HTTP 400 Bad Request', 400)).toBe(true);

      expect(await store.retryDeadDelivery(B, d.id, T + 3)).toBeNull();
      expect(await store.retryDeadDelivery(A, randomUUID(), T + 3)).toBeNull();
      const r = await store.retryDeadDelivery(A, d.id, T + 3);
      expect(r).toMatchObject({
        retried: {
          id: d.id,
          status: 'PENDING',
          attempts: 1,
          nextAttemptAt: T + 3,
          updatedAt: T + 3,
          lastError: 'HTTP 400 Bad Request',
          lastStatusCode: 400,
        },
      });
      // once only: a second retry sees PENDING
      expect(await store.retryDeadDelivery(A, d.id, T + 4)).toEqual({ status: 'PENDING' });
      expect((await claim(T + 3, d.id)).attempts).toBe(2);
    });

    it('a retried old delivery behind a newer one already delivered is superseded at claim time (in-order)', async () => {
      const e1 = await event(A, { receivedAt: T });
      const e2 = await event(A, { receivedAt: T + 10 });
      const integrationId = randomUUID();
      const old = newDelivery(e1, { integrationId, orderKey: KEY, orderAt: T, orderSeq: T * 1000, createdAt: T });
      const newer = newDelivery(e2, { integrationId, orderKey: KEY, orderAt: T + 10, orderSeq: (T + 10) * 1000, createdAt: T + 10 });
      await store.insertDeliveries([old, newer]);
      // the newer one waits behind the old one (head of key)
      const first = await store.claimDeliveries(T + 20, 1000, 60_000);
      expect(first.map((c) => c.id)).toContain(old.id);
      expect(first.map((c) => c.id)).not.toContain(newer.id);
      await store.markDead(old.id, 1, T + 21, 'HTTP 410 Gone', 410);
      const c2 = await claim(T + 22, newer.id);
      await store.markDelivered(newer.id, c2.attempts, T + 23, 200);

      expect(await store.retryDeadDelivery(A, old.id, T + 30)).toMatchObject({ retried: { status: 'PENDING' } });
      const c3 = await claim(T + 30, old.id);
      expect(c3).toMatchObject({ id: old.id, newerSent: true });
      expect(await store.supersede(old.id, c3.attempts, T + 31, 'in-order')).toBe(true);
      const [row] = await store.listDeliveries(A, { eventId: e1.id });
      expect(row).toMatchObject({ status: 'SUPERSEDED', attempts: 1 });
    });
  });
}
