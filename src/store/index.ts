/**
 * Opening a store from a URL:
 *   sqlite::memory:            in-memory SQLite (gone on close)
 *   sqlite:<path>              SQLite file, e.g. sqlite:data/notify.db or sqlite:/var/lib/notify/db.sqlite
 *                              (parent directories are created)
 *   postgres://… | postgresql://…   PostgreSQL via pg.Pool (query parameters such as sslmode pass through;
 *                              `?schema=<name>` selects a schema, created if missing)
 *
 * openStore does not migrate: call `await store.migrate()` once at start.
 * `opts.schema` (PostgreSQL only; ignored for SQLite) isolates the store in that schema.
 */
import { StoreError } from './errors.js';
import { openPostgresStore } from './postgres.js';
import { openSqliteStore } from './sqlite.js';
import type { SecretBox } from './secret-box.js';
import type { Store } from './types.js';

export interface OpenStoreOptions {
  /** PostgreSQL schema to use (created if missing). Ignored for SQLite. */
  schema?: string;
  /** Key ring that seals integration secrets at rest (AES-256-GCM). Without one they are stored as plaintext. */
  secretBox?: SecretBox;
}

const STORE_URL_FORMS = 'sqlite:<path>, sqlite::memory:, postgres://… or postgresql://…';

export async function openStore(url: string, opts: OpenStoreOptions = {}): Promise<Store> {
  if (url.startsWith('sqlite:')) {
    const location = url.slice('sqlite:'.length);
    if (location === '') throw new StoreError(`store URL "sqlite:" has no path; expected ${STORE_URL_FORMS}`);
    const store = await openSqliteStore(location);
    store.secretBox = opts.secretBox;
    return store;
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    // `?schema=<name>` in the URL selects the schema (the pg driver itself ignores unknown parameters)
    const u = new URL(url);
    const schema = opts.schema ?? u.searchParams.get('schema') ?? undefined;
    u.searchParams.delete('schema');
    const store = await openPostgresStore(u.toString(), schema !== undefined ? { schema } : {});
    store.secretBox = opts.secretBox;
    return store;
  }
  // Only echo the scheme: the rest of a URL may hold credentials.
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0];
  throw new StoreError(`unsupported store URL${scheme ? ` scheme "${scheme}"` : ''}; expected ${STORE_URL_FORMS}`);
}

export type * from './types.js';
export { StoreError } from './errors.js';
