/**
 * through the real service: SSRF URLs are refused at create/update (naming the
 * field), a name resolving to loopback is refused at send time, testIntegration never reflects the
 * receiver's answer, and it goes through the integration's rate limit (1,000 aliases in one request
 * cannot make 1,000 POSTs). The SSRF part runs the production default: no --egress-allow.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_RATE_LIMITS } from '../../src/delivery/rate-limit.js';
import { startTestService, type TestService } from '../support/service.js';
import { gqlError } from '../support/graphql.js';

interface Rx {
  url: string;
  connections: number;
  requests: number;
  respond: (req: IncomingMessage, res: ServerResponse) => void;
  close(): Promise<void>;
}

async function receiver(): Promise<Rx> {
  const rx: Rx = { url: '', connections: 0, requests: 0, respond: (_q, res) => res.end('ok'), close: async () => {} };
  const server: Server = createServer((req, res) => {
    rx.requests++;
    req.resume();
    req.on('end', () => rx.respond(req, res));
  });
  server.on('connection', () => rx.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  rx.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  rx.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return rx;
}

const TEST = `mutation($id: UUID!) { testIntegration(id: $id) { outcome statusCode error responseBody latencyMs } }`;
type TestResult = { outcome: string; statusCode: number | null; error: string | null; responseBody: string | null };

async function createWebhook(svc: TestService, url: string): Promise<string> {
  const r = await svc
    .gql()
    .request<{ createWebhookIntegration: { id: string } }>(
      `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
      { i: { name: 'hook', url } },
    );
  return r.createWebhookIntegration.id;
}

describe('default egress policy (no --egress-allow)', () => {
  let svc: TestService;
  let rx: Rx;
  beforeAll(async () => {
    [svc, rx] = await Promise.all([startTestService('sqlite', [], { loopbackAllowed: false }), receiver()]);
  });
  afterAll(async () => {
    await Promise.all([svc?.close(), rx?.close()]);
  });

  const port = () => new URL(rx.url).port;

  it.each([
    ['http://127.0.0.1:PORT/x', /loopback/],
    ['http://0x7f000001:PORT/x', /loopback/],
    ['http://2130706433:PORT/x', /loopback/],
    ['http://0177.0.0.1:PORT/x', /loopback/],
    ['http://[::1]:PORT/x', /loopback/],
    ['http://[::ffff:127.0.0.1]:PORT/x', /loopback/],
    ['http://169.254.169.254/latest/meta-data/', /link-local/],
    ['http://metadata.google.internal/computeMetadata/v1/', /metadata/],
    ['http://10.0.0.1/x', /private/],
    ['https://user:pass@hooks.example.com/x', /credentials/],
  ])('createWebhookIntegration refuses %s, naming the field, creating nothing', async (form, why) => {
    const before = (await svc.store.listIntegrations('11111111-1111-4111-8111-111111111111')).length;
    const e = await gqlError(createWebhook(svc, form.replace('PORT', port())));
    expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.url' });
    expect(e.message).toMatch(why);
    expect(e.message).not.toContain(port());
    expect((await svc.store.listIntegrations('11111111-1111-4111-8111-111111111111')).length).toBe(before);
    expect(rx.connections).toBe(0);
  });

  it('Slack/Teams create and update refuse them too', async () => {
    const e1 = await gqlError(
      svc
        .gql()
        .request(
          `mutation { createSlackIntegration(input: { name: "s", slackParams: { webhookUrl: "http://169.254.169.254/x" } }) { id } }`,
        ),
    );
    expect(e1.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.slackParams.webhookUrl' });
    const t = await svc
      .gql()
      .request<{ createTeamsIntegration: { id: string } }>(
        `mutation { createTeamsIntegration(input: { name: "t", teamsParams: { webhookUrl: "https://example.webhook.office.com/x" } }) { id } }`,
      );
    const e2 = await gqlError(
      svc
        .gql()
        .request(`mutation($id: UUID!) { updateIntegration(id: $id, input: { teamsParams: { webhookUrl: "http://[::1]/x" } }) { id } }`, {
          id: t.createTeamsIntegration.id,
        }),
    );
    expect(e2.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.teamsParams.webhookUrl' });
  });

  it('a name that resolves to loopback is accepted at create but refused at connect time: dead, nothing reaches the receiver', async () => {
    const id = await createWebhook(svc, `http://localhost:${port()}/x`);
    const r = await svc.gql().request<{ testIntegration: TestResult }>(TEST, { id });
    expect(r.testIntegration).toMatchObject({
      outcome: 'dead',
      statusCode: null,
      error: 'network error: destination not allowed by the egress policy (EGRESS_DENIED)',
      responseBody: null,
    });
    expect(rx.connections).toBe(0);
  });
});

describe('testIntegration with loopback allowed', () => {
  let svc: TestService;
  let rx: Rx;
  beforeAll(async () => {
    [svc, rx] = await Promise.all([startTestService('sqlite'), receiver()]);
  });
  afterAll(async () => {
    await Promise.all([svc?.close(), rx?.close()]);
  });
  beforeEach(() => {
    rx.requests = rx.connections = 0;
    rx.respond = (_q, res) => res.end('ok');
  });

  it('never reflects the receiver body or reason phrase', async () => {
    const id = await createWebhook(svc, `${rx.url}/hook`);
    for (const status of [200, 400, 500]) {
      rx.respond = (_q, res) => {
        res.statusMessage = 'INTERNAL-REASON-aws_secret';
        res
          .writeHead(status, { 'content-type': 'application/json' })
          .end('{"AccessKeyId":"AKIAINTERNAL","SecretAccessKey":"s3cr3t-from-inside"}');
      };
      const r = await svc.gql().request<{ testIntegration: TestResult }>(TEST, { id });
      expect(r.testIntegration.statusCode).toBe(status);
      expect(r.testIntegration.responseBody).toBeNull();
      const text = JSON.stringify(r);
      for (const leak of ['AKIAINTERNAL', 's3cr3t-from-inside', 'INTERNAL-REASON', 'aws_secret']) expect(text).not.toContain(leak);
    }
    expect(rx.requests).toBe(3);
  });

  it("goes through the integration's rate limit: past the burst nothing is sent and the result says so", async () => {
    const limit = DEFAULT_RATE_LIMITS.SLACK;
    const s = await svc
      .gql()
      .request<{ createSlackIntegration: { id: string } }>(
        `mutation($u: String!) { createSlackIntegration(input: { name: "s", slackParams: { webhookUrl: $u } }) { id } }`,
        { u: `${rx.url}/slack` },
      );
    const started = Date.now();
    const results: TestResult[] = [];
    for (let i = 0; i < 10; i++)
      results.push((await svc.gql().request<{ testIntegration: TestResult }>(TEST, { id: s.createSlackIntegration.id })).testIntegration);
    const elapsedSec = (Date.now() - started) / 1000;
    const sent = results.filter((r) => r.outcome === 'delivered');
    const held = results.filter((r) => r.outcome !== 'delivered');
    expect(rx.requests).toBe(sent.length);
    expect(sent.length).toBeGreaterThanOrEqual(1);
    expect(sent.length).toBeLessThanOrEqual(limit.burst + Math.ceil(elapsedSec * limit.ratePerSec));
    expect(held.length).toBeGreaterThan(0);
    for (const r of held) {
      expect(r).toMatchObject({ outcome: 'retry', statusCode: null });
      expect(r.error).toMatch(/^not sent: the rate limit of this integration \(1\/s, burst 3\) is reached; try again in \d+ ms$/);
    }
  });

  it('1,000 aliases of testIntegration in one request do not make 1,000 POSTs', async () => {
    const limit = DEFAULT_RATE_LIMITS.WEBHOOK;
    const id = await createWebhook(svc, `${rx.url}/aliases`);
    const doc = `mutation($id: UUID!) { ${Array.from({ length: 1000 }, (_, i) => `t${i}: testIntegration(id: $id) { outcome }`).join(' ')} }`;
    const started = Date.now();
    const res = await svc.rest('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: doc, variables: { id } }),
    });
    const elapsedSec = (Date.now() - started) / 1000;
    expect(res.status).toBeLessThan(500);
    const body = (await res.json()) as { data?: Record<string, { outcome: string }> | null };
    // A request-cost limit may refuse the document outright; either way the receiver sees at most the budget.
    expect(rx.requests).toBeLessThanOrEqual(limit.burst + Math.ceil(elapsedSec * limit.ratePerSec));
    if (body.data) expect(Object.values(body.data).filter((r) => r.outcome === 'delivered').length).toBe(rx.requests);
  });
});
