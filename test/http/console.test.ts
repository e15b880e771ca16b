/**
 * The console's static files at /ui (src/http/console.ts) from a temp directory with a fake build: the
 * headers (CSP, nosniff, referrer policy, caching), the client-route fallback, `/` → /ui/, the 404 of a console
 * that is not built, and paths that try to leave the directory (`..`, encoded slashes and dots, backslashes,
 * dotfiles, a symlink out of it). Requests are sent raw (node:http): fetch would normalize the `..` away.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request, createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.js';
import { ApiKeyRing } from '../../src/http/auth.js';
import { CONSOLE_CSP, consolePath } from '../../src/http/console.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { COMPANY_A, KEY_A } from '../support/service.js';

const INDEX = '<!doctype html><title>console</title><script type="module" src="./assets/main-AB12CD34.js"></script>';
const ASSET = 'console.log("app")';

const tmp = mkdtempSync(join(tmpdir(), 'cmn-console-'));
const built = join(tmp, 'ui');
const outside = join(tmp, 'secret.txt');
let store: Store;
const servers: Server[] = [];

async function start(consoleDir: string | undefined): Promise<string> {
  const app = createApp({
    store,
    keys: new ApiKeyRing([{ key: KEY_A, companyId: COMPANY_A }]),
    logger: pino({ level: 'silent' }),
    requestTimeoutMs: 30_000,
    ...(consoleDir ? { consoleDir } : {}),
  });
  const server = createServer(app);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A GET (or `method`) with the path exactly as given. */
function raw(base: string, path: string, method = 'GET'): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

let base: string;
beforeAll(async () => {
  store = await openStore('sqlite::memory:');
  await store.migrate();
  mkdirSync(join(built, 'assets'), { recursive: true });
  mkdirSync(join(built, 'docs'), { recursive: true });
  writeFileSync(join(built, 'index.html'), INDEX);
  writeFileSync(join(built, 'assets', 'main-AB12CD34.js'), ASSET);
  writeFileSync(join(built, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(built, '.env'), 'SECRET=1');
  writeFileSync(outside, 'outside the console');
  symlinkSync(outside, join(built, 'assets', 'link-AB12CD34.js'));
  symlinkSync(tmp, join(built, 'up'));
  base = await start(built);
});
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
  await store?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const expectSecurityHeaders = (h: IncomingHttpHeaders) => {
  expect(h['content-security-policy']).toBe(CONSOLE_CSP);
  expect(h['x-content-type-options']).toBe('nosniff');
  expect(h['referrer-policy']).toBe('no-referrer');
};

describe('console static files', () => {
  it('serves index.html at /ui/ (no-cache) and redirects / and /ui there', async () => {
    const r = await raw(base, '/ui/');
    expect(r.status).toBe(200);
    expect(r.body).toBe(INDEX);
    expect(r.headers['content-type']).toMatch(/^text\/html/);
    expect(r.headers['cache-control']).toBe('no-cache');
    expectSecurityHeaders(r.headers);
    for (const p of ['/', '/ui']) {
      const red = await raw(base, p);
      expect(red.status).toBe(302);
      expect(red.headers.location).toBe('/ui/');
    }
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
  });

  it('serves a hashed asset with a long immutable cache, other files no-cache', async () => {
    const a = await raw(base, '/ui/assets/main-AB12CD34.js');
    expect(a.status).toBe(200);
    expect(a.body).toBe(ASSET);
    expect(a.headers['content-type']).toMatch(/javascript/);
    expect(a.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expectSecurityHeaders(a.headers);
    const f = await raw(base, '/ui/favicon.svg');
    expect(f.status).toBe(200);
    expect(f.headers['cache-control']).toBe('no-cache');
    const head = await raw(base, '/ui/assets/main-AB12CD34.js', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
  });

  it('falls back to index.html for client routes; a missing asset is a 404', async () => {
    for (const p of ['/ui/health', '/ui/routers/123/edit', '/ui/docs']) {
      const r = await raw(base, p);
      expect(r.status, p).toBe(200);
      expect(r.body, p).toBe(INDEX);
      expect(r.headers['cache-control']).toBe('no-cache');
    }
    const missing = await raw(base, '/ui/assets/nope-12345678.js');
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).errors[0].code).toBe('NOT_FOUND');
  });

  it('never serves anything outside the directory, nor its dotfiles', async () => {
    const attempts = [
      '/ui/../secret.txt',
      '/ui/..%2fsecret.txt',
      '/ui/%2e%2e/secret.txt',
      '/ui/%2e%2e%2fsecret.txt',
      '/ui/assets/..%2F..%2Fsecret.txt',
      '/ui/..%5csecret.txt',
      '/ui/%00index.html',
      '/ui/.env',
      '/ui/%2eenv',
      '/ui/assets/link-AB12CD34.js',
      '/ui/up/secret.txt',
      '/ui/%',
    ];
    for (const p of attempts) {
      const r = await raw(base, p);
      expect(r.body, p).not.toContain('outside the console');
      expect(r.body, p).not.toContain('SECRET');
      // refused outright, or (a path express itself normalized back inside) the app's index.html
      if (r.status === 200) expect(r.body, p).toBe(INDEX);
      else expect([400, 404], p).toContain(r.status);
    }
    expect((await raw(base, '/ui/assets/link-AB12CD34.js')).status).toBe(404);
    expect((await raw(base, '/ui/up/secret.txt')).status).toBe(404);
    expect((await raw(base, '/ui/.env')).status).toBe(404);
  });

  it('answers other methods with 405 and Allow', async () => {
    const r = await raw(base, '/ui/', 'POST');
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe('GET, HEAD');
  });

  it('serves from a directory whose own path has a dot-folder (~/.nvm, ~/.npm/_npx, ~/.local)', async () => {
    const hidden = join(tmp, '.hidden', 'ui');
    mkdirSync(join(hidden, 'assets'), { recursive: true });
    writeFileSync(join(hidden, 'index.html'), INDEX);
    writeFileSync(join(hidden, 'assets', 'main-AB12CD34.js'), ASSET);
    const b = await start(hidden);
    for (const [p, body] of [
      ['/ui/', INDEX],
      ['/ui/health', INDEX],
      ['/ui/assets/main-AB12CD34.js', ASSET],
    ] as const) {
      const r = await raw(b, p);
      expect(r.status, p).toBe(200);
      expect(r.body, p).toBe(body);
    }
    expect((await raw(b, '/ui/.hidden')).status).toBe(404);
  });

  it('says how to build a console that is not built', async () => {
    const b = await start(join(tmp, 'not-built'));
    for (const p of ['/ui/', '/ui/health']) {
      const r = await raw(b, p);
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body).errors[0].message).toBe('the console is not built: run npm run build:console');
    }
  });

  it('without a console directory the routes do not exist', async () => {
    const b = await start(undefined);
    expect((await raw(b, '/ui/')).status).toBe(404);
    expect(JSON.parse((await raw(b, '/ui/')).body).errors[0].message).toContain('no such endpoint');
  });
});

describe('consolePath', () => {
  it.each([
    ['', ''],
    ['index.html', 'index.html'],
    ['assets/a-12345678.js', 'assets/a-12345678.js'],
    ['a//b/', 'a/b'],
    ['routers%2F12', 'routers/12'],
    ['..', null],
    ['a/../b', null],
    ['..%2f', null],
    ['%2e%2e', null],
    ['.', null],
    ['.git/config', null],
    ['a%5cb', null],
    ['a%00', null],
    ['%E0%A4%A', null],
  ])('%j → %j', (input, want) => {
    expect(consolePath(input)).toBe(want);
  });
});
