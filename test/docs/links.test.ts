/**
 * Every relative link of the README and docs/ names a file that exists, and a `#fragment` names a heading of the
 * Markdown page it points to (a doc moved, a section renamed or never written is caught here).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';

const files = [
  'README.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** [text](target) outside code spans and fences; absolute URLs are left out. Targets keep their `#fragment`. */
function relativeTargets(md: string): string[] {
  const prose = md.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** The files a page links to (fragments dropped, pure anchors left out). */
function relativeLinks(md: string): string[] {
  return relativeTargets(md)
    .filter((t) => !t.startsWith('#'))
    .map((t) => decodeURIComponent(t.split('#')[0]!));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, … */
function headingAnchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of md.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** `file#fragment` targets (and `#fragment` of the page itself) whose fragment is no heading of that Markdown page. */
function brokenAnchors(file: string): string[] {
  const base = dirname(resolve(REPO_ROOT, file));
  return relativeTargets(readFileSync(join(REPO_ROOT, file), 'utf8'))
    .filter((t) => t.includes('#'))
    .filter((t) => {
      const [path, fragment] = t.split('#') as [string, string];
      const target = path ? resolve(base, decodeURIComponent(path)) : resolve(REPO_ROOT, file);
      if (!target.endsWith('.md') || !existsSync(target)) return false;
      return !headingAnchors(readFileSync(target, 'utf8')).has(decodeURIComponent(fragment));
    })
    .map((t) => `${relative(REPO_ROOT, resolve(base))}: ${t}`);
}

describe('documentation links', () => {
  it.each(files)('%s links only to files that exist', (file) => {
    const base = dirname(resolve(REPO_ROOT, file));
    const missing = relativeLinks(readFileSync(join(REPO_ROOT, file), 'utf8')).filter((t) => !existsSync(resolve(base, t)));
    expect(missing).toEqual([]);
  });

  it.each(files)('%s links only to headings that exist', (file) => {
    expect(brokenAnchors(file)).toEqual([]);
  });

  it('finds links (the check itself works)', () => {
    expect(relativeLinks('see [a](docs/a.md#x), `[b](c.md)`, [web](https://x.y) and [top](#top)')).toEqual(['docs/a.md']);
  });

  it('names headings as GitHub does', () => {
    const md =
      '# Flags\n## `certmgr-notify agent`\n### GraphQL: `POST /graphql`\n## Event data (the spec’s fields)\n## A\n## A\n```\n# not a heading\n```';
    expect([...headingAnchors(md)]).toEqual([
      'flags',
      'certmgr-notify-agent',
      'graphql-post-graphql',
      'event-data-the-specs-fields',
      'a',
      'a-1',
    ]);
  });
});
