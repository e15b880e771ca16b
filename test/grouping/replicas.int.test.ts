/**
 * Several flushers on one PostgreSQL store (replicas without leadership, or a failover overlap): each due group is
 * flushed by one of them, once. Two stores (two pools, like two replicas) on one schema; 30 due groups.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { orderOfEvent } from '../../src/delivery/order.js';
import { GroupFlusher } from '../../src/grouping/flusher.js';
import { addGroupMembers } from '../../src/grouping/ingest.js';
import { openStore } from '../../src/store/index.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { certificateResourceNotReady } from '../fixtures/events.js';
import { router } from '../store/contract.js';

const url = testDatabaseUrl();
const schema = randomSchema('t_groups');
afterAll(() => dropSchema(url, schema));

describe('flushers on two replicas (PostgreSQL)', () => {
  it('every due group is written once, whichever replica takes it', async () => {
    const a = await openStore(url, { schema });
    const b = await openStore(url, { schema });
    try {
      await a.migrate();
      const C = `company-${randomUUID()}`;
      const r = router(C, 'i1', { groupBy: ['data.issuerName'], groupWaitMs: 0 });
      const now = Date.now();
      const events = Array.from({ length: 90 }, (_, i) =>
        certificateResourceNotReady({ issuerName: `issuer-${i % 30}`, certificateName: `c-${i}` }),
      );
      const recs = events.map((e) => ({ id: randomUUID(), companyId: C, type: e.type, data: e.data, receivedAt: now }));
      await a.transaction(async (tx) => {
        await tx.insertEvents(recs);
        await addGroupMembers(
          tx,
          C,
          events.map((event, i) => ({ router: r, eventId: recs[i]!.id, event, order: orderOfEvent(event, now, i) })),
          now,
          randomUUID,
        );
      });
      const log = pino({ level: 'silent' });
      const fa = new GroupFlusher({ store: a, log, batchSize: 4 });
      const fb = new GroupFlusher({ store: b, log, batchSize: 4 });
      // the flushers loop while batches are full; started() is false outside start(), so each call does one batch
      let written = 0;
      for (let round = 0; round < 20; round++) {
        const [x, y] = await Promise.all([fa.flushDue(), fb.flushDue()]);
        written += x + y;
      }
      expect(written).toBe(30);
      const ds = await a.listDeliveries(C, { limit: 1000 });
      expect(ds).toHaveLength(30);
      expect(new Set(ds.map((d) => d.groupKey)).size).toBe(30);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
