/**
 * / "every request is answered or timed out; shutdown has a deadline": slow senders are cut by
 * the request timeout, and a graceful stop does not wait for hanging or keep-alive clients past shutdownTimeout.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { KEY_A, startTestService, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

const services: TestService[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of services.splice(0)) await s.close().catch(() => undefined);
});

async function start(args: string[]) {
  const svc = await startTestService('sqlite', args);
  services.push(svc);
  return svc;
}

/** A raw client: sends `head`, then trickles one byte of body every 100 ms, never finishing. */
function slowClient(svc: TestService, head: string) {
  const { port } = svc;
  const s = connect(port, '127.0.0.1');
  sockets.push(s);
  let received = '';
  s.on('data', (d) => (received += d));
  s.on('error', () => undefined);
  const closed = new Promise<void>((r) => s.on('close', () => r()));
  s.write(head);
  const t = setInterval(() => (s.writable ? s.write('{') : clearInterval(t)), 100);
  s.on('close', () => clearInterval(t));
  return { closed, received: () => received };
}

const SLOW_GRAPHQL = `POST /graphql HTTP/1.1\r\nHost: x\r\nsvc-api-key: ${KEY_A}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`;

describe('request and shutdown deadlines', () => {
  it('a client that never finishes its request gets 408 after requestTimeout and is disconnected', async () => {
    const svc = await start([...limitsFile({ requestTimeout: '500ms' })]);
    const c = slowClient(svc, SLOW_GRAPHQL);
    await c.closed;
    // Node's requestTimeout or the per-request deadline, whichever checks first: both answer 408
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('a graceful stop closes hanging and keep-alive connections after shutdownTimeout', async () => {
    // request timeout far beyond the test timeout: only the shutdown deadline can end these clients
    const svc = await start([...limitsFile({ requestTimeout: '10m', shutdownTimeout: '300ms' })]);
    const slow = slowClient(svc, SLOW_GRAPHQL);
    // a keep-alive connection that has finished one request
    const ka = connect(svc.port, '127.0.0.1');
    sockets.push(ka);
    let kaData = '';
    ka.on('data', (d) => (kaData += d));
    ka.on('error', () => undefined);
    const kaClosed = new Promise<void>((r) => ka.on('close', () => r()));
    ka.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    await expect.poll(() => kaData.includes('"ok"')).toBe(true);
    await new Promise((r) => setTimeout(r, 200)); // the slow client is mid-request now

    services.splice(services.indexOf(svc), 1);
    await svc.close(); // resolves: it does not wait for the slow client
    await slow.closed;
    await kaClosed;
    expect(slow.received()).not.toMatch(/^HTTP\/1\.1 2/);
  });
});
