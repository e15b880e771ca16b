/**
 * ServingProber with a fake clock, a stand-in probe and stand-ins for discovery and the TLS Secret cache: the
 * schedule (spread, interval, renewal follow-ups), the rate and concurrency bounds (10,000 endpoints at the
 * defaults), verdicts and their changes, the consumer look-up, factsOf, and stop.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { certificateFactsOf, type TlsSecretFacts } from '../../../src/emitter/inventory/facts.js';
import { validateInventoryReport } from '../../../src/inventory/validate.js';
import { INVENTORY_PROTOCOL } from '../../../src/model/inventory.js';
import type { ProbeOutcome, ProbeTarget } from '../../../src/emitter/serving/probe.js';
import {
  CHECKED_AT_REFRESH_MS,
  DEFAULT_SERVING_PROBE_CONCURRENCY,
  DEFAULT_SERVING_PROBE_INTERVAL_MS,
  DEFAULT_SERVING_PROBE_RATE,
  DEFAULT_SERVING_PROBE_TIMEOUT_MS,
  RENEWAL_PROBE_DELAY_MS,
  ServingProber,
  type EndpointSource,
  type ServingProberOptions,
} from '../../../src/emitter/serving/prober.js';
import { secretKeyOf, type Endpoint, type LeafIdentity } from '../../../src/emitter/serving/types.js';
import { DEFAULT_RELOAD_GRACE_MS } from '../../../src/emitter/serving/verdict.js';
import type { InformerEvent } from '../../../src/kube/informer.js';
import { FakeClock, flush } from '../../runtime/fake-clock.js';

const log = pino({ level: 'silent' });
const NOW = Date.parse('2026-06-01T12:00:00Z');
const DAY = 86_400_000;
const MIN = 60_000;

const leaf = (serial: string, o: Partial<LeafIdentity> = {}): LeafIdentity => ({
  serial,
  issuer: 'CN=Example CA',
  subject: 'CN=web.example.com',
  dnsNames: ['web.example.com'],
  notBefore: NOW - 30 * DAY,
  notAfter: NOW + 60 * DAY,
  ...o,
});

class Discovery implements EndpointSource {
  private readonly bySecret = new Map<string, Endpoint[]>();
  private readonly cbs: ((ns: string, name: string) => void)[] = [];
  endpointsOf(ns: string, name: string): readonly Endpoint[] {
    return this.bySecret.get(secretKeyOf(ns, name)) ?? [];
  }
  all(): Iterable<Endpoint> {
    return [...this.bySecret.values()].flat();
  }
  onChange(cb: (ns: string, name: string) => void): void {
    this.cbs.push(cb);
  }
  set(ns: string, name: string, eps: Endpoint[]): void {
    this.bySecret.set(secretKeyOf(ns, name), eps);
    for (const cb of this.cbs) cb(ns, name);
  }
}

const endpoint = (secret: string, host = `${secret}.example.com`, address: string | null = `${secret}.lb:443`): Endpoint => ({
  host,
  address,
  ...(address === null ? { reason: 'no address' } : {}),
  source: { kind: 'Ingress', namespace: 'shop', name: `ing-${secret}` },
  secret: { namespace: 'shop', name: secret },
});

class Secrets {
  readonly objs = new Map<string, TlsSecretFacts>();
  private readonly handlers: Record<InformerEvent, ((o: TlsSecretFacts) => void)[]> = { add: [], update: [], delete: [] };
  on(e: InformerEvent, cb: (o: TlsSecretFacts) => void): void {
    this.handlers[e].push(cb);
  }
  get(name: string, ns?: string): TlsSecretFacts | undefined {
    return this.objs.get(`${ns}/${name}`);
  }
  put(name: string, l: LeafIdentity | null): void {
    const key = `shop/${name}`;
    const existed = this.objs.has(key);
    const iso = (t: number) => new Date(t).toISOString();
    const o: TlsSecretFacts = {
      metadata: { name, namespace: 'shop' },
      chain: l && {
        serial: l.serial,
        notBefore: iso(l.notBefore),
        notAfter: iso(l.notAfter),
        subject: l.subject,
        dnsNames: [...l.dnsNames],
        issuer: l.issuer,
        chainNotAfter: iso(l.notAfter),
      },
    };
    this.objs.set(key, o);
    for (const h of this.handlers[existed ? 'update' : 'add']) h(o);
  }
}

/** The probe stand-in: what each address serves (default: connection refused), every call recorded. */
class Probes {
  readonly calls: { at: number; host: string; address: string; timeoutMs: number }[] = [];
  readonly serves = new Map<string, ProbeOutcome>();
  /** hold every probe until released (or aborted) */
  hold = false;
  private readonly held: (() => void)[] = [];
  constructor(private readonly clock: FakeClock) {}
  readonly fn = (t: ProbeTarget, o: { timeoutMs: number; signal: AbortSignal }): Promise<ProbeOutcome> => {
    this.calls.push({ at: this.clock.now(), host: t.host, address: t.address, timeoutMs: o.timeoutMs });
    const out = (): ProbeOutcome => this.serves.get(t.address) ?? { kind: 'failed', error: 'connection refused' };
    if (!this.hold) return Promise.resolve(out());
    return new Promise((resolve) => {
      o.signal.addEventListener('abort', () => resolve({ kind: 'failed', error: 'aborted' }), { once: true });
      this.held.push(() => resolve(out()));
    });
  };
  release(n = Infinity): void {
    for (const r of this.held.splice(0, n)) r();
  }
  of(address: string): number[] {
    return this.calls.filter((c) => c.address === address).map((c) => c.at);
  }
}

/** a fixed sequence of "random" numbers in [0, 1) */
const seeded =
  (seed = 1) =>
  () =>
    (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;

const probers: ServingProber[] = [];
afterEach(async () => {
  for (const p of probers.splice(0)) await p.stop();
});

function setup(o: Partial<ServingProberOptions> = {}) {
  const clock = new FakeClock(NOW);
  const discovery = new Discovery();
  const secrets = new Secrets();
  const probes = new Probes(clock);
  const changes: string[] = [];
  const make = () => {
    const prober = new ServingProber({
      endpoints: discovery,
      secrets,
      log,
      clock,
      random: seeded(),
      probe: probes.fn,
      ...o,
    });
    prober.onChange((ns, name) => changes.push(`${ns}/${name}`));
    probers.push(prober);
    return prober;
  };
  return { clock, discovery, secrets, probes, changes, make };
}

describe('ServingProber: schedule', () => {
  it('endpoints known at the start are spread, then each is probed once per interval', async () => {
    const { clock, discovery, secrets, probes, make } = setup({ intervalMs: MIN });
    for (let i = 0; i < 100; i++) {
      secrets.put(`s${i}`, leaf(`A${i}`));
      discovery.set('shop', `s${i}`, [endpoint(`s${i}`)]);
    }
    const prober = make();
    prober.start();
    expect(prober.size).toEqual({ endpoints: 100, inFlight: 0 });
    // 100 endpoints at 50/s: spread over the time to probe them at half the rate, 4 s
    await clock.advance(4_000);
    expect(new Set(probes.calls.map((c) => c.address)).size).toBe(100);
    expect(probes.calls.length).toBe(100);
    expect(new Set(probes.calls.map((c) => c.timeoutMs))).toEqual(new Set([DEFAULT_SERVING_PROBE_TIMEOUT_MS]));
    await clock.advance(3 * MIN + 1_000);
    for (let i = 0; i < 100; i++) {
      const at = probes.of(`s${i}.lb:443`);
      expect(at).toHaveLength(4);
      for (let k = 1; k < at.length; k++) expect(at[k]! - at[k - 1]!).toBeGreaterThanOrEqual(MIN);
    }
  });

  it('an endpoint without an address is not probed; one found later is probed within seconds; one gone is not probed again', async () => {
    const { clock, discovery, secrets, probes, make, changes } = setup({ intervalMs: MIN });
    secrets.put('a', leaf('A'));
    discovery.set('shop', 'a', [endpoint('a'), endpoint('a', 'nolb.example.com', null)]);
    const prober = make();
    prober.start();
    expect(prober.of('shop', 'a').map((v) => [v.host, v.status, v.reason])).toEqual([
      ['a.example.com', 'pending', 'not probed yet'],
      ['nolb.example.com', 'notProbed', 'no address'],
    ]);
    await clock.advance(MIN / 2);
    expect(probes.calls.map((c) => c.host)).toEqual(['a.example.com']);
    changes.length = 0;
    discovery.set('shop', 'b', [endpoint('b')]);
    expect(changes).toEqual(['shop/b']);
    await clock.advance(5_000);
    expect(probes.of('b.lb:443')).toHaveLength(1);
    discovery.set('shop', 'b', []);
    expect(prober.of('shop', 'b')).toEqual([]);
    await clock.advance(3 * MIN);
    expect(probes.of('b.lb:443')).toHaveLength(1);
    expect(probes.of('a.lb:443')).toHaveLength(4);
    expect(prober.size.endpoints).toBe(2);
  });

  it('a new certificate in the Secret: its endpoints are probed soon and again after the reload grace; a metadata update is not a renewal', async () => {
    const { clock, discovery, secrets, probes, make } = setup();
    secrets.put('a', leaf('A'));
    secrets.put('b', leaf('B'));
    discovery.set('shop', 'a', [endpoint('a')]);
    discovery.set('shop', 'b', [endpoint('b')]);
    const prober = make();
    prober.start();
    await clock.advance(1_000);
    expect(probes.calls).toHaveLength(2);
    secrets.put('a', leaf('A')); // same serial
    await clock.advance(MIN);
    expect(probes.calls).toHaveLength(2);
    const renewedAt = clock.now();
    secrets.put('a', leaf('A2'));
    await clock.advance(DEFAULT_SERVING_PROBE_INTERVAL_MS * 2 + RENEWAL_PROBE_DELAY_MS);
    expect(
      probes
        .of('a.lb:443')
        .filter((t) => t >= renewedAt)
        .map((t) => t - renewedAt),
    ).toEqual([
      RENEWAL_PROBE_DELAY_MS,
      DEFAULT_RELOAD_GRACE_MS + RENEWAL_PROBE_DELAY_MS,
      DEFAULT_RELOAD_GRACE_MS + RENEWAL_PROBE_DELAY_MS + DEFAULT_SERVING_PROBE_INTERVAL_MS,
    ]);
    // b keeps its interval
    const b = probes.of('b.lb:443');
    for (let k = 1; k < b.length; k++) expect(b[k]! - b[k - 1]!).toBe(DEFAULT_SERVING_PROBE_INTERVAL_MS);
  });

  it('at most `concurrency` probes at once; a probe ending lets the next one start', async () => {
    const { clock, discovery, secrets, probes, make } = setup({ concurrency: 3 });
    probes.hold = true;
    for (let i = 0; i < 10; i++) {
      secrets.put(`s${i}`, leaf(`A${i}`));
      discovery.set('shop', `s${i}`, [endpoint(`s${i}`)]);
    }
    const prober = make();
    prober.start();
    await clock.advance(10_000);
    expect(probes.calls).toHaveLength(3);
    expect(prober.size.inFlight).toBe(3);
    probes.release(1);
    await clock.advance(100);
    expect(probes.calls).toHaveLength(4);
    expect(prober.size.inFlight).toBe(3);
    for (let i = 0; i < 3; i++) {
      probes.release();
      await clock.advance(100);
      expect(prober.size.inFlight).toBeLessThanOrEqual(3);
    }
    expect(probes.calls).toHaveLength(10);
  });

  it('the defaults: 10,000 endpoints every interval need at most three quarters of the rate', () => {
    expect(10_000 / (DEFAULT_SERVING_PROBE_INTERVAL_MS / 1000)).toBeLessThanOrEqual(0.75 * DEFAULT_SERVING_PROBE_RATE);
  });

  it('10,000 endpoints at the defaults: each probed every interval, never more than the rate (plus its burst) in any second', async () => {
    const { clock, discovery, secrets, probes, make } = setup();
    const n = 10_000;
    for (let i = 0; i < n; i++) {
      secrets.put(`s${i}`, leaf(`A${i}`));
      discovery.set('shop', `s${i}`, [endpoint(`s${i}`)]);
    }
    const prober = make();
    prober.start();
    const intervals = 3;
    await clock.advance(intervals * DEFAULT_SERVING_PROBE_INTERVAL_MS);
    const times = probes.calls.map((c) => c.at).sort((a, b) => a - b);
    // the first probes spread over one interval, then one per interval each
    expect(times.length).toBeGreaterThanOrEqual((intervals - 1) * n);
    expect(times.length).toBeLessThanOrEqual(intervals * n);
    const perEndpoint = new Map<string, number>();
    for (const c of probes.calls) perEndpoint.set(c.address, (perEndpoint.get(c.address) ?? 0) + 1);
    expect(Math.min(...perEndpoint.values())).toBeGreaterThanOrEqual(intervals - 1);
    let busiest = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while (times[j]! <= times[i]! - 1_000) j++;
      busiest = Math.max(busiest, i - j + 1);
    }
    expect(busiest).toBeLessThanOrEqual(DEFAULT_SERVING_PROBE_RATE + Math.ceil(DEFAULT_SERVING_PROBE_RATE / 10));
    expect(prober.size.inFlight).toBeLessThanOrEqual(DEFAULT_SERVING_PROBE_CONCURRENCY);
  }, 120_000);
});

describe('ServingProber: verdicts', () => {
  it('turns probes into verdicts; a change is told once; the consumers are looked up once per episode; factsOf is the inventory’s view', async () => {
    const lookups: string[] = [];
    const { clock, discovery, secrets, probes, make, changes } = setup({
      intervalMs: MIN,
      consumers: async (ns, name) => (lookups.push(`${ns}/${name}`), ['Deployment/web']),
    });
    const current = leaf('B2');
    const old = leaf('A1', { notAfter: NOW + 10 * DAY });
    secrets.put('web', current);
    discovery.set('shop', 'web', [endpoint('web', 'web.example.com', '10.0.0.1:443'), endpoint('web', 'www.example.com', '10.0.0.1:443')]);
    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: { ...current } });
    const prober = make();
    prober.start();
    changes.length = 0;
    await clock.advance(5_000);
    expect(prober.of('shop', 'web').map((v) => v.status)).toEqual(['ok', 'ok']);
    expect(changes).toEqual(['shop/web', 'shop/web']);
    changes.length = 0;
    await clock.advance(MIN);
    expect(changes).toEqual([]); // ok again: no change (checkedAt alone is not one)

    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: old });
    await clock.advance(MIN);
    const [web, www] = prober.of('shop', 'web');
    expect(web).toMatchObject({ status: 'stale', served: old, expected: current, consumers: ['Deployment/web'] });
    expect(www).toMatchObject({ status: 'stale', consumers: ['Deployment/web'] });
    expect(lookups).toEqual(['shop/web']);
    expect(prober.factsOf('shop', 'web')).toEqual([
      {
        host: 'web.example.com',
        address: '10.0.0.1:443',
        source: { kind: 'Ingress', namespace: 'shop', name: 'ing-web' },
        status: 'stale',
        servedSerial: 'A1',
        servedNotAfter: new Date(old.notAfter).toISOString(),
        checkedAt: new Date(web!.checkedAt!).toISOString(),
      },
      expect.objectContaining({ host: 'www.example.com', status: 'stale' }),
    ]);
    await clock.advance(5 * MIN);
    expect(lookups).toEqual(['shop/web']);

    changes.length = 0;
    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: current });
    await clock.advance(MIN);
    expect(prober.of('shop', 'web').map((v) => [v.status, v.consumers])).toEqual([
      ['ok', undefined],
      ['ok', undefined],
    ]);
    expect(changes.length).toBeGreaterThan(0);
    expect(prober.factsOf('shop', 'unknown')).toEqual([]);
  });

  it('an unchanged verdict is told again once CHECKED_AT_REFRESH_MS passed, so the inventory’s checkedAt stays recent', async () => {
    const { clock, discovery, secrets, probes, make, changes } = setup({ intervalMs: 10 * MIN });
    const current = leaf('B2');
    secrets.put('web', current);
    discovery.set('shop', 'web', [endpoint('web', 'web.example.com', '10.0.0.1:443')]);
    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: { ...current } });
    const prober = make();
    prober.start();
    await clock.advance(5_000);
    expect(prober.of('shop', 'web').map((v) => v.status)).toEqual(['ok']);
    changes.length = 0;
    const probed = probes.of('10.0.0.1:443').length;
    await clock.advance(CHECKED_AT_REFRESH_MS - 10 * MIN);
    expect(probes.of('10.0.0.1:443').length).toBeGreaterThan(probed);
    expect(changes).toEqual([]);
    await clock.advance(20 * MIN);
    expect(changes).toEqual(['shop/web']);
    const checkedAt = Date.parse(prober.factsOf('shop', 'web')[0]!.checkedAt!);
    expect(clock.now() - checkedAt).toBeLessThan(CHECKED_AT_REFRESH_MS);
  });

  it('logs a problem starting or ending at info, not the first ok of every endpoint', async () => {
    const lines: { level: number; status: string; was: string }[] = [];
    const capture = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    const { clock, discovery, secrets, probes, make } = setup({ intervalMs: MIN, log: capture });
    const current = leaf('B2');
    secrets.put('web', current);
    discovery.set('shop', 'web', [endpoint('web', 'web.example.com', '10.0.0.1:443')]);
    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: { ...current } });
    const prober = make();
    prober.start();
    await clock.advance(5_000);
    expect(prober.of('shop', 'web').map((v) => v.status)).toEqual(['ok']);
    expect(lines.filter((l) => l.status)).toEqual([]);
    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: leaf('Z9', { issuer: 'CN=Other' }) });
    await clock.advance(MIN);
    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: { ...current } });
    await clock.advance(MIN);
    expect(lines.filter((l) => l.status).map((l) => [l.level, l.was, l.status])).toEqual([
      [30, 'ok', 'mismatch'],
      [30, 'mismatch', 'ok'],
    ]);
  });

  it('an endpoint that stops answering: its verdict stands through the grace, then unreachable', async () => {
    const { clock, discovery, secrets, probes, make } = setup({ intervalMs: MIN, unreachableGraceMs: 3 * MIN });
    secrets.put('web', leaf('B2'));
    discovery.set('shop', 'web', [endpoint('web', 'web.example.com', '10.0.0.1:443')]);
    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: leaf('B2') });
    const prober = make();
    prober.start();
    await clock.advance(5_000);
    expect(prober.of('shop', 'web')[0]!.status).toBe('ok');
    probes.serves.delete('10.0.0.1:443');
    const failing = clock.now();
    await clock.advance(2 * MIN);
    expect(prober.of('shop', 'web')[0]).toMatchObject({ status: 'ok' });
    await clock.advance(2 * MIN);
    const v = prober.of('shop', 'web')[0]!;
    expect(v).toMatchObject({ status: 'unreachable', reason: 'connection refused' });
    expect(v.since).toBeGreaterThan(failing);
    expect(v.since).toBeLessThanOrEqual(failing + MIN);
    expect(prober.factsOf('shop', 'web')[0]).toMatchObject({ status: 'unreachable', reason: 'connection refused', servedSerial: 'B2' });
  });

  it('a renewal whose consumer does not reload: pending through the reload grace, then stale', async () => {
    const { clock, discovery, secrets, probes, make } = setup();
    const old = leaf('A1', { notAfter: NOW + 10 * DAY });
    secrets.put('web', old);
    discovery.set('shop', 'web', [endpoint('web', 'web.example.com', '10.0.0.1:443')]);
    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: old });
    const prober = make();
    prober.start();
    await clock.advance(1_000);
    expect(prober.of('shop', 'web')[0]!.status).toBe('ok');
    secrets.put('web', leaf('B2'));
    await clock.advance(RENEWAL_PROBE_DELAY_MS);
    expect(prober.of('shop', 'web')[0]).toMatchObject({ status: 'pending', reason: expect.stringContaining('to serve it') });
    await clock.advance(DEFAULT_RELOAD_GRACE_MS);
    expect(prober.of('shop', 'web')[0]).toMatchObject({ status: 'stale', served: old });
  });

  it('a listener that throws does not stop the others or the prober', async () => {
    const { clock, discovery, secrets, probes, make, changes } = setup();
    secrets.put('web', leaf('B2'));
    probes.serves.set('web.lb:443', { kind: 'served', leaf: leaf('B2') });
    const prober = make();
    prober.onChange(() => {
      throw new Error('boom');
    });
    prober.start();
    discovery.set('shop', 'web', [endpoint('web')]);
    await clock.advance(10_000);
    expect(prober.of('shop', 'web')[0]!.status).toBe('ok');
    expect(changes).toEqual(['shop/web', 'shop/web']);
  });
});

describe('ServingProber: factsOf within the hub’s rules', () => {
  it('what the hub would refuse is left out or cut; the rest passes the hub’s validation of a report', async () => {
    const { clock, discovery, secrets, probes, make } = setup({ unreachableGraceMs: 0 });
    secrets.put('web', leaf('B2'));
    const longSerial = 'A'.repeat(70);
    discovery.set('shop', 'web', [
      endpoint('web', 'ok.example.com', '10.0.0.1:443'),
      endpoint('web', 'long-serial.example.com', '10.0.0.2:443'),
      endpoint('web', 'down.example.com', '10.0.0.3:443'),
      endpoint('web', 'nolb.example.com', null),
      // hosts discovery could not read, reported by it as not probed: the hub accepts no such host
      { ...endpoint('web', 'bad host!', null), reason: 'spec.tls[0].hosts[0] "bad host!" is not a DNS name' },
      endpoint('web', `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.example.com`, null),
    ]);
    probes.serves.set('10.0.0.1:443', { kind: 'served', leaf: leaf('B2') });
    probes.serves.set('10.0.0.2:443', { kind: 'served', leaf: leaf(longSerial) });
    const prober = make();
    prober.start();
    await clock.advance(1_000);
    const facts = prober.factsOf('shop', 'web');
    expect(facts.map((f) => [f.host, f.status])).toEqual([
      ['down.example.com', 'unreachable'],
      ['long-serial.example.com', 'mismatch'],
      ['nolb.example.com', 'notProbed'],
      ['ok.example.com', 'ok'],
    ]);
    expect(facts[1]!.servedSerial).toBe('A'.repeat(64));
    const report = {
      protocol: INVENTORY_PROTOCOL,
      cluster: { id: '7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b', name: 'test' },
      agentVersion: 'test',
      epoch: '0b9e8f7a-6d5c-4b3a-8291-0a1b2c3d4e5f',
      seq: 1,
      kind: 'snapshot',
      final: true,
      upserts: [{ ...certificateFactsOf(secrets.get('web', 'shop')!, undefined), serving: facts }],
      deletes: [],
    };
    expect(validateInventoryReport(report)).toMatchObject({ ok: true });
  });
});

describe('ServingProber: stop', () => {
  it('ends the probes in flight and waits for them; nothing is probed after it', async () => {
    const { clock, discovery, secrets, probes, make } = setup();
    probes.hold = true;
    secrets.put('web', leaf('B2'));
    discovery.set('shop', 'web', [endpoint('web')]);
    const prober = make();
    prober.start();
    await clock.advance(1_000);
    expect(prober.size.inFlight).toBe(1);
    await prober.stop();
    expect(prober.size.inFlight).toBe(0);
    expect(prober.of('shop', 'web')[0]!.status).toBe('pending');
    await clock.advance(DEFAULT_SERVING_PROBE_INTERVAL_MS * 2);
    await flush();
    expect(probes.calls).toHaveLength(1);
  });
});

describe('ServingProber: memory', () => {
  /** WeakRef objects on the heap (a heap snapshot: it collects garbage first) */
  const weakRefs = async (): Promise<number> => {
    const { getHeapSnapshot } = await import('node:v8');
    const chunks: Buffer[] = [];
    for await (const c of getHeapSnapshot()) chunks.push(c as Buffer);
    const snap = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
      nodes: number[];
      strings: string[];
    };
    const nf = snap.snapshot.meta.node_fields.length;
    const object = snap.snapshot.meta.node_types[0].indexOf('object');
    let n = 0;
    for (let i = 0; i < snap.nodes.length; i += nf) if (snap.nodes[i] === object && snap.strings[snap.nodes[i + 1]!] === 'WeakRef') n++;
    return n;
  };

  it('sleeping between probes leaves nothing behind (thousands of sleeps, no WeakRef each)', async () => {
    const { clock, discovery, secrets, probes, make } = setup({ intervalMs: 10_000, ratePerSecond: 1_000 });
    for (let i = 0; i < 100; i++) {
      secrets.put(`s${i}`, leaf(`A${i}`));
      discovery.set('shop', `s${i}`, [endpoint(`s${i}`)]);
    }
    const prober = make();
    prober.start();
    await clock.advance(20_000);
    const before = await weakRefs();
    await clock.advance(200_000);
    expect(probes.calls.length).toBeGreaterThan(2_000);
    expect((await weakRefs()) - before).toBeLessThan(100);
  }, 60_000);
});
