/**
 * The unit tier's guard: it starts Node and nothing else, so a test there that needs a system tool fails on every
 * machine, not only on a fresh one that lacks the tool.
 */
import { execFile, execFileSync, execSync, spawn, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { refusal } from './unit-tier.js';

const NODE = '/opt/node/bin/node';

describe('refusal', () => {
  it.each([
    ['Node by its path', NODE, undefined],
    ['Node by name', 'node', undefined],
    ['Node at another path', '/usr/local/bin/node', undefined],
    ['not a string (child_process reports it)', undefined, undefined],
  ])('%s: allowed', (_what, command, expected) => {
    expect(refusal(command, NODE)).toBe(expected);
  });

  it.each([
    ['a tool by name', 'shellcheck', '"shellcheck"'],
    ['a tool by path', '/usr/bin/openssl', '"/usr/bin/openssl"'],
    ['a shell', 'bash', '"bash"'],
    ['a command line', 'node -e 1', 'a shell command line'],
    ['a pipeline', 'openssl|cat', 'a shell command line'],
  ])('%s: refused, naming it and where the test belongs', (_what, command, named) => {
    const why = refusal(command, NODE);
    expect(why).toContain(named);
    expect(why).toContain('*.int.test.ts');
  });
});

describe('the guard in this tier', () => {
  const message = /the unit tier starts no programs but Node, and this test starts "openssl"/;

  it('refuses every way of starting a program, before the program runs', async () => {
    expect(() => execFileSync('openssl', ['version'])).toThrow(message);
    expect(() => spawnSync('openssl', ['version'])).toThrow(message);
    expect(() => spawn('openssl', ['version'])).toThrow(message);
    expect(() => execFile('openssl', ['version'], () => {})).toThrow(message);
    expect(() => execSync('openssl version')).toThrow(/a shell command line/);
    await expect(async () => promisify(execFile)('openssl', ['version'])).rejects.toThrow(message);
  });

  it('lets a test start Node, and promisify(execFile) still gives stdout and stderr', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['-e', 'console.log(1); console.error(2)']);
    expect({ stdout, stderr }).toEqual({ stdout: '1\n', stderr: '2\n' });
  });
});
