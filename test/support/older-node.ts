/** A Node older than 24 on this machine, for the tests of the Node check (scripts/node-version.mjs). */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
// @ts-expect-error: a plain .mjs script without type declarations
import { nodeVersionProblem } from '../../scripts/node-version.mjs';

export const nodeProblemOf = nodeVersionProblem as (version: string, needed?: number) => string | null;

/** CERTMGR_NOTIFY_OLD_NODE, else the usual system paths: the first whose version is older than 24. */
export function olderNode(): { path: string; version: string } | undefined {
  const candidates = [process.env['CERTMGR_NOTIFY_OLD_NODE'], '/usr/bin/node', '/usr/local/bin/node'];
  for (const path of candidates) {
    if (!path || !existsSync(path)) continue;
    const r = spawnSync(path, ['--version'], { encoding: 'utf8' });
    const version = r.stdout?.trim() ?? '';
    if (r.status === 0 && nodeProblemOf(version) !== null) return { path, version };
  }
  return undefined;
}

export const NO_OLDER_NODE = 'no Node older than 24 found: set CERTMGR_NOTIFY_OLD_NODE to one';
