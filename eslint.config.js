// ESLint flat config. Rules are chosen for bugs, not taste (Prettier owns layout; eslint-config-prettier turns off
// the rules that would fight it). Type-aware: the few rules that catch real async/type bugs, on top of the
// non-type-checked recommended sets (the full recommended-type-checked set costs minutes on this repo's 2 cores).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'data/', '.tools/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['vitest.config.ts'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A promise nobody awaits loses its rejection (unhandled rejection = process exit on Node 24).
      '@typescript-eslint/no-floating-promises': 'error',
      // An async function where a void callback is expected (event handlers, forEach) drops its errors.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/await-thenable': 'error',
      // `_`-prefixed names are deliberately unused (positional parameters, destructuring to omit a field).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Plain Node scripts (bin/, scripts/, config files): Node's globals, no type information.
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly' },
    },
  },
  prettier,
);
