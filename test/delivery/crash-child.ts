/**
 * Child process of crash.test.ts: one delivery worker over a store, as the service runs it.
 *
 *   node --import tsx test/delivery/crash-child.ts
 *   env: STORE_URL (sqlite:<file> or postgres://…), STORE_SCHEMA (PostgreSQL, optional),
 *        LEASE_MS, ATTEMPT_TIMEOUT_MS, INSTANCE_ID (optional: the worker's claim owner)
 *
 * Prints "ready" once the worker runs. SIGTERM stops it gracefully (exit 0); the test also SIGKILLs it.
 */
import { pino } from 'pino';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { createNotifier, Notifiers } from '../../src/integrations/index.js';
import { integrationOptions } from '../../src/integrations/types.js';
import { LOOPBACK_EGRESS } from './support.js';
import { openStore } from '../../src/store/index.js';

const url = process.env['STORE_URL'];
if (!url) throw new Error('STORE_URL is required');
const schema = process.env['STORE_SCHEMA'] || undefined;
const attemptTimeoutMs = Number(process.env['ATTEMPT_TIMEOUT_MS'] ?? 1_000);
const leaseMs = Number(process.env['LEASE_MS'] ?? 6_000);

const store = await openStore(url, schema ? { schema } : {});
await store.migrate();
const instanceId = process.env['INSTANCE_ID'] || undefined;
const worker = new DeliveryWorker({
  store,
  ...(instanceId ? { instanceId } : {}),
  notifiers: new Notifiers((type) =>
    createNotifier(
      type,
      integrationOptions({ timeoutMs: attemptTimeoutMs, userAgent: 'certmgr-notify-crash-test', egress: LOOPBACK_EGRESS }),
    ),
  ),
  logger: pino({ level: 'warn' }, pino.destination(2)),
  options: {
    concurrency: 8,
    pollIntervalMs: 20,
    baseDelayMs: 20,
    maxDelayMs: 200,
    attemptTimeoutMs,
    leaseMs,
    // The burst is the point of the test: don't let the WEBHOOK default (20/s) spread it out.
    rateLimits: { WEBHOOK: { ratePerSec: 100_000, burst: 100_000 } },
  },
});
worker.start();
process.stdout.write('ready\n');

process.once('SIGTERM', () => {
  void (async () => {
    await worker.stop(2_000);
    await store.close();
    process.exit(0);
  })();
});
