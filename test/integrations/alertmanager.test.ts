/**
 * ALERTMANAGER against a loopback receiver standing in for Alertmanager's API v2: the request (POST
 * <url>/api/v2/alerts, a JSON array of one alert, labels, annotations, startsAt/endsAt, generatorURL), the auth
 * headers, and the outcome classification (2xx delivered, 429/5xx retry, other 4xx dead). The real Alertmanager:
 * alertmanager.int.test.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EventType, InternalEvent } from '../../src/events/families.js';
import {
  alertLabels,
  alertsUrl,
  buildAlertmanagerAlert,
  EXPIRY_HOLD_MS,
  HEALTH_HOLD_MS,
  labelNameOf,
} from '../../src/integrations/alertmanager.js';
import { createNotifier } from '../../src/integrations/index.js';
import type { Notification } from '../../src/integrations/types.js';
import {
  CERT_ID,
  CLUSTER_ID,
  EVENTS,
  groupNotification,
  integration,
  notification,
  opts,
  outageGroup,
  startReceiver,
  type Receiver,
} from './helpers.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const PUBLIC = 'https://certmgr.example.com';
const TOKEN = 'am-token-0123456789abcdef';
/** Alertmanager's label name rule (prometheus/common model.LabelName.IsValid). */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

type Answer = { status: number; body?: string; headers?: Record<string, string> };

describe('ALERTMANAGER against a loopback receiver', () => {
  let rx: Receiver;
  let answer: () => Answer;
  const integ = (secrets: Record<string, string> = {}) => integration('ALERTMANAGER', { url: rx.url, ...secrets });
  const send = (n: Notification, publicUrl?: string) =>
    createNotifier('ALERTMANAGER', opts({ clock: () => NOW, ...(publicUrl ? { publicUrl } : {}) })).send(n);
  const ev = (type: EventType, data?: Record<string, unknown>): InternalEvent => ({ type, data: { ...EVENTS[type].data, ...data } });
  const posted = (i = -1) => JSON.parse(rx.requests.at(i)!.body) as Array<Record<string, unknown>>;

  beforeAll(async () => {
    rx = await startReceiver((_r, res) => {
      const a = answer();
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers }).end(a.body ?? '');
    });
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
    answer = () => ({ status: 200 });
  });

  it('posts one alert to /api/v2/alerts: identifying labels, annotations, startsAt, endsAt ahead, generatorURL', async () => {
    const r = await send(notification(integ(), ev('evt.healthstatus.certmgr-certificate-resource.notready')), PUBLIC);
    expect(r).toEqual({ outcome: 'delivered', statusCode: 200 });
    const req = rx.requests[0]!;
    expect([req.method, req.path, req.headers['content-type']]).toEqual(['POST', '/api/v2/alerts', 'application/json']);
    expect(req.headers['authorization']).toBeUndefined();
    const body = posted();
    expect(body).toHaveLength(1);
    expect(body[0]).toEqual({
      labels: {
        alertname: 'CertmgrCertificateNotReady',
        severity: 'error',
        kind: 'certificate',
        cluster: 'prod',
        namespace: 'shop',
        name: 'shop-tls',
        issuer: 'letsencrypt-prod',
      },
      annotations: {
        summary: 'Certificate shop-tls in cluster prod is not ready',
        description: expect.stringMatching(/^Issuing certificate as Secret does not exist\n\nCluster: prod \(.*\)\nNamespace: shop\n/),
        reason: 'DoesNotExist',
        router: 'prod issuers',
        event_type: 'evt.healthstatus.certmgr-certificate-resource.notready',
      },
      startsAt: '2026-03-01T10:05:00.000Z',
      endsAt: iso(NOW + HEALTH_HOLD_MS),
      generatorURL: `${PUBLIC}/ui/#/health`,
    });
  });

  it('a recovery posts the same labels with endsAt = now (resolved) and no startsAt', async () => {
    await send(notification(integ(), ev('evt.healthstatus.certmgr-issuer.notready')));
    await send(notification(integ(), ev('evt.healthstatus.certmgr-issuer.active')));
    const [open, done] = [posted(0)[0]!, posted(1)[0]!];
    expect(done['labels']).toEqual(open['labels']);
    expect(open['labels']).toMatchObject({ alertname: 'CertmgrIssuerNotReady', severity: 'critical', name: 'letsencrypt-prod' });
    expect(done['endsAt']).toBe(iso(NOW));
    expect(done).not.toHaveProperty('startsAt');
    expect(done['annotations']).toMatchObject({
      summary: 'Issuer letsencrypt-prod in cluster prod is ready again',
      reason: 'ACMEAccountRegistered',
    });
  });

  it.each([
    ['evt.healthstatus.certmgr-issuer.notready', 'CertmgrIssuerNotReady', 'critical', HEALTH_HOLD_MS],
    ['evt.healthstatus.certmgr-issuer.active', 'CertmgrIssuerNotReady', 'critical', 0],
    ['evt.healthstatus.certmgr-certificate-resource.notready', 'CertmgrCertificateNotReady', 'error', HEALTH_HOLD_MS],
    ['evt.healthstatus.certmgr-certificate-resource.active', 'CertmgrCertificateNotReady', 'error', 0],
    ['evt.healthstatus.certmgr-agent.notready', 'CertmgrAgentSilent', 'error', HEALTH_HOLD_MS],
    ['evt.healthstatus.certmgr-agent.active', 'CertmgrAgentSilent', 'error', 0],
    ['evt.policy.expiringcertificates.failed', 'CertmgrCertificateExpiring', 'warning', EXPIRY_HOLD_MS],
  ] as const)('%s: alertname %s, severity %s, endsAt now + %d ms', (type, alertname, severity, hold) => {
    const a = buildAlertmanagerAlert(notification(integ(), ev(type)), NOW);
    expect(a.labels).toMatchObject({ alertname, severity });
    expect(a.endsAt).toBe(iso(NOW + hold));
    for (const name of Object.keys(a.labels)) expect(name).toMatch(LABEL_NAME);
    expect(a).not.toHaveProperty('generatorURL');
  });

  it('an expiry alert is the certificate (certificate_ref), not the rule: a more urgent rule updates the same alert', () => {
    const e30 = ev('evt.policy.expiringcertificates.failed');
    const e7 = ev('evt.policy.expiringcertificates.failed', { threshold: 7, ruleId: 3 });
    const [a30, a7] = [alertLabels(notification(integ(), e30)), alertLabels(notification(integ(), e7))];
    expect(a30).toEqual(a7);
    expect(a30).toEqual({
      alertname: 'CertmgrCertificateExpiring',
      severity: 'warning',
      kind: 'certificateExpiration',
      name: 'Certificate expiration',
      certificate_ref: CERT_ID,
    });
    const a = buildAlertmanagerAlert(notification(integ(), e30), NOW, PUBLIC);
    expect(a.startsAt).toBe('2026-03-01T09:00:00.123Z');
    expect(a.generatorURL).toBe(`${PUBLIC}/ui/#/certificates`);
  });

  it('the reason is an annotation, not a label: a changed reason or the recovery keeps the alert', () => {
    const pending = ev('evt.healthstatus.certmgr-certificate-resource.notready', { statusReason: 'Pending' });
    const failed = ev('evt.healthstatus.certmgr-certificate-resource.notready', { statusReason: 'Failed' });
    const labels = [pending, failed, ev('evt.healthstatus.certmgr-certificate-resource.active')].map((e) =>
      alertLabels(notification(integ(), e)),
    );
    expect(labels[1]).toEqual(labels[0]);
    expect(labels[2]).toEqual(labels[0]);
  });

  it('a startsAt in the future (a cluster clock ahead) is clamped to now; an unparsable one is the acceptance time', () => {
    const ahead = buildAlertmanagerAlert(
      notification(integ(), ev('evt.healthstatus.certmgr-issuer.notready', { statusTransition: '2027-01-01T00:00:00Z' })),
      NOW,
    );
    expect(ahead.startsAt).toBe(iso(NOW));
    const bad = buildAlertmanagerAlert(
      notification(integ(), ev('evt.healthstatus.certmgr-issuer.notready', { statusTransition: 'soon' })),
      NOW,
    );
    expect(bad.startsAt).toBe('2026-03-01T10:00:05.000Z');
  });

  it('a reminder re-posts the alert with endsAt moved on and no "Reminder:" text (Alertmanager repeats by itself)', () => {
    const n = notification(integ(), ev('evt.healthstatus.certmgr-issuer.notready'), { reminder: true });
    const later = NOW + 4 * 3600_000;
    const a = buildAlertmanagerAlert(n, later);
    expect(a.endsAt).toBe(iso(later + HEALTH_HOLD_MS));
    expect(a.annotations['summary']).toBe('Issuer letsencrypt-prod in cluster prod is not ready');
  });

  it("a router's template gives the summary (title) and the description (text)", () => {
    const n = notification(integ(), ev('evt.healthstatus.certmgr-issuer.notready'), { rendered: { title: 'T-TITLE', text: 'T-TEXT' } });
    expect(buildAlertmanagerAlert(n, NOW).annotations).toMatchObject({
      summary: 'T-TITLE',
      description: expect.stringMatching(/^T-TEXT\n/),
    });
  });

  it('a runbook URL is an annotation', () => {
    const n = notification(integ(), ev('evt.healthstatus.certmgr-issuer.notready', { runbookUrl: 'https://runbooks.example/issuer' }));
    expect(buildAlertmanagerAlert(n, NOW).annotations['runbook_url']).toBe('https://runbooks.example/issuer');
  });

  describe('a group notification: one alert per group', () => {
    it('labels: its groupBy fields as label names, group_key; members in the description; resolved when all recovered', async () => {
      await send(groupNotification(integ(), outageGroup(30, 2)));
      await send(groupNotification(integ(), outageGroup(0, 32)));
      const [open, done] = [posted(0)[0]!, posted(1)[0]!];
      expect(open['labels']).toEqual({
        alertname: 'CertmgrCertificateNotReady',
        severity: 'error',
        kind: 'certificate',
        issuer: 'letsencrypt-prod',
        cluster: 'prod',
        group_key: 'grp:0123456789abcdef',
      });
      expect(done['labels']).toEqual(open['labels']);
      expect(open['endsAt']).toBe(iso(NOW + HEALTH_HOLD_MS));
      expect(done['endsAt']).toBe(iso(NOW));
      const d = (open['annotations'] as Record<string, string>)['description']!;
      expect(d).toContain('Not ready (30):');
      expect(d).toContain('and 20 more');
      expect(d).toContain('Recovered (2):');
      // the earliest listed member's acceptance
      expect(open['startsAt']).toBe(iso(Date.parse('2026-03-01T10:00:05Z') - 19_000));
    });

    it('a group that is not all recovered stays open', () => {
      expect(buildAlertmanagerAlert(groupNotification(integ(), outageGroup(1, 5)), NOW).endsAt).toBe(iso(NOW + HEALTH_HOLD_MS));
    });

    it('hostile groupBy fields and values become valid, bounded labels; fixed labels win', () => {
      const g = {
        ...outageGroup(1),
        labels: {
          'data.subject.commonName': 'a\nb\u0000c',
          'data.9lives': 'x'.repeat(5000),
          'data.__proto__': 'p',
          'data.constructor': 'c',
          'data.alertname': 'Forged',
          'data.bad\uD800': 'lone \uD800 surrogate',
          '...': 'nothing left',
          'data.empty': '',
        },
      };
      const labels = alertLabels(groupNotification(integ(), g));
      for (const [k, v] of Object.entries(labels)) {
        expect(k).toMatch(LABEL_NAME);
        expect(k.startsWith('__')).toBe(false);
        expect([...v].length).toBeLessThanOrEqual(256);
        expect(v).not.toMatch(/[\uD800-\uDFFF]/);
        expect(v).not.toBe('');
      }
      expect(labels).toMatchObject({
        alertname: 'CertmgrCertificateNotReady',
        subject_commonName: 'a b\u0000c',
        proto: 'p',
        constructor: 'c',
        bad: 'lone \uFFFD surrogate',
      });
      expect(labels['f_9lives']).toMatch(/^x+…$/);
      expect(labels).not.toHaveProperty('empty');
    });
  });

  it.each([
    ['data.issuerName', 'issuer'],
    ['clusterName', 'cluster'],
    ['data.clusterId', 'cluster_id'],
    ['data.statusReason', 'reason'],
    ['type', 'event_type'],
    ['data.SANs.DNS Names', 'SANs_DNS_Names'],
    ['data.1st', 'f_1st'],
    ['data.___', null],
    ['data.' + 'n'.repeat(100), 'n'.repeat(64)],
  ] as const)('labelNameOf(%s) = %s', (field, want) => {
    expect(labelNameOf(field)).toBe(want);
  });

  it('auth: a bearer token, or basic auth', async () => {
    await send(notification(integ({ bearerToken: TOKEN }), ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(rx.requests[0]!.headers['authorization']).toBe(`Bearer ${TOKEN}`);
    await send(notification(integ({ username: 'certmgr', password: 'pä:ss' }), ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(rx.requests[1]!.headers['authorization']).toBe(`Basic ${Buffer.from('certmgr:pä:ss', 'utf8').toString('base64')}`);
  });

  it.each([
    [{ status: 200 }, { outcome: 'delivered', statusCode: 200 }],
    [
      { status: 429, headers: { 'retry-after': '3' } },
      { outcome: 'retry', statusCode: 429, retryAfterMs: 3000 },
    ],
    [{ status: 500 }, { outcome: 'retry', statusCode: 500 }],
    [{ status: 503 }, { outcome: 'retry', statusCode: 503 }],
    [
      { status: 400, body: '"start time must be before end time"' },
      { outcome: 'dead', statusCode: 400, error: 'HTTP 400 Bad Request' },
    ],
    [{ status: 401 }, { outcome: 'dead', statusCode: 401 }],
    [{ status: 403 }, { outcome: 'dead', statusCode: 403 }],
    [{ status: 404 }, { outcome: 'dead', statusCode: 404 }],
    [
      { status: 302, headers: { location: 'http://elsewhere/' } },
      { outcome: 'dead', statusCode: 302 },
    ],
  ] as const)('answer %o -> %o', async (a, want) => {
    answer = () => a;
    expect(await send(notification(integ(), ev('evt.healthstatus.certmgr-issuer.notready')))).toMatchObject(want);
  });

  it('the token never reaches a result, even when the receiver echoes it', async () => {
    answer = () => ({ status: 401, body: `{"error":"bad token Bearer ${TOKEN}"}` });
    const r = await send(notification(integ({ bearerToken: TOKEN }), ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(r.outcome).toBe('dead');
    expect(JSON.stringify(r)).not.toContain(TOKEN);
  });

  it('a URL with a path prefix keeps it; the endpoint itself is kept; a query stays', async () => {
    await send(notification(integration('ALERTMANAGER', { url: `${rx.url}/am/` }), ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(rx.requests[0]!.path).toBe('/am/api/v2/alerts');
    expect(alertsUrl('http://am:9093/api/v2/alerts')).toBe('http://am:9093/api/v2/alerts');
    expect(alertsUrl('http://am:9093/am?x=1')).toBe('http://am:9093/am/api/v2/alerts?x=1');
    expect(alertsUrl('not a url')).toBeNull();
  });

  it('the egress policy applies (a loopback URL under the default policy is dead, nothing sent); no URL: dead', async () => {
    const n = notification(integ(), ev('evt.healthstatus.certmgr-issuer.notready'));
    const r = await createNotifier('ALERTMANAGER', opts({ egress: undefined })).send(n);
    expect(r.outcome).toBe('dead');
    expect(r.error).toMatch(/^Alertmanager URL /);
    const none = await send(notification(integration('ALERTMANAGER', {}), ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(none).toEqual({ outcome: 'dead', error: 'Alertmanager URL is not configured' });
    expect(rx.requests).toHaveLength(0);
  });

  it('the cluster label falls back to the cluster id', () => {
    const n = notification(integ(), ev('evt.healthstatus.certmgr-agent.notready', { clusterName: '' }));
    expect(alertLabels(n)).toEqual({ alertname: 'CertmgrAgentSilent', severity: 'error', kind: 'agent', cluster: CLUSTER_ID });
  });
});
