/** A limits file for a test's `serve`: `...limitsFile({ deliveryRetryBase: '50ms' })` in its arguments. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { LimitKey } from '../../src/limits.js';

export function limitsFile(limits: Partial<Record<LimitKey, string | number>>): string[] {
  const path = join(mkdtempSync(join(tmpdir(), 'cmn-limits-')), 'limits.yaml');
  writeFileSync(path, stringify(limits));
  return ['--limits-file', path];
}
