/** The send-time renderer: reads the router's template, caches by (id, updatedAt), falls back and counts failures. */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TemplateRenderer } from '../../src/templates/renderer.js';
import type { Notification } from '../../src/integrations/types.js';
import type { TemplateRecord } from '../../src/store/types.js';
import { issuerNotReady } from '../fixtures/events.js';

const n: Notification = {
  id: 'd',
  eventId: 'e',
  event: issuerNotReady({ issuerName: 'le' }),
  occurredAt: 0,
  router: { id: 'r1', name: 'router' },
  integration: {
    id: 'i',
    companyId: 'c',
    name: 'hook',
    type: 'WEBHOOK',
    enabled: true,
    config: {},
    secrets: {},
    managedBy: null,
    createdAt: 0,
    updatedAt: 0,
  },
  attempt: 1,
};

const tpl = (text: string, updatedAt = 1): TemplateRecord => ({
  id: 't1',
  companyId: 'c',
  name: 't',
  parts: { default: { text } },
  managedBy: null,
  createdAt: 0,
  updatedAt,
});

async function failures(registry: Registry): Promise<number> {
  const m = await registry.getSingleMetric('certmgr_notify_template_render_failures_total')?.get();
  return (m?.values ?? []).reduce((a, v) => a + v.value, 0);
}

describe('TemplateRenderer', () => {
  it('no template: undefined; a template: its text; an update (new updatedAt) is seen', async () => {
    let current: TemplateRecord | null = null;
    const r = new TemplateRenderer({
      getRouterTemplate: (companyId, routerId) => Promise.resolve(companyId === 'c' && routerId === 'r1' ? current : null),
    });
    expect(await r.render('c', n)).toBeUndefined();
    current = tpl('v1 {{ event.data.issuerName }}');
    expect(await r.render('c', n)).toEqual({ text: 'v1 le' });
    current = tpl('v2 {{ integration.type }}', 2);
    expect(await r.render('c', n)).toEqual({ text: 'v2 WEBHOOK' });
    expect(await r.render('other', n)).toBeUndefined();
  });

  it('a render failure or a stored template that does not compile: undefined, counted', async () => {
    const registry = new Registry();
    let current = tpl('{% for i in (1..100000000) %}x{% endfor %}');
    const r = new TemplateRenderer({ getRouterTemplate: () => Promise.resolve(current) }, registry);
    expect(await r.render('c', n)).toBeUndefined();
    expect(await failures(registry)).toBe(1);
    current = tpl('{{ x | nope }}', 5);
    expect(await r.render('c', n)).toBeUndefined();
    expect(await failures(registry)).toBe(2);
  });

  it('a store error propagates (the worker leaves the claim)', async () => {
    const r = new TemplateRenderer({ getRouterTemplate: () => Promise.reject(new Error('store down')) });
    await expect(r.render('c', n)).rejects.toThrow('store down');
  });

  it('many large templates: the cache stays bounded and each still renders', async () => {
    let i = 0;
    const big = 'x'.repeat(16_000);
    const r = new TemplateRenderer({ getRouterTemplate: () => Promise.resolve({ ...tpl(`${big}{{ router.name }}`), id: `t${++i}` }) });
    for (let k = 0; k < 300; k++) expect((await r.render('c', n))?.text?.endsWith('router')).toBe(true);
  });
});

describe('renderNotification with a rendered template', () => {
  it('title and text replace the defaults; the summary stays within 1024 code points', async () => {
    const { renderNotification } = await import('../../src/integrations/render.js');
    expect(renderNotification(n).title).toMatch(/^Issuer le/);
    const r = renderNotification({ ...n, rendered: { title: 'T', text: 'é'.repeat(2000) } });
    expect(r.title).toBe('T');
    expect(Array.from(r.summary)).toHaveLength(1024);
    // a template that gives only a title: the summary leads with it, the event's own text follows
    expect(renderNotification({ ...n, rendered: { title: 'only title' } }).summary).toMatch(/^only title: Failed to update ACME/);
  });
});
