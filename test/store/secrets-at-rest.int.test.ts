/**
 * Integration secrets are sealed at rest (AES-256-GCM, key file, rotation) and the SQLite files are
 * owner-only. The raw SQLite files and the raw PostgreSQL rows are searched for every secret written through
 * the real service; a wrong key leaves the service up and fails only the deliveries that need the secret.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { ConfigError, loadServeConfig } from '../../src/config.js';
import { openStore } from '../../src/store/index.js';
import { SecretBox, SecretKeyError, ensureKeyFile, parseKeyFile, secretKeySource, type SecretKey } from '../../src/store/secret-box.js';
import { issuerNotReady } from '../fixtures/events.js';
import { startReceiver } from '../integrations/helpers.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { startTestService, type StoreKind, type TestService } from '../support/service.js';
import { storeContract } from './contract.js';
import { limitsFile } from '../support/limits.js';

const key = (id: string, fill?: number): SecretKey => ({ id, key: fill === undefined ? randomBytes(32) : Buffer.alloc(32, fill) });
const line = (k: SecretKey) => `${k.id}:${k.key.toString('base64')}`;
const slot = { column: 'integrations.secrets', companyId: 'c1', id: 'i1' };

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'cmn-secrets-'));
}

function writeKeys(dir: string, keys: SecretKey[], name = 'keys'): string {
  const p = join(dir, name);
  writeFileSync(p, keys.map(line).join('\n') + '\n', { mode: 0o600 });
  return p;
}

// the whole store contract, with every integration's secrets sealed (both engines: the rows are the same SQL)
const contractBox = SecretBox.ephemeral();
const contractSchema = randomSchema('t_sec_contract');
afterAll(() => dropSchema(testDatabaseUrl(), contractSchema));
storeContract('sqlite::memory: with sealed secrets', () => openStore('sqlite::memory:', { secretBox: contractBox }));
storeContract(`postgres (schema ${contractSchema}) with sealed secrets`, () =>
  openStore(testDatabaseUrl(), { schema: contractSchema, secretBox: contractBox }),
);

/** The envelope with the last byte of its body (the tag's) changed. */
function flipLastByte(sealed: string): string {
  const at = sealed.lastIndexOf(':') + 1;
  const body = Buffer.from(sealed.slice(at), 'base64url');
  body[body.length - 1]! ^= 0x01;
  return sealed.slice(0, at) + body.toString('base64url');
}

describe('SecretBox (pure)', () => {
  const a = key('a', 1);
  const b = key('b', 2);

  it('round-trips, with a fresh nonce per seal and the key id in the envelope', () => {
    const box = new SecretBox([a, b]);
    const s1 = box.seal('{"url":"https://x/secret"}', slot);
    const s2 = box.seal('{"url":"https://x/secret"}', slot);
    expect(s1).toMatch(/^enc:v1:a:[A-Za-z0-9_-]+$/);
    expect(s1).not.toBe(s2);
    expect(s1).not.toContain('secret');
    expect(box.open(s1, slot)).toBe('{"url":"https://x/secret"}');
    expect(box.isCurrent(s1)).toBe(true);
    expect(new SecretBox([b, a]).isCurrent(s1)).toBe(false);
    // every key decrypts, the first encrypts
    expect(new SecretBox([b, a]).open(s1, slot)).toBe('{"url":"https://x/secret"}');
  });

  it.each([
    ['another company', (s: string) => [s, { ...slot, companyId: 'c2' }] as const, /authentication failed/],
    ['another row', (s: string) => [s, { ...slot, id: 'i2' }] as const, /authentication failed/],
    ['a relabelled key id', (s: string) => [s.replace('enc:v1:a:', 'enc:v1:b:'), slot] as const, /authentication failed/],
    // a bit of the tag flipped through the bytes: editing the last base64url characters may change only padding bits
    ['a flipped byte', (s: string) => [flipLastByte(s), slot] as const, /authentication failed/],
    ['a truncated envelope', () => ['enc:v1:a:AAAA', slot] as const, /too short/],
    ['an unknown version', (s: string) => [s.replace('enc:v1:', 'enc:v9:'), slot] as const, /version "v9" is not supported/],
    ['not an envelope', () => ['enc:garbage', slot] as const, /not a secret envelope/],
  ])('refuses %s with a SecretKeyError naming the row', (_name, mutate, msg) => {
    const box = new SecretBox([a, b]);
    const [sealed, where] = mutate(box.seal('{"k":"v"}', slot));
    expect(() => box.open(sealed, where)).toThrow(SecretKeyError);
    expect(() => box.open(sealed, where)).toThrow(msg);
  });

  it('names the missing key id and the ids it has; a same-id different key says so; never the key', () => {
    const sealed = new SecretBox([a]).seal('{}', slot);
    expect(() => new SecretBox([b]).open(sealed, slot)).toThrow('sealed with secret key "a", which is not in the key file (it has: b)');
    const wrong = new SecretBox([key('a', 9)]);
    expect(() => wrong.open(sealed, slot)).toThrow('secret key "a" does not decrypt it');
    try {
      wrong.open(sealed, slot);
    } catch (e) {
      expect((e as Error).message).not.toContain(a.key.toString('base64'));
    }
  });

  it.each([
    ['', /no keys/],
    ['# only a comment\n\n', /no keys/],
    ['justakey', /line 1: expected <keyId>:<base64/],
    ['bad id!:' + Buffer.alloc(32).toString('base64'), /line 1: key id "bad id!" is invalid/],
    ['k1:' + Buffer.alloc(16).toString('base64'), /line 1: key "k1" must decode to 32 bytes, got 16/],
    ['k1:not base64 at all', /line 1: key "k1" is not base64/],
    [`k1:${Buffer.alloc(32).toString('base64')}\nk1:${Buffer.alloc(32, 1).toString('base64')}`, /line 2: key id "k1" appears twice/],
  ])('parseKeyFile rejects %j', (text, msg) => {
    expect(() => parseKeyFile(text, 'f')).toThrow(msg);
  });

  it('parseKeyFile reads comments, blank lines, CRLF, base64 and base64url; the first key encrypts', () => {
    const k = randomBytes(32);
    const keys = parseKeyFile(`# rotation\r\nnew:${k.toString('base64url')}\r\n\r\nold:${k.toString('base64')}\n`, 'f');
    expect(keys.map((x) => x.id)).toEqual(['new', 'old']);
    expect(new SecretBox(keys).primary).toBe('new');
  });

  it.each([
    ['sqlite:/var/lib/x/notify.db', undefined, { kind: 'generate', path: '/var/lib/x/secret-key' }],
    ['sqlite::memory:', undefined, { kind: 'ephemeral' }],
    ['sqlite:/var/lib/x/notify.db', '/etc/keys/k', { kind: 'file', path: '/etc/keys/k' }],
    ['postgres://db/x', '/etc/keys/k', { kind: 'file', path: '/etc/keys/k' }],
  ] as const)('secretKeySource(%s, %s)', (store, file, want) => {
    expect(secretKeySource(store, file)).toEqual(want);
  });

  it('secretKeySource refuses PostgreSQL without a key file', () => {
    expect(() => secretKeySource('postgresql://db/x', undefined)).toThrow(/PostgreSQL store needs a secret key file/);
  });

  it('a PostgreSQL store without --secret-key-file is a configuration error (replicas must share the key)', () => {
    expect(() => loadServeConfig(['--store', 'postgres://db/x'], {})).toThrow(ConfigError);
    expect(() => loadServeConfig(['--store', 'postgres://db/x'], {})).toThrow(/needs --secret-key-file/);
    expect(loadServeConfig(['--store', 'postgres://db/x'], { CERTMGR_NOTIFY_SECRET_KEY_FILE: '/k' }).secretKeyFile).toBe('/k');
  });

  it('ensureKeyFile creates the key 0600 in a 0700 directory once, then reuses it', () => {
    const p = join(tmp(), 'sub', 'secret-key');
    const first = ensureKeyFile(p);
    expect(first.created).toBe(true);
    expect(statSync(p).mode & 0o777).toBe(0o600);
    expect(statSync(join(p, '..')).mode & 0o777).toBe(0o700);
    const second = ensureKeyFile(p);
    expect(second.created).toBe(false);
    expect(second.box.primary).toBe(first.box.primary);
    expect(second.box.open(first.box.seal('x', slot), slot)).toBe('x');
  });
});

/** Every secret field of every integration type, each a distinctive string to search the raw bytes for. */
const SECRETS = {
  integrationKey: 'IKEY-9f8e7d6c5b4a39281706',
  webhookToken: 'WHTOKEN-1a2b3c4d5e6f7a8b',
  signingSecret: 'whsec_' + Buffer.from('SIGNING-0123456789abcdef-SIGNING').toString('base64'),
  slackToken: 'SLACKTOKEN-0f1e2d3c4b5a6978',
  teamsToken: 'TEAMSTOKEN-8796a5b4c3d2e1f0',
  updatedToken: 'UPDATEDTOKEN-00112233445566',
};

async function createAll(svc: TestService, webhookBase = 'https://hooks.example.com'): Promise<Record<string, string>> {
  const gql = svc.gql();
  const ids: Record<string, string> = {};
  ids.pager = (
    await gql.request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
      name: 'pager',
      integrationKey: SECRETS.integrationKey,
    })
  ).createIncidentMgmtIntegration.id;
  ids.hook = (
    await gql.request<{ createWebhookIntegration: { id: string } }>(
      `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
      { i: { name: 'hook', url: `${webhookBase}/hook?token=${SECRETS.webhookToken}`, signingSecret: SECRETS.signingSecret } },
    )
  ).createWebhookIntegration.id;
  ids.slack = (
    await gql.request<{ createSlackIntegration: { id: string } }>(
      `mutation($i: CreateSlackIntegrationInput!) { createSlackIntegration(input: $i) { id } }`,
      { i: { name: 'slack', slackParams: { webhookUrl: `https://hooks.slack.example/services/${SECRETS.slackToken}` } } },
    )
  ).createSlackIntegration.id;
  ids.teams = (
    await gql.request<{ createTeamsIntegration: { id: string } }>(
      `mutation($i: CreateTeamsIntegrationInput!) { createTeamsIntegration(input: $i) { id } }`,
      { i: { name: 'teams', teamsParams: { webhookUrl: `https://teams.example/webhook/${SECRETS.teamsToken}` } } },
    )
  ).createTeamsIntegration.id;
  // the update path seals too
  await gql.request(`mutation($id: UUID!, $i: UpdateIntegrationInput!) { updateIntegration(id: $id, input: $i) { id } }`, {
    id: ids.slack,
    i: { slackParams: { webhookUrl: `https://hooks.slack.example/services/${SECRETS.updatedToken}` } },
  });
  return ids;
}

function sqliteBytes(dir: string): string {
  return readdirSync(dir)
    .filter((f) => f.startsWith('store.db'))
    .map((f) => readFileSync(join(dir, f)).toString('latin1'))
    .join('\n');
}

function expectNoSecret(raw: string): void {
  for (const [name, s] of Object.entries(SECRETS)) {
    expect(raw.includes(s), `${name} found in the raw store`).toBe(false);
  }
  expect(raw.includes('SIGNING-0123456789abcdef')).toBe(false);
}

interface Env {
  kind: StoreKind;
  /** --store argument */
  store: string;
  /** the raw integrations.secrets column values, bypassing the service */
  rawSecrets(): Promise<string[]>;
  /** everything the engine keeps of the store, as text */
  rawAll(): Promise<string>;
  cleanup(): Promise<void>;
}

function sqliteEnv(): Env {
  const dir = tmp();
  const store = `sqlite:${join(dir, 'store.db')}`;
  return {
    kind: 'sqlite',
    store,
    async rawSecrets() {
      const db = new DatabaseSync(join(dir, 'store.db'), { readOnly: true });
      try {
        return db
          .prepare('SELECT secrets FROM integrations ORDER BY id')
          .all()
          .map((r) => String(r['secrets']));
      } finally {
        db.close();
      }
    },
    rawAll: async () => sqliteBytes(dir),
    cleanup: async () => {},
  };
}

function postgresEnv(): Env {
  const schema = randomSchema('t_sec');
  const u = new URL(process.env.DATABASE_URL!);
  u.searchParams.set('schema', schema);
  const client = async <T>(f: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL! });
    await c.connect();
    try {
      return await f(c);
    } finally {
      await c.end();
    }
  };
  return {
    kind: 'postgres',
    store: u.toString(),
    rawSecrets: () =>
      client(async (c) => (await c.query(`SELECT secrets FROM "${schema}".integrations ORDER BY id`)).rows.map((r) => r.secrets as string)),
    rawAll: () =>
      client(async (c) =>
        (await c.query(`SELECT t::text AS row FROM "${schema}".integrations t`)).rows.map((r) => r.row as string).join('\n'),
      ),
    cleanup: () => client(async (c) => void (await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))),
  };
}

describe.each([
  ['sqlite', sqliteEnv],
  ['postgres', postgresEnv],
] as const)('secrets at rest on %s (the real service)', (kind, makeEnv) => {
  const envs: Env[] = [];
  const services: TestService[] = [];
  const start = async (env: Env, keyFile: string, extra: string[] = []) => {
    const svc = await startTestService(kind, ['--store', env.store, '--secret-key-file', keyFile, ...extra]);
    services.push(svc);
    return svc;
  };
  afterAll(async () => {
    for (const s of services) await s.close().catch(() => {});
    for (const e of envs) await e.cleanup();
  });

  it('no secret of any integration type appears in the raw store; every row is an enc:v1 envelope', async () => {
    const env = makeEnv();
    envs.push(env);
    const svc = await start(env, writeKeys(tmp(), [key('k1')]));
    await createAll(svc);
    const raw = await env.rawSecrets();
    expect(raw).toHaveLength(4);
    for (const r of raw) expect(r).toMatch(/^enc:v1:k1:/);
    expectNoSecret(await env.rawAll());
    await svc.close();
    services.pop();
    expectNoSecret(await env.rawAll()); // after the checkpoint, too
  });

  it('plaintext rows from before encryption keep working and are sealed by the start-up pass', async () => {
    const env = makeEnv();
    envs.push(env);
    // an old version: no key ring, plaintext JSON
    const legacy = await openStore(env.store);
    await legacy.migrate();
    await legacy.createIntegration({
      id: '5f1d7c1e-0000-4000-8000-000000000001',
      companyId: '11111111-1111-4111-8111-111111111111',
      name: 'old',
      type: 'INCIDENT_MGMT',
      enabled: true,
      config: {},
      secrets: { integrationKey: SECRETS.integrationKey },
      managedBy: null,
      createdAt: 1,
      updatedAt: 1,
    });
    await legacy.close();
    expect((await env.rawSecrets())[0]).toContain(SECRETS.integrationKey);
    const keys = [key('k1')];
    const svc = await start(env, writeKeys(tmp(), keys));
    expect(svc.logs.join('')).toContain('integration secrets re-encrypted with the current key');
    expect((await env.rawSecrets())[0]).toMatch(/^enc:v1:k1:/);
    if (kind === 'sqlite') {
      await svc.close();
      services.pop();
    }
    expectNoSecret(await env.rawAll());
    const reopened = await openStore(env.store, { secretBox: new SecretBox(keys) });
    expect(
      (await reopened.getIntegration('11111111-1111-4111-8111-111111111111', '5f1d7c1e-0000-4000-8000-000000000001'))?.secrets,
    ).toEqual({
      integrationKey: SECRETS.integrationKey,
    });
    await reopened.close();
    if (kind !== 'sqlite') {
      await svc.close();
      services.pop();
    }
  });

  it('rotation: new key first and old second re-seals every row with the new key; then the old key can go', async () => {
    const env = makeEnv();
    envs.push(env);
    const dir = tmp();
    const old = key('old');
    const next = key('new');
    let svc = await start(env, writeKeys(dir, [old]));
    await createAll(svc);
    await svc.close();
    services.pop();
    expect(new Set((await env.rawSecrets()).map((r) => r.split(':')[2]))).toEqual(new Set(['old']));

    svc = await start(env, writeKeys(dir, [next, old]));
    expect(svc.logs.join('')).toMatch(/"reencrypted":4/);
    await svc.close();
    services.pop();
    expect(new Set((await env.rawSecrets()).map((r) => r.split(':')[2]))).toEqual(new Set(['new']));

    const box = new SecretBox([next]);
    const s = await openStore(env.store, { secretBox: box });
    const all = await s.listIntegrations('11111111-1111-4111-8111-111111111111');
    expect(all.map((i) => i.secrets)).toContainEqual({ webhookUrl: `https://hooks.slack.example/services/${SECRETS.updatedToken}` });
    expect(all.map((i) => i.secrets)).toContainEqual({ integrationKey: SECRETS.integrationKey });
    await s.close();
  });

  it('a wrong key: the service starts, says which key fails, the API works, and deliveries retry with a clear error until the key is back', async () => {
    const env = makeEnv();
    envs.push(env);
    const dir = tmp();
    const right = key('k1');
    const receiver = await startReceiver();
    try {
      let svc = await start(env, writeKeys(dir, [right]));
      const ids = await createAll(svc, receiver.url);
      await svc.gql().request(ops.CreateNotificationRouter, {
        details: { name: 'r', eventTypeId: 'certmgr-issuer-health-notification-config' },
        filterConfig: { advancedFilterExpression: '' },
        integrationConfig: { integrationId: ids.hook },
      });
      await svc.close();
      services.pop();

      // same id, different key: as when the Secret was recreated by mistake
      svc = await start(env, writeKeys(dir, [key('k1')], 'wrong'), [...limitsFile({ deliveryRetryBase: '10s' })]);
      const logs = () => svc.logs.join('');
      expect(logs()).toContain('cannot decrypt');
      expect(logs()).toMatch(/"failed":4/);
      expect(logs()).toContain('does not decrypt it (authentication failed)');
      expect(logs()).not.toContain(right.key.toString('base64'));
      const list = await svc.gql().request<{ integrations: { nodes: { id: string }[] } }>(`{ integrations { nodes { id } } }`);
      expect(list.integrations.nodes).toHaveLength(4);
      const res = await svc.rest('/v1/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(issuerNotReady()),
      });
      expect(res.status).toBe(202);
      const lastError = async () =>
        (
          await svc
            .gql()
            .request<{ deliveries: { nodes: { status: string; lastError: string | null }[] } }>(
              `{ deliveries { nodes { status lastError } } }`,
            )
        ).deliveries.nodes[0];
      let d = await lastError();
      for (let i = 0; i < 200 && !d?.lastError; i++) {
        await new Promise((r) => setTimeout(r, 25));
        d = await lastError();
      }
      expect(d?.status).toBe('PENDING');
      expect(d?.lastError).toMatch(/cannot decrypt the integration's secrets: .*secret key "k1" does not decrypt it/);
      expect(receiver.requests).toHaveLength(0);
      await svc.close();
      services.pop();

      // the right key back: delivered
      svc = await start(env, writeKeys(dir, [right], 'right'), [...limitsFile({ deliveryRetryBase: '10ms' })]);
      const res2 = await svc.rest('/v1/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(issuerNotReady()),
      });
      expect(res2.status).toBe(202);
      for (let i = 0; i < 400 && receiver.requests.length < 1; i++) await new Promise((r) => setTimeout(r, 25));
      expect(receiver.requests.length).toBeGreaterThanOrEqual(1);
      expect(receiver.requests[0]!.path).toBe(`/hook?token=${SECRETS.webhookToken}`);
    } finally {
      await receiver.close();
    }
  });
});

describe('SQLite store files are owner-only', () => {
  const services: TestService[] = [];
  afterAll(async () => {
    for (const s of services) await s.close().catch(() => {});
  });

  it('creates the data directory 0700 and the database, -wal, -shm and generated key 0600', async () => {
    const dir = join(tmp(), 'data');
    const svc = await startTestService('sqlite', ['--store', `sqlite:${join(dir, 'store.db')}`]);
    services.push(svc);
    await createAll(svc);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const files = readdirSync(dir);
    expect(files).toEqual(expect.arrayContaining(['store.db', 'store.db-wal', 'store.db-shm', 'secret-key']));
    for (const f of files) expect(`${f} ${(statSync(join(dir, f)).mode & 0o777).toString(8)}`).toBe(`${f} 600`);
    expect(svc.logs.join('')).toContain('generated a secret key into this file');
    expectNoSecret(sqliteBytes(dir));
  });

  it('narrows an existing 0644 database (older versions) to 0600', async () => {
    const dir = tmp();
    const path = join(dir, 'store.db');
    const old = await openStore(`sqlite:${path}`);
    await old.migrate();
    await old.close();
    const { chmodSync } = await import('node:fs');
    chmodSync(path, 0o644);
    const s = await openStore(`sqlite:${path}`);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await s.close();
    expect(existsSync(path)).toBe(true);
  });
});
