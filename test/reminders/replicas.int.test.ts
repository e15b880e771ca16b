/**
 * Several replicas on one PostgreSQL store: each runs its scanner (its own pool, as separate processes would);
 * every due reminder is written exactly once (FOR UPDATE SKIP LOCKED claims), however the rounds interleave.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ReminderScanner } from '../../src/reminders/scanner.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { eventRecord, integration, router } from '../store/contract.js';

const url = testDatabaseUrl();
const schema = randomSchema('t_rem_replicas');
afterAll(() => dropSchema(url, schema));

describe('reminder scanners of several replicas on PostgreSQL', () => {
  it('write each due reminder exactly once', async () => {
    const stores: Store[] = [];
    for (let k = 0; k < 3; k++) stores.push(await openStore(url, { schema }));
    try {
      const [a] = stores;
      await a!.migrate();
      const C = `company-${randomUUID()}`;
      const i = await a!.createIntegration(integration(C));
      const r = await a!.createRouter(router(C, i.id, { repeatIntervalMs: 60_000 }));
      const n = 300;
      const events = Array.from({ length: n }, () => eventRecord(C));
      await a!.insertEvents(events);
      await a!.putRemindersIfNewer(
        events.map((e, k) => ({
          companyId: C,
          routerId: r.id,
          orderKey: `certmgr:issuer:c:ns:${k}`,
          open: true,
          eventId: e.id,
          eventTypeId: 'certmgr-issuer-health-notification-config',
          integrationId: i.id,
          orderAt: 1_000,
          orderSeq: 1_000_000,
          nextDueAt: 5_000,
          updatedAt: 1_000,
        })),
      );
      const now = 10_000;
      const scanners = stores.map(
        (store) =>
          new ReminderScanner({
            store,
            log: pino({ level: 'silent' }),
            clock: { now: () => now, setTimeout: () => undefined, clearTimeout: () => undefined },
            batchSize: 7,
            batchesPerScan: 1_000,
          }),
      );
      const reports = await Promise.all(scanners.map((s) => s.scanOnce()));
      expect(reports.reduce((sum, x) => sum + x.sent, 0)).toBe(n);
      const written = (await a!.listDeliveries(C, { limit: 1000 })).filter((d) => d.reminder);
      expect(written).toHaveLength(n);
      expect(new Set(written.map((d) => d.orderKey)).size).toBe(n);
      // all rescheduled one interval on; nothing left due
      expect(await a!.transaction((tx) => tx.claimDueReminders(now, 10, now))).toEqual([]);
      const rows = await a!.getReminders(
        C,
        events.map((_, k) => ({ routerId: r.id, orderKey: `certmgr:issuer:c:ns:${k}` })),
      );
      expect(rows.every((x) => x.nextDueAt === now + 60_000 && x.count === 1)).toBe(true);
    } finally {
      for (const s of stores) await s.close();
    }
  });
});
