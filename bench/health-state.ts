/**
 * The emitter's health state under an issuer outage (issue 10): N Certificates go not-ready at once and their
 * episodes are recorded, against a REAL kube-apiserver v1.20.2 + etcd (test/support/kube.ts; a fresh one per
 * row, etcd on /dev/shm), the way the health controller writes them (8 workers, each waiting for its write):
 *
 * - old: one ConfigMap, one merge patch per key, 8 concurrent writers (the layout before sharding);
 * - new: the emitter's health store (128 shards, or BENCH_SHARDS), one writer per shard coalescing key changes
 *   into one patch (src/emitter/state.ts), with BENCH_WORKERS waiting writers (default 8, the controller's
 *   default concurrency, and 512), and with every episode set at once.
 *
 * Per row: wall time, PATCH requests (the apiserver's count), etcd write attempts for ConfigMaps (the apiserver's
 * etcd update latency count, which counts every optimistic-concurrency retry), bytes of the largest ConfigMap and
 * of all, and the etcd db size at the end. The old path stops after BENCH_OLD_LIMIT_MS.
 *
 *   node --import tsx bench/health-state.ts
 *   BENCH_EPISODES=10000 BENCH_OLD_EPISODES=600,10000 BENCH_OLD_LIMIT_MS=180000 node --import tsx bench/health-state.ts
 */
import { request } from 'node:https';
import { pathToFileURL } from 'node:url';
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { pino } from 'pino';
import { HEALTH_STATE_SHARDS, emitterStates } from '../src/emitter/states.js';
import { isConflict, isNotFound, kubeErrorCode } from '../src/kube/errors.js';
import { notReadyCertificate } from '../test/emitter/health-states.js';
import { ensureKubeBinaries, ensureNamespace, startKubeEnv, type KubeEnv } from '../test/support/kube.js';

const NS = 'certmgr-notify';
const log = pino({ level: 'silent' });
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const MiB = 1024 * 1024;
const num = (s: string | undefined, d: number): number => (s ? Number(s) : d);
const list = (s: string | undefined, d: number[]): number[] => (s ? s.split(',').map(Number) : d);

/** The apiserver's /metrics, as text. */
function metrics(env: KubeEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${env.server}/metrics`,
      { headers: { Authorization: `Bearer ${env.token}` }, rejectUnauthorized: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Sum of the samples of `name` whose labels include every `labels` pair. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{')) continue;
    const end = line.lastIndexOf('}');
    const ls = line.slice(name.length + 1, end);
    if (Object.entries(labels).every(([k, v]) => ls.includes(`${k}="${v}"`))) sum += Number(line.slice(end + 1).trim());
  }
  return sum;
}

interface Counters {
  patches: number;
  etcdUpdates: number;
}

async function counters(env: KubeEnv): Promise<Counters> {
  const m = await metrics(env);
  return {
    patches: sample(m, 'apiserver_request_total', { verb: 'PATCH', resource: 'configmaps' }),
    // one per etcd transaction of a write, retries after a conflict included
    etcdUpdates: sample(m, 'etcd_request_duration_seconds_count', { operation: 'update', type: '*core.ConfigMap' }),
  };
}

async function etcdDbSize(env: KubeEnv): Promise<number> {
  const r = await fetch(`${env.etcdEndpoint}/v3/maintenance/status`, { method: 'POST', body: '{}' });
  return Number(((await r.json()) as { dbSize?: string }).dbSize ?? NaN);
}

interface Row {
  path: string;
  episodes: number;
  recorded: number;
  ms: number;
  patches: number;
  etcdUpdates: number;
  maxCmBytes: number;
  totalBytes: number;
  configMaps: number;
  dbMiB: number;
  failures: number;
}

/** Runs `fn` against a fresh apiserver + etcd and measures it. */
async function measure(
  path: string,
  episodes: number,
  fn: (core: CoreV1Api) => Promise<{ recorded: number; failures: number }>,
): Promise<Row> {
  const env = await startKubeEnv();
  try {
    const kc = env.kubeConfig();
    await ensureNamespace(kc, NS);
    const core = kc.makeApiClient(CoreV1Api);
    const before = await counters(env);
    const t0 = performance.now();
    const { recorded, failures } = await fn(core);
    const ms = performance.now() - t0;
    const after = await counters(env);
    const cms = (await core.listNamespacedConfigMap({ namespace: NS })).items;
    const bytes = cms.map((cm) => Object.entries(cm.data ?? {}).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0));
    return {
      path,
      episodes,
      recorded,
      ms,
      patches: after.patches - before.patches,
      etcdUpdates: after.etcdUpdates - before.etcdUpdates,
      maxCmBytes: Math.max(0, ...bytes),
      totalBytes: bytes.reduce((a, b) => a + b, 0),
      configMaps: cms.length,
      dbMiB: (await etcdDbSize(env)) / MiB,
      failures,
    };
  } finally {
    await env.stop();
  }
}

/** `workers` loops, each taking the next episode and waiting for its write (the controller's shape). */
async function pool(
  n: number,
  workers: number,
  write: (i: number) => Promise<void>,
  deadline = Infinity,
): Promise<{ recorded: number; failures: number }> {
  let next = 0;
  let recorded = 0;
  let failures = 0;
  const worker = async (): Promise<void> => {
    while (next < n && performance.now() < deadline) {
      const i = next++;
      // the controller retries a failed write (workqueue backoff); here: at once, at most 5 times
      for (let attempt = 0; ; attempt++) {
        try {
          await write(i);
          recorded++;
          break;
        } catch (e) {
          failures++;
          if (attempt >= 4) {
            if (failures <= 3) console.log(`   write ${i} failed: HTTP ${kubeErrorCode(e) ?? '?'} ${String(e).slice(0, 160)}`);
            break;
          }
        }
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return { recorded, failures };
}

/** Before sharding: a merge patch of one key of the one ConfigMap (created on 404). */
async function oldWrite(core: CoreV1Api, name: string, key: string, value: string): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await core.patchNamespacedConfigMap({ namespace: NS, name, body: { data: { [key]: value } } }, mergePatch);
      return;
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    try {
      await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name, namespace: NS }, data: { [key]: value } } });
      return;
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
  throw new Error('could not write');
}

const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

export async function run(): Promise<void> {
  const episodes = num(process.env['BENCH_EPISODES'], 10_000);
  const oldCounts = list(process.env['BENCH_OLD_EPISODES'], [600, episodes]);
  const oldLimitMs = num(process.env['BENCH_OLD_LIMIT_MS'], 180_000);
  const workerCounts = list(process.env['BENCH_WORKERS'], [8, 512]);
  const shards = num(process.env['BENCH_SHARDS'], HEALTH_STATE_SHARDS);
  await ensureKubeBinaries();
  const all = Array.from({ length: Math.max(episodes, ...oldCounts) }, (_, i) => notReadyCertificate(i));
  const rows: Row[] = [];
  const show = (r: Row): void => {
    rows.push(r);
    console.log(
      `${r.path.padEnd(34)} ${fmt(r.recorded).padStart(6)}/${fmt(r.episodes).padEnd(6)} ${fmt(r.ms / 1000, 1).padStart(7)} s ` +
        `${fmt(r.patches).padStart(7)} PATCH ${fmt(r.etcdUpdates).padStart(8)} etcd upd ` +
        `max CM ${fmt(r.maxCmBytes / 1024).padStart(5)} KiB (${r.configMaps} CMs, ${fmt(r.totalBytes / 1024)} KiB) ` +
        `etcd db ${fmt(r.dbMiB, 1)} MiB${r.failures ? `, ${fmt(r.failures)} failed writes` : ''}`,
    );
  };

  for (const n of oldCounts.filter((c) => c > 0)) {
    show(
      await measure(`old: 1 ConfigMap, patch/key, 8 w`, n, (core) =>
        pool(
          n,
          8,
          (i) => oldWrite(core, 'em-health', all[i]!.key.replace(/\//g, '_'), JSON.stringify({ key: all[i]!.key, value: all[i]!.state })),
          performance.now() + oldLimitMs,
        ),
      ),
    );
  }
  for (const w of workerCounts) {
    show(
      await measure(`new: ${shards} shards, batched, ${w} w`, episodes, async (core) => {
        const { health } = emitterStates({ core, namespace: NS, name: 'em', log, healthShards: shards });
        await health.load();
        return pool(episodes, w, (i) => health.set(all[i]!.key, all[i]!.state));
      }),
    );
  }
  show(
    await measure(`new: ${shards} shards, batched, all at once`, episodes, async (core) => {
      const { health } = emitterStates({ core, namespace: NS, name: 'em', log, healthShards: shards });
      await health.load();
      const r = await Promise.allSettled(all.slice(0, episodes).map((e) => health.set(e.key, e.state)));
      return { recorded: r.filter((x) => x.status === 'fulfilled').length, failures: r.filter((x) => x.status === 'rejected').length };
    }),
  );
  console.log('\nper recorded episode:');
  for (const r of rows)
    console.log(
      `${r.path.padEnd(34)} ${fmt(r.ms / Math.max(1, r.recorded), 2).padStart(7)} ms  ${fmt(r.patches / Math.max(1, r.recorded), 3)} PATCH  ${fmt(r.etcdUpdates / Math.max(1, r.patches), 2)} etcd upd/PATCH`,
    );
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) await run();
