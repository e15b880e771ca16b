/**
 * One tenant's store-heavy GraphQL against another tenant's latency (docs/security.md, "Store work per request"),
 * on SQLite (a file) and on PostgreSQL, against a `serve` process of the built bundle:
 *
 *   - company A (the attacker) holds BENCH_PLACES places (default 37,000) in 37 clusters; a few of them carry the
 *     application id the attack filters by, so a listing that does not read an index of it reads them all;
 *   - company B (the victim) holds 10 places and asks for its first page of certificates, one request at a time;
 *   - the attack: BENCH_ATTACKERS (default 4) connections of company A, each sending the 30-alias request
 *     `certificates(first: 10, filter: {applicationId: …})` again as soon as it is answered.
 *
 * It prints the victim's median and worst latency idle and under the attack side by side, their ratio (the target
 * is ≤ 3×), and what the attacker got (requests/s, the share not answered: 429 or the request deadline's 503). Not part of `npm run bench`
 * (about a minute per engine, most of it seeding):
 *
 *   node_modules/.bin/node --import tsx bench/store-attack.ts
 *   BENCH_ENGINES=sqlite,postgres BENCH_PLACES=37000 BENCH_ATTACKERS=4 BENCH_SAMPLES=300
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { openStore } from '../src/store/index.js';
import type { InventoryCertificateRecord, Store } from '../src/store/types.js';
import { startServiceProcess, type ServiceProcess } from '../test/e2e/service-process.js';
import { setupBinary } from '../test/support/binary.js';
import { testSecretKeyFile } from '../test/support/service.js';
import { benchPostgres } from './lib/pg.js';
import { limitsFile } from '../test/support/limits.js';

const num = (name: string, dflt: number): number => {
  const v = Number(process.env[name] ?? dflt);
  if (!Number.isFinite(v) || v < 1) throw new Error(`${name} must be a positive number`);
  return Math.floor(v);
};
const PLACES = num('BENCH_PLACES', 37_000);
const ATTACKERS = num('BENCH_ATTACKERS', 4);
const SAMPLES = num('BENCH_SAMPLES', 300);
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',').map((s) => s.trim()) as ('sqlite' | 'postgres')[];

const ATTACKER = '5c0a7e1e-0000-4000-8000-00000000a77a';
const VICTIM = '5c0a7e1e-0000-4000-8000-0000000000b0';
const ATTACKER_KEY = `bench-attacker-${randomUUID()}`;
const VICTIM_KEY = `bench-victim-${randomUUID()}`;
const PER_CLUSTER = 1000;
/** one place in RARE carries the attack's application id: A's listing by it has a handful of rows to find */
const RARE = 10_000;
const ALIASES = 30;

const ATTACK = `{ ${Array.from(
  { length: ALIASES },
  (_, i) => `a${i}: certificates(first: 10, filter: {applicationId: "rare-app"}) { nodes { clusterId namespace secretName notAfter } }`,
).join(' ')} }`;
const VICTIM_QUERY = '{ certificates(first: 10) { nodes { clusterId namespace secretName notAfter } } }';

function place(companyId: string, clusterId: string, i: number, now: number): InventoryCertificateRecord {
  return {
    companyId,
    clusterId,
    namespace: `ns-${i % 50}`,
    secretName: `tls-${i}`,
    certificateName: `cert-${i}`,
    certificateUid: randomUUID(),
    serial: i.toString(16).toUpperCase().padStart(16, '0'),
    notBefore: now - 30 * 86_400_000,
    notAfter: now + ((i * 7919) % 365) * 86_400_000,
    subject: `CN=svc-${i}.example.com`,
    commonName: `svc-${i}.example.com`,
    dnsNames: [`svc-${i}.example.com`],
    issuer: "CN=R11, O=Let's Encrypt, C=US",
    issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer', group: 'cert-manager.io' },
    readyStatus: 'True',
    readyReason: 'Ready',
    applicationIds: i % RARE === 0 ? ['rare-app', `app-${i % 40}`] : [`app-${i % 40}`],
    labels: { 'app.kubernetes.io/name': `svc-${i % 40}` },
    chainNotAfter: now + 400 * 86_400_000,
    ignored: false,
    expiryThresholds: null,
    runbookUrl: null,
    epoch: 'bench',
    updatedAt: now,
  };
}

async function seed(store: Store, companyId: string, places: number): Promise<void> {
  const now = Date.now();
  for (let from = 0; from < places; from += PER_CLUSTER) {
    const n = Math.min(PER_CLUSTER, places - from);
    const clusterId = randomUUID();
    await store.putCluster({
      companyId,
      id: clusterId,
      name: `cluster-${from / PER_CLUSTER}`,
      agentVersion: 'bench',
      epoch: 'bench',
      lastSeq: 1,
      snapshotComplete: true,
      firstSeenAt: now,
      lastSeenAt: now,
      certificateCount: n,
      silentSince: null,
    });
    await store.upsertInventory(
      companyId,
      clusterId,
      'bench',
      Array.from({ length: n }, (_, k) => place(companyId, clusterId, from + k, now)),
    );
  }
}

/**
 * The attacker: `connections` loops, each sending the next request as soon as the last is answered. Plain JS (a
 * worker evaluated from text needs no loader). 429 (the company's store share is full) and 503 (the request
 * deadline: the hub before its store share) count as refused.
 */
const ATTACKER_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, key, query, connections } = workerData;
let requests = 0, refused = 0;
const times = [];
parentPort.on('message', () => parentPort.postMessage({ requests, refused, times }));
for (let i = 0; i < connections; i++)
  (async () => {
    for (;;) {
      const t = performance.now();
      const res = await fetch(url + '/graphql', {
        method: 'POST',
        headers: { 'svc-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      });
      await res.arrayBuffer();
      times.push(performance.now() - t);
      requests++;
      if (res.status !== 200) refused++;
    }
  })();
`;

async function gql(url: string, key: string, query: string): Promise<number> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'svc-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const text = await res.text();
  if (res.status === 200 && text.includes('"errors"')) throw new Error(`graphql errors: ${text.slice(0, 300)}`);
  return res.status;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const worst = (xs: number[]) => Math.max(...xs);
const ms = (x: number) => `${x < 10 ? x.toFixed(2) : x.toFixed(0)} ms`;

/** The victim's samples, while a probe asks /healthz back to back: the latencies and the probe's worst gap. */
async function victimSamples(url: string): Promise<{ samples: number[]; healthzWorst: number }> {
  let running = true;
  let healthzWorst = 0;
  const probe = (async () => {
    let last = performance.now();
    while (running) {
      await fetch(`${url}/healthz`)
        .then((r) => r.arrayBuffer())
        .catch(() => undefined);
      const now = performance.now();
      healthzWorst = Math.max(healthzWorst, now - last);
      last = now;
    }
  })();
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t = performance.now();
    const status = await gql(url, VICTIM_KEY, VICTIM_QUERY);
    out.push(performance.now() - t);
    if (status !== 200) console.log(`victim answered ${status} after ${ms(out.at(-1)!)}`);
  }
  running = false;
  await probe;
  return { samples: out, healthzWorst };
}

interface Row {
  engine: string;
  idle: number[];
  attacked: number[];
  healthzIdle: number;
  healthzAttacked: number;
  attackRequests: number;
  refused: number;
  attackSeconds: number;
  attackMedian: number;
}

async function measure(engine: 'sqlite' | 'postgres', dir: string, pgUrl: string | undefined): Promise<Row> {
  let storeUrl: string;
  if (engine === 'sqlite') storeUrl = `sqlite:${join(dir, 'attack.db')}`;
  else {
    const u = new URL(pgUrl!);
    u.searchParams.set('schema', `bench_attack_${randomUUID().slice(0, 8)}`);
    storeUrl = u.toString();
  }
  const t0 = performance.now();
  const store = await openStore(storeUrl);
  await store.migrate();
  await seed(store, ATTACKER, PLACES);
  await seed(store, VICTIM, 10);
  await store.close();
  console.log(`${engine}: seeded ${PLACES.toLocaleString('en')} places in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const keysFile = join(dir, `keys-${engine}.yaml`);
  writeFileSync(
    keysFile,
    `keys:\n  - key: ${ATTACKER_KEY}\n    companyId: ${ATTACKER}\n  - key: ${VICTIM_KEY}\n    companyId: ${VICTIM}\n`,
    { mode: 0o600 },
  );
  let hub: ServiceProcess | undefined;
  try {
    hub = await startServiceProcess(
      [
        '--store',
        storeUrl,
        '--api-keys-file',
        keysFile,
        ...limitsFile({ maxCertificatesPerCompany: Math.max(2_000_000, PLACES), deliveryWorkers: 0 }),
        ...(engine === 'postgres' ? ['--secret-key-file', testSecretKeyFile()] : []),
      ],
      `bench-unused-${randomUUID()}`,
    );
    const url = hub.url;
    for (let i = 0; i < 20; i++) await gql(url, VICTIM_KEY, VICTIM_QUERY);
    for (let i = 0; i < 3; i++) await gql(url, ATTACKER_KEY, ATTACK);
    const { samples: idle, healthzWorst: healthzIdle } = await victimSamples(url);

    // the attacker's loops in a worker thread of their own: on the victim's event loop they would delay the
    // victim's own answers and count as the hub's latency
    const attacker = new Worker(ATTACKER_WORKER, {
      eval: true,
      workerData: { url, key: ATTACKER_KEY, query: ATTACK, connections: ATTACKERS },
    });
    const counts = () =>
      new Promise<{ requests: number; refused: number; times: number[] }>((resolve) => {
        attacker.once('message', resolve);
        attacker.postMessage('count');
      });
    await new Promise((r) => setTimeout(r, 1000)); // the attack in full swing first
    const before = await counts();
    const started = performance.now();
    const { samples: attacked, healthzWorst: healthzAttacked } = await victimSamples(url);
    const attackSeconds = (performance.now() - started) / 1000;
    const after = await counts();
    await attacker.terminate();
    return {
      engine,
      idle,
      attacked,
      healthzIdle,
      healthzAttacked,
      attackRequests: after.requests - before.requests,
      refused: after.refused - before.refused,
      attackSeconds,
      attackMedian: median(after.times),
    };
  } finally {
    await hub?.kill('SIGTERM');
  }
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cmn-attack-'));
  const teardownBinary = await setupBinary();
  const pgServer = ENGINES.includes('postgres') ? await benchPostgres() : undefined;
  const rows: Row[] = [];
  try {
    for (const engine of ENGINES) rows.push(await measure(engine, dir, pgServer?.url));
  } finally {
    await pgServer?.stop();
    await teardownBinary();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `\nvictim: ${VICTIM_QUERY.replace(/\s+/g, ' ')} (${SAMPLES} sequential requests); attack: ${ATTACKERS} connections of ${ALIASES}-alias certificates(first: 10, filter: {applicationId}) over ${PLACES.toLocaleString('en')} places`,
  );
  console.log(
    `${'engine'.padEnd(9)}${'idle median'.padStart(13)}${'attacked median'.padStart(17)}${'ratio'.padStart(10)}${'idle worst'.padStart(12)}${'attacked worst'.padStart(16)}${'attack req/s'.padStart(14)}${'attack median'.padStart(15)}${'refused'.padStart(9)}${'/healthz worst idle'.padStart(21)}${'attacked'.padStart(10)}`,
  );
  for (const r of rows) {
    const ratio = median(r.attacked) / median(r.idle);
    console.log(
      `${r.engine.padEnd(9)}${ms(median(r.idle)).padStart(13)}${ms(median(r.attacked)).padStart(17)}${`${ratio.toFixed(2)}×`.padStart(10)}${ms(worst(r.idle)).padStart(12)}${ms(worst(r.attacked)).padStart(16)}${(r.attackRequests / r.attackSeconds).toFixed(0).padStart(14)}${ms(r.attackMedian).padStart(15)}${`${((100 * r.refused) / Math.max(1, r.attackRequests)).toFixed(0)}%`.padStart(9)}${ms(r.healthzIdle).padStart(21)}${ms(r.healthzAttacked).padStart(10)}`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) await run();
