#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx (no build step needed). The Node check comes first and
// imports nothing; everything else is imported after it.
import { requireNode } from '../scripts/node-version.mjs';
requireNode();
const { register } = await import('tsx/esm/api');
register();
await import('../src/cli/main.ts');
