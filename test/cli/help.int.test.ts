/** Every command takes --help / -h and prints its usage with every flag (exit 0): the real CLI as a process. */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_FLAGS, SERVE_FLAGS } from '../../src/config.js';
import { secretFlagsInArgv, wantsHelp } from '../../src/cli/usage.js';

const BIN = join(import.meta.dirname, '../../bin/certmgr-notify.js');

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const p = spawn(process.execPath, [BIN, ...args], {
    cwd: mkdtempSync(join(tmpdir(), 'cmn-help-')),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (err += d));
  return new Promise((r) => p.on('exit', (c) => r({ code: c ?? -1, out, err })));
}

describe('--help on every command', () => {
  it.each([
    ['serve', '--help'],
    ['serve', '-h'],
    ['serve', '--port', '0', '--help'],
    ['help', 'serve'],
  ])('%s %s: serve usage with every flag, exit 0', async (...args) => {
    const r = await cli(args);
    expect(r.code).toBe(0);
    expect(r.err).not.toContain('unknown flag');
    for (const f of SERVE_FLAGS) expect(r.out).toContain(`--${f.name} `);
    expect(r.out).toContain('CERTMGR_NOTIFY_API_KEY');
    // the why: a key on the command line shows in ps and in npm's echo
    expect(r.out).toMatch(/ps/);
    expect(r.out).toMatch(/npm start/);
  });

  it.each([
    ['agent', '--help'],
    ['agent', '-h'],
    ['help', 'agent'],
  ])('%s %s: agent usage with every flag and its variable, exit 0', async (...args) => {
    const r = await cli(args);
    expect(r.code).toBe(0);
    for (const f of AGENT_FLAGS) expect(r.out).toContain(`--${f.name} `);
    expect(r.out).toContain('CERTMGR_NOTIFY_HUB_URL');
  });

  it.each([
    ['cel', 'eval', '--help'],
    ['cel', 'eval', '-h'],
    ['cel', '--help'],
    ['help', 'cel', 'eval'],
  ])('%s %s %s: cel eval usage, exit 0', async (...args) => {
    const r = await cli(args);
    expect(r.code).toBe(0);
    for (const f of ['--expr', '--event ', '--event-type-id']) expect(r.out).toContain(f);
  });

  it.each([['--help'], ['-h'], ['help'], ['help', '--help']])('%s: the command list, exit 0', async (...args) => {
    const r = await cli(args);
    expect(r.code).toBe(0);
    expect(r.out).toContain('certmgr-notify serve');
    expect(r.out).toContain('certmgr-notify agent');
    expect(r.out).toContain('certmgr-notify cel eval');
  });

  it('an unknown command still exits 2 with the command list', async () => {
    const r = await cli(['frobnicate', '--help']);
    expect(r.code).toBe(2);
    expect(r.err).toContain("unknown command 'frobnicate --help'");
  });
});

describe('secrets on the command line', () => {
  it('serve warns (without the value) when --api-key came from argv', async () => {
    const key = 'argv-key-0123456789abcdef';
    const p = spawn(
      process.execPath,
      [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--kube', 'off', '--store', 'sqlite::memory:', `--api-key=${key}`],
      {
        cwd: mkdtempSync(join(tmpdir(), 'cmn-help-')),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    try {
      await new Promise<void>((resolve, reject) => {
        p.stdout.on('data', (d) => {
          out += d;
          if (out.includes('"listening"')) resolve();
        });
        p.on('exit', () => reject(new Error(`exited: ${out}`)));
      });
    } finally {
      p.kill('SIGTERM');
    }
    const warn = out.split('\n').find((l) => l.includes('given on the command line'));
    expect(warn).toBeDefined();
    expect(warn).toContain('CERTMGR_NOTIFY_API_KEY');
    expect(out).not.toContain(key);
  });

  it('no warning when the key comes from the environment', async () => {
    const p = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--kube', 'off', '--store', 'sqlite::memory:'], {
      cwd: mkdtempSync(join(tmpdir(), 'cmn-help-')),
      env: { ...process.env, CERTMGR_NOTIFY_API_KEY: 'env-key-0123456789abcdef' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    try {
      await new Promise<void>((resolve, reject) => {
        p.stdout.on('data', (d) => {
          out += d;
          if (out.includes('"listening"')) resolve();
        });
        p.on('exit', () => reject(new Error(`exited: ${out}`)));
      });
    } finally {
      p.kill('SIGTERM');
    }
    expect(out).not.toContain('given on the command line');
  });

  it.each([
    [['--api-key', 'x'], ['--api-key']],
    [['--api-key=x', '--port', '1'], ['--api-key']],
    [['--service-api-key', 'x', '--api-keys-file', 'f'], ['--service-api-key']],
    [['--api-keys-file', 'f', '--api-key-file', 'p'], []],
  ])('secretFlagsInArgv(%j) = %j', (args, want) => {
    expect(secretFlagsInArgv(args)).toEqual(want);
  });

  it.each([
    [['--help'], true],
    [['-h'], true],
    [['--port', '1'], false],
    [['--helpful'], false],
  ])('wantsHelp(%j) = %s', (args, want) => {
    expect(wantsHelp(args)).toBe(want);
  });
});
