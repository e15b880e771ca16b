/**
 * Order per key end to end through the worker: real stores, real loopback receivers, the
 * order fields derived as ingestion derives them (orderOfEvent). Assertions are on what the receiver
 * got and in which order, never on timing.
 */
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { orderOfEvent } from '../../src/delivery/order.js';
import { DELIVERY_METRICS, DeliveryWorker, type DeliveryWorkerOptions } from '../../src/delivery/worker.js';
import type { InternalEvent } from '../../src/events/families.js';
import { createNotifier, Notifiers } from '../../src/integrations/index.js';
import { integrationOptions } from '../../src/integrations/types.js';
import type { DeliveryRecord, IntegrationRecord, NewDelivery, Store } from '../../src/store/types.js';
import { EVENTS } from '../integrations/helpers.js';
import {
  captureLog,
  createWebhookIntegration,
  ENGINES,
  type Engine,
  LOOPBACK_EGRESS,
  type Receiver,
  startReceiver,
  waitFor,
} from './support.js';

const FAST: Partial<DeliveryWorkerOptions> = { pollIntervalMs: 20, baseDelayMs: 20, maxDelayMs: 100, attemptTimeoutMs: 2_000 };

const notready = (issuerName: string, statusTransition: string): InternalEvent => ({
  type: 'evt.healthstatus.certmgr-issuer.notready',
  data: { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, issuerName, statusTransition },
});
const active = (issuerName: string, statusTransition: string): InternalEvent => ({
  type: 'evt.healthstatus.certmgr-issuer.active',
  data: { ...EVENTS['evt.healthstatus.certmgr-issuer.active'].data, issuerName, statusTransition },
});

describe.each(ENGINES.map((make) => [make().name, make] as const))('order per key through the worker on %s', (_name, makeEngine) => {
  let engine: Engine;
  let store: Store;
  let rx: Receiver | undefined;
  const workers: DeliveryWorker[] = [];
  let registry: Registry;

  beforeAll(() => {
    engine = makeEngine();
  });
  afterAll(async () => {
    await engine.cleanup();
  });
  beforeEach(async () => {
    store = await engine.open();
    registry = new Registry();
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop(1_000);
    await rx?.close();
    rx = undefined;
    await store.close();
  });

  function startWorker(incidentEventsUrl: string, options: Partial<DeliveryWorkerOptions> = {}): DeliveryWorker {
    const w = new DeliveryWorker({
      store,
      notifiers: new Notifiers((type) =>
        createNotifier(
          type,
          integrationOptions({ timeoutMs: 2_000, userAgent: 'certmgr-notify-test', egress: LOOPBACK_EGRESS, incidentEventsUrl }),
        ),
      ),
      logger: captureLog().logger,
      metrics: registry,
      options: { ...FAST, ...options },
    });
    workers.push(w);
    w.start();
    return w;
  }

  /** Accepts one event with one delivery to the integration, as ingestion does (order fields included). */
  let accepted = Date.now();
  async function accept(integ: IntegrationRecord, event: InternalEvent): Promise<NewDelivery> {
    const at = ++accepted; // acceptance sequence strictly increasing, like successive requests
    const eventId = randomUUID();
    const d: NewDelivery = {
      id: randomUUID(),
      companyId: integ.companyId,
      eventId,
      routerId: randomUUID(),
      routerName: 'issuers',
      integrationId: integ.id,
      createdAt: at,
      ...orderOfEvent(event, at, 0),
    };
    await store.transaction(async (tx) => {
      await tx.insertEvent({ id: eventId, companyId: integ.companyId, type: event.type, data: event.data, receivedAt: at });
      await tx.insertDeliveries([d]);
    });
    return d;
  }

  const rows = (companyId: string) => store.listDeliveries(companyId, { limit: 1000 });
  const settled = (companyId: string, n: number) => async () => {
    const rs = await rows(companyId);
    return rs.length === n && rs.every((d) => d.status !== 'PENDING' && d.status !== 'IN_FLIGHT') ? rs : undefined;
  };
  const byId = (rs: DeliveryRecord[]) => new Map(rs.map((d) => [d.id, d]));

  it('a crash: a resolve claimed before a kill is never sent after the newer trigger; it ends SUPERSEDED', async () => {
    rx = await startReceiver({ handler: (_h, res) => ((res.statusCode = 202), res.end('{"status":"success"}')) });
    const A = `company-${randomUUID()}`;
    const t = Date.now();
    const integ = await store.createIntegration({
      id: randomUUID(),
      companyId: A,
      name: 'pager',
      type: 'INCIDENT_MGMT',
      enabled: true,
      config: {},
      secrets: { integrationKey: 'R0UTINGKEY0123456789012345678901' },
      managedBy: null,
      createdAt: t,
      updatedAt: t,
    });
    const iso = (s: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, s)).toISOString();

    // 1. Ready=False: the trigger is delivered.
    const first = startWorker(rx.url);
    await accept(integ, notready('le-prod', iso(0)));
    await waitFor('trigger delivered', settled(A, 1));
    await first.stop();

    // 2. Ready=True; the process claims the resolve and is killed before it records anything.
    const original = await accept(integ, active('le-prod', iso(10)));
    const claimed = await store.claimDeliveries(Date.now(), 10, 400);
    expect(claimed.map((c) => c.id)).toEqual([original.id]);

    // 3. After the restart: the emitter re-sends the resolve (new ids), then Ready=False again.
    const resent = await accept(integ, active('le-prod', iso(10)));
    const trigger2 = await accept(integ, notready('le-prod', iso(12)));
    startWorker(rx.url);
    const final = byId(await waitFor('all settled', settled(A, 4)));

    const actions = rx.hits.map((h) => (JSON.parse(h.body) as { event_action: string }).event_action);
    expect(actions).toEqual(['trigger', 'trigger']);
    expect(final.get(original.id)!.status).toBe('SUPERSEDED');
    expect(final.get(resent.id)!.status).toBe('SUPERSEDED');
    expect(final.get(trigger2.id)!.status).toBe('DELIVERED');
    const m = (await registry.getSingleMetric(DELIVERY_METRICS.superseded)!.get()).values;
    expect(m.reduce((s, v) => s + v.value, 0)).toBe(2);
  });

  it('webhooks: a key is delivered in event order through a failed first attempt, and its outage does not hold up other keys', async () => {
    const blocked = new Set<string>();
    rx = await startReceiver({
      handler: (h, res, nth) => {
        // the first attempt of every delivery of key "slow" fails; key "down" fails until released
        if (blocked.has(h.id) || (slowIds.has(h.id) && nth === 1)) {
          res.statusCode = 503;
          return res.end('try later');
        }
        res.end('ok');
      },
    });
    const slowIds = new Set<string>();
    const A = `company-${randomUUID()}`;
    const integ = await createWebhookIntegration(store, A, rx.url);
    const iso = (s: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, s)).toISOString();

    // key "slow": five transitions, accepted out of event order; key "down": one, its receiver path failing
    const slow: NewDelivery[] = [];
    for (const s of [3, 1, 4, 2, 5]) slow.push(await accept(integ, (s % 2 ? notready : active)('slow', iso(s))));
    for (const d of slow) slowIds.add(d.id);
    const down = await accept(integ, notready('down', iso(0)));
    const downNext = await accept(integ, active('down', iso(1)));
    blocked.add(down.id);
    const others: NewDelivery[] = [];
    for (let i = 0; i < 5; i++) others.push(await accept(integ, notready(`other-${i}`, iso(i))));

    startWorker(rx.url);
    // every other key is delivered while "down" is still failing
    await waitFor('other keys and "slow" delivered', async () => {
      const rs = byId(await rows(A));
      return [...others, ...slow].every((d) => rs.get(d.id)!.status === 'DELIVERED') ? true : undefined;
    });
    const mid = byId(await rows(A));
    // "down" keeps failing (waiting for its retry, or being retried right now); its newer one is never handed out meanwhile
    expect(['PENDING', 'IN_FLIGHT']).toContain(mid.get(down.id)!.status);
    expect(mid.get(downNext.id)!.status).toBe('PENDING');
    blocked.delete(down.id);
    await waitFor('all delivered', async () => ((await rows(A)).every((d) => d.status === 'DELIVERED') ? true : undefined));

    // successful hits of "slow", in the order the receiver got them: event order (statusTransition)
    const slowOk = rx.hits.filter((h, i) => slowIds.has(h.id) && rx!.hits.slice(0, i).some((p) => p.id === h.id));
    const order = new Map([...slow].map((d) => [d.id, d.orderAt]));
    const seen = slowOk.map((h) => order.get(h.id)!);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(seen).toHaveLength(5);
    // "down": its newer delivery only after the older one succeeded
    const downHits = rx.hits.filter((h) => h.id === down.id || h.id === downNext.id).map((h) => h.id);
    expect(downHits.lastIndexOf(down.id)).toBeLessThan(downHits.indexOf(downNext.id));
  });
});
