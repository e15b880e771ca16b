/** Starts the real service (same composition root as `certmgr-notify serve`) on loopback for API tests. */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { GraphQLClient } from 'graphql-request';
import { pino } from 'pino';
import { loadServeConfig } from '../../src/config.js';
import { startService, type RunningService } from '../../src/main.js';

export const COMPANY_A = '11111111-1111-4111-8111-111111111111';
export const COMPANY_B = '22222222-2222-4222-8222-222222222222';
export const KEY_A = 'key-company-a-0123456789';
export const KEY_B = 'key-company-b-0123456789';

export type StoreKind = 'sqlite' | 'postgres';

export interface TestService extends RunningService {
  logs: string[];
  gql(key?: string): GraphQLClient;
  rest(path: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
}

let keyFile: string | undefined;
/** A secret key file for this test process (PostgreSQL stores require one; see --secret-key-file). */
export function testSecretKeyFile(): string {
  if (!keyFile) {
    keyFile = join(mkdtempSync(join(tmpdir(), 'cmn-keys-')), 'secret-key');
    writeFileSync(keyFile, `test:${Buffer.alloc(32, 7).toString('base64')}\n`, { mode: 0o600 });
  }
  return keyFile;
}

export function storeUrl(kind: StoreKind): string {
  if (kind === 'sqlite') return 'sqlite::memory:';
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error('DATABASE_URL is not set: the PostgreSQL tier needs the server started by test/support/global-setup.ts');
  const u = new URL(base);
  u.searchParams.set('schema', `t_${randomUUID().replace(/-/g, '')}`);
  return u.toString();
}

/** Loopback receivers need these; the egress deny-list refuses loopback by default. */
export const LOOPBACK_EGRESS_ALLOW = ['--egress-allow', '127.0.0.1/32', '--egress-allow', '::1/128'];

export interface TestServiceOptions {
  /** Allow loopback destinations (test receivers). Default true; SSRF tests pass false to run the production default. */
  loopbackAllowed?: boolean;
  /**
   * Start with an SMTP URL (a closed loopback port) so EMAIL integrations can be created. Default true; false runs
   * without --smtp-url (EMAIL refused with SMTP_NOT_CONFIGURED). A --smtp-url in extraArgs wins (last flag wins).
   * The sender is certmgr-notify@example.com, so example.com is the allowed sender domain.
   */
  smtpConfigured?: boolean;
  /** The console's built files served at /ui (default: the one next to the code, as `serve` finds it). */
  consoleDir?: string;
}

export async function startTestService(
  kind: StoreKind = 'sqlite',
  extraArgs: string[] = [],
  opts: TestServiceOptions = {},
): Promise<TestService> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const log = pino({ level: 'debug' }, sink);
  const cfg = loadServeConfig(
    [
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--store',
      storeUrl(kind),
      '--kube',
      'off',
      '--incident-events-url',
      'http://127.0.0.1:9',
      ...(kind === 'postgres' ? ['--secret-key-file', testSecretKeyFile()] : []),
      ...(opts.loopbackAllowed === false ? [] : LOOPBACK_EGRESS_ALLOW),
      // tests' email integrations send as example.com: the sender domain --smtp-from allows by default
      ...(opts.smtpConfigured === false ? [] : ['--smtp-url', 'smtp://127.0.0.1:9', '--smtp-from', 'certmgr-notify@example.com']),
      ...extraArgs,
    ],
    {},
  );
  if (opts.consoleDir !== undefined) cfg.consoleDir = opts.consoleDir;
  // plus the keys of an --api-keys-file in extraArgs (scoped keys)
  cfg.apiKeys = [{ key: KEY_A, companyId: COMPANY_A }, { key: KEY_B, companyId: COMPANY_B }, ...cfg.apiKeys];
  const svc = await startService(cfg, log);
  return {
    ...svc,
    logs,
    gql: (key = KEY_A) => new GraphQLClient(`${svc.url}/graphql`, { headers: { 'svc-api-key': key } }),
    rest: (path, init = {}) => {
      const { key = KEY_A, headers, ...rest } = init;
      const h = new Headers(headers);
      if (key !== null) h.set('svc-api-key', key);
      return fetch(svc.url + path, { ...rest, headers: h });
    },
  };
}
