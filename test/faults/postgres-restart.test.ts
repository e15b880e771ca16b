/**
 * Fault: PostgreSQL stopped mid-run (fast shutdown: every connection is cut) and started again a few seconds
 * later on the same port and data. A dedicated server (test/support/postgres.ts startPostgres; halt/resume), never
 * the shared one other test files use. The real `serve` process keeps running; events are posted in a stream
 * while deliveries drain. A POST not answered 202 is not accepted: the client keeps it and posts it again later,
 * as the emitter does.
 *
 * Outcomes: the serve process is the same one (it did not exit); during the outage POSTs are answered 503 with
 * Retry-After and a body that names no driver detail, /readyz says 503 and /healthz stays 200; after it, every
 * delivery of every accepted event reached the receiver and every row is DELIVERED (0 lost).
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { certificateResourceNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { startPostgres, type PgServer } from '../support/postgres.js';
import { waitFor, type ServiceProcess } from '../e2e/service-process.js';
import { allDeliveries, byStatus, KEY, startServe } from './support.js';
import { limitsFile } from '../support/limits.js';

const WEBHOOKS = 5;
const BATCH = 5; // events per POST
const BEFORE = 8; // batches accepted before the stop
const DURING = 3_000; // ms the server stays down (the stream goes on meanwhile)
const AFTER = 8; // batches accepted after the start

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number; // 0: no HTTP answer (connection error)
  body: string;
  retryAfter: string | null;
}

describe('PostgreSQL restarted mid-run', () => {
  let pgServer: PgServer | undefined;
  let svc: ServiceProcess | undefined;
  let receiver: Receiver | undefined;
  afterAll(async () => {
    await svc?.kill();
    await receiver?.close();
    await pgServer?.stop();
  });

  it('stop for a few seconds, start again: serve survives, POSTs answer 503 meanwhile, 0 accepted events lost', async () => {
    pgServer = await startPostgres();
    receiver = await startReceiver();
    svc = await startServe('postgres', pgServer.url, 'faults-pg-restart', [
      ...limitsFile({ deliveryRetryBase: '50ms', deliveryTimeout: '2s' }),
    ]);
    const pid = svc.proc.pid;
    for (let i = 0; i < WEBHOOKS; i++) {
      const w = await svc
        .gql()
        .request<{ createWebhookIntegration: { id: string } }>(
          `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
          { i: { name: `pg-${i}`, url: `${receiver.url}/hook/${i}` } },
        );
      await svc.gql().request(ops.CreateNotificationRouter, {
        details: { name: `certificates to webhook ${i}`, eventTypeId: 'certmgr-cert-resource-health-notification-config' },
        filterConfig: { advancedFilterExpression: '' },
        integrationConfig: { integrationId: w.createWebhookIntegration.id },
      });
    }

    const get = async (path: string): Promise<number> => (await fetch(`${svc!.url}${path}`)).status;
    const post = async (events: unknown[]): Promise<Answer & { accepted?: { id: string; deliveries: number }[] }> => {
      try {
        const res = await fetch(`${svc!.url}/v1/events`, {
          method: 'POST',
          headers: { 'svc-api-key': KEY, 'content-type': 'application/json' },
          body: JSON.stringify(events),
        });
        const body = await res.text();
        const a: Answer = { status: res.status, body, retryAfter: res.headers.get('retry-after') };
        return res.status === 202 ? { ...a, accepted: (JSON.parse(body) as { events: { id: string; deliveries: number }[] }).events } : a;
      } catch (err) {
        return { status: 0, body: String(err), retryAfter: null };
      }
    };

    const accepted = new Map<string, number>(); // event id → deliveries
    const kept: unknown[][] = []; // batches not accepted: posted again after the outage
    const refusals: Answer[] = [];
    let n = 0;
    const batch = () => Array.from({ length: BATCH }, () => certificateResourceNotReady({ certificateName: `pg-${n++}` }));
    const send = async (events: unknown[]): Promise<boolean> => {
      const a = await post(events);
      if (a.accepted) {
        for (const e of a.accepted) accepted.set(e.id, e.deliveries);
        return true;
      }
      refusals.push(a);
      kept.push(events);
      return false;
    };

    // Stream before the stop; deliveries drain meanwhile.
    for (let i = 0; i < BEFORE; i++) {
      expect(await send(batch())).toBe(true);
      await sleep(50);
    }
    const receivedAtStop = receiver.requests.length;
    await pgServer.halt();
    const stoppedAt = Date.now();
    let readyDuring = 0;
    let healthDuring = 0;
    let postsDuring = 0;
    while (Date.now() - stoppedAt < DURING) {
      await send(batch());
      postsDuring++;
      readyDuring = await get('/readyz');
      healthDuring = await get('/healthz');
      await sleep(200);
    }
    expect(svc.proc.exitCode).toBe(null);
    await pgServer.resume();

    // After the start: the stream goes on, and the kept batches are posted again until accepted.
    for (let i = 0; i < AFTER; i++) {
      await send(batch());
      await sleep(50);
    }
    const reposted = kept.length;
    while (kept.length) {
      const events = kept.shift()!;
      const a = await post(events);
      if (a.accepted) for (const e of a.accepted) accepted.set(e.id, e.deliveries);
      else {
        kept.push(events);
        await sleep(200);
      }
    }

    const expected = [...accepted.values()].reduce((s, d) => s + d, 0);
    expect(expected).toBe(n * WEBHOOKS); // every event posted was accepted in the end
    const distinct = () => new Set(receiver!.requests.map((r) => String(r.headers['webhook-id']))).size;
    await waitFor('every accepted delivery received', () => distinct() >= expected, 90_000, 100);
    const rows = await waitFor(
      'every row DELIVERED',
      async () => {
        const all = await allDeliveries(svc!);
        return all.length >= expected && all.every((r) => r.status === 'DELIVERED') ? all : null;
      },
      60_000,
      250,
    );

    // The same process throughout.
    expect(svc.proc.exitCode).toBe(null);
    expect(svc.proc.signalCode).toBe(null);
    expect(svc.proc.pid).toBe(pid);
    // During the outage: 503 + Retry-After with our own message (or no answer at all), never a 500 or a driver detail.
    expect(postsDuring).toBeGreaterThan(0);
    expect(refusals.length).toBeGreaterThan(0);
    for (const r of refusals) {
      expect([0, 503]).toContain(r.status);
      if (r.status === 503) {
        expect(r.retryAfter).not.toBe(null);
        expect(JSON.parse(r.body)).toEqual({ errors: [{ code: 'SERVICE_UNAVAILABLE', message: 'the store is unavailable; retry later' }] });
      }
    }
    expect(readyDuring).toBe(503);
    expect(healthDuring).toBe(200);
    expect(await get('/readyz')).toBe(200);

    // 0 lost: every delivery of every accepted event is in the store and reached the receiver.
    const perEvent = new Map<string, number>();
    let rowsOfEvents = 0;
    for (let after: string | null = null, more = true; more;) {
      const q: { deliveries: { nodes: { event: { id: string } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } =
        await svc
          .gql()
          .request(
            `query($a: String) { deliveries(first: 500, after: $a) { nodes { event { id } } pageInfo { hasNextPage endCursor } } }`,
            { a: after },
          );
      for (const d of q.deliveries.nodes) perEvent.set(d.event.id, (perEvent.get(d.event.id) ?? 0) + 1);
      rowsOfEvents += q.deliveries.nodes.length;
      more = q.deliveries.pageInfo.hasNextPage;
      after = q.deliveries.pageInfo.endCursor;
    }
    expect(rowsOfEvents).toBe(rows.length);
    for (const [id, deliveries] of accepted) expect(perEvent.get(id)).toBe(deliveries);
    const seen = new Set(receiver.requests.map((r) => String(r.headers['webhook-id'])));
    for (const r of rows) expect(seen.has(r.id)).toBe(true);
    expect(byStatus(rows)).toEqual({ DELIVERED: rows.length });

    console.log(
      `[faults] postgres restart: ${accepted.size} events accepted (${expected} deliveries, ${rows.length} rows), ${receivedAtStop} received before the stop, ` +
        `${postsDuring} POSTs during ${DURING} ms down: ${refusals.filter((r) => r.status === 503).length} × 503, ${refusals.filter((r) => r.status === 0).length} no answer, ` +
        `${reposted} batches re-posted; ${receiver.requests.length} requests, ${receiver.requests.length - seen.size} repeats, 0 lost, same pid`,
    );
  }, 120_000);
});
