/**
 * The Node check (scripts/node-version.mjs): started by a Node older than 24, bin/certmgr-notify.js and the
 * bundle's first statements (scripts/build.mjs NODE_CHECK_BANNER) exit 2 saying what they need, before anything
 * that would crash is imported. Runs an older Node found on the machine (the system one; in CI there is one).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without type declarations
import { NODE_CHECK_BANNER } from '../../scripts/build.mjs';
import { NO_OLDER_NODE, nodeProblemOf, olderNode } from '../support/older-node.js';

const BIN = join(import.meta.dirname, '../../bin/certmgr-notify.js');

const old = olderNode();
const dir = mkdtempSync(join(tmpdir(), 'node-version-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('nodeVersionProblem', () => {
  it.each([
    ['v20.20.2', 'certmgr-notify needs Node 24 (found v20.20.2); use npm start or the image'],
    ['v18.0.0', 'certmgr-notify needs Node 24 (found v18.0.0); use npm start or the image'],
    ['v23.11.1', 'certmgr-notify needs Node 24 (found v23.11.1); use npm start or the image'],
    ['v24.0.0', null],
    ['v24.21.0', null],
    ['v25.2.1', null],
    ['not a version', 'certmgr-notify needs Node 24 (found not a version); use npm start or the image'],
  ])('%s → %s', (version, want) => {
    expect(nodeProblemOf(version)).toBe(want);
  });
});

describe.skipIf(!old)(`started by an older Node (${old?.path ?? NO_OLDER_NODE})`, () => {
  const expected = `certmgr-notify needs Node 24 (found ${old?.version ?? ''}); use npm start or the image\n`;

  it.each([['serve'], ['help'], ['cel eval --help']])('bin/certmgr-notify.js %s exits 2 saying what it needs', (args) => {
    const r = spawnSync(old!.path, [BIN, ...args.split(' ')], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect({ status: r.status, stderr: r.stderr, stdout: r.stdout }).toEqual({ status: 2, stderr: expected, stdout: '' });
  });

  it("the bundle's banner exits 2 before the bundled code runs; on Node 24 it goes on", () => {
    const file = join(dir, 'bundle.mjs');
    writeFileSync(file, `${NODE_CHECK_BANNER as string}\nprocess.stdout.write('past the check');\n`);
    const r = spawnSync(old!.path, [file], { encoding: 'utf8' });
    expect({ status: r.status, stderr: r.stderr, stdout: r.stdout }).toEqual({ status: 2, stderr: expected, stdout: '' });
    const current = spawnSync(process.execPath, [file], { encoding: 'utf8' });
    expect({ status: current.status, stdout: current.stdout }).toEqual({ status: 0, stdout: 'past the check' });
  });
});
