/**
 * The status classification table, run through every HTTP notifier against a real loopback
 * receiver, and the rule that no secret or URL reaches a DeliveryResult.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNotifier } from '../../src/integrations/index.js';
import type { DeliveryResult, IntegrationOptions, Notification } from '../../src/integrations/types.js';
import type { IntegrationRecord } from '../../src/store/types.js';
import { EVENTS, integration, notification, opts, startReceiver, type Receiver } from './helpers.js';
import { closedPort } from '../support/ports.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const URL_TOKEN = 'T01ABCDEF/B02GHIJKL/s3cr3tPathToken';
const QUERY_TOKEN = 'sig=Qu3rySecretValue';
const ROUTING_KEY = 'R0UT1NGKEY0123456789abcdefABCDEF';
const SIGNING_SECRET = 'whsec_' + Buffer.from('a-signing-key-of-32-bytes-length').toString('base64');

type HttpType = 'INCIDENT_MGMT' | 'WEBHOOK' | 'SLACK' | 'TEAMS' | 'OPSGENIE' | 'GOOGLE_CHAT' | 'DISCORD' | 'GENERIC_WEBHOOK';
const OPSGENIE_KEY = 'eb243592-faa2-4ba2-a551-1afdf565c889';
const BEARER = 'Bearer h3ader-t0ken-value';

/** Integration record plus options for one HTTP notifier type pointed at `base`. */
function target(
  type: HttpType,
  base: string,
  over: Partial<IntegrationOptions> = {},
): { integ: IntegrationRecord; o: IntegrationOptions; secrets: string[] } {
  const secretUrl = `${base}/${URL_TOKEN}?${QUERY_TOKEN}`;
  switch (type) {
    case 'INCIDENT_MGMT':
      return {
        integ: integration(type, { integrationKey: ROUTING_KEY }),
        o: opts({ incidentEventsUrl: base, clock: () => NOW, ...over }),
        secrets: [ROUTING_KEY],
      };
    case 'OPSGENIE':
      return {
        integ: integration(type, { apiKey: OPSGENIE_KEY }),
        o: opts({ opsgenieApiUrl: base, clock: () => NOW, ...over }),
        secrets: [OPSGENIE_KEY],
      };
    case 'GENERIC_WEBHOOK':
      return {
        integ: integration(type, { url: secretUrl, signingSecret: SIGNING_SECRET, headers: JSON.stringify([['Authorization', BEARER]]) }),
        o: opts({ clock: () => NOW, ...over }),
        secrets: [secretUrl, URL_TOKEN, QUERY_TOKEN, SIGNING_SECRET, BEARER],
      };
    case 'WEBHOOK':
      return {
        integ: integration(type, { url: secretUrl, signingSecret: SIGNING_SECRET }),
        o: opts({ clock: () => NOW, ...over }),
        secrets: [secretUrl, URL_TOKEN, QUERY_TOKEN, SIGNING_SECRET],
      };
    default:
      return {
        integ: integration(type, { webhookUrl: secretUrl }),
        o: opts({ clock: () => NOW, ...over }),
        secrets: [secretUrl, URL_TOKEN, QUERY_TOKEN],
      };
  }
}

interface Case {
  name: string;
  respond: (res: ServerResponse, path: string, body: string) => void;
  expect: Partial<DeliveryResult>;
}

/** Every non-2xx answer echoes the path and body, as careless receivers do. */
const echo = (res: ServerResponse, status: number, path: string, body: string, headers: Record<string, string> = {}) =>
  res.writeHead(status, headers).end(`error at ${path}: ${body.slice(0, 300)}`);

const CASES: Case[] = [
  { name: '200', respond: (res) => res.writeHead(200).end('ok'), expect: { outcome: 'delivered', statusCode: 200 } },
  { name: '202', respond: (res) => res.writeHead(202).end('{"status":"success"}'), expect: { outcome: 'delivered', statusCode: 202 } },
  { name: '400', respond: (res, p, b) => echo(res, 400, p, b), expect: { outcome: 'dead', statusCode: 400 } },
  { name: '404', respond: (res, p, b) => echo(res, 404, p, b), expect: { outcome: 'dead', statusCode: 404 } },
  {
    name: '429 with Retry-After seconds',
    respond: (res, p, b) => echo(res, 429, p, b, { 'retry-after': '30' }),
    expect: { outcome: 'retry', statusCode: 429, retryAfterMs: 30_000 },
  },
  {
    name: '429 with Retry-After date',
    respond: (res, p, b) => echo(res, 429, p, b, { 'retry-after': new Date(NOW + 120_000).toUTCString() }),
    expect: { outcome: 'retry', statusCode: 429, retryAfterMs: 120_000 },
  },
  { name: '500', respond: (res, p, b) => echo(res, 500, p, b), expect: { outcome: 'retry', statusCode: 500 } },
  {
    name: '503 with Retry-After',
    respond: (res, p, b) => echo(res, 503, p, b, { 'retry-after': '5' }),
    expect: { outcome: 'retry', statusCode: 503, retryAfterMs: 5000 },
  },
];

const TYPES: HttpType[] = ['INCIDENT_MGMT', 'WEBHOOK', 'SLACK', 'TEAMS', 'OPSGENIE', 'GOOGLE_CHAT', 'DISCORD', 'GENERIC_WEBHOOK'];

describe.each(TYPES)('%s status classification', (type) => {
  let rx: Receiver;
  let respond: Case['respond'] = (res) => res.end('ok');
  beforeAll(async () => {
    rx = await startReceiver((r, res) => respond(res, r.path, String(r.headers['authorization'] ?? '') + r.body)); // echoes the auth header too;
  });
  afterAll(() => rx.close());

  const send = (t: ReturnType<typeof target>, n?: Notification) =>
    createNotifier(type, t.o).send(n ?? notification(t.integ, EVENTS['evt.healthstatus.certmgr-issuer.notready']));

  it.each(CASES)('$name', async (c) => {
    respond = c.respond;
    const t = target(type, rx.url);
    const before = rx.requests.length;
    const r = await send(t);
    expect(rx.requests.length).toBe(before + 1);
    expect(r).toMatchObject(c.expect);
    if (c.expect.retryAfterMs === undefined) expect(r.retryAfterMs).toBeUndefined();
    if (c.expect.outcome === 'delivered') expect(r.error).toBeUndefined();
    else expect(r.error).toMatch(new RegExp(`^HTTP ${c.expect.statusCode}\\b`));
    // No secret, URL or URL part in the result, even though the receiver echoed them.
    const text = JSON.stringify(r);
    for (const s of [...t.secrets, rx.url, '127.0.0.1']) expect(text).not.toContain(s);
    if (c.expect.outcome !== 'delivered') expect(r.responseBody).toContain('[REDACTED]');
  });

  it('timeout -> retry', async () => {
    respond = () => {
      /* never answers */
    };
    const t = target(type, rx.url, { timeoutMs: 250 });
    const r = await send(t);
    expect(r).toEqual({ outcome: 'retry', error: 'timed out after 250 ms' });
  });

  it('connection refused -> retry, without the address', async () => {
    const port = await closedPort();
    const t = target(type, `http://127.0.0.1:${port}`);
    const r = await send(t);
    expect(r.outcome).toBe('retry');
    expect(r.error).toBe('network error: connection refused (ECONNREFUSED)');
    const text = JSON.stringify(r);
    for (const s of [...t.secrets, String(port)]) expect(text).not.toContain(s);
  });

  it('a malformed target URL is dead and not echoed', async () => {
    const bad = 'ht!tp://[bad/s3cr3tPathToken';
    const t = target(type, rx.url);
    if (type === 'INCIDENT_MGMT') t.o.incidentEventsUrl = bad;
    else if (type === 'OPSGENIE') t.o.opsgenieApiUrl = bad;
    else if (type === 'WEBHOOK' || type === 'GENERIC_WEBHOOK') t.integ.secrets['url'] = bad;
    else t.integ.secrets['webhookUrl'] = bad;
    const r = await send(t);
    expect(r.outcome).toBe('dead');
    expect(r.error).toMatch(/not a valid URL/);
    expect(JSON.stringify(r)).not.toContain('s3cr3tPathToken');
  });
});
