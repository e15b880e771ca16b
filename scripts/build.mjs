#!/usr/bin/env node
/**
 * Builds the shipped binary: one ESM file with every dependency bundled (esbuild), plus the GraphQL schema it
 * reads at start-up. `node dist/certmgr-notify.mjs serve` starts in under a second where `bin/certmgr-notify.js`
 * (tsx, transpiling on load) takes 2.5–4 s: that is the pod's restart time and the fault suite's restart cost.
 * Also builds the web console (src/console, docs/console.md) into `<outdir>/ui`, which the hub serves at /ui.
 *
 *   node scripts/build.mjs [outdir] [--console-only]     (default: dist)
 */
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { nodeVersionProblem } from './node-version.mjs';

const root = resolve(import.meta.dirname, '..');

/**
 * The bundle's first statements: the Node check of scripts/node-version.mjs, before any bundled module runs (the
 * bundle imports only Node's built-in modules, which load on an older Node too).
 */
export const NODE_CHECK_BANNER = `{ const problem = (${nodeVersionProblem})(process.version); if (problem) { process.stderr.write(problem + '\\n'); process.exit(2); } }`;

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
    // V8 keeps a script's source in memory for lazy compilation: without indentation and comments it is 7.8 MB
    // instead of 13 (11 MiB less RSS per process, bench/scale.ts). Names are kept (no identifier minification),
    // so stack traces still name their functions; the linked source map gives their lines.
    minifyWhitespace: true,
    logLevel: 'warning',
    // Bundled CommonJS dependencies call require(); give the ESM file one.
    banner: {
      js: `${NODE_CHECK_BANNER}\nimport { createRequire as __cmnRequire } from 'node:module'; const require = __cmnRequire(import.meta.url);`,
    },
  });
  asciiOnly(outfile);
  // src/http/graphql/schema.ts reads it next to itself: in the bundle that is the bundle's directory.
  copyFileSync(join(root, 'src/http/graphql/schema.graphql'), join(outdir, 'schema.graphql'));
  return outfile;
}

/**
 * The bundle's few non-ASCII characters (regular expression literals of dependencies, which esbuild does not
 * escape) as \uXXXX escapes: V8 keeps a script's source for lazy compilation, and one such character makes the
 * whole source a two-byte string, twice its size in every process (13 MiB before minifyWhitespace; bench/scale.ts,
 * docs/performance.md "Scale").
 * Only lines holding one shift in columns (the source map's); escapeNonAscii says where the escape is safe.
 */
function asciiOnly(file) {
  const src = readFileSync(file, 'utf8');
  const out = escapeNonAscii(src);
  if (out !== src) writeFileSync(file, out);
}

/**
 * `src` with each code unit above ASCII as a \uXXXX escape. esbuild already escapes strings, templates and
 * identifiers (its charset is ASCII), so what is left sits in regular expressions and comments, where the escape
 * means the same character. Two cases where it would not are refused, so a dependency that brings one fails the
 * build instead of changing meaning: a character right after a backslash (`/\é/` would become a literal `\u00e9`)
 * and a character outside the BMP (two escapes: a syntax error in an identifier, two units in a regex class).
 */
export function escapeNonAscii(src) {
  // eslint-disable-next-line no-control-regex -- a backslash before, or a surrogate: every code unit above ASCII
  const risky = /\\[^\u0000-\u007f]|[\ud800-\udfff]/.exec(src);
  if (risky) throw new Error(`build: cannot escape the non-ASCII text at offset ${risky.index} of the bundle without changing its meaning`);
  // eslint-disable-next-line no-control-regex -- every code unit above ASCII
  return src.replace(/[^\u0000-\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Bundles the console (src/console/main.tsx, Preact + Pico CSS) into `<outdir>/ui/`: index.html and content-hashed
 * files under assets/ (so they can be cached for long while index.html is not). Nothing inline: the hub's CSP
 * allows scripts and styles from files only. Returns the ui directory.
 */
export async function buildConsole(outdir = join(root, 'dist')) {
  const ui = join(outdir, 'ui');
  rmSync(ui, { recursive: true, force: true }); // old hashed files would pile up
  const assets = join(ui, 'assets');
  const src = join(root, 'src/console');
  const result = await build({
    entryPoints: [join(src, 'main.tsx')],
    outdir: assets,
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022', 'chrome111', 'firefox111', 'safari16.4'],
    minify: true,
    sourcemap: 'linked',
    tsconfig: join(src, 'tsconfig.json'),
    jsx: 'automatic',
    jsxImportSource: 'preact',
    define: { 'process.env.NODE_ENV': '"production"' },
    metafile: true,
    logLevel: 'warning',
  });
  const entry = Object.entries(result.metafile.outputs).find(([, o]) => o.entryPoint !== undefined);
  if (!entry || !entry[1].cssBundle) throw new Error('console build: no entry script or stylesheet in the output');
  const url = (file) => `/ui/assets/${basename(file)}`;
  const tags = [
    `<link rel="stylesheet" href="${url(entry[1].cssBundle)}" />`,
    `<script type="module" src="${url(entry[0])}"></script>`,
  ].join('\n    ');
  const html = readFileSync(join(src, 'index.html'), 'utf8');
  if (!html.includes('<!-- assets -->')) throw new Error('src/console/index.html: the <!-- assets --> marker is missing');
  writeFileSync(join(ui, 'index.html'), html.replace('<!-- assets -->', tags));
  copyFileSync(join(src, 'favicon.svg'), join(ui, 'favicon.svg'));
  return ui;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const dir = args.find((a) => !a.startsWith('--'));
  const outdir = dir ? resolve(dir) : undefined;
  if (!args.includes('--console-only')) console.log(`built ${relative(process.cwd(), await buildBinary(outdir))}`);
  console.log(`built ${relative(process.cwd(), await buildConsole(outdir))}/`);
}
