/**
 * examples/events/: one event per type a client may post, each accepted by `POST /v1/events` as it is (through
 * the route's own parser), and every documented `cel eval` / `template render` command that names an example file
 * (usage texts, examples/ READMEs and comments, README.md, docs/) runs as documented: exit 0, and the printed
 * `true` / `false` a `# true` comment promises.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CEL_EVAL_USAGE, celEvalCommand, type CommandIo } from '../../src/cli/cel-eval.js';
import { templateRenderCommand } from '../../src/cli/template-render.js';
import { TEMPLATE_RENDER_USAGE } from '../../src/cli/usage.js';
import { EVENT_FAMILIES } from '../../src/events/families.js';
import { parseEvents } from '../../src/ingest/parse.js';

const ROOT = join(import.meta.dirname, '../..');
const DIR = join(ROOT, 'examples/events');
const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
const read = (f: string): unknown => JSON.parse(readFileSync(join(DIR, f), 'utf8'));

describe('examples/events/', () => {
  it.each(files)('%s is accepted by POST /v1/events as it is', (f) => {
    const [event] = parseEvents(read(f));
    expect(event).toEqual(read(f));
  });

  it("one file per type of the spec's families, which are the types a client may post", () => {
    const clientTypes = EVENT_FAMILIES.filter((f) => f.origin === 'spec').flatMap((f) => f.types);
    expect(clientTypes).toHaveLength(5);
    const types = files.map((f) => (read(f) as { type: string }).type);
    expect([...types].sort()).toEqual([...clientTypes].sort());
  });

  it('its README names every file', () => {
    const readme = readFileSync(join(DIR, 'README.md'), 'utf8');
    for (const f of files) expect(readme).toContain(`\`${f}\``);
    expect(readme).toMatch(/curl .*\/v1\/events .*--data @examples\/events\/[a-z-]+\.json/);
  });
});

// ---- the documented commands ------------------------------------------------------------------------------------

interface Documented {
  where: string;
  command: 'cel eval' | 'template render';
  args: string[];
  /** `# true` / `# false` after a cel eval command */
  prints?: string;
}

const COMMAND =
  /(?:^|\s|\$ )(?:certmgr-notify|\.\/bin\/certmgr-notify\.js|npm run (?:-s )?cli --) (cel eval|template render) (.*?)(?:\s+#\s*(\S+))?\s*$/;

/** Splits a shell command line into words: single quotes literal, double quotes with \" and \\ escapes. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let cur: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unclosed ' in: ${line}`);
      cur = (cur ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      cur ??= '';
      for (i++; i < line.length && line[i] !== '"'; i++) cur += line[i] === '\\' && /["\\]/.test(line[i + 1] ?? '') ? line[++i] : line[i];
      if (i >= line.length) throw new Error(`unclosed " in: ${line}`);
    } else if (/\s/.test(c)) {
      if (cur !== null) words.push(cur);
      cur = null;
    } else cur = (cur ?? '') + c;
  }
  if (cur !== null) words.push(cur);
  return words;
}

/** The commands of a text: whole lines (code blocks, comments) and inline code spans; a `<placeholder>` is no command. */
function documentedIn(where: string, text: string): Documented[] {
  const out: Documented[] = [];
  const spans = (line: string) => (line.includes('`') ? [...line.matchAll(/`([^`]+)`/g)].map((m) => m[1]!) : [line]);
  for (const command of text.split('\n').flatMap(spans)) {
    if (!command.includes('examples/events/') || /<[a-z-]+>/.test(command)) continue;
    const m = COMMAND.exec(command);
    if (!m) continue;
    const d: Documented = { where, command: m[1] as Documented['command'], args: shellWords(m[2]!) };
    if (m[3] === 'true' || m[3] === 'false') d.prints = m[3];
    out.push(d);
  }
  return out;
}

function markdownUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md') && !f.includes('node_modules'))
    .map((f) => join(dir, f));
}

const sources: [string, string][] = [
  ['cel eval --help', CEL_EVAL_USAGE],
  ['template render --help', TEMPLATE_RENDER_USAGE],
  ...[
    join(ROOT, 'README.md'),
    ...markdownUnder(join(ROOT, 'docs')),
    ...markdownUnder(join(ROOT, 'examples')),
    join(ROOT, 'examples/templates/ops.yaml'),
  ].map((f): [string, string] => [relative(ROOT, f), readFileSync(f, 'utf8')]),
];
const documented = sources.flatMap(([where, text]) => documentedIn(where, text));

async function run(d: Documented): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CommandIo = { out: (s) => out.push(s), err: (s) => err.push(s) };
  // the commands are written for the repository root
  const args = d.args.map((a) => (a.startsWith('examples/') ? join(ROOT, a) : a));
  const code = d.command === 'cel eval' ? await celEvalCommand(args, io) : await templateRenderCommand(args, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('the documented commands on examples/events/', () => {
  it('the usage texts and the README of examples/events/ show them: cel eval on every file, and template render', () => {
    const where = (w: string) => documented.filter((d) => d.where === w);
    expect(where('cel eval --help').length).toBeGreaterThan(0);
    expect(where('template render --help').length).toBeGreaterThan(0);
    const readme = where('examples/events/README.md');
    const celFiles = readme.filter((d) => d.command === 'cel eval').map((d) => d.args[d.args.indexOf('--event') + 1]);
    expect(new Set(celFiles)).toEqual(new Set(files.map((f) => `examples/events/${f}`)));
    expect(readme.some((d) => d.command === 'template render')).toBe(true);
  });

  it.each(documented.map((d) => [d.where, `${d.command} ${d.args.join(' ')}`, d] as const))('%s: %s', async (_where, _cmd, d) => {
    const r = await run(d);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    if (d.prints !== undefined) expect(r.out).toBe(d.prints);
    if (d.command === 'template render') expect(Object.values(JSON.parse(r.out) as object).length).toBeGreaterThan(0);
  });
});

describe('shellWords', () => {
  it.each([
    [`--expr "type.endsWith('.notready')" --event a.json`, ['--expr', "type.endsWith('.notready')", '--event', 'a.json']],
    [`--expr 'data.x == "y"'`, ['--expr', 'data.x == "y"']],
    [`--expr "a \\"b\\" c"  x`, ['--expr', 'a "b" c', 'x']],
    [`--expr ''`, ['--expr', '']],
  ])('%s', (line, words) => {
    expect(shellWords(line)).toEqual(words);
  });
});
