/** Limits the docs state are the code's: each quoted figure is read from the constant that enforces it. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEMPLATE_LIMITS } from '../../src/templates/engine.js';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';

const doc = (file: string) => readFileSync(join(REPO_ROOT, file), 'utf8');

/** The text from `heading` to the next heading of the same or a higher level. */
function section(md: string, heading: string): string {
  const start = md.indexOf(`\n${heading}\n`);
  expect(start, heading).toBeGreaterThan(-1);
  const level = /^#+/.exec(heading)![0];
  const rest = md.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^#{1,${level.length}} `, 'm'));
  return end === -1 ? rest : rest.slice(0, end);
}

const chars = (n: number) => n.toLocaleString('en-US');

describe('the generic webhook body limit in the docs', () => {
  const max = TEMPLATE_LIMITS.maxBodyChars;

  it('docs/integrations.md (GENERIC_WEBHOOK) states TEMPLATE_LIMITS.maxBodyChars and no other size', () => {
    const s = section(doc('docs/integrations.md'), '## GENERIC_WEBHOOK');
    const body = s.slice(s.indexOf('- Body:'), s.indexOf('- Headers:'));
    expect(body).toContain(`at most ${chars(max)} characters`);
    expect(body).toContain(`longer than ${max} characters`);
    expect(body).not.toMatch(/\d\s*(KiB|MiB|KB|MB|bytes)\b/);
  });

  it('docs/security.md (limits at a glance) states it', () => {
    const row = doc('docs/security.md')
      .split('\n')
      .find((l) => l.startsWith('- generic webhook rendered body'));
    expect(row).toContain(`${chars(max)} characters`);
    expect(row).toContain('TEMPLATE_LIMITS.maxBodyChars');
  });

  it('docs/templates.md states it', () => {
    expect(doc('docs/templates.md')).toContain(`a body over ${chars(max)} characters`);
  });
});
