/**
 * Our hub and Prometheus Alertmanager side by side: the same loopback receiver, the same events (ours
 * posted as events to POST /v1/events, Alertmanager's as the equivalent alerts to POST /api/v2/alerts, both in
 * batches of 100, one batch after the other), in one run:
 *
 *   1. flat: BENCH_PEERS_N (default 2,000) distinct certificates, ungrouped (ours: a router with no groupBy;
 *      Alertmanager: `group_by: ['...']`, `group_wait: 0s`): delivered/s from the first post to the last receipt,
 *      and each notification's post → receipt latency (p50/p99);
 *   2. storm: BENCH_PEERS_STORM (default 200) certificates of one issuer, grouped by issuer (ours: a router with
 *      `groupBy: [data.issuerName]`; Alertmanager: `group_by: [issuer]`), both with `group_wait`
 *      BENCH_PEERS_GROUP_WAIT (default 2s): the notifications sent within BENCH_PEERS_SETTLE_MS (default 3,000) of
 *      the first, and the time from the first post to the first notification;
 *   3. the peak RSS of each process (VmHWM from /proc), and each one's CPU per notification in the flat scenario.
 *
 * Our hub is `serve` of the shipped bundle (scripts/build.mjs) in a child process (its RSS is its own), with the
 * image's node flags (Dockerfile ENTRYPOINT), durable (SQLite file, `synchronous=FULL`; PostgreSQL when
 * `DATABASE_URL` is set or Debian's server can be started: `BENCH_ENGINES=sqlite,postgres`). Its webhook
 * integration is unlimited as a user makes it: `rateLimit: { perSecond: 0 }`.
 * Alertmanager is Debian's `prometheus-alertmanager` (test/support/alertmanager.ts: temporary storage, no cluster
 * gossip); without the binary the bench prints one line saying so and returns.
 *
 * The flat scenario runs BENCH_ROUNDS (default 3) timed rounds after a warm-up round, interleaved (Alertmanager,
 * then each engine, back to back); a row gives the medians, and its ratio the median of its per-round ratios to
 * Alertmanager's round. `BENCH_PEERS_PROFILE=<dir>` runs our hubs with `--cpu-prof` into that directory and prints
 * each profile's top frames by self time. `BENCH_PEERS_NODE_FLAGS` replaces the image's node flags ('' for Node's
 * defaults); `BENCH_PEERS_HUB_ARGS` adds `serve` flags (e.g. `--limits-file <file>`).
 *
 *   node_modules/.bin/node --import tsx bench/peers.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { certificateResourceNotReady } from '../test/fixtures/events.js';
import { serviceBinary, setupBinary } from '../test/support/binary.js';
import { alertmanagerMissing, startAlertmanager, type RunningAlertmanager } from '../test/support/alertmanager.js';
import { startPostgres } from '../test/support/postgres.js';
import { LOOPBACK_EGRESS_ALLOW, testSecretKeyFile } from '../test/support/service.js';
import { pgServerCpuMs } from './delivery.js';

const N = Number(process.env.BENCH_PEERS_N ?? 2000);
const STORM = Number(process.env.BENCH_PEERS_STORM ?? 200);
const BATCH = 100;
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const GROUP_WAIT = process.env.BENCH_PEERS_GROUP_WAIT ?? '2s';
const SETTLE_MS = Number(process.env.BENCH_PEERS_SETTLE_MS ?? 3000);
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
const PROFILE_DIR = process.env.BENCH_PEERS_PROFILE;
/** Extra `serve` flags for our hubs (space-separated), e.g. `--delivery-workers 32`. */
const HUB_ARGS = (process.env.BENCH_PEERS_HUB_ARGS ?? '').split(/\s+/).filter(Boolean);
/** How long one scenario may take before the bench gives up on a system. */
const SCENARIO_TIMEOUT_MS = 120_000;
const KEY = `bench-peers-${randomUUID()}`;
const FLAT_NS = 'bench-flat';
const STORM_NS = 'bench-storm';

const root = fileURLToPath(new URL('..', import.meta.url));

// ---------------------------------------------------------------- the receiver

/** What one system's notifications did: flat ones by certificate name (receipt time), storm ones by issuer. */
interface Seen {
  flat: Map<string, number>;
  storm: Map<string, number[]>;
  /** Requests that matched neither (a misconfiguration shows here). */
  other: number;
}

const FLAT_NAME = /flat-r\d+-\d+/;
const STORM_ISSUER = /storm-issuer-r\d+/;

/** One loopback server for every system: path /<system>; a body is classified by the names in it. */
async function receiver() {
  const seen = new Map<string, Seen>();
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const t = performance.now();
      res.end('ok');
      const sys = (req.url ?? '/').slice(1);
      let s = seen.get(sys);
      if (!s) seen.set(sys, (s = { flat: new Map(), storm: new Map(), other: 0 }));
      const body = Buffer.concat(chunks).toString('utf8');
      const issuer = STORM_ISSUER.exec(body)?.[0];
      const name = issuer ? undefined : FLAT_NAME.exec(body)?.[0];
      if (issuer) {
        const list = s.storm.get(issuer) ?? [];
        list.push(t);
        s.storm.set(issuer, list);
      } else if (name) {
        if (!s.flat.has(name)) s.flat.set(name, t);
      } else s.other++;
      for (const w of waiters) w();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (sys: string) => `${base}/${sys}`,
    seen(sys: string): Seen {
      let s = seen.get(sys);
      if (!s) seen.set(sys, (s = { flat: new Map(), storm: new Map(), other: 0 }));
      return s;
    },
    /** Resolves once `done()` holds (checked at every request), or rejects after `ms`. */
    until(done: () => boolean, ms: number, what: string): Promise<void> {
      if (done()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
        }, ms);
        const check = () => {
          if (!done()) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
      });
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
type Receiver = Awaited<ReturnType<typeof receiver>>;

// ---------------------------------------------------------------- the events, both ways

interface Cert {
  name: string;
  namespace: string;
  issuer: string;
}

function hubEvent(c: Cert) {
  return certificateResourceNotReady({ certificateName: c.name, namespace: c.namespace, issuerName: c.issuer });
}

/** The alert Alertmanager gets for the same event: what an Alertmanager rule on cert-manager's metrics would carry. */
function amAlert(c: Cert, startsAt: string) {
  const e = hubEvent(c).data;
  return {
    labels: {
      alertname: 'CertificateNotReady',
      cluster: e.clusterName,
      namespace: e.namespace,
      kind: 'Certificate',
      name: e.certificateName,
      issuer: e.issuerName,
      reason: e.statusReason,
    },
    annotations: {
      summary: `Certificate ${e.namespace}/${e.certificateName} is not ready`,
      description: e.statusMessage,
    },
    startsAt,
  };
}

/** A system under test: where its notifications arrive, and how it takes a batch. */
interface Peer {
  name: string;
  /** Receiver path. */
  sys: string;
  /** The process's pid, for /proc. */
  pid: number;
  post(batch: Cert[]): Promise<void>;
  /** CPU ms of what serves it outside its own process (PostgreSQL's server), or undefined. */
  serverCpuMs?: () => number | undefined;
  stop(): Promise<void>;
}

async function postJson(url: string, headers: Record<string, string>, body: unknown, expect: number): Promise<void> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`POST ${url}: ${res.status} ${text.slice(0, 500)}`);
}

// ---------------------------------------------------------------- /proc

/** VmRSS and VmHWM of a process, bytes (0 when unreadable). */
function memOf(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** CPU ms a process has used so far (utime + stime; Linux clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

/** CPU ms each thread of a process has used so far, summed by thread name (schedstat, ns). */
function threadCpuMsOf(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
        const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
        out.set(comm, (out.get(comm) ?? 0) + ns / 1e6);
      } catch {
        // exited meanwhile
      }
    }
  } catch {
    // no /proc: empty
  }
  return out;
}

/** The pid of this process's child whose command line holds `needle` (Alertmanager's listen address). */
function childPidWith(needle: string): number {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      if (
        readFileSync(`/proc/${pid}/cmdline`, 'utf8')
          .split('\0')
          .some((a) => a.includes(needle))
      )
        return Number(pid);
    } catch {
      // exited meanwhile
    }
  }
  throw new Error(`no child process of this one has '${needle}' on its command line`);
}

// ---------------------------------------------------------------- Alertmanager

function amConfig(hook: string): string {
  // one process for both scenarios, as our hub: the storm's namespace has its own route
  return `route:
  receiver: hook
  group_by: ['...']
  group_wait: 0s
  group_interval: 5m
  repeat_interval: 12h
  routes:
    - matchers: ['namespace="${STORM_NS}"']
      group_by: [issuer]
      group_wait: ${GROUP_WAIT}
receivers:
  - name: hook
    webhook_configs:
      - url: '${hook}'
        send_resolved: false
`;
}

async function alertmanagerPeer(rcv: Receiver): Promise<Peer> {
  const am: RunningAlertmanager = await startAlertmanager({ config: amConfig(rcv.url('alertmanager')) });
  const pid = childPidWith(`--web.listen-address=${new URL(am.url).host}`);
  return {
    name: 'Alertmanager 0.25 (Debian)',
    sys: 'alertmanager',
    pid,
    async post(batch) {
      const startsAt = new Date().toISOString();
      await postJson(
        `${am.url}/api/v2/alerts`,
        {},
        batch.map((c) => amAlert(c, startsAt)),
        200,
      );
    },
    stop: () => am.stop(),
  };
}

// ---------------------------------------------------------------- our hub

/**
 * The node flags of the image's ENTRYPOINT (Dockerfile): the product's heap and semi-space settings, unless
 * BENCH_PEERS_NODE_FLAGS says otherwise ('' for Node's defaults).
 */
function productNodeFlags(): string[] {
  const set = process.env.BENCH_PEERS_NODE_FLAGS;
  if (set !== undefined) return set.split(/\s+/).filter(Boolean);
  const entry = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'))?.[1];
  return entry ? (JSON.parse(entry) as string[]).filter((a) => a.startsWith('--')) : [];
}

async function gql(url: string, query: string, variables: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'svc-api-key': KEY },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown };
  if (!body.data || body.errors) throw new Error(`GraphQL ${res.status}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

async function startHub(bin: string, store: string, label: string): Promise<{ url: string; proc: ChildProcess; output: () => string }> {
  const flags = productNodeFlags();
  if (PROFILE_DIR) {
    mkdirSync(PROFILE_DIR, { recursive: true });
    // one directory per hub: its main thread's profile and its worker threads' (the SQLite store's), named by Node
    flags.push('--cpu-prof', `--cpu-prof-dir=${join(PROFILE_DIR, `hub-${label}`)}`);
  }
  const proc = spawn(
    process.execPath,
    [
      ...flags,
      bin,
      'serve',
      ...['--port', '0', '--host', '127.0.0.1', '--kube', 'off', '--api-key', KEY, '--store', store],
      ...['--secret-key-file', testSecretKeyFile(), ...LOOPBACK_EGRESS_ALLOW],
      ...HUB_ARGS,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const keep = (d: Buffer) => {
    if (out.length < 256 * 1024) out += d.toString('utf8');
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`hub (${label}) did not start:\n${out}`)), 60_000);
    const check = () => {
      const line = out.split('\n').find((l) => l.includes('"msg":"listening"'));
      if (!line) return;
      clearTimeout(t);
      proc.stdout!.off('data', check);
      resolve(JSON.parse(line).url as string);
    };
    proc.stdout!.on('data', check);
    proc.once('exit', () => reject(new Error(`hub (${label}) exited:\n${out}`)));
  });
  return { url, proc, output: () => out };
}

async function hubPeer(rcv: Receiver, bin: string, engine: string, store: string, serverCpuMs?: () => number | undefined): Promise<Peer> {
  const sys = `hub-${engine}`;
  const { url, proc, output } = await startHub(bin, store, engine);
  try {
    // the integration's own rate: 0, unlimited (one's own receiver), as a user sets it
    const hook = (await gql(
      url,
      `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id rateLimit { perSecond typeDefault } } }`,
      { i: { name: 'hook', url: rcv.url(sys), rateLimit: { perSecond: 0 } } },
    )) as { createWebhookIntegration: { id: string; rateLimit: { perSecond: number; typeDefault: boolean } } };
    const rate = hook.createWebhookIntegration.rateLimit;
    if (rate.perSecond !== 0 || rate.typeDefault)
      throw new Error(`the webhook integration's rate is ${JSON.stringify(rate)}, not unlimited`);
    const router = `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!, $p: NotificationRouterPolicyInput) {
      createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i, policyConfig: $p) { id } }`;
    const eventTypeId = 'certmgr-cert-resource-health-notification-config';
    const i = { integrationId: hook.createWebhookIntegration.id };
    await gql(url, router, { d: { name: 'flat', eventTypeId }, f: { advancedFilterExpression: `data.namespace == '${FLAT_NS}'` }, i });
    await gql(url, router, {
      d: { name: 'storm', eventTypeId },
      f: { advancedFilterExpression: `data.namespace == '${STORM_NS}'` },
      i,
      p: { groupBy: ['data.issuerName'], groupWait: GROUP_WAIT },
    });
  } catch (e) {
    proc.kill('SIGKILL');
    throw new Error(`${(e as Error).message}\n--- hub output ---\n${output().slice(-4000)}`, { cause: e });
  }
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    name: `durable, ${engine === 'sqlite' ? 'SQLite file' : 'PostgreSQL'}`,
    sys,
    pid: proc.pid!,
    async post(batch) {
      await postJson(
        `${url}/v1/events`,
        { 'svc-api-key': KEY },
        batch.map((c) => hubEvent(c)),
        202,
      );
    },
    ...(serverCpuMs ? { serverCpuMs } : {}),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const kill = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(kill);
    },
  };
}

// ---------------------------------------------------------------- the scenarios

interface FlatRound {
  perSec: number;
  /** events (alerts) accepted per second: the posting loop's rate */
  acceptPerSec: number;
  /** CPU ms per notification by thread name (Linux /proc/<pid>/task/<tid>/comm) */
  threads: Map<string, number>;
  p50: number;
  p99: number;
  max: number;
  /** the process's CPU ms per notification (and its store server's, PostgreSQL) */
  cpuMs: number;
  serverMs: number | undefined;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

async function flat(peer: Peer, rcv: Receiver, round: number): Promise<FlatRound> {
  const certs: Cert[] = Array.from({ length: N }, (_, i) => ({
    name: `flat-r${round}-${String(i).padStart(5, '0')}`,
    namespace: FLAT_NS,
    issuer: 'flat-issuer',
  }));
  const seen = rcv.seen(peer.sys);
  const before = seen.flat.size;
  const postedAt = new Map<string, number>();
  const cpu0 = cpuMsOf(peer.pid);
  const threads0 = threadCpuMsOf(peer.pid);
  const server0 = peer.serverCpuMs?.();
  const t0 = performance.now();
  const arrived = rcv.until(() => certs.every((c) => seen.flat.has(c.name)), SCENARIO_TIMEOUT_MS, `${peer.name}: ${N} flat notifications`);
  for (let b = 0; b < N; b += BATCH) {
    const batch = certs.slice(b, b + BATCH);
    const t = performance.now();
    for (const c of batch) postedAt.set(c.name, t);
    await peer.post(batch);
  }
  const tAccepted = performance.now();
  await arrived;
  const times = certs.map((c) => seen.flat.get(c.name)!);
  const last = Math.max(...times);
  const lat = certs.map((c) => seen.flat.get(c.name)! - postedAt.get(c.name)!).sort((a, b) => a - b);
  // let the last outcomes be written before reading the CPU (the receipt comes before the hub records it)
  await new Promise((r) => setTimeout(r, 300));
  const server1 = peer.serverCpuMs?.();
  const threads = threadCpuMsOf(peer.pid);
  for (const [k, v] of threads) threads.set(k, (v - (threads0.get(k) ?? 0)) / N);
  if (seen.flat.size - before !== N) throw new Error(`${peer.name}: ${seen.flat.size - before} flat notifications for ${N} events`);
  return {
    perSec: N / ((last - t0) / 1000),
    acceptPerSec: N / ((tAccepted - t0) / 1000),
    threads,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    max: lat[lat.length - 1]!,
    cpuMs: (cpuMsOf(peer.pid) - cpu0) / N,
    serverMs: server0 === undefined || server1 === undefined ? undefined : (server1 - server0) / N,
  };
}

interface StormRound {
  notifications: number;
  firstMs: number;
}

async function storm(peer: Peer, rcv: Receiver, round: number): Promise<StormRound> {
  const issuer = `storm-issuer-r${round}`;
  const certs: Cert[] = Array.from({ length: STORM }, (_, i) => ({ name: `storm-r${round}-${i}`, namespace: STORM_NS, issuer }));
  const seen = rcv.seen(peer.sys);
  const t0 = performance.now();
  const first = rcv.until(
    () => (seen.storm.get(issuer)?.length ?? 0) > 0,
    SCENARIO_TIMEOUT_MS,
    `${peer.name}: the storm's first notification`,
  );
  for (let b = 0; b < STORM; b += BATCH) await peer.post(certs.slice(b, b + BATCH));
  await first;
  const firstAt = seen.storm.get(issuer)![0]!;
  await new Promise((r) => setTimeout(r, Math.max(0, firstAt + SETTLE_MS - performance.now())));
  return { notifications: seen.storm.get(issuer)!.length, firstMs: firstAt - t0 };
}

// ---------------------------------------------------------------- profile summary

/** The top frames of a V8 CPU profile by self time, as shares of the time the thread was not idle. */
function topFrames(file: string, n = 15): string[] {
  const p = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(p.nodes.map((x) => [x.id, x.callFrame]));
  const self = new Map<string, number>();
  let busy = 0;
  p.samples.forEach((id, i) => {
    const f = byId.get(id);
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    if (!f || f.functionName === '(idle)') return;
    busy += dt;
    const key = `${f.functionName || '(anonymous)'} ${f.url ? `${basename(f.url)}:${f.lineNumber + 1}` : ''}`.trim();
    self.set(key, (self.get(key) ?? 0) + dt);
  });
  return [
    `busy ${busy.toFixed(0)} ms`,
    ...[...self.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, ms]) => `${((100 * ms) / busy).toFixed(1).padStart(5)}% ${ms.toFixed(0).padStart(6)} ms  ${k}`),
  ];
}

// ---------------------------------------------------------------- run

const median = (xs: number[]) => {
  const a = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(a.length / 2);
  return a.length % 2 ? a[mid]! : (a[mid - 1]! + a[mid]!) / 2;
};
const mb = (b: number) => `${(b / 1048576).toFixed(0)} MiB`;

export async function run(): Promise<void> {
  const missing = alertmanagerMissing();
  if (missing) {
    console.log(`peers: skipped: ${missing}`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'cmn-peers-'));
  const teardownBinary = await setupBinary();
  const rcv = await receiver();
  const peers: Peer[] = [];
  let pg: Awaited<ReturnType<typeof startPostgres>> | undefined;
  try {
    const bin = serviceBinary();
    peers.push(await alertmanagerPeer(rcv));
    if (ENGINES.includes('sqlite')) peers.push(await hubPeer(rcv, bin, 'sqlite', `sqlite:${join(dir, 'hub.db')}`));
    if (ENGINES.includes('postgres')) {
      try {
        let url = process.env.DATABASE_URL;
        let pgRoot = process.env.PGROOT;
        if (!url) {
          pg = await startPostgres();
          url = pg.url;
          pgRoot = pg.root;
        }
        const u = new URL(url);
        u.searchParams.set('schema', `bench_peers_${randomUUID().slice(0, 8)}`);
        const cpu = pgRoot ? () => pgServerCpuMs(pgRoot) : undefined;
        peers.push(await hubPeer(rcv, bin, 'postgres', u.toString(), cpu));
      } catch (e) {
        console.log(`(PostgreSQL not available: ${(e as Error).message.split('\n')[0]})`);
      }
    }
    const idle = new Map(peers.map((p) => [p.sys, memOf(p.pid).rss]));

    // warm-up (JIT, connections, the store's first pages), not counted
    for (const p of peers) await flat(p, rcv, 0);
    const flats = new Map<string, FlatRound[]>(peers.map((p) => [p.sys, []]));
    const storms = new Map<string, StormRound[]>(peers.map((p) => [p.sys, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      const line: string[] = [];
      for (const p of peers) {
        const f = await flat(p, rcv, round);
        flats.get(p.sys)!.push(f);
        line.push(`${p.name} ${f.perSec.toFixed(0)}/s (accepted ${f.acceptPerSec.toFixed(0)}/s) p99 ${f.p99.toFixed(0)} ms`);
      }
      for (const p of peers) storms.get(p.sys)!.push(await storm(p, rcv, round));
      console.log(`round ${round}: ${line.join(', ')}`);
    }
    const mem = new Map(peers.map((p) => [p.sys, memOf(p.pid)]));
    const other = peers.filter((p) => rcv.seen(p.sys).other > 0).map((p) => `${p.name}: ${rcv.seen(p.sys).other}`);

    const am = flats.get('alertmanager')!;
    console.log(
      `\nour hubs' node flags: ${productNodeFlags().join(' ') || "(Node's defaults)"}\n${N} certificates not ready, ungrouped, posted in batches of ${BATCH} one after the other; storm: ${STORM} of one issuer grouped by issuer, group_wait ${GROUP_WAIT}; medians of ${ROUNDS} interleaved rounds; loopback receiver`,
    );
    console.log(
      '| system | delivered/s | accepted/s | vs Alertmanager | p50 ms | p99 ms | max ms | CPU ms/notification | storm: notifications | storm: first after | RSS idle | peak RSS (VmHWM) |',
    );
    console.log('|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
    for (const p of peers) {
      const fs = flats.get(p.sys)!;
      const ss = storms.get(p.sys)!;
      const counts = ss.map((s) => s.notifications);
      const server = fs.every((f) => f.serverMs !== undefined) ? ` + server ${median(fs.map((f) => f.serverMs!)).toFixed(2)}` : '';
      console.log(
        `| ${p.name} | ${median(fs.map((f) => f.perSec)).toFixed(0)} | ${median(fs.map((f) => f.acceptPerSec)).toFixed(0)} | ${median(fs.map((f, i) => f.perSec / am[i]!.perSec)).toFixed(2)}× | ${median(fs.map((f) => f.p50)).toFixed(0)} | ${median(fs.map((f) => f.p99)).toFixed(0)} | ${median(fs.map((f) => f.max)).toFixed(0)} | ${median(fs.map((f) => f.cpuMs)).toFixed(2)}${server} | ${counts.every((c) => c === counts[0]) ? counts[0] : counts.join(' / ')} | ${median(ss.map((s) => s.firstMs)).toFixed(0)} ms | ${mb(idle.get(p.sys)!)} | ${mb(mem.get(p.sys)!.hwm)} |`,
      );
    }
    for (const p of peers) {
      const fs = flats.get(p.sys)!;
      const names = [...new Set(fs.flatMap((f) => [...f.threads.keys()]))];
      const by = names
        .map((n) => [n, median(fs.map((f) => f.threads.get(n) ?? 0))] as const)
        .filter(([, ms]) => ms >= 0.01)
        .sort((a, b) => b[1] - a[1]);
      console.log(`${p.name}: CPU ms per notification by thread: ${by.map(([n, ms]) => `${n} ${ms.toFixed(2)}`).join(', ')}`);
    }
    for (const p of peers) {
      if (p.sys === 'alertmanager') continue;
      const fs = flats.get(p.sys)!;
      const ratio = median(fs.map((f, i) => f.perSec / am[i]!.perSec));
      const p99 = median(fs.map((f) => f.p99));
      const amP99 = median(am.map((f) => f.p99));
      console.log(
        `${p.name} ${median(fs.map((f) => f.perSec)).toFixed(0)}/s vs Alertmanager ${median(am.map((f) => f.perSec)).toFixed(0)}/s: ${ratio.toFixed(2)}× (goal ≥ 1×: ${ratio >= 1 ? 'met' : 'missed'}); p99 ${p99.toFixed(0)} vs ${amP99.toFixed(0)} ms (goal ≤: ${p99 <= amP99 ? 'met' : 'missed'})`,
      );
    }
    if (other.length) console.log(`requests the receiver could not classify: ${other.join(', ')}`);
  } finally {
    for (const p of peers) await p.stop().catch((e: unknown) => console.log(`stopping ${p.name}: ${String(e)}`));
    await pg?.stop();
    await rcv.close();
    await teardownBinary();
    rmSync(dir, { recursive: true, force: true });
  }
  if (PROFILE_DIR)
    for (const hub of readdirSync(PROFILE_DIR).filter((x) => x.startsWith('hub-')))
      for (const f of readdirSync(join(PROFILE_DIR, hub)).filter((x) => x.endsWith('.cpuprofile')))
        console.log(`\n${hub}/${f}: top frames by self time (whole run)\n${topFrames(join(PROFILE_DIR, hub, f)).join('\n')}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
