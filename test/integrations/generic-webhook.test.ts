/**
 * GENERIC_WEBHOOK against a loopback receiver: the body (the template's rendered JSON, or the payload v1 data),
 * Content-Type, Standard Webhooks headers and signature, extra headers (and their rules), and the outcomes.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkExtraHeaders, genericWebhookBody, MAX_EXTRA_HEADERS } from '../../src/integrations/generic-webhook.js';
import { createNotifier } from '../../src/integrations/index.js';
import { TEMPLATE_LIMITS } from '../../src/templates/engine.js';
import { buildCloudEvent } from '../../src/integrations/payload.js';
import type { Notification } from '../../src/integrations/types.js';
import { EVENTS, integration, notification, opts, startReceiver, type Receiver } from './helpers.js';

const WHSEC = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const BEARER = 'Bearer gh0st-t0ken-0123456789';

describe('GENERIC_WEBHOOK against a loopback receiver', () => {
  let rx: Receiver;
  const hook = (secrets: Record<string, string> = {}) =>
    integration('GENERIC_WEBHOOK', { url: `${rx.url}/in?token=qs-secret-1`, ...secrets });
  const issuer = EVENTS['evt.healthstatus.certmgr-issuer.notready'];
  const send = (n: Notification) => createNotifier('GENERIC_WEBHOOK', opts()).send(n);

  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
    rx.handle((_r, res) => res.writeHead(200).end('ok'));
  });

  it('without a template: the payload v1 data as JSON, webhook-id and -timestamp, unsigned', async () => {
    const n = notification(hook(), issuer);
    const r = await send(n);
    expect(r).toMatchObject({ outcome: 'delivered', statusCode: 200 });
    const req = rx.requests[0]!;
    expect(req.path).toBe('/in?token=qs-secret-1');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['webhook-id']).toBe(n.id);
    expect(req.headers['webhook-timestamp']).toMatch(/^\d+$/);
    expect(req.headers['webhook-signature']).toBeUndefined();
    expect(JSON.parse(req.body)).toEqual(JSON.parse(JSON.stringify(buildCloudEvent(n).data)));
    expect(JSON.parse(req.body)).toMatchObject({ version: 'v1', kind: 'issuer', state: 'unhealthy', eventId: 'evt-0001' });
  });

  it('with a template: its rendered body, verbatim, signed (Standard Webhooks verifies it)', async () => {
    const body = '{ "text": "Issuer letsencrypt-prod is down", "n": 1 }';
    const n = notification(hook({ signingSecret: WHSEC }), issuer, { rendered: { body } });
    expect(await send(n)).toMatchObject({ outcome: 'delivered' });
    const req = rx.requests[0]!;
    expect(req.body).toBe(body);
    expect(new Webhook(WHSEC).verify(req.body, req.headers as Record<string, string>)).toEqual({
      text: 'Issuer letsencrypt-prod is down',
      n: 1,
    });
  });

  it('a rendered body that is not JSON: dead with the parse error, nothing sent', async () => {
    const n = notification(hook(), issuer, { rendered: { body: '{"text": "unterminated}' } });
    const r = await send(n);
    expect(r.outcome).toBe('dead');
    expect(r.error).toMatch(/^the template's rendered body is not valid JSON: /);
    expect(r.error).not.toContain('unterminated');
    expect(rx.requests).toHaveLength(0);
  });

  it("a rendered body over the template engine's bound (TEMPLATE_LIMITS.maxBodyChars): dead", () => {
    const max = TEMPLATE_LIMITS.maxBodyChars;
    const body = (chars: number) => ({ rendered: { body: JSON.stringify('x'.repeat(chars - 2)) } });
    expect(genericWebhookBody(notification(hook(), issuer, body(max)))).toHaveProperty('body');
    const r = genericWebhookBody(notification(hook(), issuer, body(max + 1)));
    expect(r).toEqual({ error: `the template's rendered body is longer than ${max} characters` });
  });

  it('extra headers are sent; their values never reach a result', async () => {
    rx.handle((r, res) => res.writeHead(403).end(`denied for ${String(r.headers['authorization'])} ${String(r.headers['x-team'])}`));
    const headers = JSON.stringify([
      ['Authorization', BEARER],
      ['X-Team', 'platform-sre-team'],
    ]);
    const r = await send(notification(hook({ headers }), issuer));
    const req = rx.requests[0]!;
    expect(req.headers['authorization']).toBe(BEARER);
    expect(req.headers['x-team']).toBe('platform-sre-team');
    expect(r).toMatchObject({ outcome: 'dead', statusCode: 403, error: 'HTTP 403 Forbidden' });
    const text = JSON.stringify(r);
    for (const s of [BEARER, 'gh0st-t0ken', 'platform-sre-team', 'qs-secret-1']) expect(text).not.toContain(s);
  });

  it.each([
    [
      { status: 429, headers: { 'retry-after': '2' } },
      { outcome: 'retry', statusCode: 429, retryAfterMs: 2000 },
    ],
    [
      { status: 503, headers: {} },
      { outcome: 'retry', statusCode: 503 },
    ],
    [
      { status: 400, headers: {} },
      { outcome: 'dead', statusCode: 400 },
    ],
    [
      { status: 301, headers: { location: 'http://169.254.169.254/' } },
      { outcome: 'dead', statusCode: 301 },
    ],
  ] as const)('answer %o -> %o', async (a, want) => {
    rx.handle((_r, res) => res.writeHead(a.status, a.headers).end());
    expect(await send(notification(hook(), issuer))).toMatchObject(want);
    expect(rx.requests).toHaveLength(1);
  });
});

describe('checkExtraHeaders (the rules of extra headers)', () => {
  it('accepts names and values, trimmed', () => {
    expect(
      checkExtraHeaders([
        { name: 'Authorization', value: ' Bearer x ' },
        { name: 'X-Api-Key', value: 'k' },
      ]),
    ).toEqual({
      headers: [
        ['Authorization', 'Bearer x'],
        ['X-Api-Key', 'k'],
      ],
    });
    expect(checkExtraHeaders([])).toEqual({ headers: [] });
  });

  it.each([
    ['not a list', { name: 'a', value: 'b' }, '', /must be a list/],
    ['too many', Array.from({ length: MAX_EXTRA_HEADERS + 1 }, (_, i) => ({ name: `X-${i}`, value: 'v' })), '', /at most 10/],
    ['a space in the name', [{ name: 'X Bad', value: 'v' }], '[0].name', /HTTP header name/],
    ['a colon in the name', [{ name: 'X:Bad', value: 'v' }], '[0].name', /HTTP header name/],
    ['a long name', [{ name: 'X'.repeat(65), value: 'v' }], '[0].name', /HTTP header name/],
    ['Host', [{ name: 'host', value: 'evil.example' }], '[0].name', /cannot be overridden/],
    ['Content-Length', [{ name: 'Content-Length', value: '0' }], '[0].name', /cannot be overridden/],
    ['Content-Type', [{ name: 'Content-Type', value: 'text/plain' }], '[0].name', /cannot be overridden/],
    ['Transfer-Encoding', [{ name: 'Transfer-Encoding', value: 'chunked' }], '[0].name', /cannot be overridden/],
    ['Connection', [{ name: 'Connection', value: 'close' }], '[0].name', /cannot be overridden/],
    ['Proxy-Authorization', [{ name: 'Proxy-Authorization', value: 'Basic x' }], '[0].name', /cannot be overridden/],
    ['webhook-signature', [{ name: 'Webhook-Signature', value: 'v1,forged' }], '[0].name', /cannot be overridden/],
    ['User-Agent', [{ name: 'user-agent', value: 'x' }], '[0].name', /cannot be overridden/],
    ['__proto__', [{ name: '__proto__', value: 'x' }], '[0].name', /__proto__ is not accepted as a header name/],
    ['__PROTO__', [{ name: '__PROTO__', value: 'x' }], '[0].name', /__PROTO__ is not accepted/],
    [
      'constructor',
      [
        { name: 'X-A', value: '1' },
        { name: 'constructor', value: 'x' },
      ],
      '[1].name',
      /constructor is not accepted/,
    ],
    ['Prototype', [{ name: 'Prototype', value: 'x' }], '[0].name', /Prototype is not accepted/],
    ['a non-token name', [{ name: 'X-\u00e9', value: 'v' }], '[0].name', /HTTP header name/],
    ['an empty name', [{ name: '', value: 'v' }], '[0].name', /HTTP header name/],
    ['a name with a line break', [{ name: 'X-A\r\nX-B', value: 'v' }], '[0].name', /HTTP header name/],
    [
      'a duplicate (any case)',
      [
        { name: 'X-A', value: '1' },
        { name: 'x-a', value: '2' },
      ],
      '[1].name',
      /given twice/,
    ],
    ['a line break in the value', [{ name: 'X-A', value: 'a\r\nX-Injected: 1' }], '[0].value', /visible ASCII/],
    ['an empty value', [{ name: 'X-A', value: ' ' }], '[0].value', /visible ASCII/],
    ['a long value', [{ name: 'X-A', value: 'v'.repeat(1025) }], '[0].value', /visible ASCII/],
    ['a non-ASCII value', [{ name: 'X-A', value: 'schlüssel' }], '[0].value', /visible ASCII/],
  ] as const)('refuses %s, at %s', (_what, input, at, problem) => {
    const r = checkExtraHeaders(input);
    expect(r).toMatchObject({ at, problem: expect.stringMatching(problem) });
  });
});
