import { readFileSync, writeFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ROOT_CAUSE_HINTS } from '../../src/emitter/rootcause/classify.js';
import { withRootCause } from '../../src/emitter/rootcause/event.js';
import { createNotifier } from '../../src/integrations/index.js';
import { buildCloudEvent, PAYLOAD_SCHEMA_ID } from '../../src/integrations/payload.js';
import { signingKey } from '../../src/integrations/webhook.js';
import type { Notification, Notifier } from '../../src/integrations/types.js';
import {
  ALL_TYPES,
  EVENTS,
  groupNotification,
  integration,
  notification,
  opts,
  outageGroup,
  startReceiver,
  type Receiver,
} from './helpers.js';

const SCHEMA_PATH = new URL('../../docs/webhook-payload.v1.schema.json', import.meta.url);
const EXAMPLES_PATH = new URL('../../docs/webhook-payload.v1.examples.json', import.meta.url);

/** A certificate `.notready` with the root cause the emitter found (docs/emitter.md "Root cause"). */
const ROOT_CAUSE_EVENT = withRootCause(EVENTS['evt.healthstatus.certmgr-certificate-resource.notready'], {
  class: 'http-self-check',
  hint: ROOT_CAUSE_HINTS['http-self-check'],
  message: "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'",
  resource: 'Challenge shop/shop-tls-1-2976254157-1825524577 (HTTP-01 shop.example.com)',
});

function schemaValidator(): ValidateFunction {
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormatsModule.default(ajv, ['date-time']);
  return ajv.compile(JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')));
}

const WHSEC = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const RAW_SECRET = 'pässwörd-🔑-not-base64';

describe('WEBHOOK against a loopback receiver', () => {
  let rx: Receiver;
  let notifier: Notifier;
  let validate: ValidateFunction;
  const hook = (secrets: Record<string, string> = {}) =>
    integration('WEBHOOK', { url: `${rx.url}/hooks/in?token=abc123secret`, ...secrets });
  const last = () => rx.requests.at(-1)!;

  beforeAll(async () => {
    rx = await startReceiver((_r, res) => res.writeHead(204).end());
    notifier = createNotifier('WEBHOOK', opts());
    validate = schemaValidator();
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
  });

  it.each(ALL_TYPES)('%s: CloudEvents envelope with a schema-valid v1 payload', async (type) => {
    const n = notification(hook(), EVENTS[type], { id: `dlv-${type}` });
    const r = await notifier.send(n);
    expect(r).toEqual({ outcome: 'delivered', statusCode: 204 });
    const req = last();
    expect(req.path).toBe('/hooks/in?token=abc123secret');
    expect(req.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
    expect(req.headers['webhook-id']).toBe(`dlv-${type}`);
    expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10);
    expect(req.headers['webhook-signature']).toBeUndefined();
    const ce = JSON.parse(req.body);
    expect(ce).toMatchObject({
      specversion: '1.0',
      id: `dlv-${type}`,
      source: '/certmgr-notify/routers/rtr-1',
      type: `io.certmgr.notify.${type}`,
      time: '2026-03-01T10:00:05.000Z',
      datacontenttype: 'application/json',
      dataschema: PAYLOAD_SCHEMA_ID,
    });
    const ok = validate(ce.data);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
    // Our normalized payload, not the internal event.
    expect(ce.data.version).toBe('v1');
    expect(ce.data.eventType).toBe(type);
    expect(ce.data).not.toHaveProperty('type');
    expect(ce.data).not.toHaveProperty('data');
    for (const internal of ['statusReason', 'clusterId', 'issuerName', 'SANs', 'ruleId']) expect(ce.data).not.toHaveProperty(internal);
  });

  it('maps the health fields into the payload', async () => {
    await notifier.send(notification(hook(), EVENTS['evt.healthstatus.certmgr-certificate-resource.notready']));
    const { data, subject } = JSON.parse(last().body);
    expect(subject).toBe('prod/shop/shop-tls');
    expect(data).toMatchObject({
      kind: 'certificate',
      state: 'unhealthy',
      severity: 'error',
      cluster: { name: 'prod' },
      resource: { kind: 'Certificate', namespace: 'shop', name: 'shop-tls', id: null },
      reason: 'DoesNotExist',
      message: 'Issuing certificate as Secret does not exist',
      unhealthyDuration: '0h12m3.5s',
      certificate: {
        issuerName: 'letsencrypt-prod',
        subject: { commonName: 'shop.example.com' },
        dnsNames: ['shop.example.com', 'www.shop.example.com'],
      },
      expiration: null,
      router: { id: 'rtr-1', name: 'prod issuers' },
    });
  });

  it('unhealthy and restored share the correlationKey', async () => {
    await notifier.send(notification(hook(), EVENTS['evt.healthstatus.certmgr-issuer.notready']));
    await notifier.send(notification(hook(), EVENTS['evt.healthstatus.certmgr-issuer.active']));
    const [a, b] = rx.requests.map((q) => JSON.parse(q.body).data);
    expect(a.state).toBe('unhealthy');
    expect(b.state).toBe('restored');
    expect(b.correlationKey).toBe(a.correlationKey);
  });

  it('signs with a whsec_ secret; standardwebhooks verifies it', async () => {
    await notifier.send(notification(hook({ signingSecret: WHSEC }), EVENTS['evt.healthstatus.certmgr-issuer.notready']));
    const req = last();
    expect(req.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const headers = req.headers as Record<string, string>;
    const verified = new Webhook(WHSEC).verify(req.body, headers) as { id: string };
    expect(verified.id).toBe('dlv-0001');
    // The same base64 key without the prefix works too (standard library behaviour).
    expect(() => new Webhook(WHSEC.slice('whsec_'.length)).verify(req.body, headers)).not.toThrow();
    // Tampering with the body, the id or using another secret fails verification.
    expect(() => new Webhook(WHSEC).verify(req.body.replace('letsencrypt-prod', 'letsencrypt-evil'), headers)).toThrow(/signature/i);
    expect(() => new Webhook(WHSEC).verify(req.body, { ...headers, 'webhook-id': 'other' })).toThrow(/signature/i);
    expect(() => new Webhook('whsec_' + Buffer.from('another key').toString('base64')).verify(req.body, headers)).toThrow(/signature/i);
  });

  it('signs with a raw secret as its UTF-8 bytes', async () => {
    await notifier.send(notification(hook({ signingSecret: RAW_SECRET }), EVENTS['evt.policy.expiringcertificates.failed']));
    const req = last();
    const headers = req.headers as Record<string, string>;
    const wh = new Webhook(Buffer.from(RAW_SECRET, 'utf8'), { format: 'raw' });
    expect(() => wh.verify(req.body, headers)).not.toThrow();
    // Not the whsec_ interpretation.
    expect(() => new Webhook(Buffer.from(RAW_SECRET, 'latin1'), { format: 'raw' }).verify(req.body, headers)).toThrow();
  });

  it('keeps webhook-id across attempts and signs each attempt with its own timestamp', async () => {
    let now = Date.now();
    const clocked = createNotifier('WEBHOOK', opts({ clock: () => now }));
    const n: Notification = notification(hook({ signingSecret: WHSEC }), EVENTS['evt.healthstatus.certmgr-issuer.notready']);
    await clocked.send(n);
    now += 60_000;
    await clocked.send({ ...n, attempt: 2 });
    const [a, b] = rx.requests;
    expect(a!.headers['webhook-id']).toBe(n.id);
    expect(b!.headers['webhook-id']).toBe(n.id);
    expect(Number(b!.headers['webhook-timestamp']) - Number(a!.headers['webhook-timestamp'])).toBe(60);
    expect(JSON.parse(b!.body).id).toBe(n.id);
    expect(b!.headers['webhook-signature']).not.toBe(a!.headers['webhook-signature']);
    expect(() => new Webhook(WHSEC).verify(a!.body, a!.headers as Record<string, string>)).not.toThrow();
  });

  it('signs with the secret the record holds now, also when the same secrets object was changed (parsed keys are cached)', async () => {
    const n = notification(hook({ signingSecret: WHSEC }), EVENTS['evt.healthstatus.certmgr-issuer.notready']);
    await notifier.send(n);
    const other = 'whsec_' + Buffer.from('another key of the hook').toString('base64');
    n.integration.secrets['signingSecret'] = other;
    await notifier.send(n);
    n.integration.secrets['signingSecret'] = 'whsec_not*base64!';
    expect((await notifier.send(n)).outcome).toBe('dead');
    const [a, b] = rx.requests;
    expect(rx.requests).toHaveLength(2);
    expect(() => new Webhook(WHSEC).verify(a!.body, a!.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(other).verify(b!.body, b!.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(WHSEC).verify(b!.body, b!.headers as Record<string, string>)).toThrow(/signature/i);
  });

  it('an invalid whsec_ secret is dead and nothing is sent', async () => {
    const r = await notifier.send(
      notification(hook({ signingSecret: 'whsec_not*base64!' }), EVENTS['evt.healthstatus.certmgr-issuer.notready']),
    );
    expect(r.outcome).toBe('dead');
    expect(r.error).toMatch(/signing secret/);
    expect(r.error).not.toContain('not*base64');
    expect(rx.requests).toHaveLength(0);
  });

  it('without a URL is dead', async () => {
    const r = await notifier.send(notification(integration('WEBHOOK', {}), EVENTS['evt.healthstatus.certmgr-issuer.notready']));
    expect(r).toEqual({ outcome: 'dead', error: 'webhook URL is not configured' });
  });
});

describe('signingKey', () => {
  it('decodes whsec_ base64 and takes other secrets as UTF-8', () => {
    expect(signingKey('whsec_' + Buffer.from('k3y-bytes').toString('base64'))).toEqual(Buffer.from('k3y-bytes'));
    expect(signingKey('plain')).toEqual(Buffer.from('plain', 'utf8'));
    expect(signingKey('whsec_')).toBeNull();
    expect(signingKey('whsec_a')).toBeNull();
  });
});

describe('payload schema (docs/webhook-payload.v1.schema.json)', () => {
  const validate = schemaValidator();
  const payload = (type: keyof typeof EVENTS) => buildCloudEvent(notification(integration('WEBHOOK', {}), EVENTS[type])).data;

  it('has the dataschema id', () => {
    expect(JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')).$id).toBe(PAYLOAD_SCHEMA_ID);
  });

  it('validates payloads built from sparse events', () => {
    for (const type of ALL_TYPES) {
      const data = buildCloudEvent(notification(integration('WEBHOOK', {}), { type, data: {} })).data;
      expect(validate(data), JSON.stringify(validate.errors)).toBe(true);
    }
  });

  it('rejects payloads that break the contract', () => {
    const issuer = payload('evt.healthstatus.certmgr-issuer.notready');
    const expiry = payload('evt.policy.expiringcertificates.failed');
    const broken: unknown[] = [
      { ...issuer, version: 'v2' },
      { ...issuer, extra: 1 },
      { ...issuer, kind: 'certificate' },
      { ...issuer, state: 'restored' },
      { ...issuer, expiration: expiry.expiration },
      { ...issuer, resource: { ...issuer.resource, kind: 'Certificate' } },
      { ...expiry, cluster: issuer.cluster },
      { ...expiry, expiration: { ...expiry.expiration, ruleId: 'two' } },
      { ...issuer, occurredAt: 'yesterday' },
      Object.fromEntries(Object.entries(issuer).filter(([k]) => k !== 'correlationKey')),
      // the members added in v1 are always present and typed
      Object.fromEntries(Object.entries(issuer).filter(([k]) => k !== 'group')),
      { ...issuer, reminder: 'yes' },
      { ...issuer, runbookUrl: 5 },
      { ...issuer, group: { key: 'k' } },
      { ...issuer, rootCause: { class: 'everything-is-fine', hint: null, message: null, resource: null } },
      { ...issuer, rootCause: 'http-self-check' },
      { ...expiry, expiration: { ...expiry.expiration, daysUntilExpiry: 'three' } },
      Object.fromEntries(Object.entries(expiry).map(([k, v]) => [k, k === 'expiration' ? { ...(v as object), dnsNames: undefined } : v])),
    ];
    for (const b of broken) expect(validate(b), JSON.stringify(b)).toBe(false);
  });

  it("a group's type and state are the group's, not its newest member's: still failing after a partial recovery", () => {
    const webhook = integration('WEBHOOK', {});
    const speaking = (g: ReturnType<typeof outageGroup>) => {
      const newest = g.resolved[0]!; // the newest event is a recovery
      const ce = buildCloudEvent(notification(webhook, newest.event, { eventId: newest.eventId, group: g }));
      return { type: ce.type.split('.').pop(), eventType: ce.data.eventType.split('.').pop(), state: ce.data.state };
    };
    expect(speaking(outageGroup(116, 84))).toEqual({ type: 'notready', eventType: 'notready', state: 'unhealthy' });
    // firing members past the listed ones (counted, not named) still fail
    expect(speaking({ ...outageGroup(0, 3), firingCount: 5, allResolved: false })).toEqual({
      type: 'notready',
      eventType: 'notready',
      state: 'unhealthy',
    });
    expect(speaking(outageGroup(0, 200))).toEqual({ type: 'active', eventType: 'active', state: 'restored' });
  });

  /** The documented examples: three single events, a group of an issuer outage, and a reminder. */
  const exampleNotifications = (): Notification[] => [
    ...(
      [
        'evt.healthstatus.certmgr-issuer.notready',
        'evt.healthstatus.certmgr-certificate-resource.active',
        'evt.policy.expiringcertificates.failed',
      ] as const
    ).map((t) => notification(integration('WEBHOOK', {}), EVENTS[t], { id: `dlv-${t.split('.').slice(-2).join('-')}` })),
    groupNotification(integration('WEBHOOK', {}), outageGroup(200, 3, 2, { runbookUrl: 'https://runbooks.example/issuer' }), {
      id: 'dlv-group-issuer-outage',
    }),
    notification(integration('WEBHOOK', {}), EVENTS['evt.healthstatus.certmgr-certificate-resource.notready'], {
      id: 'dlv-reminder',
      reminder: true,
    }),
    notification(integration('WEBHOOK', {}), ROOT_CAUSE_EVENT, { id: 'dlv-certificate-resource-notready-root-cause' }),
  ];

  it('the committed examples are what the code produces (UPDATE_EXAMPLES=1 rewrites them)', () => {
    if (process.env['UPDATE_EXAMPLES'] === '1') {
      writeFileSync(EXAMPLES_PATH, JSON.stringify(exampleNotifications().map(buildCloudEvent), null, 2) + '\n');
    }
    const examples = JSON.parse(readFileSync(EXAMPLES_PATH, 'utf8')) as Array<{ id: string; type: string; data: unknown }>;
    expect(examples).toEqual(exampleNotifications().map(buildCloudEvent));
    for (const ex of examples) expect(validate(ex.data), JSON.stringify(validate.errors)).toBe(true);
  });
});
