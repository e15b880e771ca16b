/**
 * The hub's expiry scan (src/expiry/scanner.ts) over a large inventory on PostgreSQL, next to a bare
 * `SELECT … WHERE company_id = ? AND not_after <= ?` over the same range. The rows are inserted with multi-row
 * INSERTs first (that time is printed too: the "bare INSERT" baseline of what writing the inventory costs).
 * PostgreSQL from `DATABASE_URL`, else a throwaway server (scripts/pg.sh).
 *
 *   node --expose-gc --import tsx bench/expiry-scan.ts     BENCH_ROWS=1000000 BENCH_DUE=0.01 BENCH_PAGE=1000
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { DAY_MS } from '../src/expiry/decide.js';
import { ExpiryScanner } from '../src/expiry/scanner.js';
import { createRoutingMetrics } from '../src/routing/metrics.js';
import { RoutingSnapshots } from '../src/routing/snapshot.js';
import { realClock } from '../src/runtime/timers.js';
import { openStore } from '../src/store/index.js';
import { bareDueSelect, benchPostgres, mb, multiRowInsert, scanPagePlan, secs } from './lib/pg.js';
import { ROUTER_POLICY_DEFAULTS } from '../src/model/records.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const DUE = Number(process.env.BENCH_DUE ?? 0.01);
const PAGE = Number(process.env.BENCH_PAGE ?? 1000);
const CLUSTERS = 20;
/** rows per INSERT statement (14 parameters each) */
const INSERT_ROWS = 1000;

const COLUMNS = [
  'company_id',
  'cluster_id',
  'namespace',
  'secret_name',
  'certificate_name',
  'serial',
  'not_after',
  'issuer',
  'common_name',
  'dns_names',
  'application_ids',
  'labels',
  'epoch',
  'updated_at',
];

export async function run(): Promise<void> {
  const server = await benchPostgres();
  const { url } = server;
  const schema = `bench_expiry_${randomUUID().slice(0, 8)}`;
  const store = await openStore(url, { schema });
  await store.migrate();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`SET search_path TO "${schema}"`);
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
  try {
    const company = randomUUID();
    const now = Date.now();
    for (let c = 0; c < CLUSTERS; c++)
      await client.query(
        `INSERT INTO clusters (company_id, id, name, agent_version, epoch, last_seq, snapshot_complete, first_seen_at, last_seen_at, certificate_count)
         VALUES ($1, $2, $3, 'bench', 'e1', 1, true, $4, $4, 0)`,
        [company, `cluster-${c}`, `cluster ${c}`, now],
      );
    // One router to a webhook integration, so accepted events get their delivery rows as in production (no worker runs).
    const integ = await store.createIntegration({
      id: randomUUID(),
      companyId: company,
      name: 'hook',
      type: 'WEBHOOK',
      enabled: true,
      config: {},
      secrets: { url: 'https://hooks.example.com/x', signingSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
      managedBy: null,
      createdAt: now,
      updatedAt: now,
    });
    await store.createRouter({
      id: randomUUID(),
      companyId: company,
      name: 'expirations',
      eventTypeId: 'cert-expiry-ext-notification-config',
      enabled: true,
      filter: '',
      integrationId: integ.id,
      templateId: null,
      generation: 'ROUTER',
      ...ROUTER_POLICY_DEFAULTS,
      managedBy: null,
      createdAt: now,
      updatedAt: now,
    });

    // DUE of the rows expire within 30 days (the largest default threshold); the rest in 31–400 days.
    // Every 10th due certificate is served from two clusters (same serial), as a shared wildcard would be.
    const dueRows = Math.round(ROWS * DUE);
    const t0 = performance.now();
    for (let i = 0; i < ROWS; i += INSERT_ROWS) {
      const rows: unknown[][] = [];
      for (let j = i; j < Math.min(i + INSERT_ROWS, ROWS); j++) {
        const due = j < dueRows;
        const notAfter = due ? now + 1 + (j % (30 * 24)) * 3_600_000 : now + (31 + (j % 370)) * DAY_MS + (j % 86_400) * 1000;
        const serial = due && j % 10 === 1 ? (j - 1).toString(16).toUpperCase() : j.toString(16).toUpperCase();
        rows.push([
          company,
          `cluster-${j % CLUSTERS}`,
          `ns-${j % 97}`,
          `tls-${j}`,
          `cert-${j}`,
          serial,
          due && j % 10 === 1 ? now + 1 + ((j - 1) % (30 * 24)) * 3_600_000 : notAfter,
          'CN=Bench CA, O=Example',
          `host-${j}.example.com`,
          JSON.stringify([`host-${j}.example.com`]),
          JSON.stringify(j % 3 === 0 ? ['app-1'] : []),
          '{}',
          'e1',
          now,
        ]);
      }
      await multiRowInsert(client, 'inventory_certificates', COLUMNS, rows);
    }
    const insertMs = performance.now() - t0;
    await client.query('ANALYZE inventory_certificates');

    const horizon = now + 30 * DAY_MS;
    const bare = await bareDueSelect(client, company, horizon);
    const bareMs = bare.ms;
    // the scan's first page, as the store asks for it: which index serves it
    const usesIndex = await scanPagePlan(client, company, horizon, PAGE);

    const scanner = new ExpiryScanner({
      store,
      ingest: { snapshots: new RoutingSnapshots(store), metrics: createRoutingMetrics(new Registry()), log: pino({ level: 'warn' }) },
      log: pino({ level: 'warn' }),
      clock: realClock,
      pageSize: PAGE,
      // scanned twice in a row on purpose: no skipping as recently scanned
      minGapMs: 0,
    });
    // the INSERT phase's garbage is not the scan's (run with --expose-gc for a clean baseline)
    (globalThis as { gc?: () => void }).gc?.();
    const rssBefore = process.memoryUsage().rss;
    peakRss = rssBefore;
    const t2 = performance.now();
    const first = await scanner.scanCompany(company);
    const firstMs = performance.now() - t2;
    const peakFirst = peakRss;
    const t3 = performance.now();
    const again = await scanner.scanCompany(company);
    const againMs = performance.now() - t3;

    console.log(
      `${ROWS.toLocaleString('en')} inventory rows (${CLUSTERS} clusters, one company), ${(DUE * 100).toFixed(1)}% due within 30 days; ` +
        `PostgreSQL; scan pages of ${PAGE}`,
    );
    console.log('| step | rows | certificates | events | time | vs bare SELECT |');
    console.log('|:--|--:|--:|--:|--:|--:|');
    console.log(`| bare INSERT (multi-row, ${INSERT_ROWS}/statement) | ${ROWS.toLocaleString('en')} | | | ${secs(insertMs)} | |`);
    console.log(`| bare SELECT … WHERE company_id = ? AND not_after <= ? | ${bare.rows} | | | ${secs(bareMs)} | 1.0× |`);
    console.log(
      `| scan, first sight (decide + accept events + marks) | ${first.rows} | ${first.certificates} | ${first.events} | ${secs(firstMs)} | ${(firstMs / bareMs).toFixed(1)}× |`,
    );
    console.log(
      `| scan again (nothing new: marks read) | ${again.rows} | ${again.certificates} | ${again.events} | ${secs(againMs)} | ${(againMs / bareMs).toFixed(1)}× |`,
    );
    console.log(`scan page plan: ${usesIndex ?? 'no index scan (!)'}`);
    console.log(
      `RSS: before the scans ${mb(rssBefore)}, peak during the first scan ${mb(peakFirst)}, after ${mb(process.memoryUsage().rss)}`,
    );
  } finally {
    clearInterval(sampler);
    await client.query(`DROP SCHEMA "${schema}" CASCADE`).catch(() => undefined);
    await client.end();
    await store.close();
    await server.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
