/**
 * Writes the CRD YAML generated from src/api to crds/<plural>.<group>.yaml and to the Helm chart's crds/.
 *   node --import tsx src/tools/gen-crds.ts            # write
 *   node --import tsx src/tools/gen-crds.ts --check    # exit 1 when a committed file differs (CI)
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KINDS } from '../api/index.js';
import { crdFileName, crdYaml } from '../api/crd.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CRD_DIRS = ['crds', 'charts/certmgr-notify/crds'] as const;

/** repo-relative path → content of every generated file. */
export function generatedCrdFiles(): Map<string, string> {
  const out = new Map<string, string>();
  for (const dir of CRD_DIRS) for (const k of KINDS) out.set(`${dir}/${crdFileName(k)}`, crdYaml(k));
  return out;
}

/** Files whose committed content differs from the generated one (missing files included). */
export function crdDrift(root = REPO_ROOT): string[] {
  const drift: string[] = [];
  for (const [rel, content] of generatedCrdFiles()) {
    let current: string | undefined;
    try {
      current = readFileSync(join(root, rel), 'utf8');
    } catch {
      current = undefined;
    }
    if (current !== content) drift.push(rel);
  }
  return drift;
}

function main(argv: string[]): number {
  if (argv.includes('--check')) {
    const drift = crdDrift();
    if (drift.length) {
      process.stderr.write(`CRDs drifted from src/api (run npm run gen:crds): ${drift.join(', ')}\n`);
      return 1;
    }
    return 0;
  }
  for (const [rel, content] of generatedCrdFiles()) {
    const path = join(REPO_ROOT, rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
    process.stdout.write(`wrote ${rel}\n`);
  }
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
