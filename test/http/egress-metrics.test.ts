/**
 * Egress follow-up: refusals are counted in certmgr_notify_egress_refused_total{reason,stage} with a
 * coarse reason (never the address), at create/update and at connect time; and the service's close() closes
 * the shared undici dispatcher, so no pooled keep-alive connection to a receiver outlives the service.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

const CREATE = `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`;
const TEST = `mutation($id: UUID!) { testIntegration(id: $id) { outcome statusCode error } }`;

async function metricValue(svc: TestService, labels: string): Promise<number> {
  const text = await (await svc.rest('/metrics', { key: null })).text();
  const line = text.split('\n').find((l) => l.startsWith(`certmgr_notify_egress_refused_total{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function tryCreate(svc: TestService, url: string): Promise<{ id?: string; error?: string }> {
  const res = await svc.rest('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: CREATE, variables: { i: { name: 'hook', url } } }),
  });
  const body = (await res.json()) as { data?: { createWebhookIntegration: { id: string } } | null; errors?: { message: string }[] };
  return body.errors ? { error: body.errors[0]!.message } : { id: body.data!.createWebhookIntegration.id };
}

async function receiver(
  keepAliveTimeoutMs: number,
): Promise<{ server: Server; url: string; sockets: Set<Socket>; requests: () => number }> {
  let requests = 0;
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  server.keepAliveTimeout = keepAliveTimeoutMs; // undici keeps the connection about as long as the server says
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sockets, requests: () => requests };
}

describe('certmgr_notify_egress_refused_total (default policy)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService('sqlite', [], { loopbackAllowed: false });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('counts create/update refusals by coarse reason', async () => {
    const cases: [string, string][] = [
      ['http://127.0.0.1:8080/x', 'denied_address'],
      ['http://[::1]/x', 'denied_address'],
      ['http://metadata.google.internal/computeMetadata/v1/', 'metadata_host'],
      ['https://user:pass@hooks.example.com/x', 'userinfo'],
    ];
    for (const [url, reason] of cases) {
      const labels = `reason="${reason}",stage="create_update"`;
      const before = await metricValue(svc, labels);
      expect((await tryCreate(svc, url)).error).toBeDefined();
      expect(await metricValue(svc, labels)).toBe(before + 1);
    }
  });

  it('counts connect-time refusals (a name resolving to loopback), and never exposes an address', async () => {
    const labels = 'reason="denied_address",stage="connect"';
    const before = await metricValue(svc, labels);
    const { id } = await tryCreate(svc, 'http://localhost:8080/x');
    expect(id).toBeDefined();
    const r = await svc.gql().request<{ testIntegration: { outcome: string; error: string } }>(TEST, { id });
    expect(r.testIntegration, JSON.stringify(r)).toMatchObject({ outcome: 'dead', error: expect.stringMatching(/EGRESS_DENIED/) });
    expect(await metricValue(svc, labels)).toBe(before + 1);
    const text = await (await svc.rest('/metrics', { key: null })).text();
    const lines = text.split('\n').filter((l) => l.startsWith('certmgr_notify_egress_refused_total'));
    for (const l of lines) expect(l).not.toMatch(/127\.0\.0\.1|localhost|::1|metadata\.google|user:pass/);
  });
});

describe('close() closes the shared egress dispatcher', () => {
  it('no keep-alive connection to a receiver outlives the service', async () => {
    // The receiver asks to keep idle connections for 10 minutes; only the service closing its pool ends them.
    const rx = await receiver(600_000);
    const svc = await startTestService('sqlite');
    try {
      const { id } = await tryCreate(svc, `${rx.url}/hook`);
      const r = await svc.gql().request<{ testIntegration: { outcome: string } }>(TEST, { id });
      expect(r.testIntegration.outcome).toBe('delivered');
      expect(rx.requests()).toBe(1);
      expect(rx.sockets.size).toBe(1); // pooled, idle
      const closed = Promise.all([...rx.sockets].map((s) => new Promise((res) => s.once('close', res))));
      await svc.close();
      await closed; // without the fix this waits for the receiver's 10-minute keep-alive: the test times out
      expect(rx.sockets.size).toBe(0);
    } finally {
      rx.server.closeAllConnections();
      await new Promise((r) => rx.server.close(r));
    }
  }, 20_000);
});
