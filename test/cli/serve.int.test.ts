/** `npm start`'s command as a real process: embedded defaults, generated key file, env variables, bad flags. */
import { asAny } from '../support/any.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const BIN = join(import.meta.dirname, '../../bin/certmgr-notify.js');
const procs: ChildProcess[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) p.kill('SIGKILL');
});

function run(args: string[], env: Record<string, string> = {}, cwd = mkdtempSync(join(tmpdir(), 'cmn-cli-'))) {
  const p = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  procs.push(p);
  let out = '';
  let err = '';
  p.stdout!.on('data', (d) => (out += d));
  p.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number>((r) => p.on('exit', (c) => r(c ?? -1)));
  const listening = new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`not listening: ${out}${err}`)), 30_000);
    p.stdout!.on('data', () => {
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) {
        clearTimeout(t);
        resolve(JSON.parse(line).url);
      }
    });
    p.on('exit', () => reject(new Error(`exited: ${out}${err}`)));
  });
  listening.catch(() => undefined);
  return { p, cwd, listening, exited, output: () => out + err };
}

describe('certmgr-notify serve', () => {
  it('starts on embedded defaults, generating a 0600 key file whose key is never logged', async () => {
    const r = run(['serve', '--port', '0', '--host', '127.0.0.1', '--kube', 'off']);
    const url = await r.listening;
    const keyPath = join(r.cwd, 'data/api-key');
    expect(statSync(keyPath).mode & 0o777).toBe(0o600);
    const key = readFileSync(keyPath, 'utf8').trim();
    expect(statSync(join(r.cwd, 'data/certmgr-notify.db')).isFile()).toBe(true);
    const res = await fetch(`${url}/outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_EXPIRATION`, {
      headers: { 'svc-api-key': key },
    });
    expect(res.status).toBe(200);
    expect(r.output()).toContain('data/api-key');
    expect(r.output()).not.toContain(key);
    r.p.kill('SIGTERM');
    expect(await r.exited).toBe(0);
  });

  it('reads flags from CERTMGR_NOTIFY_* variables', async () => {
    const r = run(['serve'], {
      CERTMGR_NOTIFY_PORT: '0',
      CERTMGR_NOTIFY_HOST: '127.0.0.1',
      CERTMGR_NOTIFY_STORE: 'sqlite::memory:',
      CERTMGR_NOTIFY_API_KEY: 'env-key-0123456789abcdef',
      CERTMGR_NOTIFY_KUBE: 'off',
    });
    const url = await r.listening;
    const ok = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'svc-api-key': 'env-key-0123456789abcdef', 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ integrations { nodes { id } } }' }),
    });
    expect(ok.status).toBe(200);
    expect(await ok.json().then(asAny)).toEqual({ data: { integrations: { nodes: [] } } });
  });

  it('rejects a bad flag with a clear message and exit code 2', async () => {
    const r = run(['serve', '--prot', '8080']);
    expect(await r.exited).toBe(2);
    expect(r.output()).toContain('unknown flag --prot');
    const r2 = run(['serve', '--store', 'mysql://x']);
    expect(await r2.exited).not.toBe(0);
    expect(r2.output()).toMatch(/sqlite:|postgres/);
  });

  it('a port already in use: exit code 2 naming the address, before the store is opened or migrated', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = run([
        'serve',
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
        '--kube',
        'off',
        '--store',
        'sqlite:./db/x.db',
        '--api-key',
        'cli-key-0123456789abcdef',
      ]);
      expect(await r.exited).toBe(2);
      expect(r.output()).toContain(`127.0.0.1:${port}`);
      expect(r.output()).toMatch(/already in use/);
      expect(r.output()).not.toMatch(/TypeError/);
      expect(existsSync(join(r.cwd, 'db/x.db'))).toBe(false);
    } finally {
      taken.close();
    }
  });
});
