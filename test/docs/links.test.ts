/** Every relative link of the README and docs/ names a file that exists (a doc moved or never written is caught here). */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';

const files = [
  'README.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** [text](target) outside code spans and fences; absolute URLs and pure anchors are left out. */
function relativeLinks(md: string): string[] {
  const prose = md.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#'))
    .map((t) => decodeURIComponent(t.split('#')[0]!));
}

describe('documentation links', () => {
  it.each(files)('%s links only to files that exist', (file) => {
    const base = dirname(resolve(REPO_ROOT, file));
    const missing = relativeLinks(readFileSync(join(REPO_ROOT, file), 'utf8')).filter((t) => !existsSync(resolve(base, t)));
    expect(missing).toEqual([]);
  });

  it('finds links (the check itself works)', () => {
    expect(relativeLinks('see [a](docs/a.md#x), `[b](c.md)`, [web](https://x.y) and [top](#top)')).toEqual(['docs/a.md']);
  });
});
