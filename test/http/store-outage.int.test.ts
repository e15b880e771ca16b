/**
 * the per-request deadline: the real service on a real PostgreSQL reached through a loopback
 * TCP proxy that the test can cut (connections refused) or blackhole (accepted, never answered).
 */
import { randomUUID } from 'node:crypto';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MONITORING_CONFIG_PATH as P } from '../../src/client/operations.js';
import { issuerNotReady } from '../fixtures/events.js';
import { asAny } from '../support/any.js';
import { KEY_A, startTestService, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

type Mode = 'forward' | 'blackhole';

/** A TCP proxy to the test PostgreSQL whose listener can be closed (refused) and reopened on the same port. */
class PgProxy {
  mode: Mode = 'forward';
  port = 0;
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  constructor(private readonly target: { host: string; port: number }) {}

  async open(): Promise<void> {
    const server = createServer((client) => {
      this.#sockets.add(client);
      client.on('close', () => this.#sockets.delete(client));
      client.on('error', () => undefined);
      if (this.mode === 'blackhole') return; // accept, never answer
      const upstream = createConnection(this.target);
      this.#sockets.add(upstream);
      upstream.on('close', () => this.#sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => server.listen(this.port, '127.0.0.1', r));
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  /** Closes the listener (new connections are refused) and cuts every open connection. */
  async cut(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    for (const c of this.#sockets) c.destroy();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

let svc: TestService;
let proxy: PgProxy;
let dbUrl: URL;

beforeAll(async () => {
  const base = new URL(process.env.DATABASE_URL!);
  proxy = new PgProxy({ host: base.hostname, port: Number(base.port || 5432) });
  await proxy.open();
  dbUrl = new URL(base);
  dbUrl.hostname = '127.0.0.1';
  dbUrl.port = String(proxy.port);
  dbUrl.searchParams.set('schema', `t_${randomUUID().replace(/-/g, '')}`);
  svc = await startTestService('postgres', ['--store', dbUrl.toString(), ...limitsFile({ requestTimeout: '1s500ms', deliveryWorkers: 0 })]);
});
afterAll(async () => {
  proxy.mode = 'forward';
  await proxy.cut();
  await proxy.open().catch(() => undefined);
  await svc?.close();
  await proxy.cut();
});

const postEvent = () =>
  svc.rest('/v1/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify([issuerNotReady()]) });

describe('while the store is down', () => {
  it('works through the proxy first', async () => {
    expect((await svc.rest(P)).status).toBe(200);
  });

  it('REST, /v1/events and GraphQL answer 503 with Retry-After; /readyz gives a generic reason', async () => {
    await proxy.cut();
    const rest = await svc.rest(P);
    expect(rest.status).toBe(503);
    expect(rest.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await rest.json().then(asAny)).errors[0].code).toBe('SERVICE_UNAVAILABLE');

    const ev = await postEvent();
    expect(ev.status).toBe(503);
    expect(ev.headers.get('retry-after')).toMatch(/^\d+$/);

    // inventory: the report and the CSV export too (the agent retries the same report)
    const inv = await svc.rest('/v1/inventory', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        protocol: 1,
        cluster: { id: randomUUID(), name: 'outage' },
        agentVersion: '1',
        epoch: randomUUID(),
        seq: 1,
        kind: 'snapshot',
        final: true,
        upserts: [],
        deletes: [],
      }),
    });
    expect(inv.status).toBe(503);
    expect(inv.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await inv.json().then(asAny)).errors[0].code).toBe('SERVICE_UNAVAILABLE');
    const csv = await svc.rest('/v1/inventory/certificates.csv');
    expect(csv.status).toBe(503);

    const g = await fetch(`${svc.url}/graphql`, {
      method: 'POST',
      headers: { 'svc-api-key': KEY_A, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ integrations { nodes { id } } }' }),
    });
    expect(g.status).toBe(503);
    expect((await g.json().then(asAny)).errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');

    const ready = await fetch(`${svc.url}/readyz`);
    expect(ready.status).toBe(503);
    const text = await ready.text();
    expect(JSON.parse(text)).toEqual({ status: 'not ready', reason: 'store unavailable' });
    for (const leak of [String(proxy.port), '127.0.0.1', dbUrl.username, 'ECONNREFUSED'].filter(Boolean)) expect(text).not.toContain(leak);
    // the details are in the log, for the operator
    expect(svc.logs.join('')).toContain('readiness check failed');
  });

  it('a store that accepts but never answers: every request is still answered (503 DEADLINE_EXCEEDED)', async () => {
    proxy.mode = 'blackhole';
    await proxy.open();
    const rest = await svc.rest(P, { signal: AbortSignal.timeout(20_000) });
    expect(rest.status).toBe(503);
    expect(rest.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await rest.json().then(asAny)).errors[0].code).toBe('DEADLINE_EXCEEDED');
    const ready = await fetch(`${svc.url}/readyz`, { signal: AbortSignal.timeout(20_000) });
    expect(ready.status).toBe(503);
    const g = await fetch(`${svc.url}/graphql`, {
      method: 'POST',
      headers: { 'svc-api-key': KEY_A, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ integrations { nodes { id } } }' }),
      signal: AbortSignal.timeout(20_000),
    });
    expect(g.status).toBe(503);
    expect((await g.json().then(asAny)).errors[0].extensions.code).toBe('DEADLINE_EXCEEDED');
    // the process is still serving
    expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
  });

  it('recovers when the store is back', async () => {
    await proxy.cut();
    proxy.mode = 'forward';
    await proxy.open();
    await expect.poll(async () => (await svc.rest(P)).status, { timeout: 20_000, interval: 200 }).toBe(200);
    expect((await fetch(`${svc.url}/readyz`)).status).toBe(200);
  });
});
