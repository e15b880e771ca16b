/**
 * Issue 12 "Scale": the agent at N cert-manager Certificates + N TLS Secrets (plus noise) on the real
 * kube-apiserver + etcd, next to a bare client-node informer of the same objects in the same run.
 *
 * For each N of BENCH_SCALE_SIZES (default 10000,30000,100000; the objects grow from one size to the next):
 *   1. creates the objects (concurrent keep-alive requests; the creation rate is printed);
 *   2. runs the built bundle `serve --kube on` (SQLite in a temp dir): initial sync = spawn → every emitter
 *      informer synced (the "… part running" logs) and the hub accepted the first inventory report; peak RSS =
 *      VmHWM (and VmRSS sampled every 200 ms) once the process is idle again. Then the apiserver is restarted
 *      (etcd kept; the watch cache starts over, so every watch gets 410 and relists): sync after relist =
 *      the new apiserver's first answer → every emitter informer listed again (certmgr_notify_informer_lists_total;
 *      by metadata, reading whole only what changed) and its changes were reported (a snapshot, if the hub asked for
 *      one, accepted); its peak RSS from a reset VmHWM; the time each informer's relist ended is printed;
 *   Beside them, N/10 Ingresses (BENCH_SCALE_INGRESSES), two hosts each with the TLS Secret of one Certificate, all
 *   with the probe-address of one loopback TLS server that serves each host its Secret's certificate and counts the
 *   serving prober's connections: the initial sync also waits for the prober's start (Ingresses listed), and after
 *   it the probes per second are counted over BENCH_SCALE_PROBE_WINDOW_MS (default 120000) at the product's
 *   default --serving-probe-interval (BENCH_SCALE_PROBE_INTERVAL sets another, e.g. 1m), against the prober's
 *   documented rate (DEFAULT_SERVING_PROBE_RATE);
 *   3. the baseline: plain Node with client-node's ListWatch (unpaginated list, as makeInformer does) of the TLS
 *      Secrets and the Certificates: sync time and peak RSS, or its failure.
 *
 *   node_modules/.bin/node --import tsx bench/scale.ts
 *   BENCH_SCALE_SIZES=10000 node_modules/.bin/node --import tsx bench/scale.ts
 *
 * Knobs: BENCH_SCALE_SIZES, BENCH_SCALE_CONCURRENCY (requests in flight while creating, default 48),
 * BENCH_SCALE_NAMESPACES (100), BENCH_SCALE_TIMEOUT_MS (per sync, default 900000), BENCH_SCALE_ETCD_QUOTA_BYTES
 * (8 GiB), BENCH_SCALE_ETCD_TMPFS (1: etcd data on /dev/shm; 0: a temp dir on disk), BENCH_SCALE_BARE (0 skips
 * the baseline), BENCH_SCALE_RELIST (0 skips the relist), BENCH_SCALE_NODE_OPTIONS (the product's NODE_OPTIONS: the
 * heap flags of a pod), BENCH_SCALE_MALLOC_ARENA_MAX and BENCH_SCALE_MALLOC_MMAP_THRESHOLD (the product's
 * MALLOC_ARENA_MAX and MALLOC_MMAP_THRESHOLD_, as the image sets them), BENCH_SCALE_ETCD_DIR (etcd's
 * data dir, kept: a later run with the same dir reuses the objects it holds instead of creating them again; the
 * count is in its `scale-bench-objects` file), BENCH_SCALE_HEAP_SNAPSHOT (a directory: a heap snapshot of the
 * product once it is idle after its initial sync, written there; the figures are taken before it),
 * BENCH_SCALE_CPU_PROF (a directory: the product runs with --cpu-prof and is stopped with SIGTERM), BENCH_SCALE_PRODUCT_LOG
 * (a file: the product's output, written at its end), BENCH_SCALE_APISERVER_PPROF (a file: a 90 s CPU profile of the
 * apiserver from its first answer after the restart; `go tool pprof -top`).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startServiceProcess, type ServiceProcess } from '../test/e2e/service-process.js';
import { installCertManagerCrds } from '../test/fixtures/cert-manager-crds.js';
import { installCrds } from '../test/operator/support.js';
import { setupBinary } from '../test/support/binary.js';
import type { KubeEnv } from '../test/support/kube.js';
import { DEFAULT_SERVING_PROBE_INTERVAL_MS, DEFAULT_SERVING_PROBE_RATE } from '../src/emitter/serving/prober.js';
import {
  ApiWriter,
  MemorySampler,
  apiserverProfile,
  createScaffolding,
  generateTlsMaterial,
  grow,
  growIngresses,
  readTlsMaterial,
  mib,
  runBareInformer,
  secs,
  servingAgainAt,
  warmWatchCaches,
  startScaleKube,
  startProbeTarget,
  type BareResult,
  type ProbeTarget,
  type GrowStats,
  type Layout,
} from './lib/kube-bench.js';
import { limitsFile } from '../test/support/limits.js';

const env = process.env;
const SIZES = (env.BENCH_SCALE_SIZES ?? '10000,30000,100000')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0)
  .sort((a, b) => a - b);
const CONCURRENCY = Number(env.BENCH_SCALE_CONCURRENCY ?? 48);
const TIMEOUT_MS = Number(env.BENCH_SCALE_TIMEOUT_MS ?? 900_000);
const LAYOUT: Layout = { namespaces: Number(env.BENCH_SCALE_NAMESPACES ?? 100), notReadyEvery: 33 };
const KEY = 'scale-bench-key-0123456789';
/** Ingresses at N (two endpoints each); default N/10 */
const ingressesAt = (n: number): number =>
  env.BENCH_SCALE_INGRESSES !== undefined ? Math.min(n, Number(env.BENCH_SCALE_INGRESSES)) : Math.floor(n / 10);
const PROBE_WINDOW_MS = Number(env.BENCH_SCALE_PROBE_WINDOW_MS ?? 120_000);
const PROBE_INTERVAL = env.BENCH_SCALE_PROBE_INTERVAL;
/** the goal at N = 100,000 */
/** distinct certificates the Secrets share (Secret i has material[i % MATERIAL]) */
const MATERIAL = 8;
const GOAL = { n: 100_000, rss: 400 * 1024 * 1024, syncMs: 60_000 };

interface Phase {
  syncMs?: number;
  peakRss: number;
  error?: string;
}

/** The serving prober's probes as the loopback endpoint saw them, over the window after the initial sync. */
interface ProbeFigures {
  endpoints: number;
  /** ms from spawn to 'serving prober started' */
  startedMs: number;
  windowMs: number;
  connections: number;
  /** connections per second over the window, and the most in one whole second */
  perSecond: number;
  maxInOneSecond: number;
  /** the product's peak RSS until the end of the window */
  peakRss: number;
}

interface ProductResult {
  initial: Phase & { operatorMs?: number; emitterMs?: number; firstReportMs?: number; restRss?: number; servingMs?: number };
  probes?: ProbeFigures;
  relist?: Phase & { apiserverRestartMs: number };
}

interface Row {
  n: number;
  created: GrowStats;
  product: ProductResult;
  bare?: BareResult;
  /** the relist's floor: after a restart with no client, until the apiserver answers from every refilled cache */
  refillMs?: number;
}

interface LogLine {
  msg?: string;
  time?: number | string;
  reason?: string;
  informer?: string;
}

/** The product's JSON log lines, read incrementally from its output. */
class LogTail {
  private offset = 0;
  readonly seen: { msg: string; at: number; reason?: string; informer?: string }[] = [];
  constructor(private readonly svc: ServiceProcess) {}

  poll(): void {
    const out = this.svc.output();
    const end = out.lastIndexOf('\n') + 1;
    if (end <= this.offset) return;
    for (const l of out.slice(this.offset, end).split('\n')) {
      if (!l.startsWith('{')) continue;
      try {
        const j = JSON.parse(l) as LogLine;
        const at = typeof j.time === 'number' ? j.time : j.time ? Date.parse(j.time) : Date.now();
        if (j.msg)
          this.seen.push({ msg: j.msg, at, ...(j.reason ? { reason: j.reason } : {}), ...(j.informer ? { informer: j.informer } : {}) });
      } catch {
        /* not a log line */
      }
    }
    this.offset = end;
  }

  first(msg: string, after = 0): number | undefined {
    return this.seen.find((s) => s.msg === msg && s.at >= after)?.at;
  }
}

const SNAPSHOT_DIR = env.BENCH_SCALE_HEAP_SNAPSHOT;
const CPU_PROF_DIR = env.BENCH_SCALE_CPU_PROF;
const APISERVER_PPROF = env.BENCH_SCALE_APISERVER_PPROF;

/** pids of this run's kube-apiserver and etcd (by the port in their command line) */
function kubePids(kube: KubeEnv): { apiserver?: number; etcd?: number } {
  const port = new URL(kube.server).port;
  const out: { apiserver?: number; etcd?: number } = {};
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (cmd.includes(`--secure-port=${port}\0`)) out.apiserver = Number(d);
    else if (cmd.includes(`--listen-client-urls=${kube.etcdEndpoint}\0`)) out.etcd = Number(d);
  }
  return out;
}

/** utime + stime of a process, seconds */
function cpuSecs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds used by the product, the apiserver and etcd since `start()`, as a log line. */
function cpuMeter(kube: KubeEnv, productPid: number): () => string {
  const pids = kubePids(kube);
  const at = (): number[] => [cpuSecs(productPid), cpuSecs(pids.apiserver), cpuSecs(pids.etcd)];
  const t0 = at();
  return () => {
    const [p, a, e] = at().map((v, i) => (v - t0[i]!).toFixed(1));
    return `CPU s: product ${p}, apiserver ${a}, etcd ${e}`;
  };
}

/** SIGUSR2 (--heapsnapshot-signal) and the wait until the new snapshot file stops growing. */
async function heapSnapshot(svc: ServiceProcess, dir: string, log: (s: string) => void): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const before = new Set(readdirSync(dir));
  svc.proc.kill('SIGUSR2');
  let last = -1;
  for (;;) {
    await sleep(2000);
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    const size = file ? statSync(join(dir, file)).size : -1;
    if (file && size === last && size > 0) return log(`heap snapshot ${join(dir, file)} (${mib(size)})`);
    last = size;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const exited = (svc: ServiceProcess): boolean => svc.proc.exitCode !== null || svc.proc.signalCode !== null;
const tail = (svc: ServiceProcess): string => svc.output().trim().split('\n').slice(-5).join('\n');

/** V8's heap (used / committed) and external memory from the product's default metrics, as a log line. */
async function heapLine(svc: ServiceProcess): Promise<string> {
  try {
    const text = await (await fetch(`${svc.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
    const v = (name: string): string => {
      const m = new RegExp(`^\\w*${name} (\\S+)`, 'm').exec(text);
      return m ? mib(Number(m[1])) : '?';
    };
    return `heap used ${v('nodejs_heap_size_used_bytes')} of ${v('nodejs_heap_size_total_bytes')}, external ${v('nodejs_external_memory_bytes')}`;
  } catch (e) {
    return `no heap metrics (${(e as Error).message})`;
  }
}

/** `certmgr_notify_informer_list_pages_total` by informer, and the inventory snapshot reports the hub applied. */
async function scrape(svc: ServiceProcess): Promise<{ pages: Map<string, number>; lists: Map<string, number>; snapshotsApplied: number }> {
  const text = await (await fetch(`${svc.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const pages = new Map<string, number>();
  const lists = new Map<string, number>();
  let snapshotsApplied = 0;
  for (const l of text.split('\n')) {
    const p = /^certmgr_notify_informer_list_pages_total\{informer="([^"]+)"\} (\d+)/.exec(l);
    if (p) pages.set(p[1]!, Number(p[2]));
    const w = /^certmgr_notify_informer_lists_total\{informer="([^"]+)"\} (\d+)/.exec(l);
    if (w) lists.set(w[1]!, Number(w[2]));
    const r = /^certmgr_notify_inventory_reports_total\{(?=[^}]*kind="snapshot")(?=[^}]*outcome="applied")[^}]*\} (\d+)/.exec(l);
    if (r) snapshotsApplied += Number(r[1]);
  }
  return { pages, lists, snapshotsApplied };
}

async function runProduct(kube: KubeEnv, log: (s: string) => void, target: ProbeTarget, endpoints: number): Promise<ProductResult> {
  const dbDir = mkdtempSync(join(tmpdir(), 'cmn-scale-db-'));
  const t0 = Date.now();
  const svc = await startServiceProcess(
    [
      '--kube',
      'on',
      '--store',
      `sqlite:${join(dbDir, 'db')}`,
      '--leader-elect',
      'false',
      '--lease-namespace',
      'default',
      '--cluster-name',
      'bench',
      ...(PROBE_INTERVAL ? limitsFile({ servingProbeInterval: PROBE_INTERVAL }) : []),
    ],
    KEY,
    // BENCH_SCALE_NODE_OPTIONS: the heap flags a pod would get (Node sizes its heap from the container's limit)
    // BENCH_SCALE_MALLOC_ARENA_MAX: glibc's malloc arenas (MALLOC_ARENA_MAX=2 in a pod keeps native memory from
    // fragmenting over one arena per thread; docs/performance.md)
    {
      KUBECONFIG: kube.kubeconfigPath,
      NODE_OPTIONS: [
        process.env['BENCH_SCALE_NODE_OPTIONS'] ?? '',
        ...(SNAPSHOT_DIR ? [`--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${SNAPSHOT_DIR}`] : []),
        ...(CPU_PROF_DIR ? [`--cpu-prof --cpu-prof-dir=${CPU_PROF_DIR}`] : []),
      ].join(' '),
      ...(env.BENCH_SCALE_MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: env.BENCH_SCALE_MALLOC_ARENA_MAX } : {}),
      ...(env.BENCH_SCALE_MALLOC_MMAP_THRESHOLD ? { MALLOC_MMAP_THRESHOLD_: env.BENCH_SCALE_MALLOC_MMAP_THRESHOLD } : {}),
    },
  );
  const mem = new MemorySampler(svc.proc.pid!);
  let cpu = cpuMeter(kube, svc.proc.pid!);
  const logs = new LogTail(svc);
  const peak = (): number => Math.max(mem.hwm, mem.maxRss);
  try {
    // 1. initial sync
    const deadline = Date.now() + TIMEOUT_MS;
    let initial: ProductResult['initial'] | undefined;
    while (!initial) {
      logs.poll();
      const health = logs.first('emitter health part running');
      const inventory = logs.first('emitter inventory part running');
      const report = logs.first('the hub accepted the first inventory report');
      const operator = logs.first('operator controllers running');
      // with Ingresses, the prober starts once they are listed too
      const serving = endpoints ? logs.first('serving prober started') : 0;
      if (health !== undefined && inventory !== undefined && report !== undefined && serving !== undefined) {
        await mem.quiet(3000, 120_000);
        initial = {
          syncMs: Math.max(health, inventory, report, serving) - t0,
          ...(endpoints ? { servingMs: serving - t0 } : {}),
          emitterMs: Math.max(health, inventory) - t0,
          firstReportMs: report - t0,
          ...(operator !== undefined ? { operatorMs: operator - t0 } : {}),
          peakRss: peak(),
          restRss: mem.rss,
        };
      } else if (exited(svc) || Date.now() > deadline) {
        const why = exited(svc) ? `exited (${svc.proc.exitCode ?? svc.proc.signalCode})` : `not synced within ${secs(TIMEOUT_MS)}`;
        return { initial: { peakRss: peak(), error: `${why}: ${tail(svc).slice(0, 600)}` } };
      } else await sleep(200);
    }
    log(`initial sync: ${cpu()}; at rest: ${await heapLine(svc)}`);
    if (SNAPSHOT_DIR) await heapSnapshot(svc, SNAPSHOT_DIR, log);
    let probes: ProbeFigures | undefined;
    if (endpoints) {
      // the probes the loopback endpoint accepted in the window's whole seconds from the prober's start (the first
      // round, spread over the interval, is when most are due at once)
      const startedAt = logs.first('serving prober started')!;
      const from = Math.ceil((startedAt - target.startedAt) / 1000);
      await sleep(Math.max(0, target.startedAt + (from + 1) * 1000 + PROBE_WINDOW_MS - Date.now()));
      const seconds = Math.floor(PROBE_WINDOW_MS / 1000);
      const window = Array.from({ length: seconds }, (_, k) => target.perSecond[from + k] ?? 0);
      const connections = window.reduce((a, b) => a + b, 0);
      probes = {
        endpoints,
        startedMs: startedAt - t0,
        windowMs: seconds * 1000,
        connections,
        perSecond: connections / seconds,
        maxInOneSecond: Math.max(...window),
        peakRss: peak(),
      };
      log(
        `serving probes over ${seconds} s: ${connections} (${probes.perSecond.toFixed(1)}/s, at most ${probes.maxInOneSecond} in one second; documented rate ${DEFAULT_SERVING_PROBE_RATE}/s); handshakes so far ${target.handshakes} of ${target.connections} connections; peak RSS ${mib(probes.peakRss)}; ${await heapLine(svc)}`,
      );
    }
    if (env.BENCH_SCALE_RELIST === '0') return { initial, ...(probes ? { probes } : {}) };

    // 2. relist: restart the apiserver (etcd kept)
    const before = await scrape(svc);
    // the Gateway API is not installed here: its informer has nothing to relist and looks again on its own
    // schedule (serving/informers.ts GATEWAY_RECHECK_MS), not after a restart
    const noGateways = logs.seen.some((l) => l.informer === 'gateways' && l.msg.startsWith('Gateway API not installed'));
    const relisting = [...before.lists.keys()].filter((inf) => !(noGateways && inf === 'gateways'));
    mem.resetPeak();
    const tKill = Date.now();
    log(`product initial ${cell(initial)}; restarting the apiserver`);
    const profiled = APISERVER_PPROF ? apiserverProfile(kube, 90, APISERVER_PPROF, tKill + TIMEOUT_MS).then(log) : undefined;
    // at 100,000 Secrets, under load, the new apiserver's watch cache takes minutes to fill before /readyz
    let serving: number | undefined;
    try {
      serving = await servingAgainAt(kube, () => kube.restartApiServer({ readyTimeoutMs: TIMEOUT_MS }));
    } catch (e) {
      const error = `apiserver restart failed: ${(e as Error).message.split('\n')[0]}`;
      return { initial, ...(probes ? { probes } : {}), relist: { peakRss: peak(), apiserverRestartMs: Date.now() - tKill, error } };
    }
    // from the new apiserver's first answer (it serves lists before its /readyz says ready)
    const tReady = serving ?? Date.now();
    cpu = cpuMeter(kube, svc.proc.pid!);
    const apiserverRestartMs = tReady - tKill;
    const relistDeadline = Date.now() + TIMEOUT_MS;
    let listedAt: number | undefined;
    // when each informer's relist ended, from the new apiserver's first answer (printed: what the relist waited for)
    const relistedAt = new Map<string, number>();
    const timeline = (snapshotAt?: number): string =>
      [...relistedAt.entries(), ...(snapshotAt !== undefined ? [['snapshot applied', snapshotAt] as const] : [])]
        .sort((a, b) => a[1] - b[1])
        .map(([what, at]) => `${what} ${secs(at - tReady)}`)
        .join(', ');
    for (;;) {
      logs.poll();
      if (exited(svc))
        return {
          initial,
          ...(probes ? { probes } : {}),
          relist: { peakRss: peak(), apiserverRestartMs, error: `exited: ${tail(svc).slice(0, 600)}` },
        };
      if (Date.now() > relistDeadline)
        return {
          initial,
          ...(probes ? { probes } : {}),
          relist: { peakRss: peak(), apiserverRestartMs, error: `no complete relist within ${secs(TIMEOUT_MS)}` },
        };
      const now = await scrape(svc).catch(() => undefined);
      if (now) {
        // one more whole list by every informer (a streamed list is one page from the watch cache, or many from etcd)
        // the product's own log line when it has one (a busy product answers /metrics late), else this scrape
        for (const inf of relisting)
          if ((now.lists.get(inf) ?? 0) > (before.lists.get(inf) ?? 0) && !relistedAt.has(inf))
            relistedAt.set(
              inf,
              logs.seen.find((l) => l.informer === inf && l.at >= tKill && l.msg.startsWith('relisted by metadata'))?.at ?? Date.now(),
            );
        const relisted = relisting.length > 0 && relistedAt.size === relisting.length;
        if (relisted) listedAt ??= Date.now();
        // a relist reports its changes as deltas (none here); a snapshot, if one was started (the hub asked), is
        // done once its first report is applied
        const resync = logs.seen.some((s) => s.msg === 'inventory snapshot' && s.at >= tKill);
        const snapshotDone = resync && now.snapshotsApplied > before.snapshotsApplied;
        if (listedAt !== undefined && (snapshotDone || (!resync && Date.now() - listedAt > 2000))) {
          const syncMs = (snapshotDone ? Date.now() : listedAt) - tReady;
          await mem.quiet(3000, 120_000);
          log(`relist: ${cpu()} (from the new apiserver's first answer); at rest: ${await heapLine(svc)}`);
          log(`relist timeline (from the new apiserver's first answer): ${timeline(snapshotDone ? tReady + syncMs : undefined)}`);
          await profiled;
          return { initial, ...(probes ? { probes } : {}), relist: { syncMs, peakRss: peak(), apiserverRestartMs } };
        }
      }
      await sleep(250);
    }
  } finally {
    mem.stop();
    if (env.BENCH_SCALE_PRODUCT_LOG) writeFileSync(env.BENCH_SCALE_PRODUCT_LOG, svc.output());
    // a CPU profile is written at a normal exit
    await svc.kill(CPU_PROF_DIR ? 'SIGTERM' : 'SIGKILL');
    rmSync(dbDir, { recursive: true, force: true });
  }
}

const cell = (p: Phase | undefined): string =>
  !p
    ? '—'
    : p.error
      ? `**fails**: ${p.error.split('\n')[0]!.slice(0, 160)} (peak ${mib(p.peakRss)})`
      : `${secs(p.syncMs!)}, ${mib(p.peakRss)}`;

function printTables(rows: Row[]): void {
  console.log(
    '\n| N | product: initial sync, peak RSS | product after relist: sync, peak RSS | bare informer: sync, peak RSS | peak RSS product / bare |',
  );
  console.log('|---|---|---|---|---|');
  for (const r of rows) {
    const ratio = r.bare && !r.bare.error && !r.product.initial.error ? `${(r.product.initial.peakRss / r.bare.peakRss).toFixed(2)}×` : '—';
    console.log(`| ${r.n.toLocaleString('en')} | ${cell(r.product.initial)} | ${cell(r.product.relist)} | ${cell(r.bare)} | ${ratio} |`);
  }
  console.log(
    '\n| N | objects created | creation: objects/s (requests/s, retries) | product: operator synced | emitter synced | first inventory report | RSS at rest | apiserver down (kill → serving) | the apiserver alone after a restart: caches refilled |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const c = r.created;
    const i = r.product.initial;
    const t = (ms: number | undefined): string => (ms === undefined ? '—' : secs(ms));
    console.log(
      `| ${r.n.toLocaleString('en')} | ${c.objects.toLocaleString('en')} in ${secs(c.ms)} | ${Math.round(c.objects / (c.ms / 1000))} (${Math.round(c.requests / (c.ms / 1000))}, ${c.retries}) | ${t(i.operatorMs)} | ${t(i.emitterMs)} | ${t(i.firstReportMs)} | ${i.restRss ? mib(i.restRss) : '—'} | ${r.product.relist ? secs(r.product.relist.apiserverRestartMs) : '—'} | ${t(r.refillMs)} |`,
    );
  }
  if (rows.some((r) => r.product.probes)) {
    const interval = PROBE_INTERVAL ?? `${DEFAULT_SERVING_PROBE_INTERVAL_MS / 60_000}m (default)`;
    console.log(
      `\n| N | endpoints (Ingresses × 2) | prober started (from spawn) | probes over the window | probes/s (max in 1 s) | documented rate | peak RSS to the window's end |`,
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows) {
      const p = r.product.probes;
      if (!p) continue;
      console.log(
        `| ${r.n.toLocaleString('en')} | ${p.endpoints.toLocaleString('en')} | ${secs(p.startedMs)} | ${p.connections} in ${secs(p.windowMs)} | ${p.perSecond.toFixed(1)} (${p.maxInOneSecond}) | ${DEFAULT_SERVING_PROBE_RATE}/s at --serving-probe-interval ${interval} | ${mib(p.peakRss)} |`,
      );
    }
  }
  const goal = rows.find((r) => r.n >= GOAL.n);
  if (goal) {
    const check = (label: string, p: Phase | undefined): string => {
      if (!p || p.error || p.syncMs === undefined) return `${label}: NOT MET (${p?.error?.split('\n')[0] ?? 'not measured'})`;
      const ok = p.syncMs <= GOAL.syncMs && p.peakRss <= GOAL.rss;
      return `${label}: ${ok ? 'met' : 'NOT MET'} (sync ${secs(p.syncMs)} ≤ 60 s: ${p.syncMs <= GOAL.syncMs ? 'yes' : 'no'}, peak ${mib(p.peakRss)} ≤ 400 MiB: ${p.peakRss <= GOAL.rss ? 'yes' : 'no'})`;
    };
    console.log(
      `\ngoal at N = ${goal.n.toLocaleString('en')}: ${check('initial', goal.product.initial)}; ${check('after relist', goal.product.relist)}`,
    );
  }
}

export async function run(): Promise<void> {
  if (!SIZES.length) throw new Error('BENCH_SCALE_SIZES: no size');
  const t0 = Date.now();
  const cleanupBinary = await setupBinary();
  const log = (s: string): void => void process.stderr.write(`[scale ${secs(Date.now() - t0)}] ${s}\n`);
  const etcdDir = env.BENCH_SCALE_ETCD_DIR;
  const countFile = etcdDir ? join(etcdDir, 'scale-bench-objects') : undefined;
  if (etcdDir) mkdirSync(etcdDir, { recursive: true });
  const kube = await startScaleKube({
    quotaBytes: Number(env.BENCH_SCALE_ETCD_QUOTA_BYTES ?? 8 * 1024 ** 3),
    etcdOnTmpfs: env.BENCH_SCALE_ETCD_TMPFS !== '0',
    ...(etcdDir ? { etcdDataDir: etcdDir } : {}),
    profiling: APISERVER_PPROF !== undefined,
  });
  const writer = new ApiWriter(kube, CONCURRENCY);
  console.log(
    `product node flags: ${process.env['BENCH_SCALE_NODE_OPTIONS'] || '(Node defaults)'}; MALLOC_ARENA_MAX: ${env.BENCH_SCALE_MALLOC_ARENA_MAX || '(glibc default)'}; MALLOC_MMAP_THRESHOLD_: ${env.BENCH_SCALE_MALLOC_MMAP_THRESHOLD || '(glibc default)'}`,
  );
  const rows: Row[] = [];
  let target: ProbeTarget | undefined;
  let ingresses = 0;
  try {
    const kc = kube.kubeConfig();
    await installCrds(kc);
    await installCertManagerCrds(kc);
    await createScaffolding(writer, LAYOUT);
    log(`apiserver ${kube.server} ready; CRDs, ${LAYOUT.namespaces} namespaces and issuers created`);
    // a reused etcd holds the first `have` pairs already (grow is idempotent; shrinking is not supported), written
    // with its own material: read back, so every endpoint serves its Secret's certificate
    let have = countFile && existsSync(countFile) ? Number(readFileSync(countFile, 'utf8')) : 0;
    const material = have >= MATERIAL ? await readTlsMaterial(writer, LAYOUT, MATERIAL) : generateTlsMaterial(MATERIAL);
    target = await startProbeTarget(material);
    for (const n of SIZES) {
      if (n < have) throw new Error(`BENCH_SCALE_ETCD_DIR holds ${have} pairs, more than N = ${n}`);
      const created = await grow(writer, LAYOUT, material, have, n);
      have = n;
      if (countFile) writeFileSync(countFile, String(n));
      log(`N=${n}: created ${created.objects} objects in ${secs(created.ms)} (${Math.round(created.objects / (created.ms / 1000))}/s)`);
      // as in a cluster where cert-manager runs (its controller watches these); after the apiserver restart below
      // nothing is warmed: the product's relist pays for the refill (the measured relist includes it)
      const warmMs = await warmWatchCaches(kube, ['certificates', 'issuers']);
      log(`N=${n}: the apiserver's watch caches of cert-manager's resources filled in ${secs(warmMs)} (before the product starts)`);
      const wantIngresses = ingressesAt(n);
      if (wantIngresses > ingresses) {
        const made = await growIngresses(writer, LAYOUT, ingresses, wantIngresses, target.address);
        log(`N=${n}: ${made.objects} Ingresses (2 hosts each, probed at ${target.address}) written in ${secs(made.ms)}`);
        ingresses = wantIngresses;
      }
      const product = await runProduct(kube, (s) => log(`N=${n}: ${s}`), target, 2 * ingresses);
      log(`N=${n}: product initial ${cell(product.initial)}; after relist ${cell(product.relist)}`);
      const row: Row = { n, created, product };
      if (product.relist) {
        // the floor of every client's relist: the same restart with nobody listing, until each cache answers
        const servingAt = await servingAgainAt(kube, () => kube.restartApiServer({ readyTimeoutMs: TIMEOUT_MS }));
        const readyAt = Date.now();
        await warmWatchCaches(kube, ['certificates', 'issuers', 'secrets']);
        row.refillMs = Date.now() - (servingAt ?? readyAt);
        log(`N=${n}: the apiserver alone, restarted again: its caches answer ${secs(row.refillMs)} after its first answer`);
      }
      if (env.BENCH_SCALE_BARE !== '0') {
        row.bare = await runBareInformer(kube.kubeconfigPath, TIMEOUT_MS);
        log(`N=${n}: bare informer ${cell(row.bare)}`);
      }
      rows.push(row);
      printTables(rows);
    }
  } finally {
    await target?.close();
    await writer.close();
    await kube.stop();
    await cleanupBinary();
  }
  log('done');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
