import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EventType } from '../../src/events/families.js';
import { createNotifier } from '../../src/integrations/index.js';
import { MAX_EVENT_BYTES, enqueueUrl, serializeIncidentEvent, buildIncidentEvent } from '../../src/integrations/incident.js';
import type { Notifier } from '../../src/integrations/types.js';
import { APP_ID, CERT_ID, CLUSTER_ID, EVENTS, integration, notification, opts, startReceiver, type Receiver } from './helpers.js';

const ROUTING_KEY = 'R0UT1NGKEY0123456789abcdefABCDEF';

describe('INCIDENT_MGMT (Events API v2) against a loopback receiver', () => {
  let rx: Receiver;
  let notifier: Notifier;
  const integ = integration('INCIDENT_MGMT', { integrationKey: ROUTING_KEY });
  const sent = () => JSON.parse(rx.requests.at(-1)!.body);
  const send = (type: EventType, data?: Record<string, unknown>) =>
    notifier.send(notification(integ, { type, data: data ?? EVENTS[type].data }));

  beforeAll(async () => {
    rx = await startReceiver((r, res) => {
      const b = JSON.parse(r.body);
      res
        .writeHead(202, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status: 'success', message: 'Event processed', dedup_key: b.dedup_key }));
    });
    // A trailing slash on the base URL is tolerated.
    notifier = createNotifier('INCIDENT_MGMT', opts({ incidentEventsUrl: `${rx.url}/` }));
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
  });

  it('triggers on an issuer notready with the documented payload', async () => {
    const r = await send('evt.healthstatus.certmgr-issuer.notready');
    expect(r.outcome).toBe('delivered');
    expect(r.statusCode).toBe(202);
    const req = rx.requests[0]!;
    expect(req.path).toBe('/v2/enqueue');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['authorization']).toBeUndefined();
    const body = sent();
    expect(body).toEqual({
      routing_key: ROUTING_KEY,
      event_action: 'trigger',
      dedup_key: `certmgr:issuer:${CLUSTER_ID}:cert-manager:letsencrypt-prod`,
      client: 'certmgr-notify',
      payload: {
        summary:
          'Issuer letsencrypt-prod in cluster prod is not ready (namespace cert-manager): ErrUpdateACMEAccount: Failed to update ACME account:400 urn:ietf:params:acme:error:invalidContact',
        source: 'prod',
        severity: 'critical',
        timestamp: '2026-03-01T10:00:00Z',
        component: 'issuer/cert-manager/letsencrypt-prod',
        group: 'cert-manager',
        class: 'ErrUpdateACMEAccount',
        custom_details: {
          eventType: 'evt.healthstatus.certmgr-issuer.notready',
          eventId: 'evt-0001',
          router: 'prod issuers',
          ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data,
        },
      },
    });
    expect(r.responseBody).toContain('"dedup_key"');
  });

  it('resolves with the dedup_key of the trigger (issuer and certificate)', async () => {
    await send('evt.healthstatus.certmgr-issuer.notready');
    await send('evt.healthstatus.certmgr-issuer.active');
    await send('evt.healthstatus.certmgr-certificate-resource.notready');
    await send('evt.healthstatus.certmgr-certificate-resource.active');
    const [it1, ir, ct, cr] = rx.requests.map((q) => JSON.parse(q.body));
    expect(it1.event_action).toBe('trigger');
    expect(ir.event_action).toBe('resolve');
    expect(ir.dedup_key).toBe(it1.dedup_key);
    expect(ct.event_action).toBe('trigger');
    expect(cr.event_action).toBe('resolve');
    expect(cr.dedup_key).toBe(ct.dedup_key);
    expect(ct.dedup_key).toBe(`certmgr:certificate:${CLUSTER_ID}:shop:shop-tls`);
    expect(ct.dedup_key).not.toBe(it1.dedup_key);
    expect(ct.payload.severity).toBe('error');
    expect(ir.payload.severity).toBe('info');
    expect(ct.payload.component).toBe('certificate/shop/shop-tls');
  });

  it('triggers a warning per certificate and rule for expiration', async () => {
    const data = EVENTS['evt.policy.expiringcertificates.failed'].data;
    await send('evt.policy.expiringcertificates.failed');
    await send('evt.policy.expiringcertificates.failed', { ...data, notificationDate: '2026-03-02T09:00:00Z' });
    await send('evt.policy.expiringcertificates.failed', { ...data, ruleId: 3, threshold: 14 });
    const [a, again, otherRule] = rx.requests.map((q) => JSON.parse(q.body));
    expect(a).toMatchObject({
      event_action: 'trigger',
      dedup_key: `certmgr:certificateExpiration:${CERT_ID}:rule:2`,
      payload: {
        severity: 'warning',
        source: 'certificate-monitoring',
        class: 'CertificateExpiring',
        group: APP_ID,
        timestamp: data['notificationDate'],
        custom_details: { ruleId: 2, threshold: 30 },
      },
    });
    expect(a.payload.summary).toMatch(/^Certificate expiring within 30 days: Certificate expiration: Certificate shop\.example\.com/);
    expect(again.dedup_key).toBe(a.dedup_key);
    expect(otherRule.dedup_key).not.toBe(a.dedup_key);
  });

  it('keeps summary within 1024 characters', async () => {
    const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, statusMessage: 'x'.repeat(5000) };
    await send('evt.healthstatus.certmgr-issuer.notready', data);
    const body = sent();
    expect(Array.from(body.payload.summary as string).length).toBe(1024);
    expect(body.payload.custom_details.statusMessage).toHaveLength(5000);
  });

  it('falls back to occurredAt when the event has no valid timestamp', async () => {
    const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, statusTransition: 'yesterday' };
    await send('evt.healthstatus.certmgr-issuer.notready', data);
    expect(sent().payload.timestamp).toBe('2026-03-01T10:00:05.000Z');
  });

  it('400 is dead and explains the rejection', async () => {
    rx.handle((_r, res) =>
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status: 'invalid event', message: 'Event object is invalid', errors: ["'payload.summary' is missing"] })),
    );
    try {
      const r = await send('evt.healthstatus.certmgr-issuer.notready');
      expect(r.outcome).toBe('dead');
      expect(r.statusCode).toBe(400);
      expect(r.error).toBe("HTTP 400 Bad Request: Event object is invalid: 'payload.summary' is missing");
      expect(r.error).not.toContain(ROUTING_KEY);
    } finally {
      rx.handle((_r, res) => res.writeHead(202).end('{}'));
    }
  });

  it('without an integration key is dead and sends nothing', async () => {
    const r = await notifier.send(notification(integration('INCIDENT_MGMT', {}), EVENTS['evt.healthstatus.certmgr-issuer.notready']));
    expect(r).toEqual({ outcome: 'dead', error: 'integration key is not configured' });
    expect(rx.requests).toHaveLength(0);
  });
});

describe('incident event size', () => {
  it('replaces custom_details beyond 512 KB', () => {
    const n = notification(integration('INCIDENT_MGMT', { integrationKey: ROUTING_KEY }), {
      type: 'evt.healthstatus.certmgr-issuer.notready',
      data: { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, statusMessage: 'y'.repeat(600_000) },
    });
    const body = serializeIncidentEvent(buildIncidentEvent(n, ROUTING_KEY));
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_EVENT_BYTES);
    const parsed = JSON.parse(body);
    expect(parsed.payload.custom_details).toEqual({
      eventType: 'evt.healthstatus.certmgr-issuer.notready',
      note: 'event data too large; omitted',
    });
    expect(parsed.payload.summary.length).toBeLessThanOrEqual(1024);
  });
});

describe('--incident-events-url with a path or a query string', () => {
  it.each([
    ['https://events.pagerduty.com', 'https://events.pagerduty.com/v2/enqueue'],
    ['https://events.pagerduty.com/', 'https://events.pagerduty.com/v2/enqueue'],
    ['https://proxy.example/pd//', 'https://proxy.example/pd/v2/enqueue'],
    ['https://proxy.example/pd?token=abc&x=1', 'https://proxy.example/pd/v2/enqueue?token=abc&x=1'],
    ['https://proxy.example/pd/?token=abc#frag', 'https://proxy.example/pd/v2/enqueue?token=abc'],
    ['not a url', null],
  ])('%s -> %s', (base, url) => {
    expect(enqueueUrl(base)).toBe(url);
  });

  it('a real receiver gets /pd/v2/enqueue with the query string kept', async () => {
    const rx = await startReceiver((_r, res) => res.writeHead(202).end('{"status":"success"}'));
    try {
      const n = createNotifier('INCIDENT_MGMT', opts({ incidentEventsUrl: `${rx.url}/pd?token=abc` }));
      const r = await n.send(
        notification(integration('INCIDENT_MGMT', { integrationKey: ROUTING_KEY }), EVENTS['evt.healthstatus.certmgr-issuer.notready']),
      );
      expect(r.outcome).toBe('delivered');
      expect(rx.requests.map((q) => q.path)).toEqual(['/pd/v2/enqueue?token=abc']);
    } finally {
      await rx.close();
    }
  });
});
