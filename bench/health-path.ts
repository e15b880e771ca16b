/**
 * Health path latency (issue 12): an Issuer's Ready condition written through the status subresource of a REAL
 * kube-apiserver v1.20.2 + etcd (test/support/kube.ts, watch cache on as in production, etcd on /dev/shm) →
 * the webhook received by a loopback HTTP receiver, with the product as `serve --kube on` runs it, in this
 * process: operator + emitter + hub + delivery worker, SQLite, grace period 0, a Webhook provider and a router
 * made from CRs.
 *
 * Baseline in the same run: a bare client-node watch on the same kind of resource that POSTs to the same
 * receiver on each change of Ready (watch-to-POST). The two run one after the other on Issuers of two
 * namespaces (the product's emitter watches only its own), so neither loads the other.
 *
 * Two variants of BENCH_HEALTH_FLIPS flips (default 1,000), Ready alternating False/True:
 *  - idle: one Issuer, one flip at a time (the next once the previous reached the receiver);
 *  - loaded: BENCH_HEALTH_CONCURRENCY Issuers (default 50) flipping at once, each the same closed loop (the
 *    webhook type's per-integration rate limit, 20/s, is lifted: with it each flip would wait 50 / 20 = 2.5 s).
 * The status writes go over persistent keep-alive connections, as cert-manager's client-go makes them (the
 * ApiWriter of bench/lib/kube-bench.ts), the same writer for the product and the bare baseline.
 * Latency = receiver arrival − the start of the status write. Prints p50/p90/p99/max per variant, product vs
 * bare, and for the idle product where the time goes: timestamps along the path (the status write answered;
 * the watch event as a probe watch in this process sees it; POST /v1/events leaving the emitter and answered;
 * the webhook request leaving the delivery worker), from node:diagnostics_channel (undici, http server); then the
 * slowest 2% of the product's shares step by step with this process's GC pauses inside each.
 *
 * The product runs in this process, so it gets this process's GC: the bench runs itself in a child with the node
 * flags of the image's ENTRYPOINT (Dockerfile: a 1 MiB semi-space, so scavenges are short) unless this process
 * has them; BENCH_HEALTH_NODE_FLAGS sets others ('' for Node's defaults).
 * BENCH_HEALTH_LOADED=0 runs the idle variants only; BENCH_HEALTH_CPU_PROF=<file> / BENCH_HEALTH_HEAP_PROF=<file>
 * write a CPU profile / a sampling heap profile of the idle product flips.
 *
 *   node --import tsx bench/health-path.ts
 *   BENCH_HEALTH_FLIPS=200 BENCH_HEALTH_CONCURRENCY=20 node --import tsx bench/health-path.ts
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { PerformanceObserver, constants, performance, type PerformanceEntry } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { loadServeConfig } from '../src/config.js';
import { startService, type RunningService } from '../src/main.js';
import { ApiWriter } from './lib/kube-bench.js';
import { installCertManagerCrds } from '../test/fixtures/cert-manager-crds.js';
import { Kube, installCrds, provider, router, secret } from '../test/operator/support.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, startKubeEnv, type KubeEnv } from '../test/support/kube.js';
import { limitsFile } from '../test/support/limits.js';

const num = (s: string | undefined, d: number): number => (s ? Number(s) : d);
const FLIPS = num(process.env['BENCH_HEALTH_FLIPS'], 1000);
const CONCURRENCY = num(process.env['BENCH_HEALTH_CONCURRENCY'], 50);
/** idle: pause after each arrival, so a flip finds the process quiet (the previous flip's state write done) */
const GAP_MS = num(process.env['BENCH_HEALTH_GAP_MS'], 50);
/** where the SQLite file lives (default the OS temp dir, on disk: every commit is fsynced, synchronous=FULL) */
const STORE_DIR = process.env['BENCH_HEALTH_STORE_DIR'] ?? tmpdir();
/** a file: a CPU profile (.cpuprofile) of this process during the idle product flips */
const CPU_PROF = process.env['BENCH_HEALTH_CPU_PROF'];
/** a file: a sampling heap profile (.heapprofile) of what the idle product flips allocated and is still in the heap (live or not yet collected) at their end */
const HEAP_PROF = process.env['BENCH_HEALTH_HEAP_PROF'];
/** 0: only the idle variants (a quicker run while developing) */
const LOADED = process.env['BENCH_HEALTH_LOADED'] !== '0';
const PRODUCT_NS = 'bench-product';
const BARE_NS = 'bench-bare';
const KEY = 'bench-health-key-0123456789';
const now = (): number => performance.now();

// ---------------------------------------------------------------------------------------------------------
// the receiver: resolves the waiter of (path, issuer name, Ready status)

type Ready = 'True' | 'False';
interface Arrival {
  at: number;
}
const waiters = new Map<string, (a: Arrival) => void>();
const waitKey = (path: string, name: string, ready: Ready): string => `${path} ${name} ${ready}`;

function arrived(path: string, body: string, at: number): void {
  let name: string | undefined;
  let ready: Ready | undefined;
  try {
    const b = JSON.parse(body) as { type?: string; name?: string; ready?: Ready; data?: { resource?: { name?: string } } };
    name = path === '/bare' ? b.name : b.data?.resource?.name;
    ready = path === '/bare' ? b.ready : b.type?.endsWith('.notready') ? 'False' : 'True';
  } catch {
    return;
  }
  if (!name || !ready) return;
  const k = waitKey(path, name, ready);
  const w = waiters.get(k);
  if (w) {
    waiters.delete(k);
    w({ at });
  }
}

async function startReceiver(): Promise<{ url: string; server: Server }> {
  const server = createServer((req: IncomingMessage, res) => {
    const at = now();
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      res.writeHead(204).end();
      arrived(req.url ?? '', body, at);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

function expectArrival(path: string, name: string, ready: Ready, timeoutMs = 30_000): Promise<Arrival> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      waiters.delete(waitKey(path, name, ready));
      reject(new Error(`no ${path} arrival for ${name} Ready=${ready} within ${timeoutMs} ms`));
    }, timeoutMs);
    waiters.set(waitKey(path, name, ready), (a) => {
      clearTimeout(t);
      resolve(a);
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// Issuers and their status writes

const issuer = (ns: string, name: string) =>
  ({ apiVersion: 'cert-manager.io/v1', kind: 'Issuer', metadata: { name, namespace: ns }, spec: { selfSigned: {} } }) as never;

/**
 * The status write, as cert-manager's client-go makes it: over a persistent keep-alive connection (the shared
 * ApiWriter of bench/lib/kube-bench.ts: an undici Pool, one connection per concurrent writer), not client-node's
 * new TCP + TLS connection per request. The same writer serves the product's and the bare baseline's flips.
 */
function writeReady(w: ApiWriter, ns: string, name: string, ready: Ready): Promise<void> {
  const at = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  return w.send('PATCH', `/apis/cert-manager.io/v1/namespaces/${ns}/issuers/${name}/status`, {
    status: {
      conditions: [
        {
          type: 'Ready',
          status: ready,
          reason: ready === 'True' ? 'IsReady' : 'ErrInitIssuer',
          message: ready === 'True' ? 'signing' : 'bench flip',
          lastTransitionTime: at,
          observedGeneration: 1,
        },
      ],
    },
  });
}

interface Flip {
  start: number;
  written: number;
  end: number;
  /** when the probe watch saw the write (product phases) */
  watched?: number;
}

/** The probe watch's first sighting of (name, Ready) since the flip that wrote it started. */
const probeSeen = new Map<string, number>();

/** `flips` flips over `names` (one closed loop per name); each waits for its arrival before the next. */
async function flipLoop(
  w: ApiWriter,
  ns: string,
  path: string,
  names: string[],
  flips: number,
  gapMs: number,
  onFlip?: (f: Partial<Flip>) => void,
): Promise<Flip[]> {
  const out: Flip[] = [];
  let left = flips;
  const state = new Map(names.map((n) => [n, 'True' as Ready]));
  await Promise.all(
    names.map(async (name) => {
      while (left > 0) {
        left--;
        const ready: Ready = state.get(name) === 'True' ? 'False' : 'True';
        state.set(name, ready);
        const arrival = expectArrival(path, name, ready);
        const f: Partial<Flip> = { start: now() };
        probeSeen.delete(`${name} ${ready}`);
        onFlip?.(f);
        await writeReady(w, ns, name, ready);
        f.written = now();
        f.end = (await arrival).at;
        const watched = probeSeen.get(`${name} ${ready}`);
        if (watched !== undefined) f.watched = watched;
        out.push(f as Flip);
        if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
      }
    }),
  );
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// the bare baseline: a client-node watch that POSTs on each change of Ready

async function startBareWatcher(kc: KubeConfig, receiver: string): Promise<() => void> {
  const last = new Map<string, string>();
  const watch = new Watch(kc);
  const ctl = await watch.watch(
    `/apis/cert-manager.io/v1/namespaces/${BARE_NS}/issuers`,
    {},
    (type: string, obj: { metadata?: { name?: string }; status?: { conditions?: { type: string; status: string }[] } }) => {
      const name = obj.metadata?.name ?? '';
      const ready = obj.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? '';
      if (type === 'DELETED' || last.get(name) === ready) return;
      last.set(name, ready);
      if (!ready) return;
      void fetch(`${receiver}/bare`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, ready }),
      })
        .then((r) => r.arrayBuffer())
        .catch(() => {});
    },
    () => {},
  );
  return () => ctl.abort();
}

// ---------------------------------------------------------------------------------------------------------
// where the time goes (idle product): timestamps of the path's steps for the flip in progress

interface Marks {
  start: number;
  written?: number;
  watch?: number;
  postEvents?: number;
  hubIn?: number;
  accepted?: number;
  deliver?: number;
  statePatch?: number;
  statePatched?: number;
  /** durations (ms) of the store calls on the path: the ingestion transaction (to its commit), the delivery claim */
  txnMs?: number;
  /** the ingestion's commit → durable (SQLite: the -wal fdatasync on the thread pool), before the 202 */
  syncMs?: number;
  claimMs?: number;
}

/** Times the store calls on the path (the worker and the hub call them on this object). */
function timeStore(store: RunningService['store'], trace: { current: Marks | undefined }): void {
  const ingest = store.ingestTransaction.bind(store);
  const claim = store.claimDeliveries.bind(store);
  store.ingestTransaction = async (fn, committed) => {
    const c = trace.current;
    const t = now();
    let at: number | undefined;
    try {
      return await ingest(fn, () => {
        at = now();
        committed();
      });
    } finally {
      if (c && c.hubIn !== undefined && c.txnMs === undefined && at !== undefined) {
        c.txnMs = at - t;
        c.syncMs = now() - at;
      }
    }
  };
  store.claimDeliveries = async (...args) => {
    const c = trace.current;
    const t = now();
    const rows = await claim(...args);
    if (c && rows.length && c.claimMs === undefined) c.claimMs = now() - t;
    return rows;
  };
}

interface Trace {
  current: Marks | undefined;
  /** POST /v1/events requests the emitter made */
  posts: number;
  /** new connections to the apiserver (client-node 2.0.1 builds an undici Agent per request: one TLS handshake each) */
  kubeConnects: number;
  stop(): void;
}

function tracePath(receiverOrigin: string, kubeServer: string): Trace {
  const t: Trace = { current: undefined, posts: 0, kubeConnects: 0, stop: () => {} };
  const reqs = new WeakMap<object, string>();
  const onCreate = (m: unknown): void => {
    const { request } = m as { request: { origin: string | URL; path: string; method: string } };
    const origin = String(request.origin);
    if (request.path === '/v1/events' && request.method === 'POST') t.posts++;
    const c = t.current;
    if (!c) return;
    if (request.path === '/v1/events' && request.method === 'POST') c.postEvents ??= now();
    else if (origin.startsWith(receiverOrigin)) c.deliver ??= now();
    else if (origin.startsWith(kubeServer) && request.path.includes('/configmaps/') && request.method === 'PATCH') {
      c.statePatch ??= now();
      reqs.set(request, 'state');
    }
  };
  const onHeaders = (m: unknown): void => {
    const { request } = m as { request: object };
    if (reqs.get(request) === 'state' && t.current) t.current.statePatched ??= now();
  };
  const onServerStart = (m: unknown): void => {
    const { request } = m as { request: IncomingMessage };
    if (request.url === '/v1/events' && t.current) t.current.hubIn ??= now();
  };
  const onServerFinish = (m: unknown): void => {
    const { request } = m as { request: IncomingMessage };
    if (request.url === '/v1/events' && t.current) t.current.accepted ??= now();
  };
  const kubePort = new URL(kubeServer).port;
  const onConnected = (m: unknown): void => {
    const { connectParams } = m as { connectParams: { port?: string | number } };
    if (String(connectParams.port) === kubePort) t.kubeConnects++;
  };
  const subs: [string, (m: unknown) => void][] = [
    ['undici:client:connected', onConnected],
    ['undici:request:create', onCreate],
    ['undici:request:headers', onHeaders],
    ['http.server.request.start', onServerStart],
    ['http.server.response.finish', onServerFinish],
  ];
  for (const [name, fn] of subs) subscribe(name, fn);
  t.stop = () => {
    for (const [name, fn] of subs) unsubscribe(name, fn);
  };
  return t;
}

// ---------------------------------------------------------------------------------------------------------

const pct = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
/** PerformanceEntry.detail.kind of a 'gc' entry */
const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major (mark-compact)',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor (scavenge)',
  [constants.NODE_PERFORMANCE_GC_MINOR_MARK_SWEEP]: 'minor mark-sweep',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};
const ms = (v: number): string => (v >= 100 ? v.toFixed(0) : v.toFixed(1));

function stats(xs: number[]): { p50: number; p90: number; p99: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: pct(s, 0.5), p90: pct(s, 0.9), p99: pct(s, 0.99), max: s.at(-1) ?? NaN };
}

async function waitUntil(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * The node flags the product runs with: the image's ENTRYPOINT (Dockerfile), unless BENCH_HEALTH_NODE_FLAGS says
 * otherwise ('' for Node's defaults). The product runs in this process, so the GC it gets is this process's.
 */
function productNodeFlags(): string[] {
  const set = process.env['BENCH_HEALTH_NODE_FLAGS'];
  if (set !== undefined) return set.split(/\s+/).filter(Boolean);
  const entry = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8'))?.[1];
  return entry ? (JSON.parse(entry) as string[]).filter((a) => a.startsWith('--')) : [];
}

/** Runs the bench in a child process with the product's node flags (when this process lacks them). */
async function runWithProductFlags(): Promise<boolean> {
  if (process.env['BENCH_HEALTH_CHILD'] === '1') return false;
  const flags = productNodeFlags();
  if (flags.every((f) => process.execArgv.includes(f))) return false;
  const args = [...process.execArgv.filter((a) => !flags.some((f) => f.split('=')[0] === a.split('=')[0])), ...flags];
  const child = spawn(process.execPath, [...args, fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_HEALTH_CHILD: '1' },
  });
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  if (code !== 0) throw new Error(`bench/health-path child exited with ${code}`);
  return true;
}

export async function run(): Promise<void> {
  if (await runWithProductFlags()) return;
  console.log(
    `node flags of this process (the product's): ${process.execArgv.filter((a) => a.startsWith('--max')).join(' ') || '(Node defaults)'}`,
  );
  await ensureKubeBinaries();
  const env: KubeEnv = await startKubeEnv({ watchCache: true });
  const dir = mkdtempSync(join(STORE_DIR, 'cmn-bench-health-'));
  const receiver = await startReceiver();
  const writer = new ApiWriter(env, CONCURRENCY);
  let svc: RunningService | undefined;
  let stopBare: (() => void) | undefined;
  const savedKubeconfig = process.env['KUBECONFIG'];
  try {
    const kc = env.kubeConfig();
    await installCrds(kc);
    await installCertManagerCrds(kc);
    await ensureNamespace(kc, PRODUCT_NS);
    await ensureNamespace(kc, BARE_NS);
    const loadedNames = (p: string) => Array.from({ length: CONCURRENCY }, (_, i) => `${p}-${i}`);
    for (const ns of [PRODUCT_NS, BARE_NS])
      for (const n of ['solo', ...loadedNames('busy')]) {
        await applyManifest(kc, issuer(ns, n));
        await writeReady(writer, ns, n, 'True');
      }

    process.env['KUBECONFIG'] = env.kubeconfigPath;
    const cfg = loadServeConfig(
      [
        ...['--port', '0', '--host', '127.0.0.1', '--store', `sqlite:${join(dir, 'db')}`, '--kube', 'on'],
        ...['--api-key', KEY, '--leader-elect', 'false', '--egress-allow', '127.0.0.1/32'],
        ...['--emitter-watch-namespace', PRODUCT_NS, '--lease-namespace', 'default', ...limitsFile({ healthGracePeriod: '0s' })],
      ],
      {},
    );
    // the webhook type's default limit (20/s per integration) would make the loaded variant measure the limiter:
    // 50 closed loops through one integration wait 50 / 20 = 2.5 s each. bench/delivery.ts lifts it the same way.
    svc = await startService(cfg, pino({ level: 'silent' }), { rateLimits: { WEBHOOK: { ratePerSec: 1e9, burst: 1e9 } } });

    // the notification setup, as CRs: a Webhook provider and a router of every Issuer health event
    await applyManifest(kc, secret(PRODUCT_NS, 'hook', { url: `${receiver.url}/product` }));
    await applyManifest(kc, provider(PRODUCT_NS, 'hook', { type: 'Webhook', webhook: { urlSecretRef: { name: 'hook', key: 'url' } } }));
    await applyManifest(
      kc,
      router(PRODUCT_NS, 'issuers', { eventTypeId: 'certmgr-issuer-health-notification-config', providerRef: { name: 'hook' } }),
    );
    await new Kube(kc).waitCondition('notificationrouters', 'issuers', PRODUCT_NS, { status: 'True' }, 120_000);
    // the emitter is running once a flip goes through (its caches synced, the router in the hub's snapshot)
    await waitUntil(
      'the first flip through the product',
      async () => {
        const a = expectArrival('/product', 'solo', 'False', 5_000);
        await writeReady(writer, PRODUCT_NS, 'solo', 'False');
        await a;
        const b = expectArrival('/product', 'solo', 'True', 5_000);
        await writeReady(writer, PRODUCT_NS, 'solo', 'True');
        await b;
        return true;
      },
      120_000,
    );

    const warm = Math.min(50, FLIPS);
    await flipLoop(writer, PRODUCT_NS, '/product', ['solo'], warm, GAP_MS);
    const trace = tracePath(receiver.url, env.server);
    timeStore(svc.store, trace);
    // a probe: when a watch client in this process sees the write (the emitter's informer sees it about then)
    const probe = await new Watch(kc).watch(
      `/apis/cert-manager.io/v1/namespaces/${PRODUCT_NS}/issuers`,
      {},
      (_type: string, obj: { metadata?: { name?: string }; status?: { conditions?: { type: string; status: string }[] } }) => {
        const t = now();
        const name = obj.metadata?.name ?? '';
        const k = `${name} ${obj.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? ''}`;
        if (!probeSeen.has(k)) probeSeen.set(k, t);
        if (name === 'solo' && trace.current) trace.current.watch ??= t;
      },
      () => {},
    );
    const marks: Marks[] = [];
    const gcs: PerformanceEntry[] = [];
    const gcObserver = new PerformanceObserver((l) => gcs.push(...l.getEntries()));
    gcObserver.observe({ entryTypes: ['gc'] });
    const profiler = CPU_PROF || HEAP_PROF ? new Session() : undefined;
    if (profiler) {
      profiler.connect();
      if (CPU_PROF) {
        await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.start');
      }
      if (HEAP_PROF) await profiler.post('HeapProfiler.startSampling', { samplingInterval: 4096 });
    }
    const productIdle = await flipLoop(writer, PRODUCT_NS, '/product', ['solo'], FLIPS, GAP_MS, (f) => {
      const m: Marks = { start: f.start! };
      marks.push(m);
      trace.current = m;
    });
    for (let i = 0; i < productIdle.length; i++) marks[i]!.written = productIdle[i]!.written;
    trace.current = undefined;
    if (profiler) {
      if (CPU_PROF) writeFileSync(CPU_PROF, JSON.stringify((await profiler.post('Profiler.stop')).profile));
      if (HEAP_PROF) {
        // before stopSampling, which collects the whole heap first: what the young generation promoted and is
        // garbage by now stays in the profile until the next full GC (the scavenges' cost is in these objects)
        writeFileSync(HEAP_PROF, JSON.stringify((await profiler.post('HeapProfiler.getSamplingProfile')).profile));
        await profiler.post('HeapProfiler.stopSampling');
      }
      profiler.disconnect();
    }
    gcObserver.disconnect();
    const idlePosts = trace.posts;
    const idleConnects = trace.kubeConnects;
    const productLoaded = LOADED ? await flipLoop(writer, PRODUCT_NS, '/product', loadedNames('busy'), FLIPS, 0) : [];
    probe.abort();
    const loadedPosts = trace.posts - idlePosts;

    // the product stays up (idle: nothing it watches changes) while the bare watcher runs
    stopBare = await startBareWatcher(kc, receiver.url);
    await flipLoop(writer, BARE_NS, '/bare', ['solo'], warm, GAP_MS);
    const bareIdle = await flipLoop(writer, BARE_NS, '/bare', ['solo'], FLIPS, GAP_MS);
    const bareLoaded = LOADED ? await flipLoop(writer, BARE_NS, '/bare', loadedNames('busy'), FLIPS, 0) : [];

    const lat = (fs: Flip[]) => stats(fs.map((f) => f.end - f.start));
    console.log(
      `\nstatus write → webhook received, ${FLIPS} flips per row (Ready alternating False/True; grace 0; ` +
        `idle: one Issuer, ${GAP_MS} ms pause after each arrival; loaded: ${CONCURRENCY} Issuers at once, no pause, the webhook rate limit lifted; ` +
        `SQLite in ${STORE_DIR}), ms:\n`,
    );
    console.log('| variant | path | p50 | p90 | p99 | max | product / bare (p50, p99) |');
    console.log('|---|---|---:|---:|---:|---:|---:|');
    for (const [variant, p, b] of [
      ['idle', lat(productIdle), lat(bareIdle)],
      [`loaded (${CONCURRENCY})`, lat(productLoaded), lat(bareLoaded)],
    ] as const) {
      if (Number.isNaN(p.p50)) continue;
      console.log(
        `| ${variant} | product (serve --kube on) | ${ms(p.p50)} | ${ms(p.p90)} | ${ms(p.p99)} | ${ms(p.max)} | ${(p.p50 / b.p50).toFixed(2)}×, ${(p.p99 / b.p99).toFixed(2)}× |`,
      );
      console.log(`| ${variant} | bare watch → POST | ${ms(b.p50)} | ${ms(b.p90)} | ${ms(b.p99)} | ${ms(b.max)} | |`);
    }

    console.log(
      `\nPOST /v1/events requests of the emitter: idle ${idlePosts} for ${productIdle.length} flips, loaded ${loadedPosts} for ` +
        `${productLoaded.length} flips (${(productLoaded.length / Math.max(1, loadedPosts)).toFixed(2)} events a request)`,
    );
    console.log(
      `new TLS connections to the apiserver during the idle product flips (the bench's status writer keeps its ` +
        `connections; these are the emitter's state writes, client-node): ${idleConnects} for ${productIdle.length} flips`,
    );
    console.log('\nproduct, split at the probe watch (ms): the apiserver (write → watch event) and the product (watch event → webhook):\n');
    console.log('| variant | part | p50 | p90 | p99 |');
    console.log('|---|---|---:|---:|---:|');
    for (const [variant, fs] of [
      ['idle', productIdle],
      ['loaded', productLoaded],
    ] as const) {
      const seen = fs.filter((f) => f.watched !== undefined);
      if (!seen.length) continue;
      const a = stats(seen.map((f) => f.watched! - f.start));
      const b = stats(seen.map((f) => f.end - f.watched!));
      console.log(`| ${variant} | apiserver: status write → watch event | ${ms(a.p50)} | ${ms(a.p90)} | ${ms(a.p99)} |`);
      console.log(`| ${variant} | product: watch event → webhook received | ${ms(b.p50)} | ${ms(b.p90)} | ${ms(b.p99)} |`);
    }

    // where the time goes, idle product: each step's share (ms from the previous step), p50 / p99
    const steps: [string, (m: Marks) => number | undefined, (m: Marks) => number | undefined][] = [
      ['status write answered by the apiserver', (m) => m.start, (m) => m.written],
      ['status write start → a probe watch in this process sees it', (m) => m.start, (m) => m.watch],
      [
        'probe watch event → POST /v1/events leaves the emitter (informer, workqueue, reconcile, sender)',
        (m) => m.watch,
        (m) => m.postEvents,
      ],
      ['→ the hub starts handling it', (m) => m.postEvents, (m) => m.hubIn],
      [
        '→ the webhook request leaves the delivery worker (validate, route, ingestion commit, kick, claim, render)',
        (m) => m.hubIn,
        (m) => m.deliver,
      ],
      ['→ the receiver has it', (m) => m.deliver, (m) => productIdle[marks.indexOf(m)]?.end],
      ['(inside the hub step) the ingestion transaction to its commit (SQLite: synchronous=NORMAL)', () => 0, (m) => m.txnMs],
      [
        '(beside the path) the ingestion commit → durable (SQLite: fdatasync of the WAL, thread pool), before the 202',
        () => 0,
        (m) => m.syncMs,
      ],
      ['(inside the hub step) the delivery claim (SQLite: one commit)', () => 0, (m) => m.claimMs],
      ['(beside the path) the 202 flushed, after the worker started sending', (m) => m.deliver, (m) => m.accepted],
      ['(beside the path) state ConfigMap PATCH after the 202, its duration', (m) => m.statePatch, (m) => m.statePatched],
    ];
    console.log('\nidle product, where the time goes (ms between successive steps; flips where each step was seen):\n');
    console.log('| step | flips | p50 | p90 | p99 |');
    console.log('|---|---:|---:|---:|---:|');
    for (const [name, from, to] of steps) {
      const d = marks
        .map((m) => (from(m) !== undefined && to(m) !== undefined ? to(m)! - from(m)! : undefined))
        .filter((x): x is number => x !== undefined);
      if (!d.length) continue;
      const s = stats(d);
      console.log(`| ${name} | ${d.length} | ${ms(s.p50)} | ${ms(s.p90)} | ${ms(s.p99)} |`);
    }
    // the tail: the slowest 2% of the product's shares, step by step, and the GC pauses inside each
    const share = (i: number): number | undefined => {
      const f = productIdle[i]!;
      return f.watched === undefined ? undefined : f.end - f.watched;
    };
    const order = productIdle.map((_, i) => i).filter((i) => share(i) !== undefined);
    order.sort((a, b) => share(b)! - share(a)!);
    const slow = order.slice(0, Math.max(1, Math.ceil(order.length / 50)));
    const gcIn = (from: number, to: number): number =>
      gcs.filter((g) => g.startTime < to && g.startTime + g.duration > from).reduce((a, g) => a + g.duration, 0);
    const d = (a: number | undefined, b: number | undefined): string => (a === undefined || b === undefined ? '-' : ms(b - a));
    console.log(
      `\nidle product, the slowest ${slow.length} shares (watch event → webhook) step by step (ms; GC: pauses of this ` +
        `process inside the share, ${gcs.length} GCs during the idle flips, ${ms(gcs.reduce((a, g) => a + g.duration, 0))} ms in all):\n`,
    );
    const kinds = new Map<string, number[]>();
    for (const g of gcs) {
      const detail = (g as PerformanceEntry & { detail?: { kind?: number; flags?: number } }).detail;
      const k = `${GC_KINDS[detail?.kind ?? 0] ?? 'other'}${detail?.flags ? ` (flags ${detail.flags})` : ''}`;
      kinds.set(k, [...(kinds.get(k) ?? []), g.duration]);
    }
    console.log(
      [...kinds]
        .map(([k, ds]) => `${k}: ${ds.length} pauses, ${ms(ds.reduce((a, x) => a + x, 0))} ms in all, max ${ms(Math.max(...ds))} ms`)
        .join('; ') + '\n',
    );
    console.log('| share | → POST leaves | → hub | → webhook leaves (txn, claim) | → received | GC in share |');
    console.log('|---:|---:|---:|---:|---:|---:|');
    for (const i of slow) {
      const m = marks[i]!;
      const f = productIdle[i]!;
      console.log(
        `| ${ms(share(i)!)} | ${d(f.watched, m.postEvents)} | ${d(m.postEvents, m.hubIn)} | ${d(m.hubIn, m.deliver)} (${d(0, m.txnMs)}, ${d(0, m.claimMs)}) | ` +
          `${d(m.deliver, f.end)} | ${ms(gcIn(f.watched!, f.end))} |`,
      );
    }
    trace.stop();
  } finally {
    stopBare?.();
    await svc?.close();
    await writer.close();
    receiver.server.closeAllConnections();
    receiver.server.close();
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
    if (savedKubeconfig === undefined) delete process.env['KUBECONFIG'];
    else process.env['KUBECONFIG'] = savedKubeconfig;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
