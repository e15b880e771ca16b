/**
 * The inventory reporter against a real loopback hub stand-in (fake informer caches: the reporter reads only
 * their cache and events): snapshot in chunks under one epoch, coalesced deltas, heartbeat, 409 resync, a hub
 * outage healed by a new epoch, 429 retried as the same report, a hub without the endpoint. With a fake clock
 * and a stub client: Retry-After is waited for.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { InventoryClient, type InventoryOutcome } from '../../../src/client/inventory.js';
import type { TlsSecretFacts } from '../../../src/emitter/inventory/facts.js';
import { InventoryReporter } from '../../../src/emitter/inventory/reporter.js';
import type { InformerEvent } from '../../../src/kube/informer.js';
import type { InventoryReport } from '../../../src/model/inventory.js';
import type { ServingEndpointFacts } from '../../../src/model/serving.js';
import { CLUSTER } from '../fixtures.js';
import { FakeClock, flush } from '../../runtime/fake-clock.js';

const log = pino({ level: 'silent' });

class FakeCache {
  readonly objs = new Map<string, TlsSecretFacts>();
  private readonly handlers: Record<InformerEvent, ((o: TlsSecretFacts) => void)[]> = { add: [], update: [], delete: [] };
  on(e: InformerEvent, cb: (o: TlsSecretFacts) => void): void {
    this.handlers[e].push(cb);
  }
  private readonly listHandlers: (() => void)[] = [];
  onList(cb: () => void): void {
    this.listHandlers.push(cb);
  }
  /** a relist as the informer does it: the changes it found as events, then the list handlers */
  relist(changes: () => void): void {
    changes();
    for (const h of this.listHandlers) h();
  }
  get(name: string, ns?: string): TlsSecretFacts | undefined {
    return this.objs.get(`${ns}/${name}`);
  }
  list(): TlsSecretFacts[] {
    return [...this.objs.values()];
  }
  put(name: string, serial: string): void {
    const existed = this.objs.has(`ns/${name}`);
    const o = secretFacts(name, serial);
    this.objs.set(`ns/${name}`, o);
    for (const h of this.handlers[existed ? 'update' : 'add']) h(o);
  }
  remove(name: string): void {
    const o = this.objs.get(`ns/${name}`)!;
    this.objs.delete(`ns/${name}`);
    for (const h of this.handlers.delete) h(o);
  }
}

function secretFacts(name: string, serial: string): TlsSecretFacts {
  return {
    metadata: { name, namespace: 'ns' },
    chain: {
      serial,
      notBefore: '2026-01-01T00:00:00.000Z',
      notAfter: '2026-04-01T00:00:00.000Z',
      subject: `CN=${name}`,
      dnsNames: [name],
      issuer: 'CN=ca',
      chainNotAfter: '2026-04-01T00:00:00.000Z',
    },
  };
}

type Answer = (r: InventoryReport, res: ServerResponse) => void;
const ok: Answer = (r, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ status: 'applied', clusterId: r.cluster.id, epoch: r.epoch, seq: r.seq }));
};

const servers: Server[] = [];
const reporters: InventoryReporter[] = [];
afterEach(async () => {
  for (const r of reporters.splice(0)) await r.stop();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function hub(port = 0): Promise<{ url: string; port: number; reports: InventoryReport[]; answer: { fn: Answer }; server: Server }> {
  const reports: InventoryReport[] = [];
  const answer = { fn: ok };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      expect(req.url).toBe('/v1/inventory');
      expect(req.headers['svc-api-key']).toBe('agent-key-0123456789');
      const r = JSON.parse(body) as InventoryReport;
      reports.push(r);
      answer.fn(r, res);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const p = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${p}`, port: p, reports, answer, server };
}

function reporter(url: string, cache: FakeCache, extra: Partial<ConstructorParameters<typeof InventoryReporter>[0]> = {}) {
  const r = new InventoryReporter({
    client: new InventoryClient({ url, apiKey: 'agent-key-0123456789' }),
    secrets: cache,
    cluster: CLUSTER,
    agentVersion: 'test',
    log,
    batchMs: 20,
    heartbeatMs: 60_000,
    maxItems: 2,
    backoff: { baseMs: 10, maxMs: 40 },
    unsupportedRetryMs: 50,
    ...extra,
  });
  reporters.push(r);
  return r;
}

const until = async (cond: () => boolean): Promise<void> => {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};
const names = (r: InventoryReport): string => r.upserts.map((u) => u.secretName).join(',');

describe('InventoryReporter', () => {
  it('snapshot in chunks under one epoch (seq 1..n, final last), then coalesced deltas in the same epoch', async () => {
    const h = await hub();
    const cache = new FakeCache();
    for (const n of ['a', 'b', 'c', 'd', 'e']) cache.put(n, '01');
    const r = reporter(h.url, cache);
    expect(r.accepted).toBe(false);
    r.start();
    await r.firstAccepted;
    await until(() => h.reports.length === 3);
    const [s1, s2, s3] = h.reports as [InventoryReport, InventoryReport, InventoryReport];
    expect(h.reports.map((x) => [x.kind, x.seq, x.final, names(x)])).toEqual([
      ['snapshot', 1, false, 'a,b'],
      ['snapshot', 2, false, 'c,d'],
      ['snapshot', 3, true, 'e'],
    ]);
    expect(new Set([s1.epoch, s2.epoch, s3.epoch]).size).toBe(1);
    expect(s1).toMatchObject({ protocol: 1, cluster: CLUSTER, agentVersion: 'test', deletes: [] });
    expect(s1.upserts[0]).toMatchObject({ namespace: 'ns', secretName: 'a', serial: '01', notAfter: '2026-04-01T00:00:00.000Z' });
    expect(r.accepted).toBe(true);

    // changes: a twice (latest wins), b updated then deleted (= delete), f added
    cache.put('a', '02');
    cache.put('a', '03');
    cache.put('b', '02');
    cache.remove('b');
    cache.put('f', '01');
    await until(() => h.reports.length >= 4);
    await until(() => h.reports.flatMap((x) => (x.kind === 'delta' ? [...x.upserts, ...x.deletes] : [])).length >= 3);
    const deltas = h.reports.slice(3);
    expect(deltas.every((d) => d.kind === 'delta' && d.epoch === s1.epoch)).toBe(true);
    expect(deltas.map((d) => d.seq)).toEqual(deltas.map((_, i) => 4 + i));
    const upserts = deltas.flatMap((d) => d.upserts.map((u) => `${u.secretName}@${u.serial}`));
    const deletes = deltas.flatMap((d) => d.deletes.map((x) => x.secretName));
    expect(upserts.sort()).toEqual(['a@03', 'f@01']);
    expect(deletes).toEqual(['b']);
  });

  it('a relist (a broken watch, an apiserver restart) reports what it changed as deltas, not a new snapshot', async () => {
    const h = await hub();
    const cache = new FakeCache();
    for (const n of ['a', 'b', 'c']) cache.put(n, '01');
    const r = reporter(h.url, cache);
    r.start();
    await r.firstAccepted;
    await until(() => h.reports.length === 2);
    cache.relist(() => {
      cache.put('a', '02');
      cache.remove('b');
    });
    await until(() => h.reports.length >= 3);
    await new Promise((res) => setTimeout(res, 100)); // a snapshot, had one been started, would be on its way
    const after = h.reports.slice(2);
    expect(after.map((x) => x.kind)).toEqual(after.map(() => 'delta'));
    expect(after.every((x) => x.epoch === h.reports[0]!.epoch)).toBe(true);
    expect(after.flatMap((d) => d.upserts.map((u) => `${u.secretName}@${u.serial}`))).toEqual(['a@02']);
    expect(after.flatMap((d) => d.deletes.map((x) => x.secretName))).toEqual(['b']);
  });

  it('an empty cluster: one empty final snapshot; then an empty delta as heartbeat', async () => {
    const h = await hub();
    const r = reporter(h.url, new FakeCache(), { heartbeatMs: 30 });
    r.start();
    await until(() => h.reports.length >= 2);
    expect(h.reports[0]).toMatchObject({ kind: 'snapshot', seq: 1, final: true, upserts: [], deletes: [] });
    expect(h.reports[1]).toMatchObject({ kind: 'delta', seq: 2, upserts: [], deletes: [] });
  });

  it('409 RESYNC_REQUIRED: a new epoch and a full snapshot from seq 1', async () => {
    const h = await hub();
    const cache = new FakeCache();
    cache.put('a', '01');
    const r = reporter(h.url, cache);
    r.start();
    await until(() => h.reports.length === 1);
    h.answer.fn = (x, res) => {
      if (x.kind === 'delta') {
        res.writeHead(409, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ errors: [{ code: 'RESYNC_REQUIRED', message: 'unknown epoch' }] }));
      }
      ok(x, res);
    };
    cache.put('b', '01');
    await until(() => h.reports.length >= 3);
    const [first, delta, again] = h.reports as [InventoryReport, InventoryReport, InventoryReport];
    expect(delta).toMatchObject({ kind: 'delta', epoch: first.epoch, seq: 2 });
    expect(again).toMatchObject({ kind: 'snapshot', seq: 1, final: true });
    expect(again.epoch).not.toBe(first.epoch);
    expect(names(again)).toBe('a,b');
  });

  it('a hub outage longer than one retry: a new epoch with everything when it is back (changes meanwhile included)', async () => {
    const h = await hub();
    const cache = new FakeCache();
    cache.put('a', '01');
    const r = reporter(h.url, cache);
    r.start();
    await until(() => h.reports.length === 1);
    const epoch1 = h.reports[0]!.epoch;
    // down
    h.server.closeAllConnections();
    await new Promise((res) => h.server.close(res));
    servers.splice(servers.indexOf(h.server), 1);
    cache.put('b', '01');
    await until(() => r.stats.failures >= 3);
    cache.put('a', '02');
    // back, on the same port
    const back = await hub(h.port);
    await until(() => back.reports.some((x) => x.kind === 'snapshot' && x.final === true));
    const snap = back.reports.find((x) => x.kind === 'snapshot')!;
    expect(snap.epoch).not.toBe(epoch1);
    expect(snap.seq).toBe(1);
    // the hub's view of the new epoch (snapshot, then deltas) is the cluster's
    const view = new Map<string, string | null>();
    await until(() => {
      view.clear();
      for (const x of back.reports.filter((y) => y.epoch === snap.epoch)) {
        for (const u of x.upserts) view.set(u.secretName, u.serial);
        for (const d of x.deletes) view.delete(d.secretName);
      }
      return view.get('a') === '02';
    });
    expect(Object.fromEntries(view)).toEqual({ a: '02', b: '01' });
    expect(back.reports.every((x) => x.epoch === snap.epoch)).toBe(true); // nothing of the old epoch resent
  });

  it('413 (report too large for the hub): smaller reports until they fit, then a whole snapshot', async () => {
    const h = await hub();
    const LIMIT = 1500;
    h.answer.fn = (x, res) => (JSON.stringify(x).length > LIMIT ? void res.writeHead(413).end() : ok(x, res));
    const cache = new FakeCache();
    for (const n of ['a', 'b', 'c', 'd', 'e', 'f']) cache.put(n, '01');
    const r = reporter(h.url, cache, { maxItems: 1000, maxReportBytes: 64 * 1024 });
    r.start();
    await r.firstAccepted;
    await until(() => h.reports.some((x) => x.final === true && JSON.stringify(x).length <= LIMIT));
    const epoch = h.reports.find((x) => x.final === true && JSON.stringify(x).length <= LIMIT)!.epoch;
    const applied = h.reports.filter((x) => x.epoch === epoch);
    expect(applied.length).toBeGreaterThan(1);
    expect(applied.flatMap((x) => x.upserts.map((u) => u.secretName))).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('429 QUOTA_EXCEEDED: the SAME report again (same epoch, seq and content) until applied; never a new epoch', async () => {
    const h = await hub();
    const cache = new FakeCache();
    cache.put('a', '01');
    const r = reporter(h.url, cache);
    r.start();
    await until(() => h.reports.length === 1);
    const epoch = h.reports[0]!.epoch;
    let refusals = 0;
    h.answer.fn = (x, res) => {
      // more refusals than the two tries after which a failing report is healed by a new epoch
      if (x.kind === 'delta' && refusals < 4) {
        refusals++;
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' });
        return void res.end(
          JSON.stringify({ errors: [{ code: 'QUOTA_EXCEEDED', message: 'the company holds 3 clusters, the most it may' }] }),
        );
      }
      ok(x, res);
    };
    cache.put('b', '01');
    await until(() => h.reports.length >= 6);
    const deltas = h.reports.slice(1, 6);
    expect(deltas.map((d) => [d.kind, d.epoch, d.seq])).toEqual(Array.from({ length: 5 }, () => ['delta', epoch, 2]));
    expect(new Set(deltas.map((d) => JSON.stringify(d))).size).toBe(1);
    expect(names(deltas[0]!)).toBe('b');
    // applied at the fifth try; the epoch goes on
    cache.put('c', '01');
    await until(() => h.reports.length >= 7);
    expect(h.reports[6]).toMatchObject({ kind: 'delta', epoch, seq: 3 });
    expect(h.reports.filter((x) => x.kind === 'snapshot')).toHaveLength(1);
    expect(r.stats).toMatchObject({ snapshots: 1, throttled: 4 });
  });

  it('a hub without the endpoint (404): not accepted, asked again later, no crash', async () => {
    const h = await hub();
    h.answer.fn = (_x, res) => void res.writeHead(404).end();
    const cache = new FakeCache();
    cache.put('a', '01');
    const r = reporter(h.url, cache);
    r.start();
    await until(() => h.reports.length >= 3); // every unsupportedRetryMs, each a fresh epoch
    expect(r.accepted).toBe(false);
    h.answer.fn = ok; // the hub is upgraded
    await r.firstAccepted;
    expect(r.accepted).toBe(true);
  });
});

describe('InventoryReporter with serving verdicts', () => {
  it('a Secret’s row carries its endpoints; a verdict change is a delta for that Secret alone', async () => {
    const h = await hub();
    const cache = new FakeCache();
    for (const n of ['a', 'b']) cache.put(n, '01');
    const endpoint = (status: ServingEndpointFacts['status'], servedSerial: string | null): ServingEndpointFacts => ({
      host: 'a.example.com',
      address: '10.0.0.1:443',
      source: { kind: 'Ingress', namespace: 'ns', name: 'web' },
      status,
      servedSerial,
      servedNotAfter: servedSerial && '2026-03-01T00:00:00.000Z',
      checkedAt: '2026-02-01T00:00:00.000Z',
    });
    const verdicts = new Map([['ns/a', [endpoint('ok', '01')]]]);
    const listeners: ((ns: string, name: string) => void)[] = [];
    const serving = {
      factsOf: (ns: string, name: string) => verdicts.get(`${ns}/${name}`) ?? [],
      onChange: (l: (ns: string, name: string) => void) => void listeners.push(l),
    };
    const r = reporter(h.url, cache, { serving });
    r.start();
    await until(() => h.reports.length === 1);
    const [a, b] = h.reports[0]!.upserts;
    expect(a).toMatchObject({ secretName: 'a', serving: [endpoint('ok', '01')] });
    expect(b!.secretName).toBe('b');
    expect(b).not.toHaveProperty('serving');

    verdicts.set('ns/a', [endpoint('stale', '00')]);
    for (const l of listeners) l('ns', 'a');
    for (const l of listeners) l('ns', 'missing'); // endpoints of a Secret that does not exist: no row
    await until(() => h.reports.length === 2);
    expect(h.reports[1]).toMatchObject({ kind: 'delta', deletes: [] });
    expect(h.reports[1]!.upserts).toEqual([expect.objectContaining({ secretName: 'a', serial: '01', serving: [endpoint('stale', '00')] })]);
  });
});

describe('InventoryReporter with a fake clock', () => {
  it('429 with Retry-After: the same report goes again only once Retry-After has passed, however small the backoff', async () => {
    const clock = new FakeClock();
    const posts: InventoryReport[] = [];
    const answers: InventoryOutcome[] = [
      { kind: 'throttled', code: 'QUOTA_EXCEEDED', message: 'quota', retryAfterMs: 300_000 },
      { kind: 'throttled', code: 'QUOTA_EXCEEDED', message: 'quota', retryAfterMs: 300_000 },
    ];
    const client = {
      post: async (report: InventoryReport): Promise<InventoryOutcome> => {
        posts.push(report);
        return (
          answers.shift() ?? {
            kind: 'applied',
            ack: { status: 'applied', clusterId: report.cluster.id, epoch: report.epoch, seq: report.seq },
          }
        );
      },
    };
    const cache = new FakeCache();
    cache.put('a', '01');
    const r = new InventoryReporter({
      client,
      secrets: cache,
      cluster: { ...CLUSTER, id: CLUSTER.id.toUpperCase() },
      agentVersion: 'test',
      log,
      clock,
      backoff: { baseMs: 10, maxMs: 40, jitter: 0 },
    });
    reporters.push(r);
    r.start();
    await flush();
    expect(posts).toHaveLength(1);
    await clock.advance(299_999);
    expect(posts).toHaveLength(1);
    await clock.advance(1);
    expect(posts).toHaveLength(2);
    await clock.advance(300_000);
    expect(posts).toHaveLength(3);
    expect(r.accepted).toBe(true);
    // one snapshot, sent three times as it was
    expect(posts.map((p) => [p.kind, p.epoch, p.seq])).toEqual(Array.from({ length: 3 }, () => ['snapshot', posts[0]!.epoch, 1]));
    // the cluster id goes out in lower case, as the hub stores and echoes it
    expect(posts[0]!.cluster.id).toBe(CLUSTER.id);
  });
});
