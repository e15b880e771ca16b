/**
 * The Store contract for grouping (migration 12, src/store/groups.ts): run against both engines by sqlite.test.ts
 * and postgres.int.test.ts. Company ids are fresh per test; the due-group reads use times no other test uses.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GroupRow, MemberRow } from '../../src/grouping/records.js';
import type { Store } from '../../src/store/types.js';

function groupRow(companyId: string, over: Partial<GroupRow> = {}): GroupRow {
  return {
    id: randomUUID(),
    companyId,
    routerId: 'r1',
    key: `certmgr:group:${randomUUID()}`,
    labels: { 'data.issuerName': 'Zürich ✓' },
    routerName: 'certs',
    integrationId: 'i1',
    groupWaitMs: 30_000,
    groupIntervalMs: 300_000,
    repeatIntervalMs: null,
    createdAt: 1_700_000_000_000,
    nextFlushAt: 1_700_000_030_000,
    lastFlushAt: null,
    changed: false,
    sentFiring: false,
    memberCount: 0,
    overflowFiring: 0,
    overflowTransient: 0,
    resolvedTold: 0,
    lastEventId: randomUUID(),
    lastFlushEventId: null,
    ...over,
  };
}

function memberRow(key: string, over: Partial<MemberRow> = {}): MemberRow {
  return {
    memberKey: key,
    eventId: randomUUID(),
    state: 'firing',
    transient: false,
    orderAt: 1_700_000_000_000,
    orderSeq: 1,
    acceptedAt: 1_700_000_000_000,
    ...over,
  };
}

export function groupsContract(name: string, makeStore: () => Promise<Store>): void {
  describe(`Store contract (grouping): ${name}`, () => {
    let store: Store;
    let A: string;
    beforeEach(async () => {
      store = await makeStore();
      await store.migrate();
      A = `company-a-${randomUUID()}`;
    });
    afterEach(async () => {
      await store.close();
    });

    it('lockGroups creates missing groups, returns existing ones as stored (same order), never twice', async () => {
      const g1 = groupRow(A);
      const g2 = groupRow(A);
      const first = await store.transaction((tx) => tx.lockGroups([g1, g2]));
      expect(first).toEqual([g1, g2]);
      // a second init for g1's key keeps the stored row (its id and state)
      const again = await store.transaction((tx) =>
        tx.lockGroups([{ ...g1, id: randomUUID(), changed: true }, groupRow(A, { key: g2.key })]),
      );
      expect(again).toEqual([g1, g2]);
      expect(await store.countRouterGroups(A, 'r1')).toBe(2);
      expect(await store.countRouterGroups(A, 'r2')).toBe(0);
      expect((await store.existingGroupKeys(A, 'r1', [g1.key, 'certmgr:group:nope'])).sort()).toEqual([g1.key]);
      expect(await store.existingGroupKeys(`other-${randomUUID()}`, 'r1', [g1.key])).toEqual([]);
    });

    it('saveGroup writes the mutable state; members upsert by key; counts and lists by state, newest first, with events', async () => {
      const g = groupRow(A);
      await store.transaction((tx) => tx.lockGroups([g]));
      const saved = {
        ...g,
        changed: true,
        sentFiring: true,
        nextFlushAt: null,
        lastFlushAt: 5,
        memberCount: 4,
        overflowFiring: 2,
        lastFlushEventId: 'x',
        repeatIntervalMs: 60_000,
      };
      await store.saveGroup(saved);
      expect(await store.transaction((tx) => tx.lockGroups([g]))).toEqual([saved]);

      const events = ['a', 'b', 'c', 'd'].map((k, i) => ({
        id: randomUUID(),
        companyId: A,
        type: 'evt.healthstatus.certmgr-certificate-resource.notready',
        data: { certificateName: k },
        receivedAt: 1_700_000_000_000 + i,
      }));
      await store.insertEvents(events);
      await store.putGroupMembers(g.id, [
        memberRow('a', { eventId: events[0]!.id, orderAt: 1 }),
        memberRow('b', { eventId: events[1]!.id, orderAt: 3 }),
        memberRow('c', { eventId: events[2]!.id, orderAt: 2, state: 'resolved' }),
        memberRow('d', { eventId: events[3]!.id, orderAt: 4, transient: true }),
      ]);
      await store.putGroupMembers(g.id, [memberRow('a', { eventId: events[0]!.id, orderAt: 5 })]); // replaced, not added
      expect(await store.groupMemberCounts(g.id)).toEqual({ firing: 2, transient: 1, resolved: 1 });
      const firing = await store.listGroupMembers(g.id, 'firing', 20);
      expect(firing.map((m) => m.memberKey)).toEqual(['a', 'd', 'b']);
      expect(firing[0]!.event).toEqual({ type: events[0]!.type, data: { certificateName: 'a' }, receivedAt: events[0]!.receivedAt });
      expect((await store.listGroupMembers(g.id, 'firing', 1)).map((m) => m.memberKey)).toEqual(['a']);
      expect((await store.getGroupMembers(g.id, ['c', 'zz'])).map((m) => [m.memberKey, m.state])).toEqual([['c', 'resolved']]);

      expect(await store.dropSettledMembers(g.id)).toBe(2);
      expect(await store.groupMemberCounts(g.id)).toEqual({ firing: 2, transient: 0, resolved: 0 });
      await store.deleteGroup(g.id);
      expect(await store.groupMemberCounts(g.id)).toEqual({ firing: 0, transient: 0, resolved: 0 });
      expect(await store.countRouterGroups(A, 'r1')).toBe(0);
    });

    it('lockDueGroups: due ones only, most overdue first; idle groups (no next flush) never', async () => {
      const base = 4_000_000_000_000 + Math.floor(Math.random() * 1_000_000) * 1000;
      const late = groupRow(A, { nextFlushAt: base - 10 });
      const due = groupRow(A, { nextFlushAt: base });
      const future = groupRow(A, { nextFlushAt: base + 1 });
      const idle = groupRow(A, { nextFlushAt: null });
      await store.transaction((tx) => tx.lockGroups([due, late, future, idle]));
      const got = await store.transaction((tx) => tx.lockDueGroups(base, 1000));
      const mine = got.filter((g) => g.companyId === A).map((g) => g.id);
      expect(mine).toEqual([late.id, due.id]);
      expect(await store.countGroups()).toBeGreaterThanOrEqual(4);
    });

    it('a group delivery keeps its key and snapshot through the claim', async () => {
      const ev = { id: randomUUID(), companyId: A, type: 'evt.healthstatus.certmgr-issuer.notready', data: {}, receivedAt: Date.now() };
      await store.insertEvents([ev]);
      const id = randomUUID();
      await store.insertDeliveries([
        {
          id,
          companyId: A,
          eventId: ev.id,
          routerId: 'r1',
          routerName: 'certs',
          integrationId: 'i1',
          createdAt: 1, // the most overdue: claimed first whatever else the shared schema holds
          orderKey: `certmgr:group:${randomUUID()}`,
          groupKey: 'certmgr:group:k',
          groupSnapshot: '{"v":1}',
        },
      ]);
      const [listed] = await store.listDeliveries(A, { eventId: ev.id });
      expect(listed).toMatchObject({ id, groupKey: 'certmgr:group:k', groupSnapshot: '{"v":1}' });
      const claimed = (await store.claimDeliveries(Date.now(), 1, 60_000)).find((d) => d.id === id);
      expect(claimed).toMatchObject({ groupKey: 'certmgr:group:k', groupSnapshot: '{"v":1}' });
    });
  });
}
