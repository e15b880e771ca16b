import { describe, expect, it } from 'vitest';
import type { InternalEvent } from '../../src/events/families.js';
import { incidentActionOf, incidentKeyOf, MAX_NAMED_MEMBERS, renderNotification, type Rendered } from '../../src/integrations/render.js';
import type { Notification, NotificationGroup } from '../../src/integrations/types.js';
import { certEvent, CLUSTER_ID, EVENTS, groupNotification, integration, notification, outageGroup } from './helpers.js';

const integ = integration('SLACK', { webhookUrl: 'https://hooks.slack.com/services/T/B/X' });
const single = (event: InternalEvent, over: Partial<Notification> = {}) => renderNotification(notification(integ, event, over));
const group = (g: NotificationGroup, over: Partial<Notification> = {}) => renderNotification(groupNotification(integ, g, over));
const fact = (r: Rendered, name: string) => r.facts.find((f) => f.name === name)?.value;
const expiring = (data: Record<string, unknown>): InternalEvent => ({
  type: 'evt.policy.expiringcertificates.failed',
  data: { ...EVENTS['evt.policy.expiringcertificates.failed'].data, ...data },
});
const RUNBOOK = 'https://runbooks.example/cert-manager/issuer-not-ready';

describe('renderNotification: the table', () => {
  const cases: Array<{
    name: string;
    r: () => Rendered;
    title: string;
    severity: Rendered['severity'];
    facts?: Record<string, string | undefined>;
    text?: string | null;
    summary?: RegExp;
  }> = [
    {
      name: 'a single event keeps today’s texts',
      r: () => single(EVENTS['evt.healthstatus.certmgr-issuer.notready']),
      title: 'Issuer letsencrypt-prod in cluster prod is not ready',
      severity: 'critical',
      facts: { Reason: 'ErrUpdateACMEAccount', Router: 'prod issuers', Reminder: undefined, Runbook: undefined },
      text: 'Failed to update ACME account:400 urn:ietf:params:acme:error:invalidContact',
      summary: /^Issuer letsencrypt-prod in cluster prod is not ready \(namespace cert-manager\): ErrUpdateACMEAccount/,
    },
    {
      name: 'a single event with a runbook',
      r: () =>
        single({
          type: 'evt.healthstatus.certmgr-certificate-resource.notready',
          data: { ...EVENTS['evt.healthstatus.certmgr-certificate-resource.notready'].data, runbookUrl: RUNBOOK },
        }),
      title: 'Certificate shop-tls in cluster prod is not ready',
      severity: 'error',
      facts: { Runbook: RUNBOOK, 'DNS names': 'shop.example.com, www.shop.example.com', Cluster: `prod (${CLUSTER_ID})` },
    },
    {
      name: 'an expiration from the hub’s scan shows its fields',
      r: () =>
        single(
          expiring({
            daysUntilExpiry: 3,
            notAfter: '2026-03-04T12:00:00Z',
            certificateName: 'shop-tls',
            namespace: 'shop',
            clusterName: 'prod',
            dnsNames: ['shop.example.com', 'www.shop.example.com'],
            runbookUrl: RUNBOOK,
          }),
        ),
      title: 'Certificate expiring within 30 days: Certificate expiration',
      severity: 'warning',
      facts: {
        Certificate: 'shop/shop-tls',
        Cluster: 'prod',
        'DNS names': 'shop.example.com, www.shop.example.com',
        'Days until expiry': '3',
        'Not after': '2026-03-04T12:00:00Z',
        Runbook: RUNBOOK,
      },
    },
    {
      name: 'a client-sent expiration: days and not-after read from its message',
      r: () => single(EVENTS['evt.policy.expiringcertificates.failed']),
      title: 'Certificate expiring within 30 days: Certificate expiration',
      severity: 'warning',
      facts: { 'Days until expiry': '30', 'Not after': '2026-03-31T00:00:00Z', Cluster: undefined, 'DNS names': undefined },
    },
    {
      name: 'the hub’s own message format (expired)',
      r: () =>
        single(
          expiring({
            message:
              'Certificate shop/shop-tls (id x), serial number 01, issuer R11, no application (unassigned): expired 2 days ago (-2 days until expiration); valid until 2026-02-27T00:00:00.000Z. Threshold 0 days (rule 4).',
          }),
        ),
      title: 'Certificate expiring within 30 days: Certificate expiration',
      severity: 'warning',
      facts: { 'Days until expiry': '-2', 'Not after': '2026-02-27T00:00:00.000Z' },
    },
    {
      name: 'an expiration that says nothing about its dates',
      r: () => single(expiring({ message: 'renew it', daysUntilExpiry: 'soon', notAfter: 'tomorrow' })),
      title: 'Certificate expiring within 30 days: Certificate expiration',
      severity: 'warning',
      facts: { 'Days until expiry': undefined, 'Not after': undefined },
    },
    {
      name: 'a group of an issuer outage',
      r: () => group(outageGroup(200)),
      title: 'Issuer letsencrypt-prod in cluster prod: 200 certificates not ready',
      severity: 'error',
      facts: { Issuer: 'letsencrypt-prod', Cluster: 'prod', 'Not ready': '200', Recovered: '0', Router: 'prod issuers' },
      text: null,
      summary:
        /^Issuer letsencrypt-prod in cluster prod: 200 certificates not ready \(Certificate team-0\/shop-0, Certificate team-1\/shop-1, Certificate team-2\/shop-2, and 197 more\)$/,
    },
    {
      name: 'a group with recoveries',
      r: () => group(outageGroup(150, 50)),
      title: 'Issuer letsencrypt-prod in cluster prod: 150 certificates not ready, 50 recovered',
      severity: 'error',
      facts: { 'Not ready': '150', Recovered: '50' },
    },
    {
      name: 'a group all recovered',
      r: () => group(outageGroup(0, 200)),
      title: 'Issuer letsencrypt-prod in cluster prod: all 200 recovered',
      severity: 'info',
      facts: { 'Not ready': '0', Recovered: '200' },
    },
    {
      name: 'a reminder of a single event',
      r: () => single(EVENTS['evt.healthstatus.certmgr-certificate-resource.notready'], { reminder: true }),
      title: 'Reminder: Certificate shop-tls in cluster prod is not ready',
      severity: 'error',
      facts: { Reminder: 'still not ready since 2026-03-01T10:05:00Z' },
      summary: /^Reminder: Certificate shop-tls in cluster prod is not ready/,
    },
    {
      name: 'a reminder of a group',
      r: () => group(outageGroup(200), { reminder: true }),
      title: 'Reminder: Issuer letsencrypt-prod in cluster prod: 200 certificates not ready',
      severity: 'error',
      facts: { Reminder: 'still not ready: 200' },
    },
    {
      name: 'a template’s title and text',
      r: () =>
        single(EVENTS['evt.healthstatus.certmgr-issuer.notready'], {
          rendered: { title: 'ACME account broken on prod', text: 'Call the PKI team.\nThey know.' },
        }),
      title: 'ACME account broken on prod',
      severity: 'critical',
      text: 'Call the PKI team.\nThey know.',
      // the template's text is the one-line summary (docs/templates.md): the incident's and the webhook's headline
      summary: /^Call the PKI team\. They know\.$/,
      facts: { Reason: 'ErrUpdateACMEAccount' },
    },
    {
      name: 'a template with only a text keeps the title; blank parts are ignored',
      r: () => single(EVENTS['evt.healthstatus.certmgr-issuer.notready'], { rendered: { title: '  \n', text: 'see wiki' } }),
      title: 'Issuer letsencrypt-prod in cluster prod is not ready',
      severity: 'critical',
      text: 'see wiki',
    },
    {
      name: 'a reminder with a template title is still marked',
      r: () => single(EVENTS['evt.healthstatus.certmgr-issuer.notready'], { reminder: true, rendered: { title: 'ACME broken' } }),
      title: 'Reminder: ACME broken',
      severity: 'critical',
    },
    {
      name: 'a group with a template',
      r: () => group(outageGroup(200), { rendered: { title: 'Issuer outage', text: 'Do not renew by hand.' } }),
      title: 'Issuer outage',
      severity: 'error',
      text: 'Do not renew by hand.',
      facts: { 'Not ready': '200' },
    },
  ];

  it.each(cases)('$name', ({ r, title, severity, facts, text, summary }) => {
    const out = r();
    expect(out.title).toBe(title);
    expect(out.severity).toBe(severity);
    for (const [name, value] of Object.entries(facts ?? {})) expect(fact(out, name), name).toBe(value);
    if (text !== undefined) expect(out.text).toBe(text);
    if (summary) expect(out.summary).toMatch(summary);
    expect(Array.from(out.summary).length).toBeLessThanOrEqual(1024);
    expect(out.summary).not.toMatch(/\n/);
  });
});

describe('groups', () => {
  it('names at most MAX_NAMED_MEMBERS per list and counts the rest', () => {
    const r = group(outageGroup(200, 30));
    const g = r.group!;
    expect(g.firing).toHaveLength(MAX_NAMED_MEMBERS);
    expect(g.resolved).toHaveLength(MAX_NAMED_MEMBERS);
    expect(g.moreFiring).toBe(190);
    expect(g.moreResolved).toBe(20);
    expect(g.firing[0]).toMatchObject({ name: 'Certificate team-0/shop-0', detail: 'IssuerNotReady', state: 'unhealthy' });
    expect(g.resolved[0]).toMatchObject({ name: 'Certificate team-4/shop-200', detail: 'was unhealthy for 0h15m0s', state: 'restored' });
    const details = fact(r, 'Details')!;
    expect(details.split('\n')).toEqual([
      'Not ready (200):',
      ...g.firing.map((m) => `- ${m.name}: IssuerNotReady`),
      'and 190 more',
      'Recovered (30):',
      ...g.resolved.map((m) => `- ${m.name}: was unhealthy for 0h15m0s`),
      'and 20 more',
    ]);
  });

  it('a 10,000-member list from a careless caller still names 10 (and counts from the count)', () => {
    const g = outageGroup(10_000, 0, 10_000);
    const r = group(g);
    expect(r.group!.firing).toHaveLength(10);
    expect(r.group!.moreFiring).toBe(9_990);
    expect(r.title).toBe('Issuer letsencrypt-prod in cluster prod: 10000 certificates not ready');
  });

  it('names the cluster in members when the group is not one cluster’s', () => {
    const g = { ...outageGroup(2), labels: { 'data.issuerName': 'letsencrypt-prod' } };
    const r = group(g);
    expect(r.title).toBe('Issuer letsencrypt-prod: 2 certificates not ready');
    expect(r.group!.firing[0]!.name).toBe('Certificate team-0/shop-0 in cluster prod');
  });

  it.each([
    [{ 'data.clusterId': CLUSTER_ID, 'data.namespace': 'shop' }, 'Namespace shop in cluster prod'],
    [{ 'data.clusterId': 'unknown-id' }, 'Cluster unknown-id'],
    [{ issuerName: 'le', clusterName: 'prod' }, 'Issuer le in cluster prod'],
    [{ 'data.statusReason': 'IssuerNotReady' }, 'Reason IssuerNotReady'],
    [{ 'data.issuerName': 'le', 'data.subject.commonName': 'x' }, 'Issuer le (data.subject.commonName x)'],
    [{}, 'Router prod issuers'],
    [{ 'data.issuerName': '' }, 'Router prod issuers'],
  ])('scope of labels %j: %s', (labels, scope) => {
    expect(group({ ...outageGroup(3), labels }).title).toBe(`${scope}: 3 certificates not ready`);
  });

  it('severity: the worst firing member’s; mixed kinds are "resources"', () => {
    const issuer: InternalEvent = EVENTS['evt.healthstatus.certmgr-issuer.notready'];
    const g = outageGroup(3);
    g.firing.push({ eventId: 'evt-issuer', event: issuer, occurredAt: 0 });
    g.firingCount = 4;
    const r = group(g);
    expect(r.severity).toBe('critical');
    expect(r.title).toBe('Issuer letsencrypt-prod in cluster prod: 4 resources unhealthy');
  });

  it('expiration and agent groups say what their members are', () => {
    const exp = (i: number) => ({
      eventId: `e${i}`,
      occurredAt: 0,
      event: expiring({ daysUntilExpiry: i - 1, certificateName: `c${i}`, namespace: 'ns', clusterName: 'prod' }),
    });
    const g: NotificationGroup = {
      key: 'k',
      labels: { 'data.clusterName': 'prod' },
      firing: [exp(0), exp(1), exp(5)],
      resolved: [],
      firingCount: 3,
      resolvedCount: 0,
      allResolved: false,
    };
    const r = group(g);
    expect(r.title).toBe('Cluster prod: 3 certificates expiring');
    expect(r.severity).toBe('warning');
    expect(r.group!.firing.map((m) => `${m.name}: ${m.detail}`)).toEqual([
      'Certificate ns/c0: expired less than a day ago',
      'Certificate ns/c1: expires in less than a day',
      'Certificate ns/c5: expires in 4 days',
    ]);
    const agents: NotificationGroup = {
      ...g,
      labels: {},
      firing: [{ eventId: 'a', occurredAt: 0, event: EVENTS['evt.healthstatus.certmgr-agent.notready'] }],
      firingCount: 1,
    };
    expect(group(agents).title).toBe('Router prod issuers: 1 cluster agent silent');
  });

  it('a shared runbook is the group’s; different ones are only the members’', () => {
    expect(group(outageGroup(3, 0, 20, { runbookUrl: RUNBOOK })).runbookUrl).toBe(RUNBOOK);
    const g = outageGroup(3, 0, 20, { runbookUrl: RUNBOOK });
    g.firing[1] = { ...g.firing[1]!, event: certEvent(1, false, { runbookUrl: 'https://other.example/rb' }) };
    const r = group(g);
    expect(r.runbookUrl).toBeNull();
    expect(r.group!.firing.map((m) => m.runbookUrl)).toEqual([RUNBOOK, 'https://other.example/rb', RUNBOOK]);
  });

  it('one incident per group, resolved when all recovered', () => {
    const firing = groupNotification(integ, outageGroup(200));
    const recovered = groupNotification(integ, outageGroup(0, 200));
    expect(incidentKeyOf(firing)).toBe('grp:0123456789abcdef');
    expect(incidentKeyOf(recovered)).toBe(incidentKeyOf(firing));
    expect(incidentActionOf(firing)).toBe('trigger');
    expect(incidentActionOf(recovered)).toBe('resolve');
  });
});

describe('missing and mistyped fields', () => {
  it('never throws: sparse events, a sparse group, garbage counts', () => {
    for (const type of Object.keys(EVENTS) as (keyof typeof EVENTS)[]) {
      const ev: InternalEvent = { type, data: {} };
      for (const r of [
        single(ev),
        single(ev, { reminder: true }),
        single(ev, { rendered: {} }),
        group({
          key: 'k',
          labels: {},
          firing: [{ eventId: 'x', event: ev, occurredAt: 0 }],
          resolved: [],
          firingCount: Number.NaN,
          resolvedCount: -1,
          allResolved: false,
        }),
      ]) {
        expect(r.title.length).toBeGreaterThan(0);
        expect(r.summary.length).toBeGreaterThan(0);
        for (const f of r.facts) expect(f.value).not.toBe('');
      }
    }
  });

  it('member lines stay short and whole-character whatever the event text', () => {
    for (const reason of ['𝕏'.repeat(20_000), `${' '.repeat(799)}𝕏𝕏`, `a${'\n'.repeat(5000)}b`]) {
      const m = group(outageGroup(1, 0, 20, { statusReason: reason, certificateName: reason })).group!.firing[0]!;
      expect(Array.from(m.name).length).toBeLessThanOrEqual(300);
      expect(Array.from(m.detail!).length).toBeLessThanOrEqual(200);
      for (const s of [m.name, m.detail!]) expect(s).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|\n/);
    }
  });

  it('a group whose counts are below its lists trusts the lists', () => {
    const g = { ...outageGroup(5), firingCount: 0 };
    expect(group(g).title).toBe('Issuer letsencrypt-prod in cluster prod: 5 certificates not ready');
  });
});

describe('template parts are bounded', () => {
  it('cuts a runaway title and text', () => {
    const r = single(EVENTS['evt.healthstatus.certmgr-issuer.notready'], {
      rendered: { title: 't'.repeat(5000), text: 'x'.repeat(100_000) },
    });
    expect(Array.from(r.title)).toHaveLength(1024);
    expect(Array.from(r.text!)).toHaveLength(32_768);
    expect(Array.from(r.summary)).toHaveLength(1024);
  });
});
