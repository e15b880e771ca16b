/**
 * PostgreSQL store on a pg.Pool. A transaction runs on one pool client (BEGIN … COMMIT/ROLLBACK).
 *
 * int8 (BIGINT, count(*)) is parsed to a JS number for this pool only (pg's default is a string).
 * With the `schema` option the schema is created if missing and every pool connection gets
 * `search_path` set to it before it is handed out, so tenants/test files can be isolated.
 */
import pg from 'pg';
import { SqlStore } from './base.js';
import { TxScope } from './concurrency.js';
import { StoreError, fromPgError } from './errors.js';
import { assertStorableParams, type SqlDb, type SqlValue, toPgPlaceholders } from './sqldb.js';

export interface PostgresStoreOptions {
  /** Schema to use instead of the server's default search_path; created if missing. */
  schema?: string;
  /** Maximum pool size (pg's default is 10). */
  maxConnections?: number;
}

const INT8_OID = 20;
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const { schema } = opts;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new StoreError(`postgres store: invalid schema name "${schema}" (letters, digits, _; max 63)`);
  }
  const pool = new pg.Pool({
    connectionString: url,
    types,
    max: opts.maxConnections || undefined, // 0: pg's default, as unset
    // Awaited by pg-pool before the client is handed out; if it fails, the client is dropped.
    // eslint-disable-next-line @typescript-eslint/no-misused-promises -- pg-pool awaits onConnect (its types say void)
    onConnect: schema ? (c: pg.ClientBase) => c.query(`SET search_path TO ${quoteIdent(schema)}`) : undefined,
  });
  // An idle client losing its connection emits 'error' on the pool; without a listener that
  // would crash the process. The pool discards the client; the next query reconnects.
  pool.on('error', () => {});
  try {
    if (schema) {
      try {
        await pool.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
      } catch (err) {
        // Two processes creating it at once: one gets unique_violation; the schema exists then.
        if ((err as { code?: unknown }).code !== '23505') throw err;
      }
    } else {
      await pool.query('SELECT 1');
    }
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  return new PostgresStore(pool, schema ?? null);
}

function bind(params: readonly SqlValue[] | undefined): unknown[] {
  assertStorableParams(params);
  return params ? params.map((v) => (v === undefined ? null : v)) : [];
}

/** Most statement texts a store names (prepares); texts beyond are sent unnamed, as every other statement. */
const MAX_PREPARED = 128;
/**
 * Longest text a store names (characters). A prepared statement keeps its plan in the server's memory for the life
 * of the connection, growing with the rows of a batched statement's VALUES list; the batched texts differ by group
 * size, so only the small groups of the default configuration are named (short outcome batches, the claim always)
 * and the rare large groups go unnamed: a connection's plans stay bounded by MAX_PREPARED × this.
 */
const MAX_PREPARED_TEXT = 3072;

/**
 * Named (prepared) statements for the delivery worker's few hot texts (claim, outcomes, fences, unpark): each pool
 * connection parses a text once, and plans it once when PostgreSQL settles on its generic plan (after five custom
 * plans), instead of on every call (planning alone costs about as much server CPU as running the statement). Keyed by the text; bounded in count and size, so a connection's prepared statements are too.
 */
export class PreparedNames {
  readonly #names = new Map<string, { name: string; text: string }>();

  config(sql: string, values: unknown[]): pg.QueryConfig {
    let p = this.#names.get(sql);
    if (!p && this.#names.size < MAX_PREPARED && sql.length <= MAX_PREPARED_TEXT)
      this.#names.set(sql, (p = { name: `cmn_${this.#names.size}`, text: toPgPlaceholders(sql) }));
    return p ? { name: p.name, text: p.text, values } : { text: toPgPlaceholders(sql), values };
  }
}

function sqlDb(q: pg.Pool | pg.PoolClient, scope: TxScope | null, prepared?: PreparedNames): SqlDb {
  const query = async (sql: string, params?: readonly SqlValue[]): Promise<pg.QueryResult> => {
    scope?.check();
    try {
      const values = bind(params);
      return await q.query(prepared ? prepared.config(sql, values) : { text: toPgPlaceholders(sql), values });
    } catch (err) {
      throw fromPgError(err);
    }
  };
  return {
    dialect: 'postgres',
    all: async (sql, params) => (await query(sql, params)).rows,
    get: async (sql, params) => (await query(sql, params)).rows[0],
    run: async (sql, params) => (await query(sql, params)).rowCount ?? 0,
  };
}

export class PostgresStore extends SqlStore {
  readonly dialect = 'postgres' as const;
  readonly #pool: pg.Pool;
  #closed = false;

  constructor(
    pool: pg.Pool,
    /** The schema given at open, or null for the server's default search_path. */
    readonly schema: string | null,
  ) {
    super();
    this.#pool = pool;
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreError('postgres store is closed');
  }

  protected autoDb(): SqlDb {
    return this.#checked(sqlDb(this.#pool, null));
  }

  protected override queueDb(): SqlDb {
    return this.#checked(sqlDb(this.#pool, null, new PreparedNames()));
  }

  #checked(db: SqlDb): SqlDb {
    const check = () => this.#assertOpen();
    return {
      dialect: db.dialect,
      all: async (sql, params) => (check(), db.all(sql, params)),
      get: async (sql, params) => (check(), db.get(sql, params)),
      run: async (sql, params) => (check(), db.run(sql, params)),
    };
  }

  protected async withTransaction<T>(fn: (db: SqlDb) => Promise<T>): Promise<T> {
    this.#assertOpen();
    const client = await this.#pool.connect();
    const scope = new TxScope();
    // Set when the connection is in an unknown state: release(err) destroys it instead of pooling it.
    let discard: Error | undefined;
    // pg-pool takes its 'error' listener off a client while it is checked out: a connection lost between two
    // statements (server restart, reset) would be an unhandled 'error' event, i.e. a crash. Record it instead;
    // the next statement fails with "not queryable" (a store-unavailable error) and the transaction rolls back.
    const onLost = (err: Error) => {
      discard ??= err;
    };
    client.on('error', onLost);
    try {
      try {
        await client.query('BEGIN');
      } catch (err) {
        discard = err as Error;
        throw fromPgError(err);
      }
      try {
        const result = await fn(sqlDb(client, scope));
        scope.done = true;
        try {
          await client.query('COMMIT');
        } catch (err) {
          throw fromPgError(err); // e.g. a deferred constraint or a serialization failure
        }
        return result;
      } catch (err) {
        scope.done = true;
        try {
          await client.query('ROLLBACK');
        } catch (rollbackErr) {
          discard = rollbackErr as Error;
        }
        throw err;
      }
    } finally {
      scope.done = true;
      client.removeListener('error', onLost);
      client.release(discard);
    }
  }

  async ping(): Promise<void> {
    this.#assertOpen();
    await this.#pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }
}
