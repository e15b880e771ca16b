/**
 * Snapshot build under load: one company with BENCH_ROUTERS routers (default 990) of ~BENCH_FILTER_CHARS (default
 * 1,900) characters each, every filter distinct, created through the GraphQL API of `serve` in this process. Then
 * the first simulateRouting, by a read key, which builds the company's routing snapshot (compile every filter,
 * build the prefilter indexes). During it:
 *  - the event loop's worst delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution);
 *  - the worst CPU hold: the main thread's CPU time between two turns of the event loop (process.threadCpuUsage),
 *    which leaves out the time a loaded machine gives other processes;
 *  - the gaps between /healthz answers to a probe polling it back to back;
 *  - the slowest answer to another company's query (`deliveries(first: 1)`) sent back to back.
 * SQLite (file) always; PostgreSQL when `DATABASE_URL` is set or Debian's server can be started
 * (`BENCH_ENGINES=sqlite,postgres` picks engines).
 *
 *   node_modules/.bin/node --import tsx bench/snapshot-build.ts
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { loadServeConfig } from '../src/config.js';
import { startService, type RunningService } from '../src/main.js';
import { benchPostgres } from './lib/pg.js';
import { limitsFile } from '../test/support/limits.js';

const ROUTERS = Number(process.env.BENCH_ROUTERS ?? 990);
const FILTER_CHARS = Number(process.env.BENCH_FILTER_CHARS ?? 1900);
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',');
const FAMILY = 'certmgr-issuer-health-notification-config';
const ADMIN = 'bench-admin-0123456789abcdef';
const READ = 'bench-read-0123456789abcdefg';
const OTHER = 'bench-other-0123456789abcdef';
const COMPANY = '0b0b0b0b-0000-4000-8000-000000000001';
const OTHER_COMPANY = '0b0b0b0b-0000-4000-8000-000000000002';

/** A distinct filter of about FILTER_CHARS characters: a disjunction of issuer names (the spec's pattern). */
function filter(i: number): string {
  const parts: string[] = [];
  for (let k = 0; parts.join(' || ').length < FILTER_CHARS - 40; k++) parts.push(`data.issuerName == 'issuer-${i}-${k}'`);
  return parts.join(' || ');
}

const EVENT = {
  type: 'evt.healthstatus.certmgr-issuer.notready',
  data: {
    clusterId: '00000000-0000-4000-8000-000000000000',
    clusterName: 'bench',
    issuerName: 'issuer-7-3',
    namespace: 'bench',
    resourceId: '00000000-0000-4000-8000-000000000000',
    statusMessage: 'not ready',
    statusReason: 'Bench',
    statusTransition: '2030-01-01T00:00:00Z',
  },
};

async function gql(url: string, key: string, query: string, variables: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'svc-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown };
  if (body.errors || !body.data) throw new Error(`HTTP ${res.status}: ${JSON.stringify(body.errors)}`);
  return body.data;
}

interface Row {
  engine: string;
  simulateMs: number;
  loopMaxMs: number;
  healthzGapMs: number;
  otherTenantMs: number;
  otherRequests: number;
  cpuHoldMs: number;
}

async function measure(engine: string, store: string, dir: string): Promise<Row> {
  const keys = join(dir, `keys-${engine}.yaml`);
  writeFileSync(
    keys,
    `keys:\n  - { key: ${ADMIN}, companyId: ${COMPANY}, scope: admin }\n  - { key: ${READ}, companyId: ${COMPANY}, scope: read }\n  - { key: ${OTHER}, companyId: ${OTHER_COMPANY}, scope: read }\n`,
  );
  const secretKey = join(dir, 'secret-key');
  writeFileSync(secretKey, `k1:${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  const cfg = loadServeConfig(
    [
      ...['--port', '0', '--host', '127.0.0.1', '--store', store, '--kube', 'off', ...limitsFile({ deliveryWorkers: 0 })],
      ...['--api-keys-file', keys, '--secret-key-file', secretKey],
    ],
    {},
  );
  const svc: RunningService = await startService(cfg, pino({ level: 'silent' }));
  try {
    const created = await gql(
      svc.url,
      ADMIN,
      'mutation { createWebhookIntegration(input: { name: "hook", url: "https://example.com/hook" }) { id } }',
    );
    const integrationId = (created.createWebhookIntegration as { id: string }).id;
    const create = `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) { createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`;
    for (let i = 0; i < ROUTERS; i += 10) {
      await Promise.all(
        Array.from({ length: Math.min(10, ROUTERS - i) }, (_, j) =>
          gql(svc.url, ADMIN, create, {
            d: { name: `r${i + j}`, eventTypeId: FAMILY },
            f: { advancedFilterExpression: filter(i + j) },
            i: { integrationId },
          }),
        ),
      );
    }
    // the other tenant's query and /healthz, warm
    await gql(svc.url, OTHER, '{ deliveries(first: 1) { nodes { id } } }');
    await fetch(`${svc.url}/healthz`).then((r) => r.text());

    let running = true;
    let lastHealthz = performance.now();
    let healthzGapMs = 0;
    const probe = (async () => {
      while (running) {
        await fetch(`${svc.url}/healthz`).then((r) => r.text());
        const t = performance.now();
        healthzGapMs = Math.max(healthzGapMs, t - lastHealthz);
        lastHealthz = t;
      }
    })();
    let otherTenantMs = 0;
    let otherRequests = 0;
    const other = (async () => {
      while (running) {
        const t = performance.now();
        await gql(svc.url, OTHER, '{ deliveries(first: 1) { nodes { id } } }');
        otherTenantMs = Math.max(otherTenantMs, performance.now() - t);
        otherRequests++;
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    healthzGapMs = 0;
    otherTenantMs = 0;
    otherRequests = 0;
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    // the main thread's CPU time between two turns of the event loop: what one task held, without the time the
    // OS gave other processes (a loaded machine preempts, and wall-clock gaps count that too)
    let cpuHoldMs = 0;
    let lastCpu = process.threadCpuUsage();
    let turning = true;
    const turn = (): void => {
      const now = process.threadCpuUsage();
      cpuHoldMs = Math.max(cpuHoldMs, (now.user - lastCpu.user + now.system - lastCpu.system) / 1000);
      lastCpu = now;
      if (turning) setImmediate(turn);
    };
    setImmediate(turn);
    const t = performance.now();
    const sim = await gql(svc.url, READ, 'query($e: EventInput!) { simulateRouting(event: $e) { routers { verdict } } }', { e: EVENT });
    const simulateMs = performance.now() - t;
    loop.disable();
    turning = false;
    running = false;
    await Promise.all([probe, other]);
    const verdicts = (sim.simulateRouting as { routers: { verdict: string }[] }).routers;
    if (verdicts.length !== ROUTERS || verdicts.filter((v) => v.verdict === 'MATCHED').length !== 1)
      throw new Error(`unexpected simulation: ${verdicts.length} routers`);
    return { engine, simulateMs, loopMaxMs: loop.max / 1e6, healthzGapMs, otherTenantMs, otherRequests, cpuHoldMs };
  } finally {
    await svc.close();
  }
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'snapshot-build-'));
  const rows: Row[] = [];
  try {
    if (ENGINES.includes('sqlite')) rows.push(await measure('sqlite', `sqlite:${join(dir, 'hub.db')}`, dir));
    rows.forEach(print);
    if (ENGINES.includes('postgres')) {
      let pg: Awaited<ReturnType<typeof benchPostgres>> | undefined;
      try {
        pg = await benchPostgres();
      } catch (e) {
        console.log(`postgres: skipped (${(e as Error).message})`);
      }
      if (pg) {
        try {
          rows.push(await measure('postgres', pg.url, dir));
        } finally {
          await pg.stop();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`first simulateRouting over ${ROUTERS} routers of ~${FILTER_CHARS}-character filters (snapshot build included)`);
  console.log('engine    simulate   worst loop delay   worst CPU hold   worst /healthz gap   other tenant: slowest (requests)');
  for (const r of rows) print(r);
}

function print(r: Row): void {
  console.log(
    `${r.engine.padEnd(9)} ${r.simulateMs.toFixed(0).padStart(6)} ms ${r.loopMaxMs.toFixed(1).padStart(12)} ms ${r.cpuHoldMs.toFixed(1).padStart(11)} ms ${r.healthzGapMs.toFixed(1).padStart(16)} ms ${r.otherTenantMs.toFixed(1).padStart(14)} ms (${r.otherRequests})`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
