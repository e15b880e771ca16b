/**
 * Issue 10's scale target, simulated on one machine: BENCH_AGENTS agents (default 1,000) of BENCH_CERTS
 * certificates each (1,000) reporting through the real client (src/client/inventory.ts) to ONE hub, a real
 * `serve` process of the built bundle on a throwaway PostgreSQL, so the RSS read from /proc is the hub's own.
 *
 *   1. every agent sends its full snapshot → time to ingest all first reports, rows/s;
 *   2. steady deltas (BENCH_DELTA_CERTS changed certificates each, default 10) for BENCH_DELTA_SECONDS → deltas/s;
 *   3. the hub's own expiry scan round (its metric) over the inventory, BENCH_DUE (1%) of it due within 30 days.
 *
 * Baselines in the same run: the same report bodies POSTed by the same client to a loopback server that only
 * reads them (the HTTP + JSON share), and a bare multi-row INSERT of the same rows into a plain table (no key,
 * no index) with as many connections as the hub's pool. Not part of `npm run bench` (10+ minutes at full size):
 *
 *   node_modules/.bin/node --import tsx bench/inventory-scale.ts
 *   BENCH_AGENTS=1000 BENCH_CERTS=1000 BENCH_CONCURRENCY=24 BENCH_DELTA_SECONDS=60 BENCH_SCAN_INTERVAL_MS=60000
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { InventoryClient } from '../src/client/inventory.js';
import { DAY_MS } from '../src/expiry/decide.js';
import { MAX_INVENTORY_ITEMS_PER_REPORT, type CertificateFacts, type InventoryReport } from '../src/model/inventory.js';
import { startServiceProcess, type ServiceProcess } from '../test/e2e/service-process.js';
import { setupBinary } from '../test/support/binary.js';
import { testSecretKeyFile } from '../test/support/service.js';
import { bareDueSelect, benchPostgres, mb, multiRowInsert, scanPagePlan, secs } from './lib/pg.js';
import { CERT_COLUMNS } from '../src/store/inventory-repo.js';
import { limitsFile } from '../test/support/limits.js';

const num = (name: string, dflt: number): number => {
  const v = Number(process.env[name] ?? dflt);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number`);
  return v;
};
const AGENTS = num('BENCH_AGENTS', 1000);
const CERTS = num('BENCH_CERTS', 1000);
const CONCURRENCY = Math.max(1, num('BENCH_CONCURRENCY', 24));
const DELTA_SECONDS = num('BENCH_DELTA_SECONDS', 60);
const DELTA_CERTS = Math.max(1, num('BENCH_DELTA_CERTS', 10));
const DUE = num('BENCH_DUE', 0.01);
const SCAN_INTERVAL_MS = num('BENCH_SCAN_INTERVAL_MS', 60_000);
/** the hub's pg pool (node-postgres' default): the bare INSERT gets as many connections */
const HUB_POOL = 10;
/** rows per bare INSERT statement: what the hub's store writes per statement (src/store/inventory-repo.ts) */
const INSERT_ROWS = 500;

const COMPANY = '5c0a7e1e-0000-4000-8000-00000000beef';
const AGENT_KEY = `bench-agent-${randomUUID()}`;
const ADMIN_KEY = `bench-admin-${randomUUID()}`;
const AGENT_VERSION = 'bench-0';
const ISSUERS = ["CN=R11, O=Let's Encrypt, C=US", 'CN=Example Internal Issuing CA G2, OU=Platform, O=Example Corp, C=DE'];
const EXPIRY_HORIZON_DAYS = 30; // the default monitoring configuration's largest threshold

const hex = (n: number, w: number) => n.toString(16).toUpperCase().padStart(w, '0');
const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
const rate = (n: number, ms: number) => Math.round((n * 1000) / ms).toLocaleString('en');
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))]! : 0;
};

interface Agent {
  index: number;
  id: string;
  name: string;
  epoch: string;
  seq: number;
  /** next certificate a delta renews */
  cursor: number;
  renewals: number;
}

/** Is certificate `i` of agent `a` one of the BENCH_DUE share expiring within 30 days? */
const isDue = (a: number, i: number) => DUE > 0 && (a * CERTS + i) % Math.max(1, Math.round(1 / DUE)) === 0;

/**
 * Certificate `i` of agent `a`, as an agent reports it (~0.8 KB of JSON). `renewal` > 0: renewed that many times
 * (new serial, notAfter 90 days out: never due).
 */
function facts(a: number, i: number, now: number, renewal = 0): CertificateFacts {
  const g = a * CERTS + i;
  const ns = `team-${(a * 7 + i) % 40}-${['prod', 'staging', 'dev'][i % 3]}`;
  const host = `svc-${i}.${ns}.example.com`;
  const notAfter =
    renewal > 0
      ? now + 90 * DAY_MS + renewal * 60_000
      : isDue(a, i)
        ? now + (1 + (g % ((EXPIRY_HORIZON_DAYS - 1) * 24))) * 3_600_000
        : now + (EXPIRY_HORIZON_DAYS + 1 + (g % 370)) * DAY_MS + (g % 86_400) * 1000;
  return {
    namespace: ns,
    secretName: `svc-${i}-tls`,
    certificateName: `svc-${i}`,
    certificateUid: `${hex(a, 8)}-${hex(i % 65536, 4)}-4${hex(renewal % 4096, 3)}-8000-${hex(g, 12)}`.toLowerCase(),
    serial: `${hex(a, 8)}${hex(i, 8)}${hex(renewal, 8)}7F3A9C21`,
    notBefore: iso(notAfter - 90 * DAY_MS),
    notAfter: iso(notAfter),
    subject: `CN=${host}, O=Example Corp`,
    commonName: host,
    dnsNames: i % 4 === 0 ? [host, `svc-${i}.${ns}.svc.cluster.local`, `*.svc-${i}.example.com`] : [host, `svc-${i}.${ns}.svc`],
    issuer: ISSUERS[g % 2]!,
    issuerRef: { name: g % 2 ? 'internal-ca' : 'letsencrypt-prod', kind: 'ClusterIssuer', group: 'cert-manager.io' },
    ready: { status: 'True', reason: 'Ready' },
    applicationIds: i % 3 === 0 ? [`app-${i % 50}`] : [],
    labels: { 'app.kubernetes.io/name': `svc-${i}`, 'app.kubernetes.io/part-of': ns, 'app.kubernetes.io/managed-by': 'Helm' },
    chainNotAfter: iso(Math.min(notAfter, now + 400 * DAY_MS)),
  };
}

/** The agent's full snapshot: reports of at most 1,000 items, the last one final. */
function snapshotReports(agent: Agent, now: number): InventoryReport[] {
  const out: InventoryReport[] = [];
  for (let from = 0; from < CERTS || out.length === 0; from += MAX_INVENTORY_ITEMS_PER_REPORT) {
    const to = Math.min(CERTS, from + MAX_INVENTORY_ITEMS_PER_REPORT);
    const upserts: CertificateFacts[] = [];
    for (let i = from; i < to; i++) upserts.push(facts(agent.index, i, now));
    out.push({
      protocol: 1,
      cluster: { id: agent.id, name: agent.name },
      agentVersion: AGENT_VERSION,
      epoch: agent.epoch,
      seq: ++agent.seq,
      kind: 'snapshot',
      final: to >= CERTS,
      upserts,
      deletes: [],
    });
  }
  return out;
}

/** The agent's next delta: DELTA_CERTS renewed certificates (never one of the due ones: the due share stays). */
function deltaReport(agent: Agent, now: number): InventoryReport {
  const upserts: CertificateFacts[] = [];
  agent.renewals++;
  while (upserts.length < Math.min(DELTA_CERTS, CERTS)) {
    const i = agent.cursor++ % CERTS;
    if (!isDue(agent.index, i)) upserts.push(facts(agent.index, i, now, agent.renewals));
    if (agent.cursor > CERTS * 4 && upserts.length === 0) break; // every certificate due: nothing to renew
  }
  return {
    protocol: 1,
    cluster: { id: agent.id, name: agent.name },
    agentVersion: AGENT_VERSION,
    epoch: agent.epoch,
    seq: ++agent.seq,
    kind: 'delta',
    upserts,
    deletes: [],
  };
}

interface SendStats {
  reports: number;
  items: number;
  retries: number;
  latencies: number[];
}
const newStats = (): SendStats => ({ reports: 0, items: 0, retries: 0, latencies: [] });

/** Sends one report until it is applied (or a duplicate: a timed-out try was applied), as the agent's reporter does. */
async function send(client: InventoryClient, report: InventoryReport, stats: SendStats): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const t = performance.now();
    const out = await client.post(report);
    if (out.kind === 'applied' || out.kind === 'duplicate') {
      stats.latencies.push(performance.now() - t);
      stats.reports++;
      stats.items += report.upserts.length + report.deletes.length;
      return;
    }
    if (out.kind !== 'retry' || attempt >= 30)
      throw new Error(`${report.cluster.name} ${report.kind} seq ${report.seq}: ${JSON.stringify(out).slice(0, 500)}`);
    stats.retries++;
    await new Promise((r) => setTimeout(r, Math.min(out.retryAfterMs ?? 500 * (attempt + 1), 5000)));
  }
}

/** `count` tasks over `workers` workers (or until `until` when given: then tasks cycle). */
async function inFlight(count: number, task: (n: number) => Promise<void>, until?: number, workers = CONCURRENCY): Promise<number> {
  let next = 0;
  const worker = async () => {
    for (;;) {
      if (until !== undefined ? performance.now() >= until : next >= count) return;
      await task(next++);
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return next;
}

/** VmRSS / VmHWM of a process, bytes. */
function procMemory(pid: number): { rss: number; hwm: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** A loopback server that reads each body and answers as the hub would: the bare POST baseline. */
async function bareServer(): Promise<{ server: Server; url: string; bytes: () => number }> {
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (d: Buffer) => (bytes += d.length));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"applied"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bytes: () => bytes };
}

/** The hub's expiry scan rounds, read from its /metrics. */
async function scanMetric(url: string): Promise<{ endedAt: number; seconds: number } | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const v = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  const endedAt = v('certmgr_notify_expiry_last_scan_timestamp_seconds') * 1000;
  const seconds = v('certmgr_notify_expiry_last_scan_duration_seconds');
  return Number.isFinite(endedAt) && endedAt > 0 ? { endedAt, seconds } : undefined;
}

/** The columns of a store row, for the bare INSERT of the same rows. */
const ROW_COLUMNS = CERT_COLUMNS;
const ms = (t: string | null) => (t === null ? null : Date.parse(t));
const rowOf = (agent: Agent, f: CertificateFacts, now: number): unknown[] => [
  COMPANY,
  agent.id,
  f.namespace,
  f.secretName,
  f.certificateName ?? null,
  f.certificateUid ?? null,
  f.serial,
  ms(f.notBefore),
  ms(f.notAfter),
  f.subject,
  f.commonName ?? null,
  JSON.stringify(f.dnsNames),
  f.issuer,
  f.issuerRef ? JSON.stringify(f.issuerRef) : null,
  f.ready?.status ?? null,
  f.ready?.reason ?? null,
  JSON.stringify(f.applicationIds),
  JSON.stringify(f.labels),
  ms(f.chainNotAfter),
  agent.epoch,
  now,
];

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cmn-scale-'));
  const keysFile = join(dir, 'keys.yaml');
  writeFileSync(keysFile, `keys:\n  - key: ${AGENT_KEY}\n    companyId: ${COMPANY}\n    scope: agent\n`, { mode: 0o600 });
  const schema = `bench_scale_${randomUUID().slice(0, 8)}`;
  const bareSchema = `${schema}_bare`;
  const teardownBinary = await setupBinary();
  const pgServer = await benchPostgres();
  const storeUrl = new URL(pgServer.url);
  storeUrl.searchParams.set('schema', schema);
  let hub: ServiceProcess | undefined;
  let bare: Awaited<ReturnType<typeof bareServer>> | undefined;
  const db = new pg.Client({ connectionString: pgServer.url });
  let sampler: NodeJS.Timeout | undefined;
  let scraper: NodeJS.Timeout | undefined;
  try {
    hub = await startServiceProcess(
      [
        '--store',
        storeUrl.toString(),
        '--secret-key-file',
        testSecretKeyFile(),
        '--api-keys-file',
        keysFile,
        ...limitsFile({
          expiryScanInterval: `${SCAN_INTERVAL_MS}ms`,
          maxClustersPerCompany: Math.max(1000, AGENTS),
          maxCertificatesPerCompany: Math.max(2_000_000, 2 * AGENTS * CERTS),
        }),
      ],
      ADMIN_KEY,
    );
    const pid = hub.proc.pid!;
    const hubUrl = hub.url;
    await db.connect();
    await db.query(`SET search_path TO "${schema}"`);

    // hub RSS, sampled through the whole run; `peak` is reset at each phase
    const idle = procMemory(pid);
    let peak = idle.rss;
    sampler = setInterval(() => {
      try {
        peak = Math.max(peak, procMemory(pid).rss);
      } catch {
        // the hub exited: the phase's request fails and says so
      }
    }, 200);
    const phasePeak = () => {
      const p = Math.max(peak, procMemory(pid).rss);
      peak = procMemory(pid).rss;
      return p;
    };
    // the hub's scan rounds (its own timer), labelled by the phase they ended in
    let phase = 'start';
    const rounds: { phase: string; startedAt: number; endedAt: number; seconds: number }[] = [];
    const scrape = async () => {
      const m = await scanMetric(hubUrl).catch(() => undefined);
      if (m && rounds.at(-1)?.endedAt !== m.endedAt) rounds.push({ phase, startedAt: m.endedAt - m.seconds * 1000, ...m });
    };
    scraper = setInterval(() => void scrape(), 1000);

    const now = Date.now();
    const agents: Agent[] = Array.from({ length: AGENTS }, (_, index) => ({
      index,
      id: randomUUID(),
      name: `bench-cluster-${index}`,
      epoch: randomUUID(),
      seq: 0,
      cursor: 0,
      renewals: 0,
    }));
    const reportBytes = Buffer.byteLength(JSON.stringify(snapshotReports({ ...agents[0]!, seq: 0 }, now)[0]));
    console.log(
      `${AGENTS.toLocaleString('en')} agents × ${CERTS.toLocaleString('en')} certificates (${(AGENTS * CERTS).toLocaleString('en')}), ` +
        `${CONCURRENCY} reports in flight, one hub (pid ${pid}, built bundle) on PostgreSQL; ` +
        `a ${Math.min(CERTS, MAX_INVENTORY_ITEMS_PER_REPORT)}-item report is ${(reportBytes / 1024).toFixed(0)} KiB`,
    );

    // --- baseline: the same bodies, same client and concurrency, to a server that only reads them
    bare = await bareServer();
    const bareClient = new InventoryClient({ url: bare.url, apiKey: AGENT_KEY });
    const bareSnap = newStats();
    phase = 'bare POST';
    let t = performance.now();
    await inFlight(AGENTS, async (a) => {
      for (const r of snapshotReports({ ...agents[a]!, seq: 0 }, now)) await send(bareClient, r, bareSnap);
    });
    const bareSnapMs = performance.now() - t;
    const bareSnapBytes = bare.bytes();

    // --- baselines: bare multi-row INSERTs of the same rows, as many connections as the hub's pool, into a
    // plain table of the same columns, then into one with the hub's key and indexes (their share of the cost)
    await db.query(`CREATE SCHEMA "${bareSchema}"`);
    const bareInsert = async (table: string, like: string): Promise<number> => {
      await db.query(`CREATE TABLE "${bareSchema}".${table} (LIKE "${schema}".inventory_certificates ${like})`);
      const pool = new pg.Pool({ connectionString: pgServer.url, max: Math.min(CONCURRENCY, HUB_POOL) });
      const t0 = performance.now();
      try {
        await inFlight(AGENTS, async (a) => {
          const agent = agents[a]!;
          for (let from = 0; from < CERTS; from += INSERT_ROWS) {
            const rows: unknown[][] = [];
            for (let i = from; i < Math.min(CERTS, from + INSERT_ROWS); i++) rows.push(rowOf(agent, facts(a, i, now), now));
            await multiRowInsert(pool, `"${bareSchema}".${table}`, ROW_COLUMNS, rows);
          }
        });
        return performance.now() - t0;
      } finally {
        await pool.end();
        await db.query(`DROP TABLE "${bareSchema}".${table}`);
      }
    };
    phase = 'bare INSERT';
    const bareInsertMs = await bareInsert('plain', '');
    const bareIndexedMs = await bareInsert('indexed', 'INCLUDING INDEXES');
    await db.query(`DROP SCHEMA "${bareSchema}" CASCADE`);
    const peakBaselines = phasePeak();

    // --- phase 1: every agent's full snapshot, through the real client, to the hub
    const client = new InventoryClient({ url: hubUrl, apiKey: AGENT_KEY });
    const snap = newStats();
    phase = 'snapshots';
    t = performance.now();
    await inFlight(AGENTS, async (a) => {
      for (const r of snapshotReports(agents[a]!, now)) await send(client, r, snap);
    });
    const snapMs = performance.now() - t;
    const peakSnap = phasePeak();
    const stored = await db.query<{ rows: string; clusters: string }>(
      `SELECT (SELECT count(*) FROM inventory_certificates) AS rows, (SELECT count(*) FROM clusters WHERE snapshot_complete) AS clusters`,
    );
    const storedRows = Number(stored.rows[0]?.rows);
    if (storedRows !== AGENTS * CERTS || Number(stored.rows[0]?.clusters) !== AGENTS)
      throw new Error(`after the snapshots the hub holds ${storedRows} rows in ${stored.rows[0]?.clusters} clusters`);

    // --- phase 2: steady deltas for DELTA_SECONDS; agents take turns (one report of an agent in flight at a time)
    const delta = newStats();
    phase = 'deltas';
    t = performance.now();
    const busy = new Set<number>();
    let turn = 0;
    await inFlight(
      0,
      async () => {
        while (busy.has(turn % AGENTS)) turn++;
        const a = turn++ % AGENTS;
        busy.add(a);
        try {
          await send(client, deltaReport(agents[a]!, Date.now()), delta);
        } finally {
          busy.delete(a);
        }
      },
      t + DELTA_SECONDS * 1000,
      Math.min(CONCURRENCY, AGENTS),
    );
    const deltaMs = performance.now() - t;
    const deltaEnd = Date.now();
    const peakDelta = phasePeak();

    // the same delta bodies to the bare server
    const bareDelta = newStats();
    const copies = agents.map((a) => ({ ...a, seq: 0, cursor: 0, renewals: 0 }));
    t = performance.now();
    await inFlight(delta.reports, async (n) => send(bareClient, deltaReport(copies[n % AGENTS]!, Date.now()), bareDelta));
    const bareDeltaMs = performance.now() - t;

    // --- phase 3: the hub's own scan round that started after the deltas (its timer: up to one interval away)
    phase = 'scan';
    const waitUntil = Date.now() + SCAN_INTERVAL_MS + 600_000;
    while (!rounds.some((r) => r.startedAt >= deltaEnd) && Date.now() < waitUntil) await new Promise((r) => setTimeout(r, 500));
    const quiet = rounds.find((r) => r.startedAt >= deltaEnd);
    const peakScan = phasePeak();
    await db.query('ANALYZE inventory_certificates');
    const horizon = Date.now() + EXPIRY_HORIZON_DAYS * DAY_MS;
    const bareSel = await bareDueSelect(db, COMPANY, horizon);
    const plan = await scanPagePlan(db, COMPANY, horizon, 1000);
    const events = await db.query<{ n: string }>('SELECT count(*) AS n FROM events');
    const end = procMemory(pid);

    const p = (s: SendStats) => `${secs(pct(s.latencies, 50))} / ${secs(pct(s.latencies, 99))}`;
    console.log('\n| step | reports | certificates | time | reports/s | certificates/s | p50 / p99 per report | retries | hub RSS peak |');
    console.log('|:--|--:|--:|--:|--:|--:|--:|--:|--:|');
    const row = (name: string, s: SendStats, tms: number, rss?: number) =>
      console.log(
        `| ${name} | ${s.reports.toLocaleString('en')} | ${s.items.toLocaleString('en')} | ${secs(tms)} | ${rate(s.reports, tms)} | ${rate(s.items, tms)} | ${p(s)} | ${s.retries} | ${rss !== undefined ? mb(rss) : ''} |`,
      );
    row(`bare POST loop, snapshot bodies (${(bareSnapBytes / 1048576).toFixed(0)} MiB)`, bareSnap, bareSnapMs);
    const insertRow = (what: string, tms: number, rss = '') =>
      console.log(
        `| bare multi-row INSERT, ${what} (${INSERT_ROWS} rows/statement, ${Math.min(CONCURRENCY, HUB_POOL)} connections) | | ${(AGENTS * CERTS).toLocaleString('en')} | ${secs(tms)} | | ${rate(AGENTS * CERTS, tms)} | | | ${rss} |`,
      );
    insertRow('plain table', bareInsertMs, `${mb(peakBaselines)} (idle)`);
    insertRow("table with the hub's key and indexes", bareIndexedMs);
    row('**hub: first full snapshots**', snap, snapMs, peakSnap);
    row('bare POST loop, delta bodies', bareDelta, bareDeltaMs);
    row(`**hub: steady deltas of ${DELTA_CERTS}** (${DELTA_SECONDS} s)`, delta, deltaMs, peakDelta);
    console.log(
      `| bare SELECT … WHERE company_id = ? AND not_after <= ? (due rows) | | ${bareSel.rows.toLocaleString('en')} | ${secs(bareSel.ms)} | | | | | |`,
    );
    console.log(
      `| **hub: expiry scan round after the deltas** (its metric) | | ${(AGENTS * CERTS).toLocaleString('en')} in store | ${quiet ? secs(quiet.seconds * 1000) : 'not seen (!)'} | | | | | ${mb(peakScan)} |`,
    );
    console.log(
      `\nhub ingest vs bare: snapshots ${(snapMs / bareInsertMs).toFixed(1)}× the bare INSERT (${(snapMs / bareIndexedMs).toFixed(1)}× with indexes), ${(snapMs / bareSnapMs).toFixed(1)}× the bare POST loop; ` +
        `deltas ${(bareDeltaMs / deltaMs).toFixed(2)}× the bare POST loop's rate`,
    );
    console.log(
      `scan rounds seen (phase: duration): ${rounds.map((r) => `${r.phase}: ${secs(r.seconds * 1000)}`).join(', ') || 'none'}; events written: ${events.rows[0]?.n}`,
    );
    console.log(`scan page plan: ${plan ?? 'no index scan (!)'}`);
    console.log(`hub RSS: idle ${mb(idle.rss)}, at the end ${mb(end.rss)}, high-water mark (VmHWM) ${mb(end.hwm)}`);
  } finally {
    if (sampler) clearInterval(sampler);
    if (scraper) clearInterval(scraper);
    bare?.server.close();
    await hub?.kill('SIGTERM');
    await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await db.query(`DROP SCHEMA IF EXISTS "${bareSchema}" CASCADE`).catch(() => undefined);
    await db.end().catch(() => undefined);
    await pgServer.stop();
    await teardownBinary();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
