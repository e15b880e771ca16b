import { describe, expect, it } from 'vitest';
import {
  compileSource,
  compileTemplate,
  renderTemplate,
  TEMPLATE_LIMITS,
  TemplateRenderError,
  type CompiledTemplate,
} from '../../src/templates/engine.js';
import { templateVariables } from '../../src/templates/variables.js';
import type { Notification } from '../../src/integrations/types.js';
import type { IntegrationRecord, TemplateParts } from '../../src/store/types.js';
import { expiringCertificate, issuerNotReady, CLUSTER_PROD } from '../fixtures/events.js';

const integration: IntegrationRecord = {
  id: '11111111-1111-4111-8111-111111111111',
  companyId: 'c',
  name: 'ops-slack',
  type: 'SLACK',
  enabled: true,
  config: {},
  secrets: {},
  managedBy: null,
  createdAt: 0,
  updatedAt: 0,
};

function notification(over: Partial<Notification> = {}): Notification {
  return {
    id: 'd1',
    eventId: 'e1',
    event: issuerNotReady(),
    occurredAt: Date.UTC(2026, 0, 2, 3, 4, 5),
    router: { id: 'r1', name: 'prod-issuers' },
    integration,
    attempt: 1,
    ...over,
  };
}

async function renderOne(src: string, vars: object = templateVariables(notification())): Promise<string> {
  const c = compileTemplate({ default: { text: src } });
  if (!c.ok) throw new Error(c.issue.message);
  return (await renderTemplate(c.template, 'SLACK', vars)).text ?? '';
}

describe('template engine: sandbox', () => {
  it.each([
    ['{{ constructor }}', ''],
    ['{{ event.constructor }}', ''],
    ['{{ event.constructor.name }}', ''],
    ['{{ event.type.constructor }}', ''],
    ['{{ event.__proto__ }}', ''],
    ['{{ event["__proto__"].constructor }}', ''],
    ['{{ router.toString }}', ''],
    ['{{ unknown.deeply.nested }}', ''],
  ])('%s renders nothing', async (src, want) => {
    expect(await renderOne(src)).toBe(want);
  });

  it.each([
    ['{% include "secrets" %}', 'include'],
    ['x\n  {% render "a" %}', 'render'],
    ['{% layout "base" %}', 'layout'],
  ])('%s is refused at compile time with its position', (src, tag) => {
    const r = compileSource(src);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.message).toContain(`tag "${tag}" is not allowed`);
    expect(r.line).toBe(src.startsWith('x\n') ? 2 : 1);
  });

  it.each([
    ['{{ x | nope }}', 'undefined filter: nope', 1, 1],
    ['ok\nline two {% if %}', 'invalid value expression', 2, 15],
    ['{% for x in y %}', 'not closed', 1, 1],
    ['{{ a', 'not closed', 1, 1],
  ])('%j does not compile: %s at %i:%i', (src, msg, line, column) => {
    const r = compileSource(src);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.message).toContain(msg);
    expect([r.line, r.column]).toEqual([line, column]);
  });

  it('refuses a source over the size limit', () => {
    const r = compileSource('x'.repeat(TEMPLATE_LIMITS.maxPartChars + 1));
    expect(r.ok).toBe(false);
    expect(compileSource('x'.repeat(TEMPLATE_LIMITS.maxPartChars)).ok).toBe(true);
  });

  it('names the part and field of the first error', () => {
    const r = compileTemplate({ default: { title: 'ok' }, SLACK: { title: 'fine', text: 'a\n{{ b | nope }}' } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.issue).toMatchObject({ key: 'SLACK', field: 'text', line: 2, column: 1 });
  });
});

describe('template engine: bounded output', () => {
  it('a huge loop stops at the memory limit (a render error, not a hang)', async () => {
    await expect(renderOne('{% for i in (1..100000000) %}x{% endfor %}')).rejects.toBeInstanceOf(TemplateRenderError);
  });

  it('doubling a string stops at the memory limit', async () => {
    await expect(
      renderOne('{% assign s = "x" %}{% for i in (1..40) %}{% assign s = s | append: s %}{% endfor %}{{ s }}'),
    ).rejects.toBeInstanceOf(TemplateRenderError);
  });

  it('truncates a long title and text', async () => {
    const c = compileTemplate({ default: { title: '{{ s }}', text: '{{ s }}{{ s }}' } });
    if (!c.ok) throw new Error(c.issue.message);
    const out = await renderTemplate(c.template, 'EMAIL', { s: 'ab'.repeat(9000) });
    expect(Array.from(out.title ?? '')).toHaveLength(TEMPLATE_LIMITS.maxTitleChars);
    expect(out.title?.endsWith('…')).toBe(true);
    expect(Array.from(out.text ?? '')).toHaveLength(TEMPLATE_LIMITS.maxTextChars);
  });

  it('a GENERIC_WEBHOOK body must render to JSON', async () => {
    const parts = { GENERIC_WEBHOOK: { body: '{"cluster": {{ cluster.name | json }}, "type": {{ event.type | json }}}' } } as TemplateParts;
    const c = compileTemplate(parts);
    if (!c.ok) throw new Error(c.issue.message);
    const out = await renderTemplate(c.template, 'GENERIC_WEBHOOK', templateVariables(notification()));
    expect(JSON.parse(out.body ?? '')).toEqual({ cluster: CLUSTER_PROD.name, type: 'evt.healthstatus.certmgr-issuer.notready' });
    const bad = compileTemplate({ GENERIC_WEBHOOK: { body: '{"cluster": {{ cluster.name }}}' } } as TemplateParts);
    if (!bad.ok) throw new Error(bad.issue.message);
    await expect(renderTemplate(bad.template, 'GENERIC_WEBHOOK', templateVariables(notification()))).rejects.toThrow(/not a JSON document/);
  });
});

describe('template engine: parts', () => {
  const parts: TemplateParts = {
    default: { title: 'D {{ event.type }}', text: 'default text' },
    SLACK: { text: 'slack {{ router.name }}' },
  };

  it.each([
    ['SLACK', { title: 'D evt.healthstatus.certmgr-issuer.notready', text: 'slack prod-issuers' }],
    ['EMAIL', { title: 'D evt.healthstatus.certmgr-issuer.notready', text: 'default text' }],
  ])('%s takes its own part field by field, else default', async (type, want) => {
    const c = compileTemplate(parts);
    if (!c.ok) throw new Error(c.issue.message);
    expect(await renderTemplate(c.template, type, templateVariables(notification()))).toEqual(want);
  });

  it('a template without a default leaves other types alone', async () => {
    const c = compileTemplate({ TEAMS: { title: 't' } });
    if (!c.ok) throw new Error(c.issue.message);
    expect(await renderTemplate(c.template, 'SLACK', {})).toEqual({});
  });
});

describe('template variables', () => {
  it('health event: cluster, router, integration, defaults; absent hub fields are null', async () => {
    const v = templateVariables(notification());
    expect(v).toMatchObject({
      event: { type: 'evt.healthstatus.certmgr-issuer.notready', occurredAt: '2026-01-02T03:04:05.000Z' },
      kind: 'issuer',
      state: 'unhealthy',
      severity: 'critical',
      router: { name: 'prod-issuers' },
      integration: { name: 'ops-slack', type: 'SLACK' },
      cluster: { id: CLUSTER_PROD.id, name: CLUSTER_PROD.name },
      daysUntilExpiry: null,
      notAfter: null,
      runbookUrl: null,
      consoleUrl: null,
      reminder: false,
      group: null,
    });
    expect(await renderOne('{{ cluster.name }}/{{ event.data.issuerName }}/{{ daysUntilExpiry }}')).toBe(
      `${CLUSTER_PROD.name}/${String(issuerNotReady().data.issuerName)}/`,
    );
  });

  it('expiration event from the hub scan: the extension fields', () => {
    const ev = expiringCertificate();
    const n = notification({
      event: {
        ...ev,
        data: {
          ...ev.data,
          daysUntilExpiry: 3,
          notAfter: '2026-02-01T00:00:00Z',
          runbookUrl: 'https://runbooks.example/certs',
          clusterName: 'prod',
          clusterId: CLUSTER_PROD.id,
        },
      },
      reminder: true,
    });
    expect(templateVariables(n)).toMatchObject({
      kind: 'certificateExpiration',
      daysUntilExpiry: 3,
      notAfter: '2026-02-01T00:00:00Z',
      runbookUrl: 'https://runbooks.example/certs',
      cluster: { id: CLUSTER_PROD.id, name: 'prod' },
      reminder: true,
    });
  });

  it('consoleUrl: with --public-url, the console page of the event (health or certificates); null without', async () => {
    const pub = { publicUrl: 'https://hub.example.com/notify' };
    expect(templateVariables(notification(), pub).consoleUrl).toBe('https://hub.example.com/notify/ui/#/health');
    expect(templateVariables(notification({ event: expiringCertificate() }), pub).consoleUrl).toBe(
      'https://hub.example.com/notify/ui/#/certificates',
    );
    expect(templateVariables(notification(), {}).consoleUrl).toBeNull();
    expect(await renderOne('<{{ consoleUrl }}|console>', templateVariables(notification(), pub))).toBe(
      '<https://hub.example.com/notify/ui/#/health|console>',
    );
  });

  it('mistyped hub fields are null, not passed through', () => {
    const ev = expiringCertificate();
    const n = notification({ event: { ...ev, data: { ...ev.data, daysUntilExpiry: '3', runbookUrl: 42 } } });
    expect(templateVariables(n)).toMatchObject({ daysUntilExpiry: null, runbookUrl: null, cluster: { id: null, name: null } });
  });

  it('group: labels, members and counts', async () => {
    const e = issuerNotReady();
    const n = notification({
      group: {
        key: 'g1',
        labels: { 'data.issuerName': 'le' },
        firing: [{ eventId: 'e1', event: e, occurredAt: 0 }],
        resolved: [],
        firingCount: 200,
        resolvedCount: 0,
        allResolved: false,
      },
    });
    const out = await renderOne(
      '{{ group.firingCount }} firing for {{ group.labels["data.issuerName"] }}: {% for m in group.firing %}{{ m.data.issuerName }}{% endfor %}',
      templateVariables(n),
    );
    expect(out).toBe(`200 firing for le: ${String(e.data.issuerName)}`);
  });
});

describe('template engine: blank output', () => {
  it('a field that renders blank is left out (the integration keeps its own text); others are trimmed', async () => {
    const c = compileTemplate({ default: { title: '{% if reminder %}Still failing{% endif %}  ', text: '  hello\n' } });
    if (!c.ok) throw new Error(c.issue.message);
    expect(await renderTemplate(c.template, 'SLACK', { reminder: false })).toEqual({ text: 'hello' });
    expect(await renderTemplate(c.template, 'SLACK', { reminder: true })).toEqual({ title: 'Still failing', text: 'hello' });
  });
});

describe('template engine: output bounded while rendering', () => {
  const doubling = (n: number, ch = 'Ā') =>
    `{% assign s = "${ch}" %}{% for i in (1..${n}) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}{{ s }}`;

  it('a capture doubled in a loop stops at the output limit (a render error, not a 134 M-character string)', async () => {
    const c = compileTemplate({ default: { title: doubling(27), text: doubling(27, 'x') } });
    if (!c.ok) throw new Error(c.issue.message);
    await expect(renderTemplate(c.template, 'SLACK', {})).rejects.toThrow(/output limit exceeded/);
  });

  it('a field past the output limit is cut while rendering and truncated with an ellipsis', async () => {
    const title = await renderTemplate(
      (compileTemplate({ default: { title: '{% for i in (1..2000) %}{{ s }}{% endfor %}' } }) as { ok: true; template: CompiledTemplate })
        .template,
      'SLACK',
      { s: 'ab'.repeat(20) },
    );
    expect(Array.from(title.title ?? '')).toHaveLength(TEMPLATE_LIMITS.maxTitleChars);
    expect(title.title?.endsWith('…')).toBe(true);
    // cut after leading blanks: still marked as cut
    const blank = compileTemplate({ default: { text: '{{ spaces }}x' } });
    if (!blank.ok) throw new Error(blank.issue.message);
    const spaces = ' '.repeat(TEMPLATE_LIMITS.maxOutputChars - 1);
    expect((await renderTemplate(blank.template, 'SLACK', { spaces: spaces + 'ab' })).text).toBe('a…');
  });

  it('what captures write is charged to the memory limit: many captures cannot add up past it', async () => {
    const big = 'x'.repeat(60_000);
    await expect(
      renderOne('{% for i in (1..40) %}{% capture a %}{{ big }}{% endcapture %}{% endfor %}{{ a | size }}', { big }),
    ).rejects.toThrow(/memory alloc limit exceeded/);
    expect(await renderOne('{% for i in (1..10) %}{% capture a %}{{ big }}{% endcapture %}{% endfor %}{{ a | size }}', { big })).toBe(
      '60000',
    );
  });

  it('a body over the output limit is a render failure', async () => {
    const c = compileTemplate({ GENERIC_WEBHOOK: { body: '{"a": "{% for i in (1..2000) %}{{ s }}{% endfor %}"}' } } as TemplateParts);
    if (!c.ok) throw new Error(c.issue.message);
    await expect(renderTemplate(c.template, 'GENERIC_WEBHOOK', { s: 'ab'.repeat(20) })).rejects.toThrow(
      `body: rendered more than ${TEMPLATE_LIMITS.maxBodyChars} characters`,
    );
  });

  it('a long render gives the event loop back between slices', async () => {
    let renderDone = false;
    let ranDuringRender = false;
    setImmediate(() => (ranDuringRender = !renderDone));
    expect(await renderOne('{% for i in (1..3000) %}{% assign x = i %}{% endfor %}done')).toBe('done');
    renderDone = true;
    expect(ranDuringRender).toBe(true);
  });
});

describe('template engine: a GENERIC_WEBHOOK body escapes its values as JSON', () => {
  const hostile = 'boom", "admin": true, "x": "\\u0000\n';
  async function body(src: string, vars: object): Promise<string> {
    const c = compileTemplate({ GENERIC_WEBHOOK: { body: src } } as TemplateParts);
    if (!c.ok) throw new Error(c.issue.message);
    return (await renderTemplate(c.template, 'GENERIC_WEBHOOK', vars)).body ?? '';
  }

  it('event text inside a quoted string cannot add keys', async () => {
    expect(JSON.parse(await body('{"text": "{{ m }}", "n": {{ n }}}', { m: hostile, n: 3 }))).toEqual({ text: hostile, n: 3 });
  });

  it('`| json` writes a JSON document once (not escaped again); `| raw` writes the value as it is', async () => {
    expect(JSON.parse(await body('{"m": {{ m | json }}, "list": {{ l | json }}}', { m: hostile, l: [1, 'a'] }))).toEqual({
      m: hostile,
      list: [1, 'a'],
    });
    expect(await body('{"a": {{ frag | raw }}}', { frag: '{"b": 1}' })).toBe('{"a": {"b": 1}}');
  });

  it('titles and texts are not escaped', async () => {
    expect(await renderOne('{{ m }}', { m: 'a "b"' })).toBe('a "b"');
  });
});
