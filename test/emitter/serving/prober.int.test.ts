/**
 * ServingProber with the real probe against a loopback TLS server that serves, per SNI host, the Secret's
 * certificate, the one before it, an expired one or a foreign one (openssl-made), and a port nobody listens on;
 * the Secret is the inventory's own reading of a kubernetes.io/tls Secret. The clock reads 45 days ahead, so
 * that the 30-day certificate is expired and the others are not.
 */
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer } from 'node:net';
import { createSecureContext, createServer, type SecureContext, type Server } from 'node:tls';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tlsSecretFacts, type TlsSecretFacts } from '../../../src/emitter/inventory/facts.js';
import { ServingProber, type EndpointSource } from '../../../src/emitter/serving/prober.js';
import { secretKeyOf, type Endpoint } from '../../../src/emitter/serving/types.js';
import type { InformerEvent } from '../../../src/kube/informer.js';
import { realClock, type Clock } from '../../../src/runtime/timers.js';
import { selfSigned, type SelfSigned } from '../fixtures.js';

const log = pino({ level: 'silent' });
const AHEAD = 45 * 86_400_000;
const clock: Clock = { ...realClock, now: () => Date.now() + AHEAD };

class Discovery implements EndpointSource {
  readonly eps = new Map<string, Endpoint[]>();
  endpointsOf(ns: string, name: string): readonly Endpoint[] {
    return this.eps.get(secretKeyOf(ns, name)) ?? [];
  }
  all(): Iterable<Endpoint> {
    return [...this.eps.values()].flat();
  }
  onChange(): void {}
}

class Secrets {
  private readonly objs = new Map<string, TlsSecretFacts>();
  private readonly handlers: Record<InformerEvent, ((o: TlsSecretFacts) => void)[]> = { add: [], update: [], delete: [] };
  on(e: InformerEvent, cb: (o: TlsSecretFacts) => void): void {
    this.handlers[e].push(cb);
  }
  get(name: string, ns?: string): TlsSecretFacts | undefined {
    return this.objs.get(`${ns}/${name}`);
  }
  put(name: string, pem: string): void {
    const existed = this.objs.has(`shop/${name}`);
    const s = tlsSecretFacts({
      metadata: { name, namespace: 'shop' },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': Buffer.from(pem).toString('base64') },
    });
    this.objs.set(`shop/${name}`, s);
    for (const h of this.handlers[existed ? 'update' : 'add']) h(s);
  }
}

const names = { cn: 'web.example.com', dns: ['web.example.com', 'www.example.com'] };
let current: SelfSigned;
let before: SelfSigned;
let expired: SelfSigned;
let foreign: SelfSigned;
let server: Server;
let port: number;
let closedPort: number;
/** what the server serves for each SNI host */
const serves = new Map<string, SecureContext>();
const ctx = (c: SelfSigned) => createSecureContext({ key: c.keyPem, cert: c.pem });

beforeAll(async () => {
  current = selfSigned({ ...names, days: 90 });
  before = selfSigned({ ...names, days: 60 });
  expired = selfSigned({ ...names, days: 30 });
  foreign = selfSigned({ cn: 'ingress.local', dns: ['ingress.local'], days: 60 });
  server = createServer({ key: foreign.keyPem, cert: foreign.pem, SNICallback: (name, cb) => cb(null, serves.get(name)) });
  server.on('tlsClientError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  const closed = createTcpServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  closedPort = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
});

const endpoint = (host: string, p = port): Endpoint => ({
  host,
  address: `127.0.0.1:${p}`,
  source: { kind: 'Ingress', namespace: 'shop', name: 'web' },
  secret: { namespace: 'shop', name: 'web' },
});

describe('ServingProber against loopback TLS endpoints', () => {
  it('ok, stale, expired, mismatch and unreachable; an endpoint switching to the Secret’s certificate turns ok', async () => {
    serves.set('a.example.com', ctx(current));
    serves.set('b.example.com', ctx(before));
    serves.set('c.example.com', ctx(expired));
    serves.set('d.example.com', ctx(foreign));
    const discovery = new Discovery();
    discovery.eps.set(
      'shop/web',
      ['a', 'b', 'c', 'd'].map((h) => endpoint(`${h}.example.com`)).concat(endpoint('e.example.com', closedPort)),
    );
    const secrets = new Secrets();
    secrets.put('web', current.pem);
    const changes: string[] = [];
    const prober = new ServingProber({
      endpoints: discovery,
      secrets,
      log,
      clock,
      intervalMs: 200,
      unreachableGraceMs: 0,
      timeoutMs: 5_000,
    });
    prober.onChange((ns, name) => changes.push(`${ns}/${name}`));
    prober.start();
    try {
      const statuses = () => Object.fromEntries(prober.of('shop', 'web').map((v) => [v.host.split('.')[0], v.status]));
      await vi.waitFor(() => expect(statuses()).toEqual({ a: 'ok', b: 'stale', c: 'expired', d: 'mismatch', e: 'unreachable' }), {
        timeout: 20_000,
        interval: 50,
      });
      const facts = new Map(prober.factsOf('shop', 'web').map((f) => [f.host, f]));
      expect(facts.get('b.example.com')).toMatchObject({ status: 'stale', servedSerial: before.serial.toUpperCase() });
      expect(facts.get('a.example.com')).toMatchObject({ status: 'ok', servedSerial: current.serial.toUpperCase() });
      expect(facts.get('e.example.com')).toMatchObject({ status: 'unreachable', reason: 'connection refused', servedSerial: null });
      expect(changes).toContain('shop/web');

      serves.set('b.example.com', ctx(current));
      await vi.waitFor(() => expect(statuses().b).toBe('ok'), { timeout: 20_000, interval: 50 });
    } finally {
      await prober.stop();
    }
  });

  it('a renewal: the endpoints are probed soon after the Secret’s certificate changes, not at the next interval', async () => {
    serves.set('r.example.com', ctx(before));
    const discovery = new Discovery();
    discovery.eps.set('shop/web', [endpoint('r.example.com')]);
    const secrets = new Secrets();
    secrets.put('web', before.pem);
    const prober = new ServingProber({
      endpoints: discovery,
      secrets,
      log,
      clock,
      intervalMs: 3_600_000,
      renewalProbeDelayMs: 50,
      reloadGraceMs: 0,
    });
    prober.start();
    try {
      await vi.waitFor(() => expect(prober.of('shop', 'web')[0]!.status).toBe('ok'), { timeout: 20_000, interval: 50 });
      secrets.put('web', current.pem);
      // the consumer did not reload: it serves the certificate from before the renewal
      await vi.waitFor(() => expect(prober.of('shop', 'web')[0]!.status).toBe('stale'), { timeout: 20_000, interval: 50 });
      expect(prober.stats.probes).toBeLessThanOrEqual(3);
    } finally {
      await prober.stop();
    }
  });
});
