/**
 * globalSetup piece: builds the shipped single-file binary (scripts/build.mjs) into a temporary directory once per
 * run and exports its path as CERTMGR_NOTIFY_TEST_BIN, so tests that spawn `serve` run what the image runs and
 * restart in ~1 s instead of tsx's 2.5–4 s (the fault suite restarts it ~60 times).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: a plain .mjs build script without type declarations
import { buildBinary } from '../../scripts/build.mjs';

export async function setupBinary(): Promise<() => Promise<void>> {
  if (process.env.CERTMGR_NOTIFY_TEST_BIN) return async () => {};
  const dir = mkdtempSync(join(tmpdir(), 'cmn-bin-'));
  process.env.CERTMGR_NOTIFY_TEST_BIN = await (buildBinary as (outdir: string) => Promise<string>)(dir);
  return async () => {
    delete process.env.CERTMGR_NOTIFY_TEST_BIN;
    rmSync(dir, { recursive: true, force: true });
  };
}

/** The `serve` binary for spawned processes: the built bundle when the global setup made one, else the tsx entry. */
export function serviceBinary(): string {
  return process.env.CERTMGR_NOTIFY_TEST_BIN ?? join(import.meta.dirname, '../../bin/certmgr-notify.js');
}
