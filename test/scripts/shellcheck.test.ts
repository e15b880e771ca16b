/**
 * The repository's shell scripts pass shellcheck (Debian's package; `npm test` installs it as root, else names it:
 * scripts/preflight.ts). An int-tier test, as the unit tier runs no program but Node. A missing shellcheck
 * fails this test rather than skipping it: scripts/e2e-kind.sh runs only on machines with Docker, so static
 * checking is all CI can do for it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';

const run = promisify(execFile);
const SCRIPTS = readdirSync(join(REPO_ROOT, 'scripts'))
  .filter((f) => f.endsWith('.sh'))
  .map((f) => join('scripts', f));

/** shellcheck's findings as text ('' when clean); a missing shellcheck throws. */
async function shellcheck(args: string[]): Promise<string> {
  try {
    await run('shellcheck', ['--format=gcc', ...args], { cwd: REPO_ROOT });
    return '';
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stdout?: string };
    if (err.code === 'ENOENT')
      throw new Error('shellcheck is not installed: apt-get install -y shellcheck (as npm test does as root)', { cause: e });
    if (typeof err.stdout === 'string' && err.stdout) return err.stdout;
    throw e;
  }
}

describe('shell scripts', () => {
  it('includes scripts/e2e-kind.sh', () => {
    expect(SCRIPTS).toContain('scripts/e2e-kind.sh');
  });

  it('scripts/*.sh have no shellcheck warnings or errors', async () => {
    expect(await shellcheck(['--severity=warning', ...SCRIPTS])).toBe('');
  });

  it('scripts/e2e-kind.sh is clean at every severity (it is only ever checked, never run, here)', async () => {
    expect(await shellcheck(['scripts/e2e-kind.sh'])).toBe('');
  });

  it('reports a finding in a script that has one (the check can fail)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cmn-shellcheck-'));
    const bad = join(dir, 'bad.sh');
    writeFileSync(bad, '#!/usr/bin/env bash\nunused=1\n');
    expect(await shellcheck(['--severity=warning', bad])).toMatch(/SC2034/);
    rmSync(dir, { recursive: true, force: true });
  });
});
