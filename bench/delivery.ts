/**
 * Delivery benchmark: durable notifications/s to a loopback webhook receiver (events + deliveries written to
 * the store as POST /v1/events writes them, with their order keys; claimed, fenced, signed, POSTed, marked
 * delivered) vs. a bare POST loop: the same HTTP client (undici's request over a keep-alive Agent, as the
 * notifiers with the egress policy's dispatcher), the same concurrency, a body of the same size and the same header
 * names. A second loop with undici's fetch (the notifiers' client before issue 12's sixth pass) is printed for
 * reference. SQLite (file) and PostgreSQL (`DATABASE_URL`, or Debian's server started for the run);
 * `BENCH_ENGINES=sqlite|postgres` picks.
 *
 *   node --import tsx bench/delivery.ts        BENCH_DELIVERIES=2000 BENCH_CONCURRENCY=8
 *
 * Each row also gives the process's CPU time per notification (in all, and of it the main thread's and the SQLite
 * store thread's, from /proc's per-thread times) and the event loop's utilisation over the timed round (the receiver
 * and the bare client run in this process too: a row at ~100% is bound by CPU, not by waits).
 *
 * What bounds the ratio: each engine also runs "the store alone", the durable path with a notifier that answers at
 * once (no request): what ingestion, claim, fence and outcome cost by themselves. The last lines compare, at 0.6× of
 * the bare loop's rate, the CPU this machine's cores give per notification with the store alone's CPU (PostgreSQL's
 * server included) plus the bare request's: a durable path costs at least both, so above the budget 0.6× cannot be
 * reached by any send path; and the single threads (main, SQLite) with the time one notification may take.
 * The timed rounds are interleaved (`BENCH_ROUNDS`, default 3: bare, then each engine, back to back); each row is
 * the median of its rounds, and its ratio the median of the per-round ratios to that round's bare loop.
 * Diagnostics: `BENCH_PROFILE=<dir>` writes a CPU profile of each timed round there (the last round's is kept); `BENCH_COUNT=1` adds the
 * store statements (SQLite, as its thread reports them; `BENCH_COUNT_SQL=1` prints them by SQL text) or queries
 * (PostgreSQL) per notification. The PostgreSQL row also gives the server's
 * CPU per notification (its processes' /proc times; with an external `DATABASE_URL`, give its scripts/pg.sh
 * `PGROOT`), and a line after the table the deliveries table's updates, HOT updates and index count.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { Agent, fetch, request } from 'undici';
import { DeliveryWorker } from '../src/delivery/index.js';
import { orderOfEvent } from '../src/delivery/order.js';
import type { InternalEvent } from '../src/events/families.js';
import { buildCloudEvent } from '../src/integrations/payload.js';
import { EgressPolicy, parseEgressAllow } from '../src/integrations/egress.js';
import { createNotifier, Notifiers } from '../src/integrations/index.js';
import { openStore } from '../src/store/index.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import type { Store } from '../src/store/types.js';
import { certificateResourceNotReady } from '../test/fixtures/events.js';
import { startPostgres } from '../test/support/postgres.js';

// The receivers are on loopback, which the egress policy refuses unless allowed (as --egress-allow does).
const LOOPBACK = new EgressPolicy(parseEgressAllow(['127.0.0.1/32']));

const N = Number(process.env.BENCH_DELIVERIES ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
/** Timed rounds, interleaved (bare, then each engine); the table gives medians. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const COMPANY = '11111111-1111-4111-8111-111111111111';
/** Which engines to run (comma-separated: sqlite, postgres). */
const ENGINES = new Set((process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',').map((s) => s.trim()));
const PROFILE_DIR = process.env.BENCH_PROFILE;

/** Statements run (SQLite) and queries sent (PostgreSQL) so far, when BENCH_COUNT is set; BENCH_COUNT_SQL: by SQL text (SQLite). */
const counted = { statements: 0, bySql: {} as Record<string, number> };
/** SQLite's statements run on its thread: the store reports each (openSqliteStore's onStatement). */
const countStatement = (sql: string) => {
  counted.statements++;
  if (process.env.BENCH_COUNT_SQL) {
    const k = sql.replace(/\s+/g, ' ').slice(0, 90);
    counted.bySql[k] = (counted.bySql[k] ?? 0) + 1;
  }
};
if (process.env.BENCH_COUNT) {
  const q = pg.Client.prototype.query as (...a: unknown[]) => unknown;
  (pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown }).query = function (this: unknown, ...a: unknown[]) {
    counted.statements++;
    return q.apply(this, a);
  };
}

/** Linux clock ticks per second (USER_HZ: /proc's CPU times are in these). */
const CLK_TCK = 100;

/**
 * CPU ms the PostgreSQL server started for the run has used so far (Linux /proc): the postmaster's own and its
 * reaped children's, plus every live child's (the backends serving the store's pool, the WAL writer, …).
 * Undefined when it cannot be read (an external DATABASE_URL, no /proc).
 */
export function pgServerCpuMs(root: string): number | undefined {
  try {
    const postmaster = Number(readFileSync(join(root, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const fields = (pid: string) => {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).split(' '); // [0] = state, [1] = ppid, [11..14] = utime, stime, cutime, cstime
    };
    const own = fields(String(postmaster));
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const f = fields(pid);
        if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // exited meanwhile
      }
    }
    return (ticks * 1000) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/** One statement on a connection of its own. */
async function pgQuery(url: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

/** The bench schema's deliveries table: row updates, how many were HOT, and its index count. */
async function pgTableStats(url: string, schema: string): Promise<string> {
  const [r] = await pgQuery(
    url,
    `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot,
       (SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND tablename = 'deliveries') AS idx
     FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'deliveries'`,
    [schema],
  );
  if (!r) return 'no statistics';
  const upd = Number(r['upd']);
  const hot = Number(r['hot']);
  return `${upd} row updates (warm-up and timed rounds), ${hot} HOT (${((100 * hot) / Math.max(1, upd)).toFixed(0)}%), ${String(r['idx'])} indexes`;
}

/**
 * CPU ms each of this process's threads has run so far, by thread name (Linux /proc/self/task/<tid>/schedstat, in
 * ns): MainThread (the event loop), sqlite (the SQLite store's thread), and the rest (V8's GC helpers, libuv's pool).
 */
function threadCpuMs(): { main: number; sqlite: number } {
  const out = { main: 0, sqlite: 0 };
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const comm = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
        if (comm !== 'MainThread' && comm !== 'sqlite') continue;
        const ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
        out[comm === 'MainThread' ? 'main' : 'sqlite'] += ns / 1e6;
      } catch {
        // exited meanwhile
      }
    }
  } catch {
    // no /proc: zeros
  }
  return out;
}

/** What a timed round cost this process: CPU ms (in all, on the main thread, on the SQLite thread) and event-loop utilisation (a fraction). */
async function measured<T>(
  name: string,
  f: () => Promise<T>,
): Promise<{ r: T; cpuMs: number; mainMs: number; sqliteMs: number; elu: number; statements: number }> {
  let session: Session | undefined;
  if (PROFILE_DIR) {
    mkdirSync(PROFILE_DIR, { recursive: true });
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const threads0 = threadCpuMs();
  const st0 = counted.statements;
  counted.bySql = {};
  const r = await f();
  const cpu = process.cpuUsage(cpu0);
  const threads = threadCpuMs();
  if (process.env.BENCH_COUNT_SQL)
    for (const [k, n] of Object.entries(counted.bySql).sort((a, b) => b[1] - a[1])) console.log(`${name}: ${n} × ${k}`);
  const elu = performance.eventLoopUtilization(elu0).utilization;
  const statements = counted.statements - st0;
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(join(PROFILE_DIR!, `${name.replace(/[^a-z0-9]+/gi, '-')}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
  return {
    r,
    cpuMs: (cpu.user + cpu.system) / 1000,
    mainMs: threads.main - threads0.main,
    sqliteMs: threads.sqlite - threads0.sqlite,
    elu,
    statements,
  };
}

async function receiver() {
  let count = 0;
  let bytes = 0;
  let done: () => void = () => undefined;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      count++;
      res.end('ok');
      if (count >= target) done();
    });
  });
  let target = Infinity;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    /** Requests and body bytes received so far. */
    seen: () => ({ count, bytes }),
    /** Resolves once `n` more requests arrived. */
    expect(n: number) {
      target = count + n;
      return new Promise<void>((r) => (done = r));
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * The bare baseline: N POSTs, CONCURRENCY at a time, over one keep-alive Agent: undici's request, as the notifiers
 * (src/integrations/http.ts), or with `client` 'fetch' undici's fetch (for reference).
 */
async function bareLoop(url: string, body: string, client: 'request' | 'fetch' = 'request'): Promise<number> {
  const dispatcher = new Agent();
  // the header names and sizes of a signed Standard Webhooks request, fixed values (nothing computed per request)
  const headers = {
    'content-type': 'application/cloudevents+json; charset=utf-8',
    'user-agent': 'bench',
    'webhook-id': randomUUID(),
    'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
  };
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        next++;
        if (client === 'fetch') {
          const res = await fetch(url, { method: 'POST', headers, body, dispatcher });
          await res.arrayBuffer();
        } else {
          const res = await request(url, { method: 'POST', headers, body, dispatcher });
          await res.body.arrayBuffer();
        }
      }
    }),
  );
  const perSec = N / ((performance.now() - t0) / 1000);
  await dispatcher.close();
  return perSec;
}

/** An event of the bench, for certificate `name`. */
function benchEvent(name: string): InternalEvent {
  return certificateResourceNotReady({ certificateName: name }) as InternalEvent;
}

/**
 * The durable path: N events ingested, claimed, fenced, sent and their outcomes written. `storeOnly`: the same with
 * a notifier that answers "delivered" at once (no request): what durability alone costs, timed to the last outcome
 * written.
 */
async function durable(
  store: Store,
  rcv: Awaited<ReturnType<typeof receiver>>,
  storeOnly = false,
): Promise<{ perSec: number; acceptPerSec: number }> {
  const url = rcv.url;
  await store.migrate();
  const now = Date.now();
  const integ = await store.createIntegration({
    id: randomUUID(),
    companyId: COMPANY,
    name: `bench-${randomUUID().slice(0, 8)}`,
    type: 'WEBHOOK',
    enabled: true,
    config: { signed: true },
    secrets: { url, signingSecret: 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64') },
    managedBy: null,
    createdAt: now,
    updatedAt: now,
  });
  let sent = 0;
  let allSent: () => void = () => undefined;
  const sentAll = new Promise<void>((r) => (allSent = r));
  const worker = new DeliveryWorker({
    store,
    notifiers: new Notifiers((type) =>
      storeOnly
        ? {
            type,
            send: () => {
              if (++sent === N) allSent();
              return Promise.resolve({ outcome: 'delivered' as const, statusCode: 200 });
            },
          }
        : createNotifier(type, { incidentEventsUrl: 'http://127.0.0.1:9', timeoutMs: 10_000, userAgent: 'bench', egress: LOOPBACK }),
    ),
    logger: pino({ level: 'silent' }),
    metrics: new Registry(),
    options: { concurrency: CONCURRENCY, rateLimits: { WEBHOOK: { ratePerSec: 1e9, burst: 1e9 } } },
  });
  const arrived = storeOnly ? sentAll : rcv.expect(N);
  const t0 = performance.now();
  // accept in batches of 100 events (one transaction each), as POST /v1/events does
  worker.start();
  for (let b = 0; b < N / 100; b++) {
    const events = Array.from({ length: 100 }, (_, i) => {
      const ev = benchEvent(`bench-${b}-${i}`);
      return { id: randomUUID(), companyId: COMPANY, type: ev.type, data: ev.data, receivedAt: Date.now(), ev };
    });
    // as POST /v1/events does (acceptEvents): all events, then all their deliveries, in one ingestion transaction;
    // the worker is woken at the commit, the batch counts as accepted after its fdatasync (SQLite)
    await store.ingestTransaction(
      async (tx) => {
        await tx.insertEvents(events.map(({ ev: _ev, ...e }) => e));
        await tx.insertDeliveries(
          events.map((e, i) => ({
            ...orderOfEvent(e.ev, e.receivedAt, i),
            id: randomUUID(),
            companyId: COMPANY,
            eventId: e.id,
            routerId: randomUUID(),
            routerName: 'bench',
            integrationId: integ.id,
            createdAt: Date.now(),
          })),
        );
      },
      () => worker.kick(),
    );
  }
  const tAccepted = performance.now();
  await arrived;
  let t1 = performance.now();
  await worker.stop();
  if (storeOnly) t1 = performance.now(); // every outcome written
  return { perSec: N / ((t1 - t0) / 1000), acceptPerSec: N / ((tAccepted - t0) / 1000) };
}

export async function run(): Promise<void> {
  const rcv = await receiver();
  // the body the worker sends for a bench event (ids of the same length)
  const now = Date.now();
  const integration = {
    id: randomUUID(),
    companyId: COMPANY,
    name: 'bench',
    type: 'WEBHOOK' as const,
    enabled: true,
    config: {},
    secrets: {},
  };
  const body = JSON.stringify(
    buildCloudEvent({
      id: randomUUID(),
      eventId: randomUUID(),
      event: benchEvent('bench-0-0'),
      occurredAt: now,
      router: { id: randomUUID(), name: 'bench' },
      integration: { ...integration, managedBy: null, createdAt: now, updatedAt: now },
      attempt: 1,
    }),
  );
  const dir = mkdtempSync(join(tmpdir(), 'cmn-bench-'));
  /** name, open, and for PostgreSQL what the server-side figures need */
  type PgRun = { url: string; schema: string; root: string | undefined };
  const engines: [string, () => Promise<Store>, PgRun?][] = [];
  if (ENGINES.has('sqlite'))
    engines.push([
      'durable, SQLite file',
      () =>
        process.env.BENCH_COUNT
          ? openSqliteStore(join(dir, 'bench.db'), { onStatement: countStatement })
          : openStore(`sqlite:${join(dir, 'bench.db')}`),
    ]);
  let pgServer: Awaited<ReturnType<typeof startPostgres>> | undefined;
  if (ENGINES.has('postgres'))
    try {
      const url = process.env.DATABASE_URL ?? (pgServer = await startPostgres()).url;
      const schema = `bench_${randomUUID().slice(0, 8)}`;
      engines.push(['durable, PostgreSQL', () => openStore(url, { schema }), { url, schema, root: pgServer?.root ?? process.env.PGROOT }]);
    } catch (e) {
      console.log(`(PostgreSQL not available: ${(e as Error).message.split('\n')[0]})`);
    }
  const stores: [string, Store, PgRun | undefined][] = [];
  for (const [name, open, pgRun] of engines) stores.push([name, await open(), pgRun]);

  // Warm-up rounds (JIT, connections), not counted.
  await bareLoop(rcv.url, body);
  await bareLoop(rcv.url, body, 'fetch');
  for (const [, store, pgRun] of stores) {
    await durable(store, rcv);
    await durable(store, rcv, true);
    // A long-lived table has planner statistics; the bench's table is new. Without them the claim's plan depends
    // on whether autovacuum (60 s naptime) analyzed it during the warm-up, so the timed rounds measured either.
    if (pgRun) await pgQuery(pgRun.url, `ANALYZE ${pgRun.schema}.deliveries, ${pgRun.schema}.events`);
  }

  // ROUNDS interleaved rounds: bare, then each engine, back to back. A row's ratio is the median of its rounds'
  // ratios to the bare loop of the same round, so load from outside the bench that comes and goes moves both.
  type Round = {
    perSec: number;
    acceptPerSec?: number;
    cpuMs: number;
    /** CPU ms of the main thread and of the SQLite thread */
    mainMs: number;
    sqliteMs: number;
    elu: number;
    statements: number;
    bodyBytes?: number;
    /** PostgreSQL: the server's CPU ms in the round */
    serverMs?: number | undefined;
  };
  const bare: Round[] = [];
  const bareFetch: Round[] = [];
  const durables = new Map<string, Round[]>(stores.map(([name]) => [name, []]));
  /** The same engines with no request sent (the notifier answers at once): durability's own cost. */
  const alone = new Map<string, Round[]>(stores.map(([name]) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const b = await measured('bare', () => bareLoop(rcv.url, body));
    bare.push({ ...b, perSec: b.r });
    const f = await measured('bare-fetch', () => bareLoop(rcv.url, body, 'fetch'));
    bareFetch.push({ ...f, perSec: f.r });
    const line = [`round ${round + 1}: bare ${b.r.toFixed(0)}/s, bare (fetch) ${f.r.toFixed(0)}/s`];
    for (const [name, store, pgRun] of stores) {
      /** The round measured, with the PostgreSQL server's CPU ms in it (when its /proc times can be read). */
      const round = async (label: string, storeOnly: boolean) => {
        const cpu0 = pgRun?.root === undefined ? undefined : pgServerCpuMs(pgRun.root);
        const m = await measured(label, () => durable(store, rcv, storeOnly));
        const cpu1 = pgRun?.root === undefined ? undefined : pgServerCpuMs(pgRun.root);
        return { ...m, ...m.r, serverMs: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0 };
      };
      const before = rcv.seen();
      const m = await round(name, false);
      const after = rcv.seen();
      const bodyBytes = (after.bytes - before.bytes) / Math.max(1, after.count - before.count);
      durables.get(name)!.push({ ...m, bodyBytes });
      line.push(`${name} ${m.perSec.toFixed(0)}/s (${(m.perSec / b.r).toFixed(2)}×; ${(m.perSec / f.r).toFixed(2)}× the fetch loop)`);
      const a = await round(`${name} store alone`, true);
      alone.get(name)!.push(a);
      line.push(`store alone ${a.perSec.toFixed(0)}/s`);
    }
    console.log(line.join(', '));
  }
  const notes: string[] = [];
  for (const [, store, pgRun] of stores) {
    await store.close();
    if (pgRun) {
      // the pool is closed: its backends flush their statistics as they exit (give them a moment)
      await new Promise((resolve) => setTimeout(resolve, 500));
      notes.push(`PostgreSQL deliveries table: ${await pgTableStats(pgRun.url, pgRun.schema)}`);
    }
  }
  await pgServer?.stop();
  rmSync(dir, { recursive: true, force: true });
  await rcv.close();

  const median = (xs: number[]) => {
    const a = [...xs].sort((x, y) => x - y);
    const mid = Math.floor(a.length / 2);
    return a.length % 2 ? a[mid]! : (a[mid - 1]! + a[mid]!) / 2;
  };
  const extra = (rs: Round[]) => [
    median(rs.map((r) => r.cpuMs / N)).toFixed(2),
    median(rs.map((r) => r.mainMs / N)).toFixed(3),
    rs.some((r) => r.sqliteMs > 0) ? median(rs.map((r) => r.sqliteMs / N)).toFixed(3) : '',
    `${(median(rs.map((r) => r.elu)) * 100).toFixed(0)}%`,
    ...(process.env.BENCH_COUNT ? [median(rs.map((r) => r.statements / N)).toFixed(2)] : []),
    rs.every((r) => r.serverMs !== undefined) ? median(rs.map((r) => r.serverMs! / N)).toFixed(2) : '',
  ];
  const vsFetch = (rs: Round[]) => `${median(rs.map((r, i) => r.perSec / bareFetch[i]!.perSec)).toFixed(2)}×`;
  const rows: string[][] = [
    [
      'bare POST loop, undici request (baseline)',
      median(bare.map((r) => r.perSec)).toFixed(0),
      '',
      '1.00×',
      vsFetch(bare),
      String(Buffer.byteLength(body)),
      ...extra(bare),
    ],
    [
      'bare POST loop, undici fetch (reference)',
      median(bareFetch.map((r) => r.perSec)).toFixed(0),
      '',
      `${median(bareFetch.map((r, i) => r.perSec / bare[i]!.perSec)).toFixed(2)}×`,
      '1.00×',
      String(Buffer.byteLength(body)),
      ...extra(bareFetch),
    ],
  ];
  const durableRow = (name: string, rs: Round[]) => [
    name,
    median(rs.map((r) => r.perSec)).toFixed(0),
    median(rs.map((r) => r.acceptPerSec ?? 0)).toFixed(0),
    `${median(rs.map((r, i) => r.perSec / bare[i]!.perSec)).toFixed(2)}×`,
    vsFetch(rs),
    median(rs.map((r) => r.bodyBytes ?? 0)).toFixed(0),
    ...extra(rs),
  ];
  for (const [name, rs] of durables) {
    rows.push(durableRow(name, rs));
    rows.push(durableRow(`${name}: the store alone (no request)`, alone.get(name)!));
  }

  // What 0.6× of the bare loop leaves: at that rate this machine's cores give BUDGET ms of CPU per notification, in
  // which the bare request (client and receiver) and durability alone (the store-alone row: ingestion, claim, fence,
  // outcome, each committed; PostgreSQL's server included) must both fit, before any signing or payload.
  const cores = availableParallelism();
  const bareRate = median(bare.map((r) => r.perSec));
  const budgetMs = (cores * 1000) / (0.6 * bareRate);
  const bareCpu = median(bare.map((r) => r.cpuMs / N));
  const bounds: string[] = [];
  // The threads are serial resources too: at 0.6× each may use at most WALL ms per notification.
  const wallMs = 1000 / (0.6 * bareRate);
  for (const [name, as] of alone) {
    const aloneCpu = median(as.map((r) => (r.cpuMs + (r.serverMs ?? 0)) / N));
    const need = aloneCpu + bareCpu;
    const ds = durables.get(name)!;
    const sqlite = median(ds.map((r) => r.sqliteMs / N));
    // the same, round by round against that round's bare loop (this machine's speed moves between rounds)
    const perRound = as.map((r, i) => {
      const b = bare[i]!;
      return ((r.cpuMs + (r.serverMs ?? 0) + b.cpuMs) / N / ((cores * 1000) / (0.6 * b.perSec))).toFixed(2);
    });
    bounds.push(
      `${name}: the store alone ${aloneCpu.toFixed(3)} + the bare request ${bareCpu.toFixed(3)} = ${need.toFixed(3)} ms (${(need / budgetMs).toFixed(2)}× the budget: ${need > budgetMs ? 'cannot fit' : 'fits'}; round by round ${perRound.join(', ')}×); ` +
        `the durable row's main thread ${median(ds.map((r) => r.mainMs / N)).toFixed(3)} ms${sqlite > 0 ? `, SQLite thread ${sqlite.toFixed(3)} ms` : ''} per notification`,
    );
  }
  console.log(
    `${N} notifications, concurrency ${CONCURRENCY}, signed CloudEvents bodies, loopback receiver; medians of ${ROUNDS} interleaved rounds`,
  );
  const counts = process.env.BENCH_COUNT ? ' statements/notification |' : '';
  console.log(
    `| path | delivered/s | accepted/s | vs bare | vs the fetch loop | body bytes | CPU ms/notification | of it the main thread | the SQLite thread | event loop busy |${counts} PostgreSQL server CPU ms/notification |`,
  );
  console.log(`|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|${counts ? '--:|' : ''}--:|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  for (const n of notes) console.log(n);
  console.log(
    `CPU bound at 0.6× the bare loop (${(0.6 * bareRate).toFixed(0)}/s on ${cores} cores): ${budgetMs.toFixed(3)} ms of CPU per notification, and ${wallMs.toFixed(3)} ms of any one thread (the bare loop's main thread: ${median(bare.map((r) => r.mainMs / N)).toFixed(3)} ms)\n  ${bounds.join('\n  ')}`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
