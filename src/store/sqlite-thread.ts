/**
 * The SQLite store's connection on a worker thread of its own.
 *
 * node:sqlite is synchronous: run on the event loop, every statement, every commit and every fsync of a FULL
 * commit stalls everything else the process does (the API of every tenant, the delivery worker's HTTP).
 * Here the connection lives on one worker thread; the store (sqlite.ts) keeps its mutex, transactions and
 * fences on the main thread and sends each statement as a message, so SQLite's work runs on another core
 * (docs/performance.md). One connection, one thread: SQLite's single writer is unchanged.
 *
 * The thread's code is `threadMain` below, given to the Worker as source text (the binary is one bundle, and
 * a separate worker file would need its own build entry and loader under tsx). It must stay self-contained:
 * no imports, no closures over module bindings, only what `process.getBuiltinModule` gives.
 *
 * If the thread dies (out of memory, a crash), every waiting call and every later one is refused with a
 * StoreError naming why; /readyz fails on the store's ping and the pod is restarted (SQLite rolls back the
 * unfinished transaction on the next open). Nothing is retried on a new thread behind the store's back.
 */
import { Worker } from 'node:worker_threads';
import { StoreError } from './errors.js';

/** What the store asks of its connection. */
export type ThreadOp =
  | 'all'
  | 'get'
  | 'run'
  /** `sql` is one or more statements without parameters. */
  | 'exec'
  /**
   * BEGIN IMMEDIATE; `relaxed`: at synchronous=NORMAL (set before it, as the level cannot change inside; FULL
   * again when the transaction ends, whatever happens).
   */
  | 'begin'
  | 'commit'
  /** ROLLBACK if a transaction is open. */
  | 'rollback'
  | 'close';

interface ThreadSettings {
  location: string;
  busyTimeoutMs: number;
  statementCacheMax: number;
  /** Post each statement with the connection's synchronous level before it runs (diagnostics, tests). */
  trace: boolean;
}

/** A failure as it crosses the thread boundary (node:sqlite's errors carry code, errcode and errstr). */
interface ThreadError {
  name: string;
  message: string;
  code?: unknown;
  errcode?: unknown;
  errstr?: unknown;
}

/** Replies: [id, true, value] | [id, false, ThreadError]; traces: [0, sql, level]. Id 1 is the open. */
type Reply = [number, boolean | string, unknown];

/** Runs on the thread (see the module comment: self-contained). */
function threadMain(): void {
  const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
  const { DatabaseSync } = process.getBuiltinModule('node:sqlite');
  const port = parentPort!;
  const settings = workerData as ThreadSettings;
  const errorOf = (e: unknown): ThreadError => {
    const x = e as Partial<ThreadError> | null;
    return { name: String(x?.name ?? 'Error'), message: String(x?.message ?? e), code: x?.code, errcode: x?.errcode, errstr: x?.errstr };
  };
  let db: import('node:sqlite').DatabaseSync | undefined;
  let journalMode: unknown;
  try {
    db = new DatabaseSync(settings.location, { enableForeignKeyConstraints: true, timeout: settings.busyTimeoutMs });
    // answers the mode it left: ':memory:' stays 'memory', which is fine
    journalMode = db.prepare('PRAGMA journal_mode = WAL').get()!['journal_mode'];
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    db.exec(`PRAGMA busy_timeout = ${settings.busyTimeoutMs}`);
    db.exec('PRAGMA temp_store = MEMORY'); // the claim's temp table; a read-only root filesystem has no temp directory
  } catch (e) {
    db?.close();
    port.postMessage([1, false, errorOf(e)]);
    port.close();
    return;
  }
  const conn = db;
  const stmts = new Map<string, import('node:sqlite').StatementSync>();
  const stmt = (sql: string) => {
    let s = stmts.get(sql);
    if (!s) {
      if (stmts.size >= settings.statementCacheMax) stmts.clear();
      s = conn.prepare(sql);
      stmts.set(sql, s);
    }
    return s;
  };
  /** Diagnostics: the statement about to run and the level its commit would be made at. */
  const trace = (sql: string) => {
    if (settings.trace) port.postMessage([0, sql, stmt('PRAGMA synchronous').get()!['synchronous']]);
  };
  const exec = (sql: string) => {
    trace(sql);
    conn.exec(sql);
  };
  /**
   * Between a 'begin' and its 'commit' or 'rollback': the first failure (the BEGIN's too). The store sends a
   * transaction's statements without waiting for each (pipelined), so once one failed the later ones are refused
   * with its error, and the COMMIT too (the store then rolls back): nothing after a failure runs, in the
   * transaction or, after a failed BEGIN, outside it (as PostgreSQL aborts a transaction at its first error).
   */
  let inTx = false;
  let txError: unknown;
  /** The open transaction commits at synchronous=NORMAL; FULL is put back when it ends, whatever happens. */
  let txRelaxed = false;
  const restoreFull = () => {
    if (txRelaxed && !conn.isTransaction) {
      txRelaxed = false;
      conn.exec('PRAGMA synchronous = FULL');
    }
  };
  const endTx = () => {
    inTx = false;
    txError = undefined;
    restoreFull();
  };
  const commit = () => {
    exec('COMMIT');
    endTx();
  };
  const run = (op: ThreadOp, sql: string, params: import('node:sqlite').SQLInputValue[], flag: boolean): unknown => {
    if (inTx && txError !== undefined && op !== 'rollback' && op !== 'close') throw txError;
    try {
      return step(op, sql, params, flag);
    } catch (e) {
      if (inTx && op !== 'rollback') txError = e;
      throw e;
    }
  };
  /** `flag`: for 'begin', relaxed; for a statement, commit right after it (the transaction's last). */
  const step = (op: ThreadOp, sql: string, params: import('node:sqlite').SQLInputValue[], flag: boolean): unknown => {
    switch (op) {
      case 'all':
      case 'get':
      case 'run': {
        const s = stmt(sql);
        trace(sql);
        const v = op === 'all' ? s.all(...params) : op === 'get' ? s.get(...params) : Number(s.run(...params).changes);
        if (flag) commit();
        return v;
      }
      case 'exec':
        return conn.exec(sql);
      case 'begin':
        inTx = true;
        txError = undefined;
        txRelaxed = flag;
        if (flag) conn.exec('PRAGMA synchronous = NORMAL');
        try {
          return exec('BEGIN IMMEDIATE');
        } catch (e) {
          restoreFull(); // still inTx: run() records the failure, and what was sent after it is refused until the rollback
          throw e;
        }
      case 'commit':
        // a failed COMMIT can leave the transaction open: the store rolls back next
        return commit();
      case 'rollback':
        try {
          if (conn.isTransaction) exec('ROLLBACK');
        } finally {
          endTx();
        }
        return undefined;
      case 'close':
        stmts.clear();
        conn.close();
        return undefined;
    }
  };
  port.postMessage([1, true, journalMode]);
  port.on('message', (m: [number, ThreadOp, string, import('node:sqlite').SQLInputValue[], boolean]) => {
    const [id, op, sql, params, flag] = m;
    try {
      port.postMessage([id, true, run(op, sql, params, flag)]);
    } catch (e) {
      port.postMessage([id, false, errorOf(e)]);
    }
    if (op === 'close') port.close();
  });
}

/** An Error like the one node:sqlite threw on the thread, for fromSqliteError and the logs. */
function rebuild(e: ThreadError): Error {
  const err = new Error(e.message);
  err.name = e.name;
  return Object.assign(err, { code: e.code, errcode: e.errcode, errstr: e.errstr });
}

export interface SqliteThreadOptions {
  location: string;
  busyTimeoutMs: number;
  statementCacheMax: number;
  /** Called with each statement the connection runs and its synchronous level then (diagnostics, tests). */
  onStatement?: (sql: string, level: number) => void;
}

export class SqliteThread {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  readonly #onStatement: SqliteThreadOptions['onStatement'];
  #next = 2;
  /** Why the thread is gone, once it is. */
  #dead: string | undefined;
  /** The journal mode the open left ('wal', or 'memory' for ':memory:'). */
  journalMode = '';

  private constructor(opts: SqliteThreadOptions) {
    this.#onStatement = opts.onStatement;
    const settings: ThreadSettings = {
      location: opts.location,
      busyTimeoutMs: opts.busyTimeoutMs,
      statementCacheMax: opts.statementCacheMax,
      trace: opts.onStatement !== undefined,
    };
    // `__name`: tsx compiles with keepNames, which wraps named functions in a helper the thread does not have
    this.#worker = new Worker(`const __name = (f) => f;\n(${threadMain.toString()})();`, {
      eval: true,
      name: 'sqlite',
      workerData: settings,
    });
    this.#worker.on('message', (m: Reply) => this.#reply(m));
    this.#worker.on('error', (err) => this.#die(`it failed: ${err.message}`));
    this.#worker.on('exit', (code) => this.#die(`it exited with code ${code}`));
    this.#worker.unref();
  }

  /** Starts the thread and opens the database there; rejects with the open's error. */
  static async open(opts: SqliteThreadOptions): Promise<SqliteThread> {
    const t = new SqliteThread(opts);
    const mode = await t.#wait(1);
    t.journalMode = String(mode);
    return t;
  }

  /**
   * Runs one operation on the connection, in the order of the calls. `flag`: for 'begin', relaxed (NORMAL); for a
   * statement in a transaction, commit right after it.
   */
  call(op: ThreadOp, sql = '', params: unknown[] = [], flag = false): Promise<unknown> {
    if (this.#dead) return Promise.reject(new StoreError(`sqlite store: the database thread is gone (${this.#dead})`));
    const id = this.#next++;
    this.#worker.postMessage([id, op, sql, params, flag]);
    return this.#wait(id);
  }

  /** Closes the database and ends the thread. */
  async close(): Promise<void> {
    if (this.#dead) return;
    try {
      await this.call('close');
    } finally {
      this.#dead ??= 'closed';
      await this.#worker.terminate();
    }
  }

  #wait(id: number): Promise<unknown> {
    // the thread keeps the process alive only while a call waits (an idle store must not)
    if (this.#pending.size === 0) this.#worker.ref();
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject }));
  }

  #reply([id, ok, value]: Reply): void {
    if (id === 0) return this.#onStatement?.(ok as string, Number(value));
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (ok) p.resolve(value);
    else p.reject(rebuild(value as ThreadError));
  }

  #die(why: string): void {
    this.#dead ??= why;
    const err = new StoreError(`sqlite store: the database thread is gone (${this.#dead})`);
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }

  /** Ends the thread abruptly, as a crash would (tests). */
  terminate(): Promise<number> {
    return this.#worker.terminate();
  }
}
