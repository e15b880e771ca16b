/** `certmgr-notify template render` (src/cli/template-render.ts): preview without a server. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { templateRenderCommand } from '../../src/cli/template-render.js';
import { issuerNotReady } from '../fixtures/events.js';

let dir: string;
const files: Record<string, string> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'template-render-'));
  const write = async (name: string, content: string) => {
    files[name] = join(dir, name);
    await writeFile(files[name], content);
  };
  await write('event.json', JSON.stringify(issuerNotReady({ issuerName: 'le-prod' })));
  await write(
    'cr.yaml',
    toYaml({
      apiVersion: 'notify.certmgr.io/v1alpha1',
      kind: 'NotificationTemplate',
      metadata: { name: 'ops' },
      spec: {
        parts: {
          default: { title: '{{ event.data.issuerName }} down', text: 'via {{ router.name }}' },
          SLACK: { text: ':fire: {{ cluster.name }}' },
        },
      },
    }),
  );
  await write('link.json', JSON.stringify({ parts: { default: { text: '{{ consoleUrl | default: "none" }}' } } }));
  await write('parts.json', JSON.stringify({ TEAMS: { title: '{{ integration.name }}' } }));
  await write('bad.yaml', toYaml({ parts: { SLACK: { text: 'line 1\n{{ x | nope }}' } } }));
  await write('bomb.json', JSON.stringify({ parts: { default: { text: '{% for i in (1..100000000) %}x{% endfor %}' } } }));
  const doubling = '{% assign s = "Ā" %}{% for i in (1..27) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}{{ s }}';
  await write('doubling.json', JSON.stringify({ parts: { default: { title: doubling } } }));
  await write('bad-event.json', JSON.stringify({ type: 'evt.nope', data: {} }));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await templateRenderCommand(argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('template render', () => {
  it('renders a NotificationTemplate resource for one type', async () => {
    const r = await run('--template', files['cr.yaml']!, '--event', files['event.json']!, '--type', 'SLACK', '--router-name', 'prod');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ SLACK: { title: 'le-prod down', text: `:fire: ${String(issuerNotReady().data.clusterName)}` } });
  });

  it('renders every type by default; bare parts work too', async () => {
    const r = await run('--template', files['parts.json']!, '--event', files['event.json']!, '--integration-name', 'ops-teams');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as Record<string, unknown>;
    expect(out['TEAMS']).toEqual({ title: 'ops-teams' });
    expect(out['SLACK']).toEqual({});
    expect(Object.keys(out)).toContain('INCIDENT_MGMT');
  });

  it('--public-url sets consoleUrl as the hub does; without it consoleUrl is null', async () => {
    const withUrl = await run(
      '--template',
      files['link.json']!,
      '--event',
      files['event.json']!,
      '--type',
      'SLACK',
      '--public-url',
      'https://notify.example.com/',
    );
    expect(withUrl.code).toBe(0);
    expect(JSON.parse(withUrl.out)).toEqual({ SLACK: { text: 'https://notify.example.com/ui/#/health' } });
    const without = await run('--template', files['link.json']!, '--event', files['event.json']!, '--type', 'SLACK');
    expect(JSON.parse(without.out)).toEqual({ SLACK: { text: 'none' } });
  });

  it('a part that does not compile: exit 2 with field and position', async () => {
    const r = await run('--template', files['bad.yaml']!, '--event', files['event.json']!);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/parts\.SLACK\.text: line 2, column 1: undefined filter: nope/);
  });

  it('a render failure: exit 1', async () => {
    const r = await run('--template', files['bomb.json']!, '--event', files['event.json']!, '--type', 'EMAIL');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^EMAIL: memory alloc limit exceeded/);
  });

  it('a capture doubled in a loop: a render failure at the output limit (exit 1), not a crash', async () => {
    const r = await run('--template', files['doubling.json']!, '--event', files['event.json']!, '--type', 'SLACK');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^SLACK: output limit exceeded/);
  });

  it.each([
    [['--event', 'x'], /missing --template/],
    [['--template', 'x'], /missing --event/],
    [['--template', 'x', '--event', 'y', '--type', 'FAX'], /unknown --type "FAX"/],
    [['--template', '/nonexistent/t.yaml', '--event', 'y'], /cannot read template file/],
    [['--bogus'], /Unknown option/],
    [['--template', 'x', '--event', 'y', '--public-url', 'ftp://x'], /--public-url must be an http\(s\) URL, got 'ftp:\/\/x'/],
    [['--template', 'x', '--event', 'y', '--public-url', 'https://u:p@x'], /--public-url must not carry credentials/],
  ])('usage errors: %j', async (argv, msg) => {
    const r = await run(...argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(msg);
  });

  it('an invalid event: exit 2', async () => {
    const r = await run('--template', files['parts.json']!, '--event', files['bad-event.json']!);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/invalid event/);
  });

  it('--help', async () => {
    const r = await run('--help');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/usage: certmgr-notify template render/);
  });
});
