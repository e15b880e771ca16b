import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/limits.js';
import { RESYNC_REQUIRED } from '../../src/model/inventory.js';

const API = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
const DOC = readFileSync(new URL('../../docs/inventory.md', import.meta.url), 'utf8');
const FLAGS = readFileSync(new URL('../../docs/flags.md', import.meta.url), 'utf8');

describe('inventory documentation', () => {
  it('the error table (docs/api.md) lists RESYNC_REQUIRED (409) and the inventory quota (429)', () => {
    expect(API).toMatch(new RegExp(`\\|\\s*409\\s*\\|\\s*\`${RESYNC_REQUIRED}\`\\s*\\|`));
    expect(API).toMatch(/\|\s*429\s*\|\s*`QUOTA_EXCEEDED`\s*\|/);
  });
  it('the inventory limits are in the limits file reference (docs/flags.md) and docs/inventory.md', () => {
    for (const k of ['maxClustersPerCompany', 'maxCertificatesPerCompany', 'clusterSilenceAfter']) {
      expect(LIMITS.map((x) => x.key)).toContain(k);
      expect(FLAGS).toMatch(new RegExp(`^- \`${k}\` \\(`, 'm'));
      expect(DOC).toContain(k);
    }
  });
});
