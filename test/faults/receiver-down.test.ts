/**
 * Fault: the receivers are down for a while, then back. The real `serve` process (SQLite) delivers to webhook
 * integrations and one INCIDENT_MGMT integration (--incident-events-url), all on one loopback address.
 *
 * 1. Down, then back: first the port refuses connections (a receiver was started and closed: nothing listens),
 *    then it listens again on the same port and answers 503 for a while, then 200. Outcomes: every delivery id
 *    reached the receiver with a 2xx answer, every row ends DELIVERED (none DEAD), and every repeat carries the
 *    same webhook-id and the same body (per dedup_key for the incident integration).
 * 2. Down longer than deliveryMaxAge: every row ends DEAD, listed by deliveries(filter: {status: DEAD}) with
 *    an error that says why; once the receiver is back, new events are delivered and nothing dead is sent.
 * Together: "delivered or visibly dead-lettered".
 */
import type { ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { certificateResourceNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { waitFor, type ServiceProcess } from '../e2e/service-process.js';
import { allDeliveries, byStatus, freshStore, startServe } from './support.js';
import { limitsFile } from '../support/limits.js';

const WEBHOOKS = 20;
const EVENTS = 15;
const CERT_EVENTS = 'certmgr-cert-resource-health-notification-config';

/** A port where nothing listens now, and that a receiver can listen on again later. */
async function downPort(): Promise<number> {
  const r = await startReceiver();
  const port = Number(new URL(r.url).port);
  await r.close();
  return port;
}

async function webhooks(svc: ServiceProcess, base: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const w = await svc
      .gql()
      .request<{ createWebhookIntegration: { id: string } }>(
        `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
        { i: { name: `down-${i}`, url: `${base}/hook/${i}` } },
      );
    ids.push(w.createWebhookIntegration.id);
    await route(svc, w.createWebhookIntegration.id, `certificates to webhook ${i}`);
  }
  return ids;
}

async function route(svc: ServiceProcess, integrationId: string, name: string): Promise<void> {
  await svc.gql().request(ops.CreateNotificationRouter, {
    details: { name, eventTypeId: CERT_EVENTS },
    filterConfig: { advancedFilterExpression: '' },
    integrationConfig: { integrationId },
  });
}

interface FullRow {
  id: string;
  status: string;
  attempts: number;
  lastError: string | null;
  integrationId: string;
}

async function rowsWithError(svc: ServiceProcess, status?: string): Promise<FullRow[]> {
  const q = await svc
    .gql()
    .request<{ deliveries: { nodes: FullRow[]; pageInfo: { hasNextPage: boolean } } }>(
      `query($s: DeliveryStatus) { deliveries(filter: { status: $s }, first: 500) { nodes { id status attempts lastError integrationId } pageInfo { hasNextPage } } }`,
      { s: status ?? null },
    );
  expect(q.deliveries.pageInfo.hasNextPage).toBe(false); // fewer than 500 here
  return q.deliveries.nodes;
}

describe('a receiver down for a while, then back (SQLite)', () => {
  const procs: ServiceProcess[] = [];
  const receivers: Receiver[] = [];
  afterAll(async () => {
    for (const p of procs) await p.kill();
    for (const r of receivers) await r.close();
  });

  it('refused, then 503, then 200: every delivery reached the receiver, all DELIVERED, none DEAD, repeats identical', async () => {
    const port = await downPort();
    const base = `http://127.0.0.1:${port}`;
    // deliveryMaxAge 10m: nothing may die during the outage; retry base 50 ms keeps the backoff short.
    const args = [
      '--incident-events-url',
      base,

      ...limitsFile({ deliveryRetryBase: '50ms', deliveryTimeout: '2s', deliveryMaxAge: '10m' }),
    ];
    const svc = await startServe('sqlite', freshStore('sqlite'), 'faults-receiver-down', args);
    const t0 = Date.now();
    procs.push(svc);
    await webhooks(svc, base, WEBHOOKS);
    const p = await svc.gql().request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
      name: 'pager',
      integrationKey: 'R0UTINGKEY-faults-0123456789',
    });
    const incidentId = p.createIncidentMgmtIntegration.id;
    await route(svc, incidentId, 'certificates to pager');

    const evs = await svc.postEvents(
      Array.from({ length: EVENTS }, (_, i) => certificateResourceNotReady({ certificateName: `down-${i}` })),
    );
    const total = evs.reduce((s, e) => s + e.deliveries, 0);
    expect(total).toBe(EVENTS * (WEBHOOKS + 1));

    // Phase 1, connection refused: wait until every delivery has failed at least once (it is being retried).
    const refused = await waitFor(
      'every delivery refused',
      async () => {
        const rows = await rowsWithError(svc);
        return rows.length === total && rows.every((r) => r.attempts >= 1 && r.lastError !== null) ? rows : null;
      },
      60_000,
      250,
    );
    expect(refused.filter((r) => r.status === 'DELIVERED' || r.status === 'DEAD')).toEqual([]);
    const refusedMs = Date.now() - t0;

    // Phase 2, back on the same port but answering 503, then phase 3: 200 (202 for the incident API).
    let up = false;
    const ok = new Set<string>(); // webhook-ids answered 2xx
    const okKeys = new Set<string>(); // incident dedup_keys answered 2xx
    const receiver = await startReceiver((r, res: ServerResponse) => {
      if (!up) {
        res.statusCode = 503;
        return res.end('down for maintenance');
      }
      if (r.path.startsWith('/hook/')) ok.add(String(r.headers['webhook-id']));
      else okKeys.add((JSON.parse(r.body) as { dedup_key: string }).dedup_key);
      res.statusCode = r.path.startsWith('/hook/') ? 200 : 202;
      res.end(r.path.startsWith('/hook/') ? 'ok' : '{"status":"success"}');
    }, port);
    receivers.push(receiver);
    await waitFor('a hundred 503 answers', () => receiver.requests.length >= 100, 60_000, 50);
    const answered503 = receiver.requests.length;
    up = true;
    const upMs = Date.now() - t0;

    const rows = await waitFor(
      'every row DELIVERED',
      async () => {
        const all = await allDeliveries(svc);
        return all.length === total && all.every((r) => r.status === 'DELIVERED') ? all : null;
      },
      60_000,
      250,
    );
    expect(byStatus(rows)).toEqual({ DELIVERED: total });
    const doneMs = Date.now() - t0;
    expect(await allDeliveries(svc, undefined, 'DEAD')).toEqual([]);

    // Every webhook delivery id reached the receiver with a 2xx; repeats (the 503'd ones) carry the same body.
    const incidentRows = new Set(refused.filter((f) => f.integrationId === incidentId).map((f) => f.id));
    const webhookRows = rows.filter((r) => !incidentRows.has(r.id));
    expect(webhookRows.length).toBe(EVENTS * WEBHOOKS);
    for (const r of webhookRows) expect(ok.has(r.id)).toBe(true);
    const bodies = new Map<string, string>();
    let repeats = 0;
    for (const r of receiver.requests) {
      const id = r.path.startsWith('/hook/')
        ? `webhook ${String(r.headers['webhook-id'])}`
        : `incident ${(JSON.parse(r.body) as { dedup_key: string }).dedup_key}`;
      const prev = bodies.get(id);
      if (prev === undefined) bodies.set(id, r.body);
      else {
        repeats++;
        expect(r.body).toBe(prev);
      }
    }
    expect(ok.size).toBe(EVENTS * WEBHOOKS);
    expect(okKeys.size).toBe(EVENTS); // one dedup_key per certificate
    expect(bodies.size).toBe(total);
    const attempts = rows.reduce((s, r) => s + r.attempts, 0);
    console.log(
      `[faults] receiver down: ${total} deliveries (${EVENTS * WEBHOOKS} webhook, ${EVENTS} incident), refused then ${answered503} × 503, ` +
        `${attempts} attempts in all, ${receiver.requests.length} requests received, ${repeats} repeats, 0 lost, 0 DEAD ` +
        `(all refused once after ${refusedMs} ms, up after ${upMs} ms, all DELIVERED after ${doneMs} ms)`,
    );
  }, 120_000);

  it('down longer than deliveryMaxAge: every row DEAD and listed as such; nothing dead is sent once it is back', async () => {
    const port = await downPort();
    const base = `http://127.0.0.1:${port}`;
    // The smallest max age the config allows (1 s): the outage outlasts it.
    const args = [...limitsFile({ deliveryRetryBase: '50ms', deliveryTimeout: '2s', deliveryMaxAge: '1s' })];
    const svc = await startServe('sqlite', freshStore('sqlite'), 'faults-receiver-dead', args);
    procs.push(svc);
    await webhooks(svc, base, 5);
    const evs = await svc.postEvents(Array.from({ length: 10 }, (_, i) => certificateResourceNotReady({ certificateName: `dead-${i}` })));
    const total = evs.reduce((s, e) => s + e.deliveries, 0);
    expect(total).toBe(50);

    const dead = await waitFor(
      'every row DEAD',
      async () => {
        const all = await rowsWithError(svc);
        return all.length === total && all.every((r) => r.status === 'DEAD') ? all : null;
      },
      60_000,
      250,
    );
    // Visibly dead-lettered: the DEAD filter lists each one, with the reason.
    const listed = await rowsWithError(svc, 'DEAD');
    expect(new Set(listed.map((r) => r.id))).toEqual(new Set(dead.map((r) => r.id)));
    for (const r of listed) expect(r.lastError).toMatch(/^gave up after \d+ attempts?/);

    // Back: a new event is delivered; none of the dead ones is sent.
    const receiver = await startReceiver(undefined, port);
    receivers.push(receiver);
    const fresh = await svc.postEvents([certificateResourceNotReady({ certificateName: 'after-outage' })]);
    expect(fresh[0]!.deliveries).toBe(5);
    const rows = await waitFor(
      'the new deliveries DELIVERED',
      async () => {
        const all = await allDeliveries(svc);
        return all.filter((r) => r.status === 'DELIVERED').length === 5 ? all : null;
      },
      30_000,
      100,
    );
    expect(byStatus(rows)).toEqual({ DEAD: 50, DELIVERED: 5 });
    const deadIds = new Set(dead.map((r) => r.id));
    const received = receiver.requests.map((r) => String(r.headers['webhook-id']));
    expect(received.filter((id) => deadIds.has(id))).toEqual([]);
    expect(new Set(received).size).toBe(5);
    console.log(
      `[faults] receiver down past max age: ${total} deliveries DEAD after ${dead.reduce((s, r) => s + r.attempts, 0)} attempts, all listed by status DEAD; 5 new ones delivered after, 0 dead sent`,
    );
  }, 120_000);
});
