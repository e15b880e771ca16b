/**
 * The per-request deadline of src/http/app.ts: a client that never finishes sending its body gets 408
 * REQUEST_TIMEOUT and its connection is closed; a request received whole whose handler hangs gets 503
 * DEADLINE_EXCEEDED. The app runs behind a plain Node server without its own requestTimeout, so only the app's
 * deadline (a small injected value) can answer.
 */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MONITORING_CONFIG_PATH } from '../../src/client/operations.js';
import { createApp } from '../../src/http/app.js';
import { ApiKeyRing } from '../../src/http/auth.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { COMPANY_A, KEY_A } from '../support/service.js';

const DEADLINE_MS = 300;

let server: Server;
let port: number;
let store: Store;
const sockets: Socket[] = [];
beforeAll(async () => {
  store = await openStore('sqlite::memory:');
  await store.migrate();
  // getMonitoringConfig never answers: a handler hung on the store
  const hung = new Proxy(store, {
    get: (t, k) => (k === 'getMonitoringConfig' ? () => new Promise(() => undefined) : (Reflect.get(t, k, t) as unknown)),
  });
  const app = createApp({
    store: hung,
    keys: new ApiKeyRing([{ key: KEY_A, companyId: COMPANY_A }]),
    logger: pino({ level: 'silent' }),
    requestTimeoutMs: DEADLINE_MS,
  });
  server = createServer({ requestTimeout: 0 }, app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await store.close();
});

/** A raw client: sends `head`, then one byte of body every 50 ms, never reaching its Content-Length. */
function slowSender(head: string) {
  const s = connect(port, '127.0.0.1');
  sockets.push(s);
  let received = '';
  s.on('data', (d) => (received += d));
  s.on('error', () => undefined);
  const closed = new Promise<void>((r) => s.on('close', () => r()));
  s.write(head);
  const t = setInterval(() => (s.writable ? s.write(' ') : clearInterval(t)), 50);
  s.on('close', () => clearInterval(t));
  return { closed, received: () => received };
}

const head = (method: string, path: string) =>
  `${method} ${path} HTTP/1.1\r\nHost: x\r\nsvc-api-key: ${KEY_A}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`;

describe('the request deadline', () => {
  it.each([
    ['GraphQL', head('POST', '/graphql')],
    ['REST', head('PUT', MONITORING_CONFIG_PATH)],
  ])('%s: a body still arriving gets 408 REQUEST_TIMEOUT and the connection is closed', async (_api, h) => {
    const c = slowSender(h);
    await c.closed; // the server closed it: the test would time out otherwise
    const text = c.received();
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(text).toContain('"code":"REQUEST_TIMEOUT"');
    expect(text).toContain(`the request was not received within ${DEADLINE_MS} ms`);
    expect(text).not.toMatch(/retry-after/i);
  });

  it('a request received whole whose handler hangs gets 503 DEADLINE_EXCEEDED with Retry-After', async () => {
    const res = await fetch(`http://127.0.0.1:${port}${MONITORING_CONFIG_PATH}`, { headers: { 'svc-api-key': KEY_A } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(((await res.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('DEADLINE_EXCEEDED');
  });
});
