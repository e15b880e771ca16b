/**
 * The SQLite store's connection on its worker thread (src/store/sqlite-thread.ts): statements run in the order
 * they are sent; a transaction's statements may be sent without waiting (pipelined), so after a failure the rest
 * of the transaction is refused, never run outside it; a statement may carry the COMMIT; a thread that dies
 * refuses every waiting and later call instead of leaving it hanging.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/store/errors.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { SqliteThread } from '../../src/store/sqlite-thread.js';
import { eventRecord } from './contract.js';

const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-sqlite-thread-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open = (location = join(dir, `t-${randomUUID()}.db`)) => SqliteThread.open({ location, busyTimeoutMs: 100, statementCacheMax: 8 });

describe('SqliteThread', () => {
  it('opens in WAL mode and runs statements in the order they were sent', async () => {
    const t = await open();
    expect(t.journalMode).toBe('wal');
    const sent = [
      t.call('exec', 'CREATE TABLE t (x INTEGER)'),
      t.call('run', 'INSERT INTO t VALUES (?)', [1]),
      t.call('run', 'INSERT INTO t VALUES (?), (?)', [2, 3]),
      t.call('all', 'SELECT x FROM t ORDER BY x'),
      t.call('get', 'SELECT count(*) AS n FROM t'),
    ];
    expect(await Promise.all(sent)).toEqual([undefined, 1, 2, [{ x: 1 }, { x: 2 }, { x: 3 }], { n: 3 }]);
    await t.close();
  });

  it("an open that fails rejects with SQLite's error", async () => {
    await expect(open(join(dir, 'no-such-dir', 'x', 'db'))).rejects.toMatchObject({ code: 'ERR_SQLITE_ERROR' });
  });

  it('after a failed statement the rest of the pipelined transaction is refused with its error, the COMMIT too', async () => {
    const t = await open();
    await t.call('exec', 'CREATE TABLE t (x INTEGER NOT NULL)');
    const begun = t.call('begin');
    const bad = t.call('run', 'INSERT INTO t VALUES (NULL)');
    const after = t.call('run', 'INSERT INTO t VALUES (1)');
    const commit = t.call('commit');
    await begun;
    await expect(bad).rejects.toThrow(/NOT NULL/);
    await expect(after).rejects.toThrow(/NOT NULL/); // refused, not run
    await expect(commit).rejects.toThrow(/NOT NULL/);
    await t.call('rollback');
    expect(await t.call('get', 'SELECT count(*) AS n FROM t')).toEqual({ n: 0 });
    // the next transaction is not affected
    await Promise.all([t.call('begin'), t.call('run', 'INSERT INTO t VALUES (2)'), t.call('commit')]);
    expect(await t.call('all', 'SELECT x FROM t')).toEqual([{ x: 2 }]);
    await t.close();
  });

  it('after a failed BEGIN the statements sent behind it are refused, not run outside a transaction', async () => {
    const file = join(dir, `busy-${randomUUID()}.db`);
    const t = await open(file);
    await t.call('exec', 'CREATE TABLE t (x INTEGER)');
    // another connection holds the write lock past the thread's busy timeout (100 ms)
    const other = new DatabaseSync(file);
    other.exec('BEGIN IMMEDIATE');
    const begun = t.call('begin', '', [], true);
    // a read needs no write lock (WAL): run, it would answer; it must be refused with the BEGIN's error
    const read = t.call('get', 'SELECT 42 AS x');
    await expect(begun).rejects.toThrow(/locked|busy/i);
    await expect(read).rejects.toThrow(/locked|busy/i);
    other.exec('COMMIT');
    other.close();
    await t.call('rollback');
    expect(await t.call('get', 'SELECT 42 AS x')).toEqual({ x: 42 });
    // the failed relaxed BEGIN put the level back to FULL (2)
    expect(await t.call('get', 'PRAGMA synchronous')).toEqual({ synchronous: 2 });
    await t.close();
  });

  it('a statement may carry the COMMIT: the transaction ends with it, at FULL again if it was relaxed', async () => {
    const t = await open();
    await t.call('exec', 'CREATE TABLE t (x INTEGER)');
    void t.call('begin', '', [], true);
    const rows = t.call('all', 'INSERT INTO t VALUES (7) RETURNING x', [], true);
    expect(await rows).toEqual([{ x: 7 }]);
    // committed: a rollback now undoes nothing
    await t.call('rollback');
    expect(await t.call('all', 'SELECT x FROM t')).toEqual([{ x: 7 }]);
    expect(await t.call('get', 'PRAGMA synchronous')).toEqual({ synchronous: 2 });
    await t.close();
  });

  it('a thread that dies refuses the call waiting on it and every later one (no hang)', async () => {
    const t = await open();
    await t.call('exec', 'CREATE TABLE t (x INTEGER)');
    const waiting = t.call(
      'all',
      'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 50000000) SELECT count(*) FROM r',
    );
    await t.terminate();
    await expect(waiting).rejects.toThrow(StoreError);
    await expect(waiting).rejects.toThrow(/database thread is gone/);
    await expect(t.call('get', 'SELECT 1')).rejects.toThrow(/database thread is gone/);
    await t.close(); // nothing left to close: resolves
  });
});

describe('SQLite store on its thread', () => {
  it('in a transaction, a statement whose text cannot be stored is never sent, nor is anything after it; the transaction fails', async () => {
    const store = await openSqliteStore(':memory:');
    await store.migrate();
    const A = randomUUID();
    const later = eventRecord(A);
    const tx = store.transaction(async (ops) => {
      const bad = ops.insertEvent({ ...eventRecord(A), type: 'bad\u0000type' });
      const next = ops.insertEvent(later); // sent without waiting for the first
      await expect(bad).rejects.toThrow(/NUL/);
      await expect(next).rejects.toThrow(/NUL/);
      // the callback swallows the failure; the transaction must not commit what was sent before it
    });
    await expect(tx).rejects.toThrow(/NUL/);
    expect(await store.getEvent(A, later.id)).toBeNull();
    await store.close();
  });

  it('a store whose thread died fails its ping and its writes with the reason', async () => {
    const store = await openSqliteStore(join(dir, `store-${randomUUID()}.db`));
    await store.migrate();
    await store.crashThreadForTests();
    await expect(store.ping()).rejects.toThrow(/database thread is gone/);
    await expect(store.insertEvent(eventRecord(randomUUID()))).rejects.toThrow(/database thread is gone/);
    await store.close();
  });

  it('SQLite runs off the event loop: a timer fires while a long statement runs', async () => {
    const store = await openSqliteStore(':memory:');
    const db = (store as unknown as { autoDb(): { get(sql: string): Promise<Record<string, unknown>> } }).autoDb();
    const order: string[] = [];
    // hundreds of ms of SQLite's CPU; on the event loop the timer could only fire after the statement's promise settled
    const slow = db
      .get('WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3000000) SELECT count(*) AS c FROM r')
      .then((r) => (order.push('statement'), r));
    setTimeout(() => order.push('timer'), 1);
    expect(await slow).toEqual({ c: 3000000 });
    expect(order).toEqual(['timer', 'statement']);
    await store.close();
  });
});
