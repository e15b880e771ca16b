/** The built bundle (what the image runs) started by a Node older than 24: exit 2 saying what it needs. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serviceBinary } from '../support/binary.js';
import { NO_OLDER_NODE, olderNode } from '../support/older-node.js';

const old = olderNode();
const dir = mkdtempSync(join(tmpdir(), 'node-version-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!old)(`the bundle started by an older Node (${old?.path ?? NO_OLDER_NODE})`, () => {
  it.each([['serve'], ['help']])('%s exits 2 saying what it needs, before any bundled module runs', (cmd) => {
    const bin = serviceBinary();
    expect(bin).toMatch(/certmgr-notify\.mjs$/); // the global setup built it
    const r = spawnSync(old!.path, [bin, cmd], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect({ status: r.status, stderr: r.stderr, stdout: r.stdout }).toEqual({
      status: 2,
      stderr: `certmgr-notify needs Node 24 (found ${old!.version}); use npm start or the image\n`,
      stdout: '',
    });
  });
});
