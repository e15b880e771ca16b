/**
 * SQLite store on Node's built-in node:sqlite (no native addon): WAL, synchronous=FULL (every
 * commit is fsynced, except delivery claims: see claimDeliveries), foreign keys on, busy timeout for other processes holding the file.
 *
 * node:sqlite is synchronous and the one connection is shared by all async callers, so an async
 * FIFO mutex serializes work: a transaction holds it from BEGIN to COMMIT/ROLLBACK (its
 * statements never interleave with anything else), and each statement outside a transaction
 * takes it too, so it waits for a running transaction.
 *
 * Stores opened on the same file in one process share one mutex. node:sqlite waits for another
 * connection's lock synchronously (busy_timeout), which blocks the event loop; if that other
 * connection's transaction lives in this process it could never finish, so they must not
 * contend. Other processes are handled by SQLite's file locks and the busy timeout.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { SqlStore } from './base.js';
import { Mutex, TxScope } from './concurrency.js';
import { StoreError, fromSqliteError } from './errors.js';
import { createQueueOps } from './repo.js';
import { assertStorableParams, type SqlDb, type SqlRow, type SqlValue } from './sqldb.js';
import type { DeliveryQueueOps } from './types.js';

const SQLITE_BUSY_TIMEOUT_MS = 5_000;
const STATEMENT_CACHE_MAX = 256;

/** One mutex per database file in this process, reference-counted by the open stores. */
const fileMutexes = new Map<string, { mutex: Mutex; refs: number }>();

function acquireMutex(key: string | null): { mutex: Mutex; release(): void } {
  if (key === null) return { mutex: new Mutex(), release() {} };
  let entry = fileMutexes.get(key);
  if (!entry) fileMutexes.set(key, (entry = { mutex: new Mutex(), refs: 0 }));
  entry.refs++;
  const e = entry;
  return {
    mutex: e.mutex,
    release() {
      if (--e.refs === 0 && fileMutexes.get(key) === e) fileMutexes.delete(key);
    },
  };
}

/**
 * The store holds every tenant's configuration and (sealed) secrets: its files are owner-only. Directories
 * this creates are 0700 (an existing one is left alone: it may be the working directory); the database is
 * created 0600 before SQLite opens it, and an existing database, -wal and -shm (from before) are narrowed
 * to 0600. SQLite gives the -wal and -shm files it creates later the database file's mode.
 */
function restrictStoreFiles(location: string): void {
  const path = resolve(location);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
    for (const f of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) if (existsSync(f)) chmodSync(f, 0o600);
  } catch (err) {
    throw new StoreError(
      `sqlite store ${location}: cannot make the database files owner-only (0600): ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
}

/** ':memory:' or a file path (parent directories are created, 0700). */
export function openSqliteStore(location: string): SqliteStore {
  if (location === '') throw new StoreError('sqlite store: empty path');
  if (location !== ':memory:') restrictStoreFiles(location);
  const db = new DatabaseSync(location, { enableForeignKeyConstraints: true, timeout: SQLITE_BUSY_TIMEOUT_MS });
  let key: string | null = null;
  try {
    db.exec('PRAGMA journal_mode = WAL'); // ':memory:' stays 'memory', which is fine
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    db.exec(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    if (location !== ':memory:') key = realpathSync(location);
  } catch (err) {
    db.close();
    throw fromSqliteError(err);
  }
  const shared = acquireMutex(key);
  return new SqliteStore(db, location, shared.mutex, shared.release);
}

function bind(params: readonly SqlValue[] | undefined): SQLInputValue[] {
  if (!params) return [];
  assertStorableParams(params);
  return params.map((v) => (v === undefined ? null : typeof v === 'boolean' ? (v ? 1 : 0) : v));
}

export class SqliteStore extends SqlStore {
  readonly dialect = 'sqlite' as const;
  readonly #db: DatabaseSync;
  readonly #mutex: Mutex;
  readonly #releaseMutex: () => void;
  readonly #stmts = new Map<string, StatementSync>();
  #closed = false;

  constructor(
    db: DatabaseSync,
    /** ':memory:' or the file path. */
    readonly location: string,
    mutex: Mutex = new Mutex(),
    releaseMutex: () => void = () => {},
  ) {
    super();
    this.#db = db;
    this.#mutex = mutex;
    this.#releaseMutex = releaseMutex;
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreError('sqlite store is closed');
  }

  #stmt(sql: string): StatementSync {
    let s = this.#stmts.get(sql);
    if (!s) {
      if (this.#stmts.size >= STATEMENT_CACHE_MAX) this.#stmts.clear();
      s = this.#db.prepare(sql);
      this.#stmts.set(sql, s);
    }
    return s;
  }

  /** Runs one statement right now (the caller holds the mutex). */
  #exec<K extends 'all' | 'get' | 'run'>(
    kind: K,
    sql: string,
    params?: readonly SqlValue[],
  ): K extends 'all' ? SqlRow[] : K extends 'get' ? SqlRow | undefined : number {
    this.#assertOpen();
    try {
      const stmt = this.#stmt(sql);
      const values = bind(params);
      type R = K extends 'all' ? SqlRow[] : K extends 'get' ? SqlRow | undefined : number;
      if (kind === 'all') return stmt.all(...values) as R;
      if (kind === 'get') return stmt.get(...values) as R;
      return Number(stmt.run(...values).changes) as R;
    } catch (err) {
      throw fromSqliteError(err);
    }
  }

  #dbFor(scope: TxScope | null): SqlDb {
    // In a transaction the mutex is already held; outside, every statement takes it.
    const wrap = <T>(f: () => T): Promise<T> =>
      scope
        ? new Promise<T>((res) => {
            scope.check();
            res(f());
          })
        : this.#mutex.run(f);
    return {
      dialect: 'sqlite',
      all: (sql, params) => wrap(() => this.#exec('all', sql, params)),
      get: (sql, params) => wrap(() => this.#exec('get', sql, params)),
      run: (sql, params) => wrap(() => this.#exec('run', sql, params)),
    };
  }

  protected autoDb(): SqlDb {
    return this.#dbFor(null);
  }

  protected withTransaction<T>(fn: (db: SqlDb) => Promise<T>): Promise<T> {
    return this.#mutex.run(async () => {
      this.#assertOpen();
      const scope = new TxScope();
      // IMMEDIATE takes the write lock now, so another process can't make us fail at first write.
      this.#exec('run', 'BEGIN IMMEDIATE');
      try {
        const result = await fn(this.#dbFor(scope));
        scope.done = true;
        this.#exec('run', 'COMMIT');
        return result;
      } catch (err) {
        scope.done = true;
        if (this.#db.isTransaction) {
          try {
            this.#db.exec('ROLLBACK');
          } catch {
            // the original error matters more; SQLite rolls back on close anyway
          }
        }
        throw err;
      }
    });
  }

  /**
   * Claims commit at synchronous=NORMAL: no fsync (node:sqlite fsyncs on the event loop, and claims were
   * most of a delivery's fsyncs). In WAL mode a NORMAL commit survives a process crash; only an OS crash or
   * power loss can drop it, and a dropped claim only makes its rows due again: they are sent again, which
   * at-least-once allows. The next FULL commit (an outcome, an ingestion) fsyncs the WAL up to and including
   * the claim's frames, so nothing committed after a claim can outlive it. The mutex is held from setting
   * NORMAL to restoring FULL, so no other statement commits at NORMAL.
   */
  override claimDeliveries: DeliveryQueueOps['claimDeliveries'] = (...a) => {
    this.guard.assertOutside('a store operation');
    return this.#mutex.run(async () => {
      this.#assertOpen();
      const scope = new TxScope();
      this.#db.exec('PRAGMA synchronous = NORMAL');
      try {
        return await createQueueOps(this.#dbFor(scope)).claimDeliveries(...a);
      } finally {
        scope.done = true;
        this.#db.exec('PRAGMA synchronous = FULL');
      }
    });
  };

  async ping(): Promise<void> {
    this.guard.assertOutside('store.ping()');
    await this.#mutex.run(() => this.#exec('get', 'SELECT 1'));
  }

  async close(): Promise<void> {
    this.guard.assertOutside('store.close()');
    await this.#mutex.run(() => {
      if (this.#closed) return;
      this.#closed = true;
      this.#stmts.clear();
      this.#db.close();
      this.#releaseMutex();
    });
  }
}
