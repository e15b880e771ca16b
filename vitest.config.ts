import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

// Tests that need a server (PostgreSQL, the built `serve` bundle, a kube-apiserver) or run for minutes. They form
// the `int` project, the only one with the global setup; everything else is `unit` and runs with no server.
const NEEDS_SERVERS = [
  'test/**/*.int.test.ts',
  'test/e2e/**/*.test.ts', // spawns the built bundle, PostgreSQL store, kube-apiserver
  'test/faults/**/*.test.ts', // kills and restarts processes and servers
  'test/fuzz/**/*.test.ts', // runs every property against SQLite and PostgreSQL
];

// Tests that run a system tool: the unit tier needs Node and node_modules only (test/support/unit-tier.ts refuses
// any other program there); scripts/preflight.ts installs or names the int tier's tools before `npm test` starts.
const NEEDS_TOOLS = [
  'test/scripts/shellcheck.test.ts', // shellcheck
  'test/emitter/inventory/der.test.ts', // the openssl CLI makes its certificates (node:crypto cannot)
  'test/emitter/inventory/facts.test.ts', // openssl (selfSigned)
  'test/admission/server.test.ts', // openssl (createTestCa)
  'test/kube/dispatcher.test.ts', // openssl (createTestCa)
];

export default defineConfig({
  resolve: {
    // Node resolves `graphql` to its CJS build (no "exports" map); vite would pick index.mjs for our sources
    // while graphql-http/graphql-request get the CJS one: two realms, "Cannot use GraphQLSchema from another module".
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Only the unit project runs on threads (below). Vitest builds each pool from these root options, so this is
    // where that pool loses its per-file isolation; the int project's forks stay one fresh process per file.
    // maxThreads: vitest's default for `run` is one worker fewer than cores, a single thread on 2 cores.
    poolOptions: { threads: { isolate: false, maxThreads: availableParallelism() } },
    // One JSON file for both projects: .ci/run counts passed/failed from it.
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results.json' },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [...NEEDS_SERVERS, ...NEEDS_TOOLS],
          setupFiles: ['test/support/unit-setup.ts'],
          // One worker thread imports each module once for all files instead of once per file in a fresh fork
          // (collecting was most of the run); a thread also starts faster than a process.
          pool: 'threads',
        },
      },
      {
        extends: true,
        test: { name: 'int', include: [...NEEDS_SERVERS, ...NEEDS_TOOLS], globalSetup: ['test/support/global-setup.ts'] },
      },
    ],
  },
});
