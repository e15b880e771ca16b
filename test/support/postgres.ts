/**
 * Real PostgreSQL for tests, via scripts/pg.sh (Debian's server binaries; see that script).
 *
 * - setupPostgres(): a vitest globalSetup piece. If DATABASE_URL is unset it starts a throwaway
 *   server and sets process.env.DATABASE_URL for the test workers; the returned teardown stops it.
 *   Missing server binaries are an error, never a silent skip.
 * - testDatabaseUrl() / randomSchema() / dropSchema(): for test files, each of which should work
 *   in its own random schema (openStore(url, { schema })).
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const PG_SH = fileURLToPath(new URL('../../scripts/pg.sh', import.meta.url));
const PG_URL = /^postgres(ql)?:\/\//;

export interface PgServer {
  url: string;
  root: string;
  stop(): Promise<void>;
  /** Stops the server (fast shutdown: every client is disconnected) and keeps its data (fault tests). */
  halt(): Promise<void>;
  /** Starts a halted server again on the same port and data dir. */
  resume(): Promise<void>;
}

function pgsh(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile('bash', [PG_SH, ...args], { timeout: 90_000 }, (err, stdout, stderr) => {
      if (!err) return resolve({ stdout, stderr });
      const code = (err as { code?: unknown }).code;
      const detail = stderr.trim() || err.message;
      reject(
        new Error(
          code === 2
            ? `PostgreSQL is required for the store tests but its server binaries were not found.\n${detail}`
            : `scripts/pg.sh ${args.join(' ')} failed (exit ${String(code)}):\n${detail}`,
          { cause: err },
        ),
      );
    });
  });
}

/** Starts a throwaway server (about 1 s). */
export async function startPostgres(): Promise<PgServer> {
  const { stdout } = await pgsh(['start']);
  const m = /^export PGROOT=(\S+) DATABASE_URL=(\S+)$/m.exec(stdout);
  if (!m) throw new Error(`scripts/pg.sh start printed no "export PGROOT=… DATABASE_URL=…" line:\n${stdout}`);
  const root = m[1]!;
  const url = m[2]!;
  let stopped = false;
  // If the run dies without calling stop (e.g. an uncaught error in the runner), don't leave a
  // server behind. SIGKILL can't be caught; the data dir is then left in $TMPDIR.
  const onExit = () => {
    if (!stopped) spawnSync('bash', [PG_SH, 'stop', root], { stdio: 'ignore', timeout: 30_000 });
  };
  process.once('exit', onExit);
  return {
    url,
    root,
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', onExit);
      await pgsh(['stop', root]);
    },
    async halt() {
      await pgsh(['halt', root]);
    },
    async resume() {
      await pgsh(['resume', root]);
    },
  };
}

/** globalSetup piece: makes sure DATABASE_URL points at a PostgreSQL server. Returns the teardown. */
export async function setupPostgres(): Promise<() => Promise<void>> {
  const existing = process.env.DATABASE_URL;
  if (existing) {
    if (!PG_URL.test(existing)) {
      throw new Error('DATABASE_URL is set but is not a postgres:// URL; unset it to let the tests start their own server');
    }
    return async () => {};
  }
  const server = await startPostgres();
  process.env.DATABASE_URL = server.url;
  return async () => {
    delete process.env.DATABASE_URL;
    await server.stop();
  };
}

/** The PostgreSQL URL for test files (set by the global setup or by the caller). */
export function testDatabaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url || !PG_URL.test(url)) {
    throw new Error('DATABASE_URL is not set to a postgres:// URL: test/support/global-setup.ts should have set it');
  }
  return url;
}

/** A fresh schema name, e.g. `t_store_3f9a1c2b7d4e`. */
export function randomSchema(prefix = 't'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema.replace(/"/g, '""')}" CASCADE`);
  } finally {
    await client.end();
  }
}
