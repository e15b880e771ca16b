/**
 * A tenant's hostile template against the shared hub (docs/security.md, "Tenant programs"), on SQLite (a file) and
 * PostgreSQL, against a `serve` process of the built bundle. Tenant A's router carries a template
 * whose title doubles a non-Latin-1 capture 27 times (the abuse finding's template). Two request classes:
 *
 *   - `simulateRouting` by A's read key, BENCH_ROUNDS times (default 5), one after another;
 *   - events posted by A's agent key (BENCH_ROUNDS of them), rendered by the delivery worker and sent to a loopback
 *     webhook (with the default message: the template does not render).
 *
 * During each class a probe asks `/healthz` back to back and records the gaps between its answers, and tenant B
 * asks `deliveries(first: 1)` back to back. Printed per engine and class: the worst and median /healthz gap beside
 * the same probe's figures with the hub idle (the baseline), B's worst latency, and whether the process lived.
 *
 *   node_modules/.bin/node --import tsx bench/template-abuse.ts
 *   BENCH_ENGINES=sqlite,postgres BENCH_ROUNDS=5
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startServiceProcess, type ServiceProcess } from '../test/e2e/service-process.js';
import { certificateResourceNotReady } from '../test/fixtures/events.js';
import { setupBinary } from '../test/support/binary.js';
import { testSecretKeyFile } from '../test/support/service.js';
import { benchPostgres } from './lib/pg.js';

const ROUNDS = Math.max(1, Math.floor(Number(process.env.BENCH_ROUNDS ?? 5)));
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',').map((s) => s.trim()) as ('sqlite' | 'postgres')[];

const A = '7e3a1a7e-0000-4000-8000-00000000000a';
const B = '7e3a1a7e-0000-4000-8000-00000000000b';
const A_ADMIN = `bench-a-admin-${randomUUID()}`;
const A_READ = `bench-a-read-${randomUUID()}`;
const A_AGENT = `bench-a-agent-${randomUUID()}`;
const B_ADMIN = `bench-b-admin-${randomUUID()}`;

/** The finding's template. */
const DOUBLING = '{% assign s = "Ā" %}{% for i in (1..27) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}{{ s }}';

const event = (name: string) => certificateResourceNotReady({ certificateName: name });

async function gql(url: string, key: string, query: string, variables: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'svc-api-key': key },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown };
  if (!body.data) throw new Error(`${res.status} ${JSON.stringify(body.errors)}`);
  return body.data;
}

interface Probe {
  stop(): Promise<{ gaps: number[]; bWorst: number; bCount: number }>;
}

/** /healthz back to back (gaps between answers) and tenant B's query back to back (latency), until stopped. */
function probe(url: string): Probe {
  let running = true;
  const gaps: number[] = [];
  const b: number[] = [];
  const health = (async () => {
    let last = performance.now();
    while (running) {
      // a connection the hub closed after its per-socket request limit: the next request opens another
      await fetch(`${url}/healthz`)
        .then((res) => res.arrayBuffer())
        .catch(() => undefined);
      const now = performance.now();
      gaps.push(now - last);
      last = now;
    }
  })();
  const other = (async () => {
    while (running) {
      const t = performance.now();
      await gql(url, B_ADMIN, '{ deliveries(first: 1) { nodes { id } } }').catch(() => undefined);
      b.push(performance.now() - t);
    }
  })();
  return {
    async stop() {
      running = false;
      await Promise.all([health, other]);
      return { gaps, bWorst: Math.max(0, ...b), bCount: b.length };
    },
  };
}

interface Row {
  engine: string;
  cls: string;
  worstGap: number;
  medianGap: number;
  bWorst: number;
  bCount: number;
  alive: boolean;
  note: string;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function measure(engine: 'sqlite' | 'postgres', dir: string, pgUrl: string | undefined): Promise<Row[]> {
  const storeUrl =
    engine === 'sqlite'
      ? `sqlite:${join(dir, 'abuse.db')}`
      : (() => {
          const u = new URL(pgUrl!);
          u.searchParams.set('schema', `bench_abuse_${randomUUID().slice(0, 8)}`);
          return u.toString();
        })();
  const keysFile = join(dir, `keys-${engine}.yaml`);
  writeFileSync(
    keysFile,
    `keys:\n${[
      [A_ADMIN, A, 'admin'],
      [A_READ, A, 'read'],
      [A_AGENT, A, 'agent'],
      [B_ADMIN, B, 'admin'],
    ]
      .map(([k, c, s]) => `  - key: ${k}\n    companyId: ${c}\n    scope: ${s}\n`)
      .join('')}`,
    { mode: 0o600 },
  );
  let received = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const port = (receiver.address() as { port: number }).port;
  let hub: ServiceProcess | undefined;
  const rows: Row[] = [];
  try {
    hub = await startServiceProcess(
      [
        '--store',
        storeUrl,
        '--api-keys-file',
        keysFile,
        '--egress-allow',
        '127.0.0.1/32',
        ...(engine === 'postgres' ? ['--secret-key-file', testSecretKeyFile()] : []),
      ],
      `bench-unused-${randomUUID()}`,
    );
    const url = hub.url;
    const hook = (await gql(url, A_ADMIN, `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`, {
      i: { name: 'hook', url: `http://127.0.0.1:${port}/hook` },
    })) as { createWebhookIntegration: { id: string } };
    const tpl = (await gql(
      url,
      A_ADMIN,
      `mutation($i: CreateNotificationTemplateInput!) { createNotificationTemplate(input: $i) { id } }`,
      { i: { name: 'doubling', parts: { default: { title: DOUBLING } } } },
    )) as { createNotificationTemplate: { id: string } };
    await gql(
      url,
      A_ADMIN,
      `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) {
        createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
      {
        d: { name: 'certificates', eventTypeId: 'certmgr-cert-resource-health-notification-config' },
        f: { advancedFilterExpression: '' },
        i: { integrationId: hook.createWebhookIntegration.id, templateId: tpl.createNotificationTemplate.id },
      },
    );
    const alive = () => hub!.proc.exitCode === null && hub!.proc.signalCode === null;

    // baseline: the same probe with the hub idle
    let p = probe(url);
    await new Promise((r) => setTimeout(r, 2000));
    let r = await p.stop();
    rows.push({ engine, cls: 'idle (baseline)', worstGap: Math.max(...r.gaps), medianGap: median(r.gaps), ...r, alive: alive(), note: '' });

    p = probe(url);
    let errors = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const sim = (await gql(
        url,
        A_READ,
        `query($e: EventInput!) { simulateRouting(event: $e) { routers { rendered { title error } } } }`,
        {
          e: event(`sim-${i}`),
        },
      )) as { simulateRouting: { routers: { rendered: { title: string | null; error: string | null } | null }[] } };
      if (sim.simulateRouting.routers[0]?.rendered?.error) errors++;
    }
    r = await p.stop();
    rows.push({
      engine,
      cls: `simulateRouting ×${ROUNDS}`,
      worstGap: Math.max(...r.gaps),
      medianGap: median(r.gaps),
      ...r,
      alive: alive(),
      note: `${errors}/${ROUNDS} answered with a render error`,
    });

    p = probe(url);
    const before = received;
    for (let i = 0; i < ROUNDS; i++) {
      const res = await fetch(`${url}/v1/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'svc-api-key': A_AGENT },
        body: JSON.stringify(event(`delivered-${i}`)),
      });
      if (res.status !== 202) throw new Error(`POST /v1/events: ${res.status} ${await res.text()}`);
    }
    const deadline = performance.now() + 60_000;
    while (received - before < ROUNDS && performance.now() < deadline && alive()) await new Promise((res) => setTimeout(res, 20));
    r = await p.stop();
    rows.push({
      engine,
      cls: `delivery ×${ROUNDS} (agent key)`,
      worstGap: Math.max(...r.gaps),
      medianGap: median(r.gaps),
      ...r,
      alive: alive(),
      note: `${received - before}/${ROUNDS} delivered (default message)`,
    });
    return rows;
  } catch (err) {
    console.error(`${engine}: ${String(err)}\n--- hub output (tail) ---\n${hub?.output().slice(-4000) ?? ''}`);
    throw err;
  } finally {
    await hub?.kill('SIGTERM');
    receiver.close();
  }
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cmn-abuse-'));
  const teardownBinary = await setupBinary();
  const pgServer = ENGINES.includes('postgres') ? await benchPostgres() : undefined;
  const rows: Row[] = [];
  try {
    for (const engine of ENGINES) rows.push(...(await measure(engine, dir, pgServer?.url)));
  } finally {
    await pgServer?.stop();
    await teardownBinary();
    rmSync(dir, { recursive: true, force: true });
  }
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  console.log(`\ntemplate: ${DOUBLING.length} characters, a capture doubled 27 times`);
  console.log(
    `${'engine'.padEnd(9)}${'class'.padEnd(30)}${'/healthz worst'.padStart(15)}${'median'.padStart(10)}${"B's worst".padStart(11)}${"B's req".padStart(9)}${'alive'.padStart(7)}  note`,
  );
  for (const r of rows)
    console.log(
      `${r.engine.padEnd(9)}${r.cls.padEnd(30)}${ms(r.worstGap).padStart(15)}${ms(r.medianGap).padStart(10)}${ms(r.bWorst).padStart(11)}${String(r.bCount).padStart(9)}${(r.alive ? 'yes' : 'NO').padStart(7)}  ${r.note}`,
    );
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) await run();
