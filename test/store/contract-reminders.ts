/**
 * The Store contract for reminders (migration 13): run against both engines by sqlite.test.ts and
 * postgres.int.test.ts. Company ids are fresh per test; the claims are global, so each claim test uses due times
 * (below 10,000) that no other test writes and deletes what it left.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReminderRecord, SilenceRecord, Store } from '../../src/store/types.js';
import { eventRecord, integration, newDelivery, router } from './contract.js';

type Put = Omit<ReminderRecord, 'count'>;

export function reminderContract(name: string, makeStore: () => Promise<Store>): void {
  describe(`Store contract, reminders: ${name}`, () => {
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

    /** An event row (reminders reference their event) and a reminder record for it. */
    async function rec(companyId: string, over: Partial<Put> = {}): Promise<Put> {
      const ev = eventRecord(companyId);
      await store.insertEvent(ev);
      return {
        companyId,
        routerId: randomUUID(),
        orderKey: `certmgr:issuer:c1:ns:${randomUUID()}`,
        open: true,
        eventId: ev.id,
        eventTypeId: 'certmgr-issuer-health-notification-config',
        integrationId: randomUUID(),
        orderAt: 1_000,
        orderSeq: 1_000_000,
        nextDueAt: 2_000_000_000_000,
        updatedAt: 1_000,
        ...over,
      };
    }

    const keyOf = (r: Put) => ({ routerId: r.routerId, orderKey: r.orderKey });

    it('round-trips a row, scoped by company', async () => {
      const r = await rec(A);
      expect(await store.putRemindersIfNewer([r])).toBe(1);
      expect(await store.getReminders(A, [keyOf(r)])).toEqual([{ ...r, count: 0 }]);
      expect(await store.getReminders(B, [keyOf(r)])).toEqual([]);
      expect(await store.getReminders(A, [])).toEqual([]);
    });

    it('moves only to newer positions; count survives open → open and restarts after a close', async () => {
      const r = await rec(A);
      await store.putRemindersIfNewer([r]);
      await store.rescheduleReminders([{ ...r, nextDueAt: 3_000_000_000_000, sent: true }], 5);
      await store.rescheduleReminders([{ ...r, nextDueAt: 3_000_000_000_000, sent: true }], 6);
      const [afterTwo] = await store.getReminders(A, [keyOf(r)]);
      expect(afterTwo).toMatchObject({ count: 2, nextDueAt: 3_000_000_000_000, updatedAt: 6 });

      const newer = await rec(A, { routerId: r.routerId, orderKey: r.orderKey, orderSeq: 1_000_001, nextDueAt: 2_500_000_000_000 });
      expect(await store.putRemindersIfNewer([newer])).toBe(1);
      expect((await store.getReminders(A, [keyOf(r)]))[0]).toMatchObject({
        eventId: newer.eventId,
        count: 2,
        nextDueAt: 2_500_000_000_000,
      });

      // older (by orderAt, then orderSeq) and the same position change nothing
      const older = await rec(A, { routerId: r.routerId, orderKey: r.orderKey, orderAt: 999, orderSeq: 9_999_999, open: false });
      expect(await store.putRemindersIfNewer([older, { ...newer, open: false }].slice(0, 1))).toBe(0);
      expect(await store.putRemindersIfNewer([{ ...newer, open: false }])).toBe(0);
      expect((await store.getReminders(A, [keyOf(r)]))[0]).toMatchObject({ open: true, eventId: newer.eventId });

      const close = await rec(A, { routerId: r.routerId, orderKey: r.orderKey, orderAt: 2_000, open: false });
      expect(await store.putRemindersIfNewer([close])).toBe(1);
      expect((await store.getReminders(A, [keyOf(r)]))[0]).toMatchObject({ open: false, count: 0, eventId: close.eventId });
      // a closed marker keeps an older .notready from opening it again
      expect(await store.putRemindersIfNewer([{ ...newer, orderAt: 1_500 }])).toBe(0);
      const reopen = await rec(A, { routerId: r.routerId, orderKey: r.orderKey, orderAt: 3_000 });
      expect(await store.putRemindersIfNewer([reopen])).toBe(1);
      expect((await store.getReminders(A, [keyOf(r)]))[0]).toMatchObject({ open: true, count: 0, eventId: reopen.eventId });
    });

    it('counts open rows per router and company (closed markers and other companies not)', async () => {
      const r1 = randomUUID();
      const r2 = randomUUID();
      const rows = [
        await rec(A, { routerId: r1 }),
        await rec(A, { routerId: r1 }),
        await rec(A, { routerId: r2 }),
        await rec(A, { routerId: r2, open: false }),
        await rec(B, { routerId: r1 }),
      ];
      await store.putRemindersIfNewer(rows);
      const counted = await store.transaction((tx) => tx.countOpenReminders(A, [r1, r2]));
      expect(counted.company).toBe(3);
      expect(Object.fromEntries(counted.byRouter)).toEqual({ [r1]: 2, [r2]: 1 });
      expect((await store.countOpenReminders(A, [r1])).byRouter.get(r2)).toBeUndefined();
    });

    it('claims due rows, most overdue first, up to the limit, moving next_due_at', async () => {
      const rows = [
        await rec(A, { nextDueAt: 30 }),
        await rec(A, { nextDueAt: 10 }),
        await rec(B, { nextDueAt: 20 }),
        await rec(A, { nextDueAt: 40 }),
      ];
      await store.putRemindersIfNewer(rows);
      const first = await store.transaction((tx) => tx.claimDueReminders(35, 2, 9_000_000_000_000));
      expect(first.map((r) => r.nextDueAt)).toEqual([9_000_000_000_000, 9_000_000_000_000]);
      expect(first.map((r) => r.eventId).sort()).toEqual([rows[1]!.eventId, rows[2]!.eventId].sort());
      const second = await store.transaction((tx) => tx.claimDueReminders(35, 10, 9_000_000_000_000));
      expect(second.map((r) => r.eventId)).toEqual([rows[0]!.eventId]);
      expect(await store.transaction((tx) => tx.claimDueReminders(35, 10, 9_000_000_000_000))).toEqual([]);
      expect(await store.claimDueReminders(35, 0, 1)).toEqual([]);
      expect(await store.deleteReminders(rows)).toBe(4);
      expect(await store.deleteReminders(rows)).toBe(0);
    });

    it('dueReminderCompanies: the companies of the first due rows, each with whether a silence is active now', async () => {
      const C = `company-c-${randomUUID()}`;
      const rows = [
        await rec(A, { nextDueAt: 300 }),
        await rec(B, { nextDueAt: 301 }),
        await rec(A, { nextDueAt: 302 }),
        await rec(C, { nextDueAt: 303 }),
        await rec(C, { nextDueAt: 900 }),
      ];
      await store.putRemindersIfNewer(rows);
      const silence = (companyId: string, over: Partial<SilenceRecord>) =>
        store.createSilence({
          id: randomUUID(),
          companyId,
          matcher: 'true',
          eventTypeId: null,
          eventTypeIds: ['certmgr-issuer-health-notification-config'],
          startsAt: 100,
          endsAt: 1_000,
          comment: 'c',
          createdBy: 'x',
          managedBy: null,
          createdAt: 1,
          updatedAt: 1,
          expiredAt: null,
          ...over,
        });
      await silence(A, {}); // active at 350
      await silence(B, { startsAt: 400 }); // pending
      await silence(B, { expiredAt: 200 }); // expired
      await silence(C, { endsAt: 350 }); // ended at 350 exactly
      expect(await store.dueReminderCompanies(350, 10)).toEqual(
        [
          { companyId: A, activeSilence: true },
          { companyId: B, activeSilence: false },
          { companyId: C, activeSilence: false },
        ].sort((x, y) => (x.companyId < y.companyId ? -1 : 1)),
      );
      // the first two due rows (300, 301): A and B only; nothing due before 300
      expect((await store.dueReminderCompanies(350, 2)).map((c) => c.companyId).sort()).toEqual([A, B].sort());
      expect(await store.dueReminderCompanies(299, 10)).toEqual([]);
      expect(await store.dueReminderCompanies(350, 0)).toEqual([]);
      await store.deleteReminders(rows);
    });

    it('two concurrent claims never take the same row', async () => {
      const rows = [await rec(A, { nextDueAt: 100 }), await rec(A, { nextDueAt: 101 }), await rec(A, { nextDueAt: 102 })];
      await store.putRemindersIfNewer(rows);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let claimedFirst!: () => void;
      const firstClaimed = new Promise<void>((r) => (claimedFirst = r));
      const a = store.transaction(async (tx) => {
        const got = await tx.claimDueReminders(150, 2, 9_000_000_000_000);
        claimedFirst();
        await held;
        return got;
      });
      await firstClaimed;
      const b = store.transaction((tx) => tx.claimDueReminders(150, 2, 9_000_000_000_000));
      // PostgreSQL: b skips a's locked rows and returns at once; SQLite: b waits for a's commit
      setTimeout(release, 50);
      const [ga, gb] = await Promise.all([a, b]);
      const ids = [...ga, ...gb].map((r) => r.eventId);
      expect(ga).toHaveLength(2);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.sort()).toEqual(rows.map((r) => r.eventId).sort());
      await store.deleteReminders(rows);
    });

    it('a close waits for a claim that holds the row and is applied after it', async () => {
      const r = await rec(A, { nextDueAt: 200 });
      await store.putRemindersIfNewer([r]);
      // written before the claim: on SQLite a statement outside the transaction would wait for it
      const close = await rec(A, { routerId: r.routerId, orderKey: r.orderKey, orderAt: 5_000, open: false, nextDueAt: 7_000_000_000_000 });
      let release!: () => void;
      const held = new Promise<void>((res) => (release = res));
      let claimed!: () => void;
      const isClaimed = new Promise<void>((res) => (claimed = res));
      const scan = store.transaction(async (tx) => {
        const got = await tx.claimDueReminders(250, 10, 9_000_000_000_000);
        claimed();
        await held;
        await tx.rescheduleReminders(
          got.map((g) => ({ ...g, nextDueAt: 8_000_000_000_000, sent: true })),
          7,
        );
        return got.length;
      });
      await isClaimed;
      const closing = store.transaction((tx) => tx.putRemindersIfNewer([close]));
      setTimeout(release, 50);
      expect(await scan).toBe(1);
      expect(await closing).toBe(1);
      expect((await store.getReminders(A, [keyOf(r)]))[0]).toMatchObject({
        open: false,
        eventId: close.eventId,
        nextDueAt: 7_000_000_000_000,
      });
      await store.deleteReminders([r]);
    });

    it('reminderTargets: the router and its integration enabled flag; null when deleted', async () => {
      const i = await store.createIntegration(integration(A, { enabled: false }));
      const j = await store.createIntegration(integration(A));
      const rt = await store.createRouter(router(A, i.id, { repeatIntervalMs: 60_000 }));
      const other = await store.createRouter(router(A, j.id));
      const gone = randomUUID();
      const t = await store.reminderTargets([
        { companyId: A, routerId: rt.id },
        { companyId: A, routerId: other.id },
        { companyId: A, routerId: gone },
        { companyId: B, routerId: rt.id },
        { companyId: A, routerId: rt.id },
      ]);
      expect(t.size).toBe(4);
      expect(t.get(`${A}/${rt.id}`)).toEqual({ router: rt, integration: { enabled: false } });
      expect(t.get(`${A}/${other.id}`)).toEqual({ router: other, integration: { enabled: true } });
      expect(t.get(`${A}/${gone}`)).toEqual({ router: null, integration: null });
      expect(t.get(`${B}/${rt.id}`)).toEqual({ router: null, integration: null });
      expect((await store.reminderTargets([])).size).toBe(0);
    });

    it("deleting a router deletes its reminders (not another router's)", async () => {
      const i = await store.createIntegration(integration(A));
      const r1 = await store.createRouter(router(A, i.id));
      const r2 = await store.createRouter(router(A, i.id));
      const a = await rec(A, { routerId: r1.id });
      const b = await rec(A, { routerId: r2.id });
      await store.putRemindersIfNewer([a, b]);
      await store.deleteRouters(A, [r1.id]);
      expect(await store.getReminders(A, [keyOf(a), keyOf(b)])).toEqual([expect.objectContaining({ routerId: r2.id })]);
    });

    it("deliveries.reminder: a reminder repeats its event's (event, router); a second plain one is still refused", async () => {
      const ev = eventRecord(A);
      await store.insertEvent(ev);
      const d = newDelivery(ev);
      await store.insertDeliveries([d]);
      await store.insertDeliveries([
        { ...d, id: randomUUID(), reminder: true },
        { ...d, id: randomUUID(), reminder: true },
      ]);
      const listed = await store.listDeliveries(A, { eventId: ev.id });
      expect(listed.map((x) => x.reminder).sort()).toEqual([false, true, true]);
      await expect(store.insertDeliveries([{ ...d, id: randomUUID() }])).rejects.toThrow();
    });
  });
}
