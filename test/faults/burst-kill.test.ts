/**
 * Fault: SIGKILL of the real `serve` process in the middle of a 5,000-notification burst, on SQLite and on
 * PostgreSQL, then a restart under the same --instance-id. Outcomes only: 0 lost (every delivery id of the store
 * reached the receiver at least once), every repeat carries the same webhook-id and the same body, and every
 * delivery row ends DELIVERED.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { certificateResourceNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { waitFor, type ServiceProcess } from '../e2e/service-process.js';
import { allDeliveries, byStatus, freshStore, startServe, type Engine } from './support.js';
import { limitsFile } from '../support/limits.js';

// 100 events fanned out by 50 routers to 50 webhook integrations: a single integration is rate-limited to
// 20/s (src/delivery/rate-limit.ts), which would make one integration's 5,000 a four-minute drain.
const INTEGRATIONS = 50;
const EVENTS = 100;
const TOTAL = INTEGRATIONS * EVENTS;
const KILL_AT = 1500; // distinct ids received before the kill: well inside the burst

describe.each(['sqlite', 'postgres'] as const)('SIGKILL during a %s burst', (kind: Engine) => {
  const procs: ServiceProcess[] = [];
  let receiver: Receiver | undefined;
  afterAll(async () => {
    for (const p of procs) await p.kill();
    await receiver?.close();
  });

  it(`5,000 notifications, SIGKILL after ${KILL_AT} received, restart: 0 lost, repeats identical, all DELIVERED`, async () => {
    // Hold every request until the whole burst is accepted, so the kill lands mid-drain and not mid-ingestion.
    let open = false;
    const held: ServerResponse[] = [];
    receiver = await startReceiver((_r, res) => {
      if (open) res.end('ok');
      else held.push(res);
    });
    const store = freshStore(kind);
    const args = [...limitsFile({ deliveryRetryBase: '50ms', deliveryTimeout: '10s' })];
    const instance = `faults-burst-${kind}`;
    let svc = await startServe(kind, store, instance, args);
    procs.push(svc);
    for (let n = 0; n < INTEGRATIONS; n++) {
      const w = await svc
        .gql()
        .request<{ createWebhookIntegration: { id: string } }>(
          `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
          { i: { name: `burst-${n}`, url: `${receiver.url}/hook/${n}` } },
        );
      await svc.gql().request(ops.CreateNotificationRouter, {
        details: { name: `certificates to webhook ${n}`, eventTypeId: 'certmgr-cert-resource-health-notification-config' },
        filterConfig: { advancedFilterExpression: '' },
        integrationConfig: { integrationId: w.createWebhookIntegration.id },
      });
    }

    const evs = await svc.postEvents(
      Array.from({ length: EVENTS }, (_, i) => certificateResourceNotReady({ certificateName: `burst-${i}` })),
    );
    expect(evs.reduce((s, e) => s + e.deliveries, 0)).toBe(TOTAL);
    open = true;
    for (const res of held.splice(0)) res.end('ok');

    const distinct = () => new Set(receiver!.requests.map((r) => String(r.headers['webhook-id']))).size;
    await waitFor('part of the burst', () => distinct() >= KILL_AT, 60_000, 5);
    await svc.kill('SIGKILL');
    const seenAtKill = distinct();
    expect(seenAtKill).toBeLessThan(TOTAL);

    svc = await startServe(kind, store, instance, args);
    procs.push(svc);
    await waitFor('every notification received', () => distinct() >= TOTAL, 120_000, 100);
    // The store agrees once the last acknowledgements are written.
    const rows = await waitFor(
      'every row DELIVERED',
      async () => {
        const all = await allDeliveries(svc);
        return all.every((r) => r.status === 'DELIVERED') ? all : null;
      },
      60_000,
      250,
    );

    // 0 lost: every delivery id of the store reached the receiver; nothing arrived that the store does not know.
    const ids = new Set(rows.map((r) => r.id));
    expect(ids.size).toBe(TOTAL);
    const bodies = new Map<string, string>();
    let repeats = 0;
    for (const r of receiver.requests) {
      const id = String(r.headers['webhook-id']);
      expect(ids.has(id)).toBe(true);
      const prev = bodies.get(id);
      if (prev === undefined) bodies.set(id, r.body);
      else {
        repeats++;
        expect(r.body).toBe(prev); // a repeat is the same notification: same webhook-id, same body
      }
    }
    expect(bodies.size).toBe(TOTAL);
    expect(byStatus(rows)).toEqual({ DELIVERED: TOTAL });
    console.log(
      `[faults] burst ${kind}: ${TOTAL} notifications, killed after ${seenAtKill} distinct received, ${receiver.requests.length} requests, ${repeats} repeats, 0 lost`,
    );
  }, 240_000);
});
