/**
 * The ingestion transaction (Store.ingestTransaction) on SQLite: committed at synchronous=NORMAL, `committed`
 * called once the rows are visible to another connection (the worker may claim them), resolved after the
 * fdatasync of the -wal file; the store's level is FULL again afterwards. A rolled-back ingestion calls nothing.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { eventRecord } from './contract.js';

const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-sqlite-ingest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('SQLite ingestTransaction', () => {
  it('commits, calls committed() with the rows visible to another connection, then resolves; FULL again after', async () => {
    const file = join(dir, `ingest-${randomUUID()}.db`);
    const store = await openSqliteStore(file);
    await store.migrate();
    const A = randomUUID();
    const e = eventRecord(A, { receivedAt: Date.now() });
    const other = new DatabaseSync(file, { readOnly: true });
    const seen: unknown[] = [];
    let resolved = false;
    const done = store
      .ingestTransaction(
        async (tx) => {
          await tx.insertEvents([e]);
          return 'ok';
        },
        () => seen.push(other.prepare('SELECT id FROM events WHERE id = ?').get(e.id)?.['id'], resolved),
      )
      .then((r) => ((resolved = true), r));
    expect(await done).toBe('ok');
    expect(seen).toEqual([e.id, false]);
    // the connection's level is back to FULL for every other write
    const sync = await (store as unknown as { autoDb(): { get(sql: string): Promise<Record<string, unknown>> } })
      .autoDb()
      .get('PRAGMA synchronous');
    expect(sync['synchronous']).toBe(2);
    other.close();
    await store.close();
  });

  it('a throwing ingestion rolls back and never calls committed()', async () => {
    const store = await openSqliteStore(join(dir, `ingest-${randomUUID()}.db`));
    await store.migrate();
    const e = eventRecord(randomUUID(), { receivedAt: Date.now() });
    let called = 0;
    await expect(
      store.ingestTransaction(
        async (tx) => {
          await tx.insertEvents([e]);
          throw new Error('refused');
        },
        () => called++,
      ),
    ).rejects.toThrow('refused');
    expect(called).toBe(0);
    expect(await store.getEvent(e.companyId, e.id)).toBeNull();
    await store.close();
  });

  it('a database reached through a symlink: the fdatasync is of the -wal next to the real file', async () => {
    const real = join(dir, `real-${randomUUID()}`);
    mkdirSync(real);
    const link = join(dir, `link-${randomUUID()}.db`);
    symlinkSync(join(real, 'x.db'), link);
    const store = await openSqliteStore(link);
    await store.migrate();
    const e = eventRecord(randomUUID(), { receivedAt: Date.now() });
    await expect(
      store.ingestTransaction(
        (tx) => tx.insertEvents([e]).then(() => 'ok'),
        () => {},
      ),
    ).resolves.toBe('ok');
    expect(existsSync(join(real, 'x.db-wal'))).toBe(true);
    expect(existsSync(`${link}-wal`)).toBe(false);
    await store.close();
  });

  it('after a failed fdatasync, ingestion is refused before any write, until a restart', async () => {
    const file = join(dir, `ingest-${randomUUID()}.db`);
    const store = await openSqliteStore(file);
    await store.migrate();
    // SQLite keeps writing to its open -wal; opening it by name for the fdatasync now fails
    unlinkSync(`${file}-wal`);
    const first = eventRecord(randomUUID(), { receivedAt: Date.now() });
    await expect(
      store.ingestTransaction(
        (tx) => tx.insertEvents([first]),
        () => {},
      ),
    ).rejects.toThrow(/fdatasync of the write-ahead log failed/);
    const second = eventRecord(randomUUID(), { receivedAt: Date.now() });
    let ran = false;
    await expect(
      store.ingestTransaction(
        async (tx) => {
          ran = true;
          await tx.insertEvents([second]);
        },
        () => {},
      ),
    ).rejects.toThrow(/ingestion is refused until the process restarts/);
    expect(ran).toBe(false);
    expect(await store.getEvent(second.companyId, second.id)).toBeNull();
    // and the store is not ready (/readyz): claims of keys with history would fail at their sync too
    await expect(store.ping()).rejects.toThrow(/fdatasync of the write-ahead log failed/);
    await store.close();
  });

  it('closed between the commit and its fdatasync: resolves (the close checkpointed and synced the WAL)', async () => {
    const file = join(dir, `ingest-${randomUUID()}.db`);
    const store = await openSqliteStore(file);
    await store.migrate();
    const e = eventRecord(randomUUID(), { receivedAt: Date.now() });
    let closing: Promise<void> | undefined;
    await expect(
      store.ingestTransaction(
        (tx) => tx.insertEvents([e]).then(() => 'ok'),
        () => void (closing = store.close()),
      ),
    ).resolves.toBe('ok');
    await closing;
    const again = await openSqliteStore(file);
    expect((await again.getEvent(e.companyId, e.id))?.id).toBe(e.id);
    await again.close();
  });

  it("':memory:' (no WAL) commits at FULL and resolves", async () => {
    const store = await openSqliteStore(':memory:');
    await store.migrate();
    const e = eventRecord(randomUUID(), { receivedAt: Date.now() });
    let called = 0;
    await store.ingestTransaction(
      (tx) => tx.insertEvents([e]),
      () => called++,
    );
    expect(called).toBe(1);
    expect((await store.getEvent(e.companyId, e.id))?.id).toBe(e.id);
    await store.close();
  });
});
