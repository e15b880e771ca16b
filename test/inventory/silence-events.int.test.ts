/**
 * Silent clusters as events (docs/inventory.md "Silent clusters as events") against real stores (SQLite file,
 * PostgreSQL), a real delivery worker and a real loopback webhook receiver: a cluster reports, falls silent past
 * clusterSilenceAfter → one `.notready` delivered; checks again, a restarted watch and a second leader at once
 * repeat nothing; it reports again → one `.active` with unhealthyDuration; a company without a router on the
 * family gets nothing. Time is the clock passed in, set by the test.
 */
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { createNotifier, Notifiers } from '../../src/integrations/index.js';
import { integrationOptions } from '../../src/integrations/types.js';
import { startSilenceWatch, type SilenceWatch } from '../../src/inventory/silence.js';
import { INVENTORY_PROTOCOL, type InventoryReport } from '../../src/model/inventory.js';
import { createRoutingMetrics } from '../../src/routing/metrics.js';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import { serviceContext } from '../../src/service/context.js';
import type { IngestDeps } from '../../src/ingest/pipeline.js';
import { applyInventoryReport } from '../../src/service/inventory.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import {
  captureLog,
  createWebhookIntegration,
  ENGINES,
  type Engine,
  LOOPBACK_EGRESS,
  type Receiver,
  startReceiver,
  waitFor,
} from '../delivery/support.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';

// in the past: the clock also dates the deliveries, which the worker (real time) must find due
const T0 = Date.parse('2020-01-01T06:00:00Z');
const MIN = 60_000;
const SILENCE = 15 * MIN;
const FAMILY = 'certmgr-agent-health-notification-config';

interface AgentPayload {
  kind: string;
  state: string;
  eventType: string;
  correlationKey: string;
  cluster: { id: string; name: string };
  reason: string;
  statusTransition: string;
  unhealthyDuration: string | null;
  agent: { version: string; lastSeenAt: string };
}

describe.each(ENGINES.map((make) => [make().name, make] as const))('silent clusters as events on %s', (_name, makeEngine) => {
  let engine: Engine;
  let store: Store;
  let extra: Store[] = [];
  let watches: SilenceWatch[] = [];
  let rx: Receiver;
  let worker: DeliveryWorker;
  let now = T0;
  let company: string;
  const clusterId = randomUUID();
  const log = captureLog('info');

  beforeAll(() => {
    engine = makeEngine();
  });
  afterAll(async () => {
    await engine.cleanup();
  });
  beforeEach(async () => {
    store = await engine.open();
    rx = await startReceiver();
    company = randomUUID();
    now = T0;
    seq = 0;
    epoch = randomUUID();
    worker = new DeliveryWorker({
      store,
      notifiers: new Notifiers((type) =>
        createNotifier(type, integrationOptions({ timeoutMs: 2_000, userAgent: 'test', egress: LOOPBACK_EGRESS })),
      ),
      logger: log.logger,
      metrics: new Registry(),
      options: { pollIntervalMs: 20, baseDelayMs: 20, maxDelayMs: 200, attemptTimeoutMs: 2_000 },
    });
    worker.start();
  });
  afterEach(async () => {
    for (const w of watches) await w.stop();
    watches = [];
    await worker.stop(1_000);
    await rx.close();
    for (const s of extra) await s.close();
    extra = [];
    await store.close();
  });

  const ingest = (on: Store): IngestDeps => ({
    snapshots: new RoutingSnapshots(on),
    metrics: createRoutingMetrics(new Registry()),
    log: log.logger,
    deliverySignal: { notify: () => worker.kick() },
  });

  /** A new watch, as a (re)started or newly elected leader has. */
  function watch(on: Store = store): SilenceWatch {
    const w = startSilenceWatch({ store: on, ingest: ingest(on), log: log.logger, silenceAfterMs: SILENCE, now: () => now });
    watches.push(w);
    return w;
  }

  let seq = 0;
  let epoch = randomUUID();
  async function report(agentVersion = '1.4.0'): Promise<void> {
    seq++;
    const r: InventoryReport = {
      protocol: INVENTORY_PROTOCOL,
      cluster: { id: clusterId, name: 'prod-eu' },
      agentVersion,
      epoch,
      seq,
      kind: seq === 1 ? 'snapshot' : 'delta',
      ...(seq === 1 ? { final: true } : {}),
      upserts: [],
      deletes: [],
    };
    const ctx = serviceContext(store, company, { now: () => now, clusterSilenceAfterMs: SILENCE });
    const out = await applyInventoryReport(ctx, r, { log: log.logger, ingest: ingest(store) });
    expect(out).toMatchObject({ ack: { status: 'applied' } });
  }

  async function routeToReceiver(): Promise<void> {
    const integ = await createWebhookIntegration(store, company, rx.url);
    await store.createRouter({
      id: randomUUID(),
      companyId: company,
      name: 'silent agents',
      eventTypeId: FAMILY,
      enabled: true,
      filter: "data.statusReason in ['AgentSilent', 'AgentReporting']",
      integrationId: integ.id,
      templateId: null,
      generation: 'ROUTER',
      ...ROUTER_POLICY_DEFAULTS,
      managedBy: null,
      createdAt: T0,
      updatedAt: T0,
    });
  }

  /** Every step is awaited before: what was accepted is final. Waits until it is delivered; expects exactly `n`. */
  async function delivered(n: number): Promise<AgentPayload[]> {
    const ds = await store.listDeliveries(company, { limit: 100 });
    expect(ds).toHaveLength(n);
    await waitFor(`${n} deliveries`, async () =>
      (await store.listDeliveries(company, { limit: 100 })).every((d) => d.status === 'DELIVERED'),
    );
    expect(rx.hits).toHaveLength(n);
    return rx.hits.map((h) => (JSON.parse(h.body) as { data: AgentPayload }).data);
  }

  it('one .notready when it falls silent, none on re-checks, restarts or a second leader; one .active when it reports again', async () => {
    await routeToReceiver();
    await report();
    const w = watch();
    now = T0 + 10 * MIN;
    expect(await w.check()).toBe(0); // not silent yet
    now = T0 + SILENCE; // exactly the silence period: not more
    expect(await w.check()).toBe(0);
    // it crosses while two leaders check at once (a failover's overlap; a second store connection): one marks it
    now = T0 + 16 * MIN;
    const { url, schema } = engine.location();
    const other = await openStore(url, schema ? { schema } : {});
    extra.push(other);
    const first = await Promise.all([w.check(), watch(other).check()]);
    expect(first[0] + first[1]).toBe(1);
    const [down] = await delivered(1);
    expect(down).toMatchObject({
      kind: 'agent',
      state: 'unhealthy',
      eventType: 'evt.healthstatus.certmgr-agent.notready',
      cluster: { id: clusterId, name: 'prod-eu' },
      reason: 'AgentSilent',
      // the moment it crossed, not when the check noticed it
      statusTransition: '2020-01-01T06:15:00Z',
      unhealthyDuration: null,
      agent: { version: '1.4.0', lastSeenAt: '2020-01-01T06:00:00Z' },
    });

    // the same watch again, a restarted one, and two leaders at once: nothing more
    now = T0 + 30 * MIN;
    expect(await w.check()).toBe(0);
    await w.stop();
    const counts = await Promise.all([watch().check(), watch(other).check(), watch().check()]);
    expect(counts).toEqual([0, 0, 0]);
    await delivered(1);

    // reports again, 60 min after its last report: silent for 45 min (since 06:15)
    now = T0 + 60 * MIN;
    await report('1.4.1');
    const [, up] = await delivered(2);
    expect(up).toMatchObject({
      kind: 'agent',
      state: 'restored',
      eventType: 'evt.healthstatus.certmgr-agent.active',
      correlationKey: down!.correlationKey,
      reason: 'AgentReporting',
      statusTransition: '2020-01-01T07:00:00Z',
      unhealthyDuration: '0h45m0s',
      agent: { version: '1.4.1', lastSeenAt: '2020-01-01T07:00:00Z' },
    });
    // a further report is just a report
    now = T0 + 61 * MIN;
    await report('1.4.1');
    expect(await watch().check()).toBe(0);
    await delivered(2);

    // silent again later: a new .notready (one per silence, not one per cluster)
    now = T0 + 61 * MIN + SILENCE + 1;
    expect(await watch().check()).toBe(1);
    const hits = await delivered(3);
    expect(hits.map((h) => h.state)).toEqual(['unhealthy', 'restored', 'unhealthy']);
  });

  it('without a router on the family nothing is delivered (the cluster is still marked once)', async () => {
    const integ = await createWebhookIntegration(store, company, rx.url);
    // a router on another family does not opt in
    await store.createRouter({
      id: randomUUID(),
      companyId: company,
      name: 'issuers',
      eventTypeId: 'certmgr-issuer-health-notification-config',
      enabled: true,
      filter: '',
      integrationId: integ.id,
      templateId: null,
      generation: 'ROUTER',
      ...ROUTER_POLICY_DEFAULTS,
      managedBy: null,
      createdAt: T0,
      updatedAt: T0,
    });
    await report();
    now = T0 + 16 * MIN;
    expect(await watch().check()).toBe(1);
    expect(await watch().check()).toBe(0);
    now = T0 + 60 * MIN;
    await report();
    expect(await store.listDeliveries(company, { limit: 100 })).toEqual([]);
    expect((await store.lockCluster(company, clusterId))?.silentSince).toBeNull();
    expect(rx.hits).toEqual([]);
  });
});
