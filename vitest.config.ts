import { createRequire } from 'node:module';
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
    // One JSON file for both projects: .ci/run counts passed/failed from it.
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results.json' },
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: NEEDS_SERVERS },
      },
      {
        extends: true,
        test: { name: 'int', include: NEEDS_SERVERS, globalSetup: ['test/support/global-setup.ts'] },
      },
    ],
  },
});
