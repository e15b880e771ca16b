/**
 * Fault suite: "Watch cut, and 410 Gone while disconnected: 0 missed and 0 duplicate transitions".
 *
 * The emitter (in-process `startEmitter`: its informer stats prove which path ran, relist or resume, and it
 * restarts in milliseconds) talks to a REAL kube-apiserver through a TCP proxy that the test cuts and holds
 * down, and reports to the real in-process hub (`startTestService('sqlite')`), one router for the issuer family
 * → a loopback webhook. Outcomes are read at the hub: every accepted event has exactly one delivery for that
 * router (the GraphQL `deliveries` query), and the event it carries (store) names the Issuer.
 *
 * While the emitter is blind, N Issuers change their Ready condition through /status, as cert-manager does:
 * some once (a net change), some twice (False then True again, or True then False again: back where they
 * were). Choice: a flap that ends where it started while we could not see it is NOT reported (we cannot
 * observe it, and an incident opened and closed after the fact pages nobody usefully); a net change is
 * reported exactly once. One Issuer that was alerted is deleted while blind: only the relist can tell, and it
 * must be resolved (`.active`, reason Deleted).
 *
 * Variants: plain cut (the watch resumes from its resourceVersion, no relist); cut + etcd compaction (the
 * resumed watch gets 410 Expired and the informer relists); the emitter stopped and started again (state in
 * ConfigMaps) with etcd compacted meanwhile. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { startEmitter, type EmitterOptions, type RunningEmitter } from '../../src/emitter/index.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { startTcpProxy, type TcpProxy } from '../operator/tcp-proxy.js';
import { captureLogger, kubeConfigVia, type CapturedLog } from '../operator/support.js';
import { applyManifest, compactEtcd, ensureKubeBinaries, ensureNamespace, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { COMPANY_A, KEY_A, startTestService, type TestService } from '../support/service.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const STATE_NS = 'certmgr-notify';
const GRACE = 1000;
const N = 20;
const NOTREADY = 'evt.healthstatus.certmgr-issuer.notready';
const ACTIVE = 'evt.healthstatus.certmgr-issuer.active';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Short = 'notready' | 'active';
type Ready = 'True' | 'False';

/**
 * The plan for issuer i of N: its state before the cut, the Ready writes made while blind, and what the hub
 * must have got for it in the end (the whole per-resource sequence, the events before the cut included).
 * Pure, so the expectations are a table.
 */
interface IssuerPlan {
  name: string;
  initial: Ready;
  whileBlind: Ready[] | 'delete';
  expected: Short[];
}

function planFor(i: number): IssuerPlan {
  const name = `iss-${String(i).padStart(2, '0')}`;
  // before the cut, alerted issuers (Ready=False past the grace period) have had their `.notready`
  const groups: Omit<IssuerPlan, 'name'>[] = [
    { initial: 'True', whileBlind: [], expected: [] }, // unchanged, healthy
    { initial: 'True', whileBlind: ['False'], expected: ['notready'] }, // net change: once
    { initial: 'True', whileBlind: ['False', 'True'], expected: [] }, // flap back to where it was: unseen, unreported
    { initial: 'False', whileBlind: [], expected: ['notready'] }, // unchanged, alerted: nothing new
    { initial: 'False', whileBlind: ['True'], expected: ['notready', 'active'] }, // net recovery: once
    { initial: 'False', whileBlind: ['True', 'False'], expected: ['notready'] }, // flap back: the incident stays open
  ];
  if (i === N - 1) return { name, initial: 'False', whileBlind: 'delete', expected: ['notready', 'active'] }; // resolved as Deleted
  return { name, ...groups[i % groups.length]! };
}

const plans = Array.from({ length: N }, (_, i) => planFor(i));

describe('planFor (the expectations table)', () => {
  it('covers every group, and a net change is reported exactly once', () => {
    // every group at least 3 times, and one deletion
    const groups = new Map<string, number>();
    for (const p of plans)
      groups.set(`${p.initial}:${String(p.whileBlind)}`, (groups.get(`${p.initial}:${String(p.whileBlind)}`) ?? 0) + 1);
    expect(groups.size).toBe(7);
    for (const [g, n] of groups) expect(n, g).toBeGreaterThanOrEqual(g.endsWith('delete') ? 1 : 3);
    for (const p of plans) {
      if (p.whileBlind === 'delete') continue;
      const final = p.whileBlind.length ? p.whileBlind[p.whileBlind.length - 1] : p.initial;
      const before: Short[] = p.initial === 'False' ? ['notready'] : [];
      const added = p.expected.slice(before.length);
      expect(p.expected.slice(0, before.length)).toEqual(before);
      // a net change adds exactly one event; a return to the initial state adds none
      expect(added).toEqual(final === p.initial ? [] : [final === 'False' ? 'notready' : 'active']);
    }
  });
});

describe.skipIf(skip)('fault: watch cut and 410 Gone while the emitter is blind (real apiserver + hub)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let hook: Receiver;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  let proxy: TcpProxy;
  let logs: CapturedLog;
  const registry = new Registry();
  const figures: string[] = [];

  const emitterOptions = (stateName: string): EmitterOptions => ({
    logger: logs.logger,
    kubeConfig: kubeConfigVia(env, proxy.url),
    serviceUrl: svc.url,
    apiKey: KEY_A,
    clusterName: 'watch-cut',
    stateNamespace: STATE_NS,
    stateName, // one state per case
    gracePeriodMs: GRACE,
    unknownGracePeriodMs: 60_000,
    issuingGracePeriodMs: GRACE,
    // only watch events and relists may bring changes in (a resync re-reads the cache only, but keep it out)
    resyncMs: 10 * 60_000,
    inventory: false,
    informerBackoff: { baseMs: 100, maxMs: 500 },
    queueBackoff: { baseMs: 50, maxMs: 500 },
    sendBackoff: { baseMs: 50, maxMs: 500 },
    registry,
  });

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc, hook] = await Promise.all([startKubeEnv(), startTestService('sqlite'), startReceiver()]);
    kc = env.kubeConfig(); // the test's own writes go straight to the apiserver, never through the proxy
    custom = kc.makeApiClient(CustomObjectsApi);
    await installCertManagerCrds(kc);
    await ensureNamespace(kc, STATE_NS);
    proxy = await startTcpProxy(env.server);
    logs = captureLogger();
    const gql = svc.gql();
    const { createWebhookIntegration } = await gql.request<{ createWebhookIntegration: { id: string } }>(
      'mutation($url: String!) { createWebhookIntegration(input: { name: "hook", url: $url }) { id } }',
      { url: `${hook.url}/in` },
    );
    await gql.request(
      'mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) { createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }',
      {
        d: { name: 'issuers', eventTypeId: 'certmgr-issuer-health-notification-config' },
        f: { advancedFilterExpression: '' },
        i: { integrationId: createWebhookIntegration.id },
      },
    );
  }, 10 * 60_000);

  afterAll(async () => {
    await proxy?.close();
    await hook?.close();
    await svc?.close();
    await env?.stop();
    if (figures.length) console.log(`watch-cut figures:\n${figures.join('\n')}`);
  });

  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
  /** Kubernetes timestamps have whole seconds: each write gets its own, later second */
  let lastStamp = 0;
  const stamp = (): string => {
    lastStamp = Math.max(Math.ceil(Date.now() / 1000) * 1000, lastStamp + 1000);
    return iso(lastStamp);
  };
  const readyCond = (status: Ready) => ({
    conditions: [
      {
        type: 'Ready',
        status,
        reason: status === 'True' ? 'IsReady' : 'ErrInitIssuer',
        message: status === 'True' ? 'Signing CA verified' : 'secret "ca" not found',
        lastTransitionTime: stamp(),
        observedGeneration: 1,
      },
    ],
  });
  const setReady = (ns: string, name: string, status: Ready) =>
    custom.patchNamespacedCustomObjectStatus(
      { group: 'cert-manager.io', version: 'v1', plural: 'issuers', namespace: ns, name, body: { status: readyCond(status) } },
      mergePatch,
    );

  /** Issuer events the hub accepted for a namespace, per issuer, oldest first. */
  async function atHub(ns: string): Promise<Map<string, Short[]>> {
    const rows: { id: string; type: string; receivedAt: string }[] = [];
    let after: string | null = null;
    for (;;) {
      const r: {
        deliveries: {
          nodes: { event: { id: string; type: string; receivedAt: string } | null }[];
          pageInfo: { hasNextPage: boolean; endCursor: string | null };
        };
      } = await svc
        .gql()
        .request(
          'query($after: String) { deliveries(first: 500, after: $after) { nodes { event { id type receivedAt } } pageInfo { hasNextPage endCursor } } }',
          { after },
        );
      for (const n of r.deliveries.nodes) if (n.event) rows.push(n.event);
      if (!r.deliveries.pageInfo.hasNextPage) break;
      after = r.deliveries.pageInfo.endCursor;
    }
    rows.sort((a, b) => a.receivedAt.localeCompare(b.receivedAt));
    const out = new Map<string, Short[]>();
    for (const e of rows) {
      const rec = await svc.store.getEvent(COMPANY_A, e.id);
      const data = (rec?.data ?? {}) as Record<string, unknown>;
      if (data['namespace'] !== ns) continue;
      const name = String(data['issuerName']);
      out.set(name, [...(out.get(name) ?? []), e.type === NOTREADY ? 'notready' : e.type === ACTIVE ? 'active' : (e.type as Short)]);
    }
    return out;
  }

  const countAt = (m: Map<string, Short[]>) => [...m.values()].reduce((n, s) => n + s.length, 0);
  const expectedBefore = (p: IssuerPlan): Short[] => (p.initial === 'False' ? ['notready'] : []);

  /** N Issuers in their initial state, the alerted ones' `.notready` accepted by the hub and recorded. */
  async function setup(ns: string, emitter: RunningEmitter): Promise<void> {
    await ensureNamespace(kc, ns);
    await Promise.all(
      plans.map(async (p) => {
        await applyManifest(kc, {
          apiVersion: 'cert-manager.io/v1',
          kind: 'Issuer',
          metadata: { name: p.name, namespace: ns },
          spec: { ca: { secretName: 'ca' } },
        } as never);
        await setReady(ns, p.name, p.initial);
      }),
    );
    const want = plans.reduce((n, p) => n + expectedBefore(p).length, 0);
    await waitFor('initial .notready at the hub', async () => countAt(await atHub(ns)) >= want, { timeoutMs: 30_000, intervalMs: 200 });
    await waitFor('alerted issuers recorded', () => emitter.stats().state.health >= want, { timeoutMs: 10_000 });
    await waitFor('nothing pending', () => emitter.stats().pendingEvents === 0 && (emitter.stats().queues['health']?.length ?? 0) === 0);
    const m = await atHub(ns);
    for (const p of plans) expect(m.get(p.name) ?? [], `${p.name} before the cut`).toEqual(expectedBefore(p));
  }

  /** The writes of every plan while the emitter is blind; returns the number of flips. */
  async function changeWhileBlind(ns: string): Promise<number> {
    let flips = 0;
    // one write after the other per issuer (each with a later lastTransitionTime), issuers in parallel
    await Promise.all(
      plans.map(async (p) => {
        if (p.whileBlind === 'delete') {
          await custom.deleteNamespacedCustomObject({
            group: 'cert-manager.io',
            version: 'v1',
            plural: 'issuers',
            namespace: ns,
            name: p.name,
          });
          flips++;
          return;
        }
        for (const s of p.whileBlind) {
          await setReady(ns, p.name, s);
          flips++;
        }
      }),
    );
    return flips;
  }

  /** Every expected transition at the hub, then (after the grace period has passed twice more) nothing else. */
  async function expectExactlyPlanned(ns: string, label: string, flips: number, t0: number): Promise<void> {
    const want = plans.reduce((n, p) => n + p.expected.length, 0);
    await waitFor('every net transition at the hub', async () => countAt(await atHub(ns)) >= want, {
      timeoutMs: 30_000,
      intervalMs: 200,
    }).catch(() => undefined);
    await sleep(2 * GRACE + 500); // a late duplicate (grace recheck, relist, resync) would arrive by now
    const m = await atHub(ns);
    let missed = 0;
    let duplicates = 0;
    for (const p of plans) {
      const got = m.get(p.name) ?? [];
      missed += Math.max(0, p.expected.length - got.length);
      duplicates += Math.max(0, got.length - p.expected.length);
    }
    // the figures first, so a failing run reports them too
    const off = plans
      .filter((p) => (m.get(p.name) ?? []).join() !== p.expected.join())
      .map((p) => `${p.name}: ${(m.get(p.name) ?? []).join(',') || '-'}`);
    figures.push(
      `${label}: issuers ${N}, flips ${flips}, events at the hub ${countAt(m)}, missed ${missed}, duplicates ${duplicates}, wall ${((Date.now() - t0) / 1000).toFixed(1)} s${off.length ? ` (off plan: ${off.join('; ')})` : ''}`,
    );
    for (const p of plans) expect(m.get(p.name) ?? [], p.name).toEqual(p.expected);
  }

  it('plain cut (etcd not compacted), held down while Issuers flip: 0 missed, 0 duplicates, flaps back unreported', async () => {
    const ns = 'wc-plain';
    const t0 = Date.now();
    const emitter = await startEmitter(emitterOptions(`emitter-${ns}`));
    try {
      await emitter.whenRunning();
      await setup(ns, emitter);
      const before = emitter.stats().informers['issuers']!;
      proxy.block();
      proxy.cut();
      const flips = await changeWhileBlind(ns);
      await waitFor('the informer retried against the blocked proxy', () => emitter.stats().informers['issuers']!.errors > before.errors, {
        timeoutMs: 10_000,
      });
      await sleep(GRACE); // blind for longer than the grace period
      proxy.unblock();
      await expectExactlyPlanned(ns, 'plain cut', flips, t0);
      const after = emitter.stats().informers['issuers']!;
      expect(after.restarts).toBeGreaterThan(before.restarts);
      // a failed watch relists (relistAfterError) rather than replaying the blind period: the same outcome as a 410
      expect(after.lists, 'relisted after the failed watch').toBeGreaterThan(before.lists);
    } finally {
      await emitter.stop();
    }
  });

  it('cut + etcd compacted while blind (any resume would get 410 Expired): relist; 0 missed, 0 duplicates, the deleted Issuer resolved', async () => {
    const ns = 'wc-gone';
    const t0 = Date.now();
    const emitter = await startEmitter(emitterOptions(`emitter-${ns}`));
    try {
      await emitter.whenRunning();
      await setup(ns, emitter);
      const before = emitter.stats().informers['issuers']!;
      proxy.block();
      proxy.cut();
      const flips = await changeWhileBlind(ns);
      await compactEtcd(env); // every resourceVersion the emitter knows is now expired
      await sleep(GRACE);
      proxy.unblock();
      await expectExactlyPlanned(ns, 'cut + compacted', flips, t0);
      const after = emitter.stats().informers['issuers']!;
      expect(after.lists, 'relisted').toBeGreaterThan(before.lists);
    } finally {
      await emitter.stop();
    }
  });

  it('half-open: the watch connection passes nothing (no FIN, no RST) while Issuers flip and etcd is compacted: the idle timeout ends it, 410 → relist; 0 missed, 0 duplicates', async () => {
    const ns = 'wc-halfopen';
    const t0 = Date.now();
    const emitter = await startEmitter(emitterOptions(`emitter-${ns}`));
    try {
      await emitter.whenRunning();
      await setup(ns, emitter);
      const before = emitter.stats().informers['issuers']!;
      proxy.blackhole(); // new connections still pass: only the open ones are dead
      const flips = await changeWhileBlind(ns);
      await compactEtcd(env);
      // client-node's watch idle timeout (30 s) is the only thing that can notice; then the resume gets 410
      await waitFor('relisted after the half-open watch', () => emitter.stats().informers['issuers']!.lists > before.lists, {
        timeoutMs: 60_000,
        intervalMs: 250,
      });
      await expectExactlyPlanned(ns, 'half-open + compacted', flips, t0);
    } finally {
      await emitter.stop();
    }
  }, 120_000);

  it('emitter stopped, Issuers flip and etcd is compacted, a new emitter starts from the ConfigMap state: 0 missed, 0 duplicates', async () => {
    const ns = 'wc-restart';
    const t0 = Date.now();
    const first = await startEmitter(emitterOptions(`emitter-${ns}`));
    try {
      await first.whenRunning();
      await setup(ns, first);
    } finally {
      await first.stop();
    }
    const flips = await changeWhileBlind(ns);
    await compactEtcd(env);
    await sleep(GRACE);
    const second = await startEmitter(emitterOptions(`emitter-${ns}`));
    try {
      await second.whenRunning();
      await expectExactlyPlanned(ns, 'restart + compacted', flips, t0);
    } finally {
      await second.stop();
    }
  });

  it('never logs the API key', () => {
    expect(logs.lines.join('\n')).not.toContain(KEY_A);
  });
});
