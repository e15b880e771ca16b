/**
 * Ingestion step 4 and the scanner against a real store (SQLite in memory; the same SQL runs on PostgreSQL in
 * the store contract and the service test), with the time passed in: what opens, refreshes, closes and sends,
 * the caps, and the order proof (a reminder is never sent after the `.active` that ended it).
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InternalEvent } from '../../src/events/families.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { Notifiers, type Notification } from '../../src/integrations/index.js';
import { REMINDER_LIMITS } from '../../src/reminders/decide.js';
import { ReminderScanner } from '../../src/reminders/scanner.js';
import { snapshotSilencer } from '../../src/reminders/silences.js';
import { createRoutingMetrics } from '../../src/routing/metrics.js';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import type { Clock } from '../../src/runtime/timers.js';
import { serviceContext } from '../../src/service/context.js';
import { acceptEvents, type IngestDeps } from '../../src/ingest/pipeline.js';
import { openStore } from '../../src/store/index.js';
import type { RouterRecord, SilenceRecord, Store } from '../../src/store/types.js';
import { eventRecord, integration, router } from '../store/contract.js';
import { issuerActive, issuerNotReady } from '../fixtures/events.js';

const MIN = 60_000;
const T0 = Date.parse('2025-03-14T10:00:00Z');

describe('reminders: ingestion and scanner on a real store', () => {
  let store: Store;
  let now: number;
  let deps: IngestDeps;
  let registry: Registry;
  let scanner: ReminderScanner;
  const C = `company-${randomUUID()}`;
  const clock: Clock = { now: () => now, setTimeout: () => undefined, clearTimeout: () => undefined };

  beforeEach(async () => {
    store = await openStore('sqlite::memory:');
    await store.migrate();
    now = T0;
    registry = new Registry();
    deps = { snapshots: new RoutingSnapshots(store), metrics: createRoutingMetrics(registry), log: pino({ level: 'silent' }) };
    scanner = new ReminderScanner({ store, log: pino({ level: 'silent' }), clock, registry });
  });
  afterEach(() => store.close());

  const accept = async (events: InternalEvent[]) => {
    deps.snapshots.invalidate(C);
    return acceptEvents(serviceContext(store, C, { now: () => now }), events, deps);
  };
  const withRouter = async (over: Partial<RouterRecord> = {}) => {
    const i = await store.createIntegration(integration(C));
    const r = await store.createRouter(router(C, i.id, { repeatIntervalMs: 5 * MIN, ...over }));
    return { i, r };
  };
  const reminders = async () => (await store.listDeliveries(C, { limit: 1000 })).filter((d) => d.reminder);
  const issuer = (n: number) => ({ issuerName: `issuer-${n}`, resourceId: randomUUID() });

  it('opens at accepted + repeat, sends the newest unhealthy event each interval, stops at the .active', async () => {
    const { r } = await withRouter();
    const a = issuer(1);
    const [first] = await accept([issuerNotReady(a)]);
    expect((await scanner.scanOnce()).sent).toBe(0);
    now += 5 * MIN - 1;
    expect((await scanner.scanOnce()).sent).toBe(0);
    now += 1;
    expect((await scanner.scanOnce()).sent).toBe(1);
    expect(await reminders()).toEqual([
      expect.objectContaining({
        eventId: first!.id,
        routerId: r.id,
        routerName: r.name,
        reminder: true,
        status: 'PENDING',
        createdAt: now,
      }),
    ]);
    // a newer .notready of the same resource: the reminder speaks for it, next due from it
    now += 2 * MIN;
    const [second] = await accept([issuerNotReady({ ...a, statusTransition: '2025-03-14T09:30:00Z' })]);
    now += 5 * MIN - 1;
    expect((await scanner.scanOnce()).sent).toBe(0);
    now += 1;
    expect((await scanner.scanOnce()).sent).toBe(1);
    expect((await reminders()).map((d) => d.eventId)).toEqual([second!.id, first!.id]);
    await accept([issuerActive(a)]);
    now += 60 * MIN;
    expect((await scanner.scanOnce()).sent).toBe(0);
    expect(await reminders()).toHaveLength(2);
    expect(await registry.getSingleMetricAsString('certmgr_notify_reminders_sent_total')).toContain(
      'certmgr_notify_reminders_sent_total 2',
    );
  });

  it('nothing for routers without repeat, grouped routers, expiration routers; one batch holding .notready and .active ends closed', async () => {
    await withRouter({ repeatIntervalMs: null });
    await withRouter({ groupBy: ['data.issuerName'] });
    await withRouter({ eventTypeId: 'cert-expiry-ext-notification-config', repeatIntervalMs: null });
    await accept([issuerNotReady(issuer(1))]);
    const { r } = await withRouter();
    const b = issuer(2);
    await accept([issuerNotReady(b), issuerActive(b)]);
    now += 10 * MIN;
    expect((await scanner.scanOnce()).sent).toBe(0);
    expect(
      (
        await store.getReminders(C, [
          { routerId: r.id, orderKey: `certmgr:issuer:${issuerNotReady().data.clusterId}:cert-manager:${b.issuerName}` },
        ])
      )[0],
    ).toMatchObject({
      open: false,
    });
  });

  it('a .notready older than the .active, accepted after it (a re-send), opens nothing', async () => {
    await withRouter();
    const a = issuer(1);
    await accept([issuerActive(a)]);
    now += 1000;
    await accept([issuerNotReady(a)]); // statusTransition 09:26:53, the .active's 11:02:17
    now += 10 * MIN;
    expect((await scanner.scanOnce()).sent).toBe(0);
  });

  it('the router changed since: disabled or deleted ends the reminder; a disabled integration skips it', async () => {
    const one = await withRouter();
    const two = await withRouter();
    const three = await withRouter();
    await accept([issuerNotReady(issuer(1))]);
    await store.updateRouter(C, one.r.id, { enabled: false }, now);
    await store.deleteRouters(C, [two.r.id]);
    await store.updateIntegration(C, three.i.id, { enabled: false }, now);
    now += 5 * MIN;
    expect(await scanner.scanOnce()).toMatchObject({ sent: 0, skipped: 1, ended: 1 });
    await store.updateIntegration(C, three.i.id, { enabled: true }, now);
    now += 5 * MIN;
    expect(await scanner.scanOnce()).toMatchObject({ sent: 1, ended: 0 });
    expect(await registry.getSingleMetricAsString('certmgr_notify_reminders_ended_total')).toContain('reason="router disabled"} 1');
  });

  it('caps the open reminders of a router; refreshes and closes still pass', async () => {
    const { r } = await withRouter();
    const n = 3;
    const batch = Array.from({ length: REMINDER_LIMITS.openPerRouter + n }, (_, k) => issuerNotReady(issuer(k)));
    await accept(batch.slice(0, 1000));
    for (let k = 1000; k < batch.length; k += 1000) await accept(batch.slice(k, k + 1000));
    expect((await store.countOpenReminders(C, [r.id])).byRouter.get(r.id)).toBe(REMINDER_LIMITS.openPerRouter);
    now += 1000;
    await accept([issuerActive({ issuerName: batch[0]!.data.issuerName, resourceId: batch[0]!.data.resourceId })]);
    expect((await store.countOpenReminders(C, [r.id])).byRouter.get(r.id)).toBe(REMINDER_LIMITS.openPerRouter - 1);
  });

  it('bounds one round: batch × batches per round, the rest in the next round', async () => {
    const small = new ReminderScanner({ store, log: pino({ level: 'silent' }), clock, batchSize: 2, batchesPerScan: 2 });
    await withRouter();
    await accept(Array.from({ length: 5 }, (_, k) => issuerNotReady(issuer(k))));
    now += 5 * MIN;
    expect(await small.scanOnce()).toMatchObject({ sent: 4, batches: 2 });
    expect(await small.scanOnce()).toMatchObject({ sent: 1, batches: 1 });
  });

  it('the worker hands the notifier a reminder marked as one (and the original not)', async () => {
    const { i } = await withRouter();
    await accept([issuerNotReady(issuer(1))]);
    now += 5 * MIN;
    await scanner.scanOnce();
    const seen: Notification[] = [];
    const worker = new DeliveryWorker({
      store,
      // a recording notifier: what the worker builds is the unit under test here
      notifiers: new Notifiers((type) => ({
        type,
        send: async (n) => (seen.push(n), { outcome: 'delivered', statusCode: 200 }),
        unavailable: () => null,
      })),
      logger: pino({ level: 'silent' }),
      clock: () => now,
      options: { pollIntervalMs: 10 },
    });
    worker.start();
    try {
      for (let k = 0; k < 500 && seen.length < 2; k++) await new Promise((r) => setTimeout(r, 10));
    } finally {
      await worker.stop();
    }
    expect(seen.map((n) => [n.integration.id, n.reminder])).toEqual([
      [i.id, undefined],
      [i.id, true],
    ]);
    expect(seen[1]!.eventId).toBe(seen[0]!.eventId);
  });

  describe('silences: a reminder inside an active silence is recorded SILENCED', () => {
    let silenced: ReminderScanner;
    beforeEach(() => {
      // the snapshot's live silences are those of the test's time, not the wall clock's
      const snapshots = new RoutingSnapshots(store, { now: () => now });
      silenced = new ReminderScanner({
        store,
        log: pino({ level: 'silent' }),
        clock,
        silencer: snapshotSilencer(snapshots),
        silencedCounter: deps.metrics.silenced,
      });
    });
    const silence = (over: Partial<SilenceRecord>): Promise<SilenceRecord> =>
      store.createSilence({
        id: randomUUID(),
        companyId: C,
        matcher: 'data.issuerName == "issuer-1"',
        eventTypeId: null,
        eventTypeIds: ['certmgr-issuer-health-notification-config'],
        startsAt: now - MIN,
        endsAt: now + 60 * MIN,
        comment: 'maintenance',
        createdBy: 'ops@example.com',
        managedBy: null,
        createdAt: now,
        updatedAt: now,
        expiredAt: null,
        ...over,
      });

    it('an active silence matching the event: SILENCED with its id, the slot taken; sent again once expired', async () => {
      const { r } = await withRouter();
      const a = issuer(1);
      await accept([issuerNotReady(a), issuerNotReady(issuer(2))]);
      const s = await silence({});
      now += 5 * MIN;
      expect(await silenced.scanOnce()).toMatchObject({ sent: 1, silenced: 1 });
      const first = await reminders();
      expect(first.find((d) => d.status === 'SILENCED')).toMatchObject({ silenceId: s.id, routerId: r.id, reminder: true });
      expect(first.find((d) => d.status === 'PENDING')).toMatchObject({ silenceId: null });
      // the silenced one took its slot: nothing due before the next interval, not counted as sent
      now += 5 * MIN - 1;
      expect(await silenced.scanOnce()).toMatchObject({ sent: 0, silenced: 0 });
      const key = { routerId: r.id, orderKey: `certmgr:issuer:${issuerNotReady().data.clusterId}:cert-manager:${a.issuerName}` };
      expect((await store.getReminders(C, [key]))[0]).toMatchObject({ count: 0, nextDueAt: now + 1 });
      now += 1;
      expect(await silenced.scanOnce()).toMatchObject({ sent: 1, silenced: 1 });
      await store.expireSilence(C, s.id, now);
      now += 5 * MIN;
      expect(await silenced.scanOnce()).toMatchObject({ sent: 2, silenced: 0 });
      expect((await reminders()).map((d) => d.status).sort()).toEqual(['PENDING', 'PENDING', 'PENDING', 'PENDING', 'SILENCED', 'SILENCED']);
      expect(await registry.getSingleMetricAsString('certmgr_notify_notifications_silenced_total')).toContain(
        'event_type_id="certmgr-issuer-health-notification-config"} 2',
      );
    });

    it.each([
      ['matching another resource', { matcher: 'data.issuerName == "issuer-9"' }],
      [
        'of another family',
        {
          eventTypeId: 'certmgr-cert-resource-health-notification-config',
          eventTypeIds: ['certmgr-cert-resource-health-notification-config'],
          matcher: 'true',
        },
      ],
      ['pending (starts later)', { startsAt: T0 + 6 * MIN }],
      ['expired (expireSilence)', { expiredAt: T0 + MIN }],
      ['ended (endsAt)', { startsAt: T0 - 60 * MIN, endsAt: T0 + MIN }],
    ] as [string, Partial<SilenceRecord>][])('a silence %s leaves the reminder PENDING', async (_, over) => {
      await withRouter();
      await accept([issuerNotReady(issuer(1))]);
      await silence(over);
      now += 5 * MIN;
      expect(await silenced.scanOnce()).toMatchObject({ sent: 1, silenced: 0 });
      expect(await reminders()).toEqual([expect.objectContaining({ status: 'PENDING', silenceId: null })]);
    });

    it('a row of a company the pre-read did not see is put back due, then sent by the next round', async () => {
      await withRouter();
      await accept([issuerNotReady(issuer(1))]);
      await silence({ matcher: 'false' }); // C has an active silence: its silencer is read, and writes D's row first
      const D = `company-d-${randomUUID()}`;
      const i = await store.createIntegration(integration(D));
      const r = await store.createRouter(router(D, i.id, { repeatIntervalMs: 5 * MIN }));
      const ev = eventRecord(D);
      await store.insertEvent(ev);
      const row = {
        companyId: D,
        routerId: r.id,
        orderKey: 'certmgr:issuer:c1:ns:late',
        open: true,
        eventId: ev.id,
        eventTypeId: r.eventTypeId,
        integrationId: i.id,
        orderAt: 1,
        orderSeq: 1,
        nextDueAt: T0 + 5 * MIN,
        updatedAt: T0,
      };
      const snapshots = new RoutingSnapshots(store, { now: () => now });
      const late = snapshotSilencer(snapshots);
      let once = true;
      const racing = new ReminderScanner({
        store,
        log: pino({ level: 'silent' }),
        clock,
        // between the pre-read and the claim, D's row becomes due (as if another writer put it there)
        silencer: async (companyId) => {
          if (once) await store.putRemindersIfNewer([row]);
          once = false;
          return late(companyId);
        },
      });
      now += 5 * MIN;
      expect(await racing.scanOnce()).toMatchObject({ sent: 1, silenced: 0 });
      expect(await store.listDeliveries(D, { limit: 10 })).toEqual([]);
      expect((await store.getReminders(D, [row]))[0]).toMatchObject({ nextDueAt: now, count: 0 });
      expect(await racing.scanOnce()).toMatchObject({ sent: 1 });
      expect(await store.listDeliveries(D, { limit: 10 })).toEqual([expect.objectContaining({ reminder: true, status: 'PENDING' })]);
    });

    it("another company's silence does not apply", async () => {
      await withRouter();
      await accept([issuerNotReady(issuer(1))]);
      await silence({ companyId: `other-${randomUUID()}` });
      now += 5 * MIN;
      expect(await silenced.scanOnce()).toMatchObject({ sent: 1, silenced: 0 });
    });
  });

  describe('order proof: a reminder is never sent after the .active that ended it', () => {
    it.each(['in-order', 'supersede'] as const)('%s: the pending reminder is older than the .active', async (mode) => {
      await withRouter();
      const a = issuer(1);
      await accept([issuerNotReady(a)]);
      const original = await store.claimDeliveries(now, 10, MIN);
      expect(original).toHaveLength(1);
      await store.markDelivered(original[0]!.id, 1, now, 200);
      now += 5 * MIN;
      expect((await scanner.scanOnce()).sent).toBe(1); // written, not yet sent
      now += 1000;
      await accept([issuerActive(a)]);
      // the claim hands out the key's oldest open delivery: the reminder, never the .active first
      const [head, ...rest] = await store.claimDeliveries(now, 10, MIN);
      expect(rest).toEqual([]);
      expect(head).toMatchObject({ reminder: true });
      // state-carrying types drop it (a newer one exists); the others send it, before the .active
      expect(await store.supersede(head!.id, head!.attempts, now, mode)).toBe(mode === 'supersede');
      if (mode === 'in-order') await store.markDelivered(head!.id, head!.attempts, now, 200);
      const [next] = await store.claimDeliveries(now, 10, MIN);
      expect(next).toMatchObject({ reminder: false, event: { type: 'evt.healthstatus.certmgr-issuer.active' } });
      now += 60 * MIN;
      expect((await scanner.scanOnce()).sent).toBe(0);
    });

    it('a later reminder is not superseded by the earlier ones already sent (its id sorts after theirs)', async () => {
      await withRouter();
      await accept([issuerNotReady(issuer(1))]);
      for (let k = 0; k < 5; k++) {
        const [d] = await store.claimDeliveries(now, 10, MIN);
        expect(await store.supersede(d!.id, d!.attempts, now, 'in-order')).toBe(false);
        await store.markDelivered(d!.id, d!.attempts, now, 200);
        now += 5 * MIN;
        expect((await scanner.scanOnce()).sent).toBe(1);
      }
    });
  });
});
