/**
 * The SQLite store prepares (and caches, by text) one statement per distinct SQL text, and each holds native
 * memory until it is collected: batches of tenant-chosen sizes must map to a bounded set of texts.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite.js';
import { eventRecord, newDelivery } from './contract.js';
import { cluster, inventoryCert } from './contract-inventory.js';

const MAX_SIZE = 200;
/** 1, 2, 4, …, 128: the power-of-two chunk lengths of batches up to MAX_SIZE. */
const BOUND = 8;

describe('SQLite store: distinct statement texts under varying batch sizes', () => {
  let seen: Set<string>;
  let store: SqliteStore;
  beforeEach(async () => {
    seen = new Set();
    store = await openSqliteStore(':memory:', { onStatement: (sql) => seen.add(sql.replace(/\s+/g, ' ').trim()) });
    await store.migrate();
    seen.clear();
  });
  afterEach(() => store.close());
  const texts = (prefix: string) => [...seen].filter((s) => s.startsWith(prefix));

  it(`inventory upserts, deletes and place lookups of 1..${MAX_SIZE} rows`, async () => {
    const A = randomUUID();
    const c = cluster(A);
    await store.putCluster(c);
    let added = 0;
    for (let n = 1; n <= MAX_SIZE; n++) {
      const rows = Array.from({ length: n }, (_, i) => inventoryCert(A, c.id, `s-${n}-${i}`, { serial: `${n}-${i}` }));
      added += await store.upsertInventory(A, c.id, 'e', rows);
      const certs = rows.slice(0, n % 40).map((r) => ({ issuer: r.issuer!, serial: r.serial! }));
      expect(await store.listCertificatePlaces(A, certs, 1)).toHaveLength(certs.length);
      if (n % 2 === 0) expect(await store.deleteInventory(A, c.id, rows)).toBe(n);
    }
    expect(added).toBe((MAX_SIZE * (MAX_SIZE + 1)) / 2);
    expect(texts('INSERT INTO inventory_certificates').length).toBeLessThanOrEqual(BOUND);
    expect(texts('SELECT count(*) AS n FROM inventory_certificates').length).toBeLessThanOrEqual(BOUND);
    expect(texts('DELETE FROM inventory_certificates').length).toBeLessThanOrEqual(BOUND);
    expect(texts('SELECT issuer, serial, cluster_id').length).toBeLessThanOrEqual(7);
  });

  it(`events and deliveries inserted ${MAX_SIZE} batches of 1..${MAX_SIZE}`, async () => {
    const A = randomUUID();
    for (let n = 1; n <= MAX_SIZE; n++) {
      const events = Array.from({ length: n }, () => eventRecord(A));
      await store.transaction(async (tx) => {
        await tx.insertEvents(events);
        await tx.insertDeliveries(events.map((ev) => newDelivery(ev)));
      });
    }
    expect(texts('INSERT INTO events (').length).toBeLessThanOrEqual(BOUND);
    expect(texts('INSERT INTO deliveries (').length).toBeLessThanOrEqual(BOUND);
  });
});
