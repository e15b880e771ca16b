/**
 * OPSGENIE against a loopback receiver standing in for the Alert API v2: the documented request shapes (create
 * POST /v2/alerts, close POST /v2/alerts/{alias}/close?identifierType=alias, Authorization: GenieKey, field
 * limits) and the outcome classification (202 delivered, 404 on close delivered, 429/5xx retry, 4xx dead).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EventType, InternalEvent } from '../../src/events/families.js';
import { createNotifier } from '../../src/integrations/index.js';
import { buildOpsgenieAlert, OPSGENIE_LIMITS, opsgenieUrl } from '../../src/integrations/opsgenie.js';
import type { GroupMember, Notification, NotificationGroup } from '../../src/integrations/types.js';
import {
  ALL_TYPES,
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

const RUNBOOK = 'https://runbooks.example/issuer-outage';

const API_KEY = 'eb243592-faa2-4ba2-a551-1afdf565c889';
const ISSUER_ALIAS = `certmgr:issuer:${CLUSTER_ID}:cert-manager:letsencrypt-prod`;

type Answer = { status: number; body?: string; headers?: Record<string, string> };

describe('OPSGENIE (Alert API v2) against a loopback receiver', () => {
  let rx: Receiver;
  let answer: (path: string) => Answer;
  const integ = integration('OPSGENIE', { apiKey: API_KEY });
  const send = (n: Notification, base = rx.url) => createNotifier('OPSGENIE', opts({ opsgenieApiUrl: base })).send(n);
  const ev = (type: EventType, data?: Record<string, unknown>): InternalEvent => ({ type, data: data ?? EVENTS[type].data });
  const accepted: Answer = { status: 202, body: '{"result":"Request will be processed","took":0.01,"requestId":"43a29c5c"}' };

  beforeAll(async () => {
    rx = await startReceiver((r, res) => {
      const a = answer(r.path);
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers }).end(a.body ?? '');
    });
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
    answer = () => accepted;
  });

  it('creates an alert: POST /v2/alerts, GenieKey, the documented fields', async () => {
    const r = await send(notification(integ, ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(r).toMatchObject({ outcome: 'delivered', statusCode: 202 });
    const req = rx.requests[0]!;
    expect([req.method, req.path]).toEqual(['POST', '/v2/alerts']);
    expect(req.headers['authorization']).toBe(`GenieKey ${API_KEY}`);
    expect(req.headers['content-type']).toBe('application/json');
    const body = JSON.parse(req.body);
    expect(Object.keys(body).sort()).toEqual(['alias', 'description', 'details', 'entity', 'message', 'priority', 'source', 'tags']);
    expect(body).toMatchObject({
      message: 'Issuer letsencrypt-prod in cluster prod is not ready',
      alias: ISSUER_ALIAS,
      priority: 'P1',
      source: 'certmgr-notify',
      entity: 'prod/cert-manager/letsencrypt-prod',
    });
    expect(body.description).toMatch(
      /^Issuer letsencrypt-prod in cluster prod is not ready \(namespace cert-manager\): ErrUpdateACMEAccount/,
    );
    expect(body.description).toContain('Reason: ErrUpdateACMEAccount');
    expect(body.tags).toEqual(['certmgr-notify', 'issuer', 'critical', 'cluster:prod']);
    expect(body.details).toMatchObject({
      eventType: 'evt.healthstatus.certmgr-issuer.notready',
      router: 'prod issuers',
      Reason: 'ErrUpdateACMEAccount',
    });
    for (const v of Object.values(body.details)) expect(typeof v).toBe('string'); // details: a map of strings
  });

  it.each([
    ['evt.healthstatus.certmgr-issuer.notready', 'P1'],
    ['evt.healthstatus.certmgr-certificate-resource.notready', 'P2'],
    ['evt.healthstatus.certmgr-agent.notready', 'P2'],
    ['evt.policy.expiringcertificates.failed', 'P3'],
  ] as const)('%s: priority %s', (type, priority) => {
    expect(buildOpsgenieAlert(notification(integ, ev(type))).priority).toBe(priority);
  });

  it('a recovery closes the alert its trigger opened: POST /v2/alerts/{alias}/close?identifierType=alias', async () => {
    await send(notification(integ, ev('evt.healthstatus.certmgr-issuer.notready')));
    const r = await send(notification(integ, ev('evt.healthstatus.certmgr-issuer.active')));
    expect(r).toMatchObject({ outcome: 'delivered', statusCode: 202 });
    const [create, close] = rx.requests;
    const alias = JSON.parse(create!.body).alias as string;
    expect(close!.path).toBe(`/v2/alerts/${encodeURIComponent(alias)}/close?identifierType=alias`);
    expect(decodeURIComponent(close!.path.split('/')[3]!)).toBe(ISSUER_ALIAS);
    expect(close!.headers['authorization']).toBe(`GenieKey ${API_KEY}`);
    const body = JSON.parse(close!.body);
    expect(body).toEqual({ source: 'certmgr-notify', user: 'certmgr-notify', note: expect.stringContaining('is ready again') });
  });

  it('a close of an alias Opsgenie does not know (404) is delivered: nothing is open', async () => {
    answer = () => ({ status: 404, body: '{"message":"Alert does not exist","took":0.001,"requestId":"x"}' });
    const r = await send(notification(integ, ev('evt.healthstatus.certmgr-certificate-resource.active')));
    expect(r).toEqual({ outcome: 'delivered', statusCode: 404 });
    // a create answered 404 is not "nothing to do": dead
    const c = await send(notification(integ, ev('evt.healthstatus.certmgr-certificate-resource.notready')));
    expect(c).toMatchObject({ outcome: 'dead', statusCode: 404 });
  });

  it.each([
    [
      { status: 429, headers: { 'retry-after': '7' } },
      { outcome: 'retry', statusCode: 429, retryAfterMs: 7000 },
    ],
    [{ status: 500 }, { outcome: 'retry', statusCode: 500 }],
    [{ status: 503 }, { outcome: 'retry', statusCode: 503 }],
    [
      { status: 400, body: '{"message":"Request body is not processable"}' },
      { outcome: 'dead', statusCode: 400 },
    ],
    [
      { status: 401, body: '{"message":"Key format is not valid!"}' },
      { outcome: 'dead', statusCode: 401 },
    ],
    [{ status: 422 }, { outcome: 'dead', statusCode: 422 }],
  ] as const)('answer %o -> %o (create and close alike)', async (a, want) => {
    answer = () => a;
    for (const type of ['evt.healthstatus.certmgr-issuer.notready', 'evt.healthstatus.certmgr-issuer.active'] as const) {
      const r = await send(notification(integ, ev(type)));
      expect(r).toMatchObject(want);
    }
  });

  it("a dead answer carries Opsgenie's message (a trusted destination); a retry does not", async () => {
    answer = () => ({ status: 422, body: '{"message":"Request body is not processable. Please check the errors.","took":0.0}' });
    const dead = await send(notification(integ, ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(dead.error).toBe('HTTP 422 Unprocessable Entity: Request body is not processable. Please check the errors.');
    answer = () => ({ status: 503, body: '{"message":"maintenance"}' });
    const retry = await send(notification(integ, ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(retry.error).toBe('HTTP 503 Service Unavailable');
  });

  it('the key never reaches a result, even when the receiver echoes it', async () => {
    answer = () => ({ status: 401, body: `{"message":"bad key GenieKey ${API_KEY}"}` });
    const r = await send(notification(integ, ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(JSON.stringify(r)).not.toContain(API_KEY);
    expect(r.responseBody).toContain('[REDACTED]');
  });

  it('without a key: dead, nothing sent', async () => {
    const r = await send(notification(integration('OPSGENIE', {}), ev('evt.healthstatus.certmgr-issuer.notready')));
    expect(r).toEqual({ outcome: 'dead', error: 'Opsgenie API key is not configured' });
    expect(rx.requests).toHaveLength(0);
  });

  it('a base URL with a path (a proxy) keeps it; an EU-style host works the same', async () => {
    await send(notification(integ, ev('evt.healthstatus.certmgr-issuer.notready')), `${rx.url}/og/`);
    await send(notification(integ, ev('evt.healthstatus.certmgr-issuer.active')), `${rx.url}/og`);
    expect(rx.requests.map((q) => q.path)).toEqual([
      `/og/v2/alerts`,
      `/og/v2/alerts/${encodeURIComponent(ISSUER_ALIAS)}/close?identifierType=alias`,
    ]);
    expect(opsgenieUrl('https://api.eu.opsgenie.com', '/v2/alerts')).toBe('https://api.eu.opsgenie.com/v2/alerts');
    expect(opsgenieUrl('not a url', '/v2/alerts')).toBeNull();
  });

  it.each(ALL_TYPES)('%s: every field within the documented limits, even for huge event text', (type) => {
    const big = 'x'.repeat(20_000);
    const data = { ...EVENTS[type].data, statusMessage: big, message: big, issuerName: 'i'.repeat(600), clusterName: 'c '.repeat(300) };
    const a = buildOpsgenieAlert(notification(integ, { type, data }));
    expect([...a.message].length).toBeLessThanOrEqual(OPSGENIE_LIMITS.message);
    expect(a.alias.length).toBeLessThanOrEqual(OPSGENIE_LIMITS.alias);
    expect([...a.description].length).toBeLessThanOrEqual(OPSGENIE_LIMITS.description);
    expect([...a.entity].length).toBeLessThanOrEqual(OPSGENIE_LIMITS.entity);
    expect(a.tags.length).toBeLessThanOrEqual(OPSGENIE_LIMITS.tags);
    for (const t of a.tags) {
      expect([...t].length).toBeLessThanOrEqual(OPSGENIE_LIMITS.tag);
      expect(t).not.toMatch(/[\s,]/);
    }
    const detailChars = Object.entries(a.details).reduce((s, [k, v]) => s + k.length + v.length, 0);
    expect(detailChars).toBeLessThanOrEqual(OPSGENIE_LIMITS.details);
  });

  describe('a group notification', () => {
    const member = (type: EventType): GroupMember => ({ eventId: `e-${type}`, event: ev(type), occurredAt: 0 });
    const group = (allResolved: boolean): NotificationGroup => ({
      key: 'certmgr:group:r1:0123456789abcdef',
      labels: { 'data.issuerName': 'letsencrypt-prod' },
      firing: allResolved ? [] : [member('evt.healthstatus.certmgr-certificate-resource.notready')],
      resolved: allResolved ? [member('evt.healthstatus.certmgr-certificate-resource.active')] : [],
      firingCount: allResolved ? 0 : 200,
      resolvedCount: allResolved ? 200 : 0,
      allResolved,
    });

    it('opens one alert under the group key and closes it when every member recovered', async () => {
      const open = notification(integ, ev('evt.healthstatus.certmgr-certificate-resource.notready'), { group: group(false) });
      const done = notification(integ, ev('evt.healthstatus.certmgr-certificate-resource.active'), { group: group(true) });
      await send(open);
      await send(done);
      expect(JSON.parse(rx.requests[0]!.body).alias).toBe('certmgr:group:r1:0123456789abcdef');
      expect(rx.requests[1]!.path).toBe(`/v2/alerts/${encodeURIComponent('certmgr:group:r1:0123456789abcdef')}/close?identifierType=alias`);
    });
  });

  describe('messages (the same texts as the other channels)', () => {
    const outage = (over: Partial<Notification> = {}) => groupNotification(integ, outageGroup(200, 3, 20, { runbookUrl: RUNBOOK }), over);

    it('a group: the description lists firing and recovered members with "and N more"; details carry key, counts and runbook', async () => {
      await send(outage());
      const a = JSON.parse(rx.requests[0]!.body) as ReturnType<typeof buildOpsgenieAlert>;
      expect(rx.requests[0]!.path).toBe('/v2/alerts');
      expect(a.alias).toBe('grp:0123456789abcdef');
      expect(a.message).toBe('Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered');
      const lines = a.description.split('\n');
      expect(lines).toContain('Not ready (200):');
      expect(lines).toContain('- Certificate team-0/shop-0: IssuerNotReady');
      expect(lines).toContain('and 190 more');
      expect(lines).toContain('Recovered (3):');
      expect(lines.some((l) => l.startsWith('- Certificate team-4/shop-200'))).toBe(true);
      expect(lines).toContain(`Runbook: ${RUNBOOK}`);
      expect(lines.filter((l) => l.startsWith('- Certificate'))).toHaveLength(13);
      expect(a.details).toMatchObject({
        groupKey: 'grp:0123456789abcdef',
        firingCount: '200',
        resolvedCount: '3',
        allResolved: 'false',
        runbookUrl: RUNBOOK,
      });
      expect(a.details['Details']).toBeUndefined();
    });

    it('a reminder says so in message, description and details', () => {
      const a = buildOpsgenieAlert(outage({ reminder: true }));
      expect(a.message).toMatch(/^Reminder: Issuer letsencrypt-prod/);
      expect(a.description).toMatch(/^Reminder: /);
      expect(a.description).toContain('Reminder: still not ready: 200');
      expect(a.details['reminder']).toBe('true');
      expect(a.tags).toEqual(expect.arrayContaining(['reminder', 'group']));
    });

    it("a template's title and text replace the computed ones", () => {
      const a = buildOpsgenieAlert(outage({ rendered: { title: 'Outage of LE prod', text: 'Call the PKI on-call.\nThen wait.' } }));
      expect(a.message).toBe('Outage of LE prod');
      expect(a.description.split('\n').slice(0, 4)).toEqual([
        'Call the PKI on-call. Then wait.', // the template's text is the summary (docs/templates.md)
        '',
        'Call the PKI on-call.',
        'Then wait.',
      ]);
    });

    it('a single event: its runbook in details and description', () => {
      const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, runbookUrl: RUNBOOK };
      const a = buildOpsgenieAlert(notification(integ, ev('evt.healthstatus.certmgr-issuer.notready', data)));
      expect(a.details['runbookUrl']).toBe(RUNBOOK);
      expect(a.description).toContain(`Runbook: ${RUNBOOK}`);
      expect(a.details['groupKey']).toBeUndefined();
    });

    it('the group closes (alias = group key) when all recovered; the close note is the summary', async () => {
      await send(groupNotification(integ, outageGroup(0, 200, 20)));
      expect(rx.requests[0]!.path).toBe(`/v2/alerts/${encodeURIComponent('grp:0123456789abcdef')}/close?identifierType=alias`);
      expect(JSON.parse(rx.requests[0]!.body).note).toMatch(/^Issuer letsencrypt-prod in cluster prod: all 200 recovered/);
    });

    it('a group of 10,000 members with huge field values: every field within its limit', async () => {
      const HUGE = '𝕏<&>*_['.repeat(40_000);
      const g = outageGroup(10_000, 10_000, 10_000, {
        statusReason: HUGE,
        statusMessage: HUGE,
        certificateName: HUGE,
        namespace: HUGE,
        runbookUrl: RUNBOOK,
      });
      g.labels = { 'data.issuerName': HUGE, 'data.clusterName': HUGE, [HUGE]: HUGE };
      const n = groupNotification(integ, g, { reminder: true, rendered: { title: HUGE, text: HUGE } });
      expect((await send(n)).outcome).toBe('delivered');
      const body = rx.requests[0]!.body;
      expect(Buffer.byteLength(body)).toBeLessThan(200_000);
      const a = JSON.parse(body) as ReturnType<typeof buildOpsgenieAlert>;
      expect([...a.message].length).toBeLessThanOrEqual(OPSGENIE_LIMITS.message);
      expect([...a.description].length).toBeLessThanOrEqual(OPSGENIE_LIMITS.description);
      expect([...a.entity].length).toBeLessThanOrEqual(OPSGENIE_LIMITS.entity);
      const detailChars = Object.entries(a.details).reduce((s, [k, v]) => s + [...k].length + [...v].length, 0);
      expect(detailChars).toBeLessThanOrEqual(OPSGENIE_LIMITS.details);
      // the group's identity survives the cut
      expect(a.details).toMatchObject({ groupKey: 'grp:0123456789abcdef', firingCount: '10000', resolvedCount: '10000' });
      expect(a.description).toContain('and 9990 more');
    });
  });

  it('a reminder creates again under the same alias (Opsgenie counts the repeat) and is tagged', () => {
    const a = buildOpsgenieAlert(notification(integ, ev('evt.healthstatus.certmgr-issuer.notready'), { reminder: true }));
    expect(a.alias).toBe(ISSUER_ALIAS);
    expect(a.tags).toContain('reminder');
  });
});
