#!/usr/bin/env node
/**
 * Builds the shipped binary: one ESM file with every dependency bundled (esbuild), plus the GraphQL schema it
 * reads at start-up. `node dist/certmgr-notify.mjs serve` starts in under a second where `bin/certmgr-notify.js`
 * (tsx, transpiling on load) takes 2.5–4 s: that is the pod's restart time and the fault suite's restart cost.
 *
 *   node scripts/build.mjs [outdir]     (default: dist)
 */
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');

/** Bundles src/cli/main.ts into `<outdir>/certmgr-notify.mjs`; returns that path. */
export async function buildBinary(outdir = join(root, 'dist')) {
  mkdirSync(outdir, { recursive: true });
  const outfile = join(outdir, 'certmgr-notify.mjs');
  await build({
    entryPoints: [join(root, 'src/cli/main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    sourcemap: 'linked',
    logLevel: 'warning',
    // Bundled CommonJS dependencies call require(); give the ESM file one.
    banner: { js: "import { createRequire as __cmnRequire } from 'node:module'; const require = __cmnRequire(import.meta.url);" },
  });
  // src/http/graphql/schema.ts reads it next to itself: in the bundle that is the bundle's directory.
  copyFileSync(join(root, 'src/http/graphql/schema.graphql'), join(outdir, 'schema.graphql'));
  return outfile;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = await buildBinary(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(`built ${out}`);
}
