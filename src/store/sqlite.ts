/**
 * SQLite store on Node's built-in node:sqlite (no native addon): WAL, synchronous=FULL (every
 * commit is fsynced, except the delivery worker's writes: see claimDeliveries), foreign keys on, busy timeout for other processes holding the file.
 *
 * The connection runs on a worker thread of its own (sqlite-thread.ts), so SQLite's statements, commits and
 * fsyncs never run on the event loop; this class sends it one statement at a time. The one connection is
 * shared by all async callers, so an async FIFO mutex serializes work: a transaction holds it from BEGIN to
 * COMMIT/ROLLBACK (its statements never interleave with anything else), and each statement outside a
 * transaction takes it too, so it waits for a running transaction.
 *
 * Stores opened on the same file in one process share one mutex: each store's connection would wait for the
 * other's write lock (busy_timeout), and a transaction that waits for a lock held by a transaction of the same
 * process only adds latency, so they do not contend. Other processes are handled by SQLite's file locks and the
 * busy timeout.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, realpathSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { SQLInputValue } from 'node:sqlite';
import { SqlStore } from './base.js';
import { Mutex, TxScope } from './concurrency.js';
import { StoreError, fromSqliteError } from './errors.js';
import { createQueueOps, type ClaimNotes, type ParkState } from './outbox-queue.js';
import { SqliteThread, type SqliteThreadOptions } from './sqlite-thread.js';
import { assertStorableParams, type SqlDb, type SqlRow, type SqlValue } from './sqldb.js';
import type { DeliveryQueueOps } from './types.js';

const SQLITE_BUSY_TIMEOUT_MS = 5_000;

const STATEMENT_CACHE_MAX = 256;

/** A SQLite transaction's scope: its last statement may carry the COMMIT (SqlDb.allAndCommit). */
class CommitScope extends TxScope {
  /** Set by allAndCommit: that statement and its COMMIT (rejects with their failure, even if the callback did not wait). */
  committed: Promise<unknown> | undefined;
  /** A statement that could not be sent: the transaction fails, nothing after it is sent. */
  failed: unknown;
}

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
export async function openSqliteStore(location: string, opts: Pick<SqliteThreadOptions, 'onStatement'> = {}): Promise<SqliteStore> {
  if (location === '') throw new StoreError('sqlite store: empty path');
  if (location !== ':memory:') restrictStoreFiles(location);
  let thread: SqliteThread;
  try {
    thread = await SqliteThread.open({ location, busyTimeoutMs: SQLITE_BUSY_TIMEOUT_MS, statementCacheMax: STATEMENT_CACHE_MAX, ...opts });
  } catch (err) {
    throw fromSqliteError(err);
  }
  let key: string | null = null;
  try {
    if (location !== ':memory:') key = realpathSync(location);
  } catch (err) {
    await thread.close();
    throw err;
  }
  const shared = acquireMutex(key);
  return new SqliteStore(thread, location, shared.mutex, shared.release);
}

function bind(params: readonly SqlValue[] | undefined): SQLInputValue[] {
  if (!params) return [];
  assertStorableParams(params);
  return params.map((v) => (v === undefined ? null : typeof v === 'boolean' ? (v ? 1 : 0) : v));
}

export class SqliteStore extends SqlStore {
  readonly dialect = 'sqlite' as const;
  readonly #db: SqliteThread;
  readonly #mutex: Mutex;
  readonly #releaseMutex: () => void;
  /** The claims' parking schedule (outbox-queue.ts ParkState), kept across the per-call queue ops. */
  readonly #parking: ParkState = { due: true, since: 0 };
  #closed = false;
  /** The -wal file's path for the ingestion's fdatasync (see withIngestTransaction); null: not in WAL mode, undefined: not known yet. */
  #walPath: string | null | undefined;
  /** That file, opened at the first ingestion and kept open. */
  #wal: Promise<FileHandle> | undefined;
  /**
   * Set when an fdatasync of the WAL failed: Linux may then have dropped the dirty pages it could not write, so a
   * later fdatasync that succeeds proves nothing about the commits before it. Ingestion is refused until a restart
   * (SQLite's recovery), as PostgreSQL stops on a failed fsync.
   */
  #walFailed: string | undefined;

  constructor(
    db: SqliteThread,
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

  /** Sends one statement, its parameters bound (the caller holds the mutex). */
  async #send<K extends 'all' | 'get' | 'run'>(
    kind: K,
    sql: string,
    values: SQLInputValue[],
    thenCommit = false,
  ): Promise<K extends 'all' ? SqlRow[] : K extends 'get' ? SqlRow | undefined : number> {
    this.#assertOpen();
    try {
      return (await this.#db.call(kind, sql, values, thenCommit)) as K extends 'all'
        ? SqlRow[]
        : K extends 'get'
          ? SqlRow | undefined
          : number;
    } catch (err) {
      throw fromSqliteError(err);
    }
  }

  /** A transaction's control statement (the caller holds the mutex). */
  async #control(op: 'begin' | 'commit' | 'rollback', relaxed = false): Promise<void> {
    try {
      await this.#db.call(op, '', [], relaxed);
    } catch (err) {
      throw fromSqliteError(err);
    }
  }

  #dbFor(scope: CommitScope | null): SqlDb {
    type Kind = 'all' | 'get' | 'run';
    type Result<K extends Kind> = K extends 'all' ? SqlRow[] : K extends 'get' ? SqlRow | undefined : number;
    // Outside a transaction every statement takes the mutex. Inside, the mutex is held and statements may be sent
    // without waiting for each other (the thread refuses the rest after a failure); a statement whose parameters
    // cannot be stored is never sent, so it fails the transaction here: nothing after it is sent either.
    const exec = <K extends Kind>(kind: K, sql: string, params: readonly SqlValue[] | undefined, commit = false): Promise<Result<K>> =>
      scope
        ? new Promise<Result<K>>((res) => {
            scope.check();
            if (scope.failed !== undefined) throw scope.failed;
            let values: SQLInputValue[];
            try {
              values = bind(params);
            } catch (err) {
              scope.failed = err;
              throw err;
            }
            const sent = this.#send(kind, sql, values, commit);
            if (commit) {
              // nothing may follow; the transaction waits for this COMMIT instead of sending its own
              scope.committed = sent;
              sent.catch(() => undefined); // the transaction awaits it; the callback need not
              scope.done = true;
            }
            res(sent);
          })
        : this.#mutex.run(() => this.#send(kind, sql, bind(params)));
    const db: SqlDb = {
      dialect: 'sqlite',
      all: (sql, params) => exec('all', sql, params),
      get: (sql, params) => exec('get', sql, params),
      run: (sql, params) => exec('run', sql, params),
    };
    if (scope) db.allAndCommit = (sql, params) => exec('all', sql, params, true);
    return db;
  }

  protected autoDb(): SqlDb {
    return this.#dbFor(null);
  }

  protected withTransaction<T>(fn: (db: SqlDb) => Promise<T>): Promise<T> {
    return this.#mutex.run(() => this.#inTransaction(fn));
  }

  /**
   * One transaction; the caller holds the mutex. `relaxed`: committed at synchronous=NORMAL (no fsync). The
   * level cannot change inside a transaction, so the thread sets it before BEGIN and puts it back to FULL after
   * the COMMIT or ROLLBACK, whatever happens: nothing else commits at NORMAL (the mutex is held throughout).
   */
  async #inTransaction<T>(fn: (db: SqlDb) => Promise<T>, relaxed = false): Promise<T> {
    this.#assertOpen();
    const scope = new CommitScope();
    // IMMEDIATE takes the write lock now, so another process can't make us fail at first write. Not waited for:
    // the thread runs the statements after it in order, and refuses them if it failed (sqlite-thread.ts).
    const begun = this.#control('begin', relaxed);
    begun.catch(() => undefined); // its failure is the first statement's (or the commit's) error
    try {
      const result = await fn(this.#dbFor(scope));
      scope.done = true;
      if (scope.failed !== undefined) throw scope.failed; // even if fn caught it: part of its work was not sent
      if (!scope.committed) await this.#control('commit');
      else await scope.committed;
      await begun;
      return result;
    } catch (err) {
      scope.done = true;
      try {
        await this.#control('rollback'); // nothing to undo after allAndCommit's COMMIT
      } catch {
        // the original error matters more; SQLite rolls back on close anyway
      }
      throw err;
    }
  }

  #relaxedTransaction<T>(fn: (db: SqlDb) => Promise<T>): Promise<T> {
    return this.#inTransaction(fn, true);
  }

  /**
   * The worker's writes commit at synchronous=NORMAL (docs/reliability.md, "Durability of the worker's writes"):
   * claims, fences, outcomes and deferrals, each group in one transaction. In WAL mode a NORMAL commit survives a
   * process crash; an OS crash or power loss can drop the last ones, and always a suffix of the WAL (frames are
   * valid only up to the last whole commit), so an fdatasync of the WAL (after an ingestion, and after the claims
   * below) makes every commit before it durable. What a dropped worker write costs: the row is back where it was
   * (claimed again, sent again with the same id: at-least-once). Order per key holds because a claim that hands out
   * a delivery whose key has an older delivery is synced before it returns, so that older one's outcome is on disk
   * before the newer one can be sent: a power loss can never bring back an older notification after a newer one
   * went out.
   */
  override claimDeliveries: DeliveryQueueOps['claimDeliveries'] = async (...a) => {
    this.guard.assertOutside('a store operation');
    const notes: ClaimNotes = { older: false };
    const claimed = await this.#mutex.run(async () => {
      const parking = { ...this.#parking }; // a rolled-back claim's parking did not happen either
      // NORMAL where an fdatasync of the WAL can make it durable afterwards (or nothing can: ':memory:')
      const relaxed = this.#walFile() !== null || this.location === ':memory:';
      try {
        return await this.#inTransaction(
          (db) => createQueueOps(db, { parking: this.#parking, notes, box: () => this.secretBox }).claimDeliveries(...a),
          relaxed,
        );
      } catch (err) {
        Object.assign(this.#parking, parking);
        throw err;
      }
    });
    // rare (a key with history): made durable, with every commit before it, before any of them is sent
    if (notes.older) await this.#syncWal();
    return claimed;
  };

  override recordOutcomes: DeliveryQueueOps['recordOutcomes'] = (...a) => this.#relaxed((q) => q.recordOutcomes(...a));
  override supersedeMany: DeliveryQueueOps['supersedeMany'] = (...a) => this.#relaxed((q) => q.supersedeMany(...a));
  override deferDelivery: DeliveryQueueOps['deferDelivery'] = (...a) => this.#relaxed((q) => q.deferDelivery(...a));

  #relaxed<T>(fn: (q: DeliveryQueueOps) => Promise<T>): Promise<T> {
    this.guard.assertOutside('a store operation');
    return this.#mutex.run(() => this.#relaxedTransaction((db) => fn(createQueueOps(db))));
  }

  /**
   * The ingestion transaction (Store.ingestTransaction; docs/reliability.md, "Durability of an accepted event")
   * commits at synchronous=NORMAL: no fsync on the event loop or under the mutex, and the delivery worker can
   * claim its rows at once. The 202 waits for syncIngested below: an fdatasync of the -wal file on the thread
   * pool, which makes this commit durable, with every commit before it (the WAL is appended in commit order).
   * ':memory:' and a database SQLite could not put in WAL mode commit it at FULL.
   */
  protected override withIngestTransaction<T>(fn: (db: SqlDb) => Promise<T>): Promise<T> {
    return this.#mutex.run(() => {
      if (this.#walFailed) throw new StoreError(this.#walFailed); // before any write: nothing partial
      return this.#walFile() ? this.#relaxedTransaction(fn) : this.#inTransaction(fn);
    });
  }

  /** The -wal file to fdatasync, or null: ':memory:', or not in WAL mode (commits are FULL). */
  #walFile(): string | null {
    // SQLite puts the -wal next to the database's real file (it resolves symlinks): sync that one
    return (this.#walPath ??= this.location !== ':memory:' && this.#db.journalMode === 'wal' ? `${realpathSync(this.location)}-wal` : null);
  }

  /**
   * The WAL is opened once and kept: while this connection is open SQLite never deletes or replaces the -wal
   * file (a checkpoint resets it in place; one at NORMAL syncs the WAL before it and the database after it, so
   * a commit checkpointed before this fdatasync is durable in the database file). SQLite deletes it only when
   * the last connection closes, after a checkpoint, and close() waits for an fdatasync in flight.
   */
  protected override syncIngested(): Promise<void> {
    return this.#syncWal();
  }

  /** Makes every commit so far durable (see syncIngested). */
  async #syncWal(): Promise<void> {
    if (!this.#walPath) return; // committed at FULL
    if (this.#closed) return this.#syncAfterClose(this.#walPath);
    if (this.#walFailed) throw new StoreError(this.#walFailed);
    const wal = (this.#wal ??= open(this.#walPath, 'r+'));
    try {
      await (await wal).datasync();
    } catch (err) {
      if (this.#closed) return this.#syncAfterClose(this.#walPath); // its handle was closed under it
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      this.#walFailed ??= `sqlite store: fdatasync of the write-ahead log failed (${code}); ingestion is refused until the process restarts`;
      throw new StoreError(this.#walFailed);
    }
  }

  /**
   * Closed between the commit and its fdatasync: the last connection's close checkpointed the WAL into the
   * database, synced it and deleted the -wal (nothing left to sync); another connection to the file may keep it,
   * so sync what is there with a handle of its own.
   */
  async #syncAfterClose(walPath: string): Promise<void> {
    let h: FileHandle;
    try {
      h = await open(walPath, 'r+');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new StoreError(`sqlite store: fdatasync of the write-ahead log failed: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    try {
      await h.datasync();
    } finally {
      await h.close();
    }
  }

  /** Ends the database thread abruptly, as a crash would (fault tests). */
  async crashThreadForTests(): Promise<void> {
    await this.#db.terminate();
  }

  async ping(): Promise<void> {
    this.guard.assertOutside('store.ping()');
    // after a failed fdatasync the queue's keys with history cannot be claimed: not ready, so the pod restarts
    if (this.#walFailed) throw new StoreError(this.#walFailed);
    await this.#mutex.run(() => this.#send('get', 'SELECT 1', []));
  }

  async close(): Promise<void> {
    this.guard.assertOutside('store.close()');
    await this.#mutex.run(async () => {
      if (this.#closed) return;
      this.#closed = true;
      try {
        await this.#db.close();
      } finally {
        this.#releaseMutex();
      }
    });
    // after the connection (its last checkpoint synced the database); waits for an fdatasync in flight
    const wal = this.#wal;
    this.#wal = undefined;
    if (wal) await (await wal.catch(() => undefined))?.close();
  }
}
