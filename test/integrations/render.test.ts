import { describe, expect, it } from 'vitest';
import { factsOf, render, severityOf, summaryOf, titleOf } from '../../src/integrations/render.js';
import { correlationKeyOf } from '../../src/model/correlation.js';
import { viewOf } from '../../src/model/event-view.js';
import { APP_ID, CLUSTER_ID, EVENTS } from './helpers.js';

describe('titles and severities', () => {
  it.each([
    ['evt.healthstatus.certmgr-issuer.notready', 'Issuer letsencrypt-prod in cluster prod is not ready', 'critical'],
    ['evt.healthstatus.certmgr-issuer.active', 'Issuer letsencrypt-prod in cluster prod is ready again', 'info'],
    ['evt.healthstatus.certmgr-certificate-resource.notready', 'Certificate shop-tls in cluster prod is not ready', 'error'],
    ['evt.healthstatus.certmgr-certificate-resource.active', 'Certificate shop-tls in cluster prod is ready again', 'info'],
    ['evt.policy.expiringcertificates.failed', 'Certificate expiring within 30 days: Certificate expiration', 'warning'],
    ['evt.healthstatus.certmgr-agent.notready', 'Agent of cluster prod stopped reporting', 'error'],
    ['evt.healthstatus.certmgr-agent.active', 'Agent of cluster prod is reporting again', 'info'],
  ] as const)('%s', (type, title, severity) => {
    const r = render(EVENTS[type]);
    expect(r.title).toBe(title);
    expect(r.severity).toBe(severity);
    expect(severityOf(r.view)).toBe(severity);
  });

  it('the summary carries namespace, reason and message on one line', () => {
    expect(summaryOf(viewOf(EVENTS['evt.healthstatus.certmgr-issuer.notready']))).toBe(
      'Issuer letsencrypt-prod in cluster prod is not ready (namespace cert-manager): ErrUpdateACMEAccount: Failed to update ACME account:400 urn:ietf:params:acme:error:invalidContact',
    );
    const ev = {
      type: 'evt.healthstatus.certmgr-issuer.notready' as const,
      data: { issuerName: 'x', clusterName: 'c', statusMessage: 'line1\n\n  line2' },
    };
    expect(summaryOf(viewOf(ev))).toBe('Issuer x in cluster c is not ready: line1 line2');
  });

  it('the summary is cut at 1024 code points', () => {
    const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, statusMessage: '🔥'.repeat(3000) };
    const s = summaryOf(viewOf({ type: 'evt.healthstatus.certmgr-issuer.notready', data }));
    expect(Array.from(s)).toHaveLength(1024);
    expect(s.endsWith('…')).toBe(true);
  });
});

describe('render', () => {
  it('never throws on missing or mistyped data', () => {
    for (const type of Object.keys(EVENTS) as (keyof typeof EVENTS)[]) {
      for (const data of [{}, { SANs: 'x', subject: [1], applicationIds: 'a', threshold: 'NaN' }]) {
        const r = render({ type, data });
        expect(r.title.length).toBeGreaterThan(0);
        expect(correlationKeyOf(r.view).length).toBeGreaterThan(0);
      }
    }
  });
});

describe('agent events (the hub’s own family)', () => {
  it('are about the cluster: one correlation key for .notready and .active, no resource, the agent facts', () => {
    const down = viewOf(EVENTS['evt.healthstatus.certmgr-agent.notready']);
    const up = viewOf(EVENTS['evt.healthstatus.certmgr-agent.active']);
    expect(down).toMatchObject({ kind: 'agent', state: 'unhealthy', agent: { version: '1.4.0', lastSeenAt: '2026-03-01T10:00:00Z' } });
    expect(up).toMatchObject({ kind: 'agent', state: 'restored', unhealthyDuration: '0h45m0s' });
    expect(correlationKeyOf(down)).toBe(`certmgr:agent:${CLUSTER_ID}`);
    expect(correlationKeyOf(up)).toBe(correlationKeyOf(down));
    expect(factsOf(down).map((f) => f.name)).toEqual(['Cluster', 'Agent version', 'Last report', 'Reason', 'Message', 'Silent since']);
    expect(factsOf(up).map((f) => f.name)).toContain('Was unhealthy for');
  });
});

describe('factsOf', () => {
  it('lists the health facts in display order and drops empty values', () => {
    const facts = factsOf(viewOf(EVENTS['evt.healthstatus.certmgr-issuer.active']), { name: 'r1' });
    expect(facts.map((f) => f.name)).toEqual([
      'Cluster',
      'Namespace',
      'Issuer',
      'Reason',
      'Message',
      'Ready since',
      'Was unhealthy for',
      'Router',
    ]);
    expect(facts[0]!.value).toBe(`prod (${CLUSTER_ID})`);
    const sparse = factsOf(viewOf({ type: 'evt.healthstatus.certmgr-issuer.notready', data: { issuerName: 'x' } }));
    expect(sparse.map((f) => f.name)).toEqual(['Issuer']);
  });

  it('lists the expiration facts', () => {
    const facts = factsOf(viewOf(EVENTS['evt.policy.expiringcertificates.failed']));
    expect(Object.fromEntries(facts.map((f) => [f.name, f.value]))).toMatchObject({
      Threshold: '30 days',
      Rule: '2',
      Applications: APP_ID,
    });
    const unassigned = factsOf(viewOf({ type: 'evt.policy.expiringcertificates.failed', data: { applicationIds: [] } }));
    expect(unassigned.find((f) => f.name === 'Applications')?.value).toBe('unassigned');
  });

  it('titleOf handles a 1-day threshold', () => {
    expect(titleOf(viewOf({ type: 'evt.policy.expiringcertificates.failed', data: { threshold: 1 } }))).toBe(
      'Certificate expiring within 1 day',
    );
  });
});
