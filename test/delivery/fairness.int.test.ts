/**
 * Fair under storms, end to end: a real store, a real worker and a real loopback receiver standing in for a Slack
 * channel. Two routers share one rate-limited integration; a storm on router A must not hold back router B's
 * notification behind it, and A's notifications keep their order per key. The worker's clock is the test's: slots
 * pass only when the test moves it, so the assertions are on the order of arrival, never on timing.
 */
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { orderOfEvent } from '../../src/delivery/order.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import type { InternalEvent } from '../../src/events/families.js';
import { createNotifier, Notifiers } from '../../src/integrations/index.js';
import { integrationOptions } from '../../src/integrations/types.js';
import type { IntegrationRecord, Store } from '../../src/store/types.js';
import { EVENTS } from '../integrations/helpers.js';
import { captureLog, ENGINES, type Engine, LOOPBACK_EGRESS, type Receiver, startReceiver, waitFor } from './support.js';

/** 5 per second, one at a time: a slot is 200 ms of the worker's clock. */
const LIMIT = { ratePerSec: 5, burst: 1 };
const SLOT_MS = 200;
const KEYS = 40;
const STEPS = 5; // 40 issuers × 5 state changes: a storm of 200 on router A

const issuerEvent = (issuerName: string, step: number): InternalEvent => {
  const kind = step % 2 === 0 ? 'notready' : 'active';
  const t = EVENTS[`evt.healthstatus.certmgr-issuer.${kind}`];
  const statusTransition = new Date(Date.UTC(2026, 2, 1, 10, 0, step)).toISOString();
  return {
    type: t.type,
    data: { ...t.data, issuerName, statusMessage: `step ${step} of ${issuerName}`, statusTransition },
  } as InternalEvent;
};

describe.each(ENGINES.map((make) => [make().name, make] as const))('fair under storms on %s', (_name, makeEngine) => {
  let engine: Engine;
  let store: Store;
  let rx: Receiver;
  let worker: DeliveryWorker | undefined;
  let clock = 0;

  beforeAll(() => {
    engine = makeEngine();
  });
  afterAll(async () => {
    await engine.cleanup();
  });
  beforeEach(async () => {
    store = await engine.open();
    rx = await startReceiver();
  });
  afterEach(async () => {
    await worker?.stop(1_000);
    worker = undefined;
    await rx.close();
    await store.close();
  });

  /** Accepts one event for one router into the integration, as ingestion does (order fields included). */
  let accepted = 0;
  async function accept(integ: IntegrationRecord, routerId: string, event: InternalEvent): Promise<string> {
    const at = Math.min(++accepted, clock);
    const eventId = randomUUID();
    const id = randomUUID();
    await store.transaction(async (tx) => {
      await tx.insertEvent({ id: eventId, companyId: integ.companyId, type: event.type, data: event.data, receivedAt: at });
      await tx.insertDeliveries([
        {
          id,
          companyId: integ.companyId,
          eventId,
          routerId,
          routerName: routerId,
          integrationId: integ.id,
          createdAt: at,
          ...orderOfEvent(event, at, 0),
        },
      ]);
    });
    return id;
  }

  /** What each arrival was: A's (issuer index, step) or B's. */
  const arrivals = () =>
    rx.hits.map((h) => {
      const m = /step (\d+) of storm-(\d+)/.exec(h.body);
      if (m) return { router: 'A', key: Number(m[2]), step: Number(m[1]) };
      if (h.body.includes('step 0 of unrelated-issuer')) return { router: 'B', key: -1, step: 0 };
      throw new Error(`unexpected notification: ${h.body.slice(0, 200)}`);
    });

  /** Moves the worker's clock by one slot and waits for the notification it lets through. */
  async function nextSlot(): Promise<void> {
    const before = rx.hits.length;
    clock += SLOT_MS;
    worker!.kick();
    await waitFor('the next slot’s notification', () => rx.hits.length > before);
  }

  it("a 200-event storm on router A and one event on router B share a 5/s Slack channel: B's goes within the first two slots after it is accepted; A's keep their order per key", async () => {
    clock = Date.now();
    accepted = clock - 60_000;
    const company = `company-${randomUUID()}`;
    const integ = await store.createIntegration({
      id: randomUUID(),
      companyId: company,
      name: 'shared channel',
      type: 'SLACK',
      enabled: true,
      config: {},
      secrets: { webhookUrl: `${rx.url}/services/T000/B000/XXXX` },
      managedBy: null,
      rateLimit: LIMIT,
      createdAt: clock,
      updatedAt: clock,
    });
    const routerA = randomUUID();
    const routerB = randomUUID();
    for (let step = 0; step < STEPS; step++) {
      for (let k = 0; k < KEYS; k++) await accept(integ, routerA, issuerEvent(`storm-${k}`, step));
    }

    worker = new DeliveryWorker({
      store,
      notifiers: new Notifiers((type) =>
        createNotifier(type, integrationOptions({ timeoutMs: 2_000, userAgent: 'certmgr-notify-test', egress: LOOPBACK_EGRESS })),
      ),
      logger: captureLog('warn').logger,
      metrics: new Registry(),
      clock: () => clock,
      options: { pollIntervalMs: 10, attemptTimeoutMs: 2_000 },
    });
    worker.start();
    // the burst: one goes at once; the rest of the storm's heads are booked into slots
    await waitFor('the first of the storm', () => rx.hits.length === 1);
    for (let i = 0; i < 3; i++) await nextSlot();

    // B's event is accepted while the storm's slots are booked far ahead (the clock stands still meanwhile)
    const seen = rx.hits.length;
    const bId = await accept(integ, routerB, issuerEvent('unrelated-issuer', 0));
    worker.kick();
    await waitFor('B booked or sent', async () => {
      const d = (await store.listDeliveries(company, { limit: 1000 })).find((x) => x.id === bId);
      return d && (d.status === 'DELIVERED' || (d.status === 'PENDING' && d.nextAttemptAt > clock));
    });
    expect(rx.hits.length).toBe(seen);
    while (!arrivals().some((a) => a.router === 'B')) {
      await nextSlot();
      expect(rx.hits.length - seen, 'slots after B was accepted').toBeLessThanOrEqual(2);
    }
    const after = arrivals().slice(seen);
    expect(after.findIndex((a) => a.router === 'B')).toBeLessThanOrEqual(1);

    // the rest of the storm drains; every one arrives once, each issuer's in the order of its events
    while (rx.hits.length < KEYS * STEPS + 1) await nextSlot();
    const all = arrivals();
    expect(all).toHaveLength(KEYS * STEPS + 1);
    for (let k = 0; k < KEYS; k++) {
      expect(
        all.filter((a) => a.router === 'A' && a.key === k).map((a) => a.step),
        `storm-${k}`,
      ).toEqual([0, 1, 2, 3, 4]);
    }
  }, 120_000);
});
