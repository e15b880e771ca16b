/** EventSender against a loopback HTTP server: batching, retries until accepted, rejections, stop. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { InternalEvent } from '../../src/events/families.js';
import { EventQueueFullError, EventRejectedError, EventSender, SenderStoppedError } from '../../src/client/events.js';
import { unhealthyDurationOf } from '../../src/events/wire-formats.js';
import { CLUSTER, UID_B } from '../emitter/fixtures.js';

const log = pino({ level: 'silent' });

function issuerEvent(name: string, state: 'notready' | 'active' = 'notready'): InternalEvent {
  const data: Record<string, unknown> = {
    clusterId: CLUSTER.id,
    clusterName: CLUSTER.name,
    issuerName: name,
    namespace: 'cert-manager',
    resourceId: UID_B,
    statusMessage: 'x',
    statusReason: 'ErrGetKeyPair',
    statusTransition: '2026-03-01T10:00:00Z',
  };
  if (state === 'active') data['unhealthyDuration'] = unhealthyDurationOf(1234);
  return { type: `evt.healthstatus.certmgr-issuer.${state}`, data };
}

interface Req {
  key: string | undefined;
  events: InternalEvent[];
}
type Handler = (req: Req, res: ServerResponse, n: number) => void;

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function service(handler: Handler): Promise<{ url: string; reqs: Req[] }> {
  const reqs: Req[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const r: Req = { key: req.headers['svc-api-key'] as string | undefined, events: JSON.parse(body) as InternalEvent[] };
      reqs.push(r);
      handler(r, res, reqs.length);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reqs };
}

const accept = (r: Req, res: ServerResponse): void => {
  res.writeHead(202, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ events: r.events.map((_, i) => ({ id: `e${i}`, deliveries: 1 })) }));
};

const sender = (url: string, extra: Partial<ConstructorParameters<typeof EventSender>[0]> = {}) =>
  new EventSender({ url, apiKey: () => 'emitter-key-0123456789', log, backoff: { baseMs: 10, maxMs: 40 }, ...extra });

describe('EventSender', () => {
  it('batches concurrent sends into one request with the API key', async () => {
    const svc = await service(accept);
    const s = sender(svc.url);
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((n) => s.send([issuerEvent(n)])));
    expect(results.map((r) => r[0]?.id)).toEqual(['e0', 'e1', 'e2', 'e3']);
    expect(svc.reqs).toHaveLength(1);
    expect(svc.reqs[0]!.key).toBe('emitter-key-0123456789');
    expect(svc.reqs[0]!.events.map((e) => e.data['issuerName'])).toEqual(['a', 'b', 'c', 'd']);
    await s.stop();
  });

  it('sends at once when idle; while a request is in flight, later sends queue and go out together when it is answered', async () => {
    const held: (() => void)[] = [];
    const svc = await service((r, res, n) => (n === 1 ? held.push(() => accept(r, res)) : accept(r, res)));
    // a clock whose timers never fire: a send that waited for a timer would never leave
    const frozen = { now: () => 0, setTimeout: () => 0, clearTimeout: () => {} };
    const s = sender(svc.url, { clock: frozen });
    const first = s.send([issuerEvent('a')]);
    // the first request left without waiting for more events: it is at the service, unanswered
    for (let i = 0; i < 400 && svc.reqs.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(svc.reqs.map((r) => r.events.length)).toEqual([1]);
    // sent on separate turns of the event loop while that request is in flight
    const later: Promise<unknown>[] = [];
    for (const n of ['b', 'c', 'd']) {
      later.push(s.send([issuerEvent(n)]));
      await new Promise((r) => setImmediate(r));
    }
    expect(svc.reqs).toHaveLength(1);
    held[0]!();
    await Promise.all([first, ...later]);
    expect(svc.reqs.map((r) => r.events.map((e) => e.data['issuerName']).join(''))).toEqual(['a', 'bcd']);
    await s.stop();
  });

  it('splits into batches of batchMax, in order', async () => {
    const svc = await service(accept);
    const s = sender(svc.url, { batchMax: 2 });
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map((n) => s.send([issuerEvent(n)])));
    expect(svc.reqs.map((r) => r.events.map((e) => e.data['issuerName']).join(''))).toEqual(['ab', 'cd', 'e']);
    await s.stop();
  });

  it('retries 5xx, 429 and 401 until accepted; nothing is dropped', async () => {
    const svc = await service((r, res, n) => {
      if (n === 1) return void res.writeHead(503).end();
      if (n === 2) return void res.writeHead(429, { 'retry-after': '0' }).end();
      if (n === 3)
        return void res
          .writeHead(401, { 'content-type': 'application/json' })
          .end('{"errors":[{"code":"UNAUTHENTICATED","message":"no"}]}');
      accept(r, res);
    });
    const s = sender(svc.url);
    const [a] = await s.send([issuerEvent('a')]);
    expect(a?.id).toBe('e0');
    expect(svc.reqs).toHaveLength(4);
    expect(s.stats.failures).toBe(3);
    await s.stop();
  });

  it('retries network errors (service not up yet)', async () => {
    // a port nobody listens on, then a service appears on it
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const s = sender(`http://127.0.0.1:${port}`);
    const p = s.send([issuerEvent('late')]);
    await new Promise((r) => setTimeout(r, 100));
    const reqs: Req[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        reqs.push({ key: undefined, events: JSON.parse(body) as InternalEvent[] });
        accept(reqs.at(-1)!, res);
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    await expect(p).resolves.toHaveLength(1);
    expect(reqs).toHaveLength(1);
    expect(s.stats.failures).toBeGreaterThan(0);
    await s.stop();
  });

  it('a 400 naming an event rejects that event and sends the others', async () => {
    const svc = await service((r, res, n) => {
      if (n === 1) {
        res.writeHead(400, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({
            errors: [{ code: 'BAD_USER_INPUT', field: '[1].data.issuerName', message: 'event 1: data.issuerName is bad' }],
          }),
        );
      }
      accept(r, res);
    });
    const s = sender(svc.url);
    const settled = await Promise.allSettled(['a', 'b', 'c'].map((n) => s.send([issuerEvent(n)])));
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(EventRejectedError);
    expect(svc.reqs[1]!.events.map((e) => e.data['issuerName'])).toEqual(['a', 'c']);
    await s.stop();
  });

  it('413 halves the batch', async () => {
    const svc = await service((r, res) => (r.events.length > 2 ? void res.writeHead(413).end() : accept(r, res)));
    const s = sender(svc.url);
    await Promise.all(['a', 'b', 'c', 'd'].map((n) => s.send([issuerEvent(n)])));
    expect(svc.reqs.map((r) => r.events.length)).toEqual([4, 2, 2]);
    await s.stop();
  });

  it('an event that does not validate is refused before any request', async () => {
    const svc = await service(accept);
    const s = sender(svc.url);
    const bad = issuerEvent('x');
    delete bad.data['resourceId'];
    await expect(s.send([bad])).rejects.toThrow(/resourceId is required/);
    expect(svc.reqs).toHaveLength(0);
    await s.stop();
  });

  it('stop() rejects what is still waiting (the caller does not record it as sent)', async () => {
    const svc = await service((_r, res) => void res.writeHead(503).end());
    const s = sender(svc.url);
    const p = s.send([issuerEvent('a')]);
    await new Promise((r) => setTimeout(r, 60));
    await s.stop();
    await expect(p).rejects.toBeInstanceOf(SenderStoppedError);
    await expect(s.send([issuerEvent('b')])).rejects.toBeInstanceOf(SenderStoppedError);
  });
});

describe('EventSender: a hub outage (a real loopback hub that is down, then back)', () => {
  const until = async (cond: () => boolean): Promise<void> => {
    for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(cond()).toBe(true);
  };

  it('at most maxPending wait; the newest are refused (counted), none waiting is dropped; all waiting go out in order when it is back', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r)); // down: connection refused
    const pending: number[] = [];
    let dropped = 0;
    const s = sender(`http://127.0.0.1:${port}`, {
      maxPending: 4,
      batchMax: 2,
      metrics: { accepted: () => {}, failedAttempt: () => {}, pending: (n) => pending.push(n), dropped: (n) => (dropped += n) },
    });
    // one send per resource, as the health reconciles do; the last one resolves an incident
    const names = ['a', 'b', 'c'];
    const waiting = names.map((n) => s.send([issuerEvent(n)]));
    const resolving = s.send([issuerEvent('a', 'active')]);
    await until(() => s.stats.failures >= 2);
    expect(s.pending).toBe(4);
    // the bound: refused at once, nothing queued, what waits is untouched
    await expect(s.send([issuerEvent('d')])).rejects.toBeInstanceOf(EventQueueFullError);
    await expect(s.send([issuerEvent('e'), issuerEvent('f')])).rejects.toBeInstanceOf(EventQueueFullError);
    expect(dropped).toBe(3);
    expect(s.stats.dropped).toBe(3);
    expect(s.pending).toBe(4);

    // back on the same port
    const reqs: Req[] = [];
    const hub = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        reqs.push({ key: undefined, events: JSON.parse(body) as InternalEvent[] });
        accept(reqs.at(-1)!, res);
      });
    });
    servers.push(hub);
    await new Promise<void>((r) => hub.listen(port, '127.0.0.1', r));
    await Promise.all([...waiting, resolving]);
    const sent = reqs.flatMap((r) => r.events.map((e) => `${String(e.data['issuerName'])}.${e.type.split('.').pop()}`));
    expect(sent).toEqual(['a.notready', 'b.notready', 'c.notready', 'a.active']); // in order, once each
    expect(reqs.map((r) => r.events.length)).toEqual([2, 2]);
    expect(s.pending).toBe(0);
    expect(pending.at(-1)).toBe(0);
    // room again
    await s.send([issuerEvent('d')]);
    expect(reqs.at(-1)!.events[0]!.data['issuerName']).toBe('d');
    await s.stop();
  });
});
