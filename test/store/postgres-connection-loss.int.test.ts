/**
 * PostgreSQL going away under a transaction. A dedicated server (startPostgres), so terminating backends and
 * stopping it never touches the shared one other test files use.
 *
 * pg-pool removes its 'error' listener from a client while the client is checked out. A connection lost while a
 * transaction holds its client between two statements (a FATAL "terminating connection due to administrator
 * command" on a restart, or a reset) is then an 'error' event nobody listens to: an uncaught exception that ends
 * the process. The store must turn it into a failed transaction (rolled back, nothing written) instead.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/index.js';
import { isStoreUnavailable } from '../../src/http/limits.js';
import { startPostgres, type PgServer } from '../support/postgres.js';
import { integration } from './contract.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PostgreSQL connection lost inside a transaction', () => {
  let server: PgServer;
  let store: Store;
  beforeAll(async () => {
    server = await startPostgres();
    store = await openStore(server.url);
    await store.migrate();
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });

  /** Terminates every other backend that is idle inside a transaction (ours: this server has no other users). */
  async function terminateIdleInTransaction(): Promise<number> {
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    try {
      const r = await c.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE state = 'idle in transaction' AND pid <> pg_backend_pid()`,
      );
      return r.rowCount ?? 0;
    } finally {
      await c.end();
    }
  }

  it('a backend terminated between two statements fails the transaction (store unavailable), writes nothing, and the store goes on', async () => {
    const A = randomUUID();
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    let failure: unknown;
    try {
      await store.transaction(async (tx) => {
        await tx.createIntegration(integration(A, { name: 'first' }));
        expect(await terminateIdleInTransaction()).toBe(1);
        await sleep(300); // the FATAL and the close arrive while the client is checked out but idle
        await tx.createIntegration(integration(A, { name: 'second' }));
      });
    } catch (err) {
      failure = err;
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught).toEqual([]);
    expect(failure).toBeDefined();
    expect(isStoreUnavailable(failure)).toBe(true); // the API answers 503, not 500
    // Nothing of the transaction was written, and the pool hands out a working connection again.
    expect(await store.listIntegrations(A)).toEqual([]);
    await store.transaction((tx) => tx.createIntegration(integration(A, { name: 'after' })));
    expect((await store.listIntegrations(A)).map((i) => i.name)).toEqual(['after']);
  });

  it('a server stopped and started again (same port) between two statements: same outcome', async () => {
    const A = randomUUID();
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    let failure: unknown;
    try {
      await store.transaction(async (tx) => {
        await tx.createIntegration(integration(A, { name: 'first' }));
        await server.halt();
        await server.resume();
        await tx.createIntegration(integration(A, { name: 'second' }));
      });
    } catch (err) {
      failure = err;
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught).toEqual([]);
    expect(isStoreUnavailable(failure)).toBe(true);
    expect(await store.listIntegrations(A)).toEqual([]);
    await store.transaction((tx) => tx.createIntegration(integration(A, { name: 'after' })));
    expect((await store.listIntegrations(A)).map((i) => i.name)).toEqual(['after']);
  }, 60_000);
});
