/**
 * Delivery benchmark: durable notifications/s to a loopback webhook receiver (events + deliveries written to
 * the store, claimed, signed, POSTed, marked delivered) vs. a bare POST loop with the same concurrency and body
 * size. SQLite (file) always; PostgreSQL too when `DATABASE_URL` is set or Debian's server can be started.
 *
 *   node --import tsx bench/delivery.ts        BENCH_DELIVERIES=2000 BENCH_CONCURRENCY=8
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { DeliveryWorker } from '../src/delivery/index.js';
import { EgressPolicy, parseEgressAllow } from '../src/integrations/egress.js';
import { createNotifier } from '../src/integrations/index.js';
import { openStore } from '../src/store/index.js';
import type { Store } from '../src/store/types.js';
import { certificateResourceNotReady } from '../test/fixtures/events.js';
import { startPostgres } from '../test/support/postgres.js';

// The receivers are on loopback, which the egress policy refuses unless allowed (as --egress-allow does).
const LOOPBACK = new EgressPolicy(parseEgressAllow(['127.0.0.1/32']));

const N = Number(process.env.BENCH_DELIVERIES ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const COMPANY = '11111111-1111-4111-8111-111111111111';

async function receiver() {
  let count = 0;
  let done: () => void = () => undefined;
  const server = createServer((req, res) => {
    req.resume();
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
    /** Resolves once `n` more requests arrived. */
    expect(n: number) {
      target = count + n;
      return new Promise<void>((r) => (done = r));
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function bareLoop(url: string, body: string): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        next++;
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await res.arrayBuffer();
      }
    }),
  );
  return N / ((performance.now() - t0) / 1000);
}

async function durable(store: Store, rcv: Awaited<ReturnType<typeof receiver>>): Promise<{ perSec: number; acceptPerSec: number }> {
  const url = rcv.url;
  await store.migrate();
  const now = Date.now();
  const integ = await store.createIntegration({
    id: randomUUID(),
    companyId: COMPANY,
    name: 'bench',
    type: 'WEBHOOK',
    enabled: true,
    config: { signed: true },
    secrets: { url, signingSecret: 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64') },
    managedBy: null,
    createdAt: now,
    updatedAt: now,
  });
  const worker = new DeliveryWorker({
    store,
    notifiers: (type) =>
      createNotifier(type, { incidentEventsUrl: 'http://127.0.0.1:9', timeoutMs: 10_000, userAgent: 'bench', egress: LOOPBACK }),
    logger: pino({ level: 'silent' }),
    metrics: new Registry(),
    options: { concurrency: CONCURRENCY, rateLimits: { WEBHOOK: { ratePerSec: 1e9, burst: 1e9 } } },
  });
  const arrived = rcv.expect(N);
  const t0 = performance.now();
  // accept in batches of 100 events (one transaction each), as POST /v1/events does
  worker.start();
  for (let b = 0; b < N / 100; b++) {
    const events = Array.from({ length: 100 }, (_, i) => {
      const ev = certificateResourceNotReady({ certificateName: `bench-${b}-${i}` });
      return { id: randomUUID(), companyId: COMPANY, type: ev.type, data: ev.data, receivedAt: Date.now() };
    });
    // as POST /v1/events does: all events, then all their deliveries, in one transaction
    await store.transaction(async (tx) => {
      await tx.insertEvents(events);
      await tx.insertDeliveries(
        events.map((e) => ({
          id: randomUUID(),
          companyId: COMPANY,
          eventId: e.id,
          routerId: randomUUID(),
          routerName: 'bench',
          integrationId: integ.id,
          createdAt: Date.now(),
        })),
      );
    });
    worker.kick();
  }
  const tAccepted = performance.now();
  await arrived;
  const t1 = performance.now();
  await worker.stop();
  return { perSec: N / ((t1 - t0) / 1000), acceptPerSec: N / ((tAccepted - t0) / 1000) };
}

export async function run(): Promise<void> {
  const rcv = await receiver();
  const body = JSON.stringify({ specversion: '1.0', data: certificateResourceNotReady().data }).padEnd(1500, ' ');
  const rows: string[][] = [];
  const bare = await bareLoop(rcv.url, body);
  rows.push(['bare POST loop (baseline)', bare.toFixed(0), '', '1.00×']);

  const dir = mkdtempSync(join(tmpdir(), 'cmn-bench-'));
  const engines: [string, () => Promise<Store>][] = [['durable, SQLite file', () => openStore(`sqlite:${join(dir, 'bench.db')}`)]];
  let pg: Awaited<ReturnType<typeof startPostgres>> | undefined;
  try {
    const url = process.env.DATABASE_URL ?? (pg = await startPostgres()).url;
    engines.push(['durable, PostgreSQL', () => openStore(url, { schema: `bench_${randomUUID().slice(0, 8)}` })]);
  } catch (e) {
    console.log(`(PostgreSQL not available: ${(e as Error).message.split('\n')[0]})`);
  }
  for (const [name, open] of engines) {
    const store = await open();
    const r = await durable(store, rcv);
    await store.close();
    rows.push([name, r.perSec.toFixed(0), r.acceptPerSec.toFixed(0), `${(r.perSec / bare).toFixed(2)}×`]);
  }
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
  await rcv.close();
  console.log(`${N} notifications, concurrency ${CONCURRENCY}, ~1.5 KB signed CloudEvents bodies, loopback receiver`);
  console.log('| path | delivered/s | accepted/s | vs bare |');
  console.log('|:--|--:|--:|--:|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
