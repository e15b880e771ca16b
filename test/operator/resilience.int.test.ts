/**
 * The operator keeps every change when its watches break: a TCP proxy between the operator and the REAL
 * apiserver is cut (and held down) while objects change; with etcd compacted meanwhile the watch resumes with
 * 410 Expired and the informers relist. Also an apiserver restart. One apiserver for the file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningOperator } from '../../src/operator/index.js';
import { compactEtcd, ensureKubeBinaries, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { startTestService, type TestService } from '../support/service.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import {
  Kube,
  captureLogger,
  installCrds,
  kubeConfigVia,
  managedBy,
  provider,
  router,
  secret,
  startTestOperator,
  storeIntegrations,
  storeRouters,
} from './support.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const EXPIRY = 'cert-expiry-ext-notification-config';
const ISSUER = 'certmgr-issuer-health-notification-config';

describe.skipIf(skip)('operator: watch cuts and 410 lose no reconcile (real apiserver)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let k: Kube;
  let proxy: TcpProxy;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc] = await Promise.all([startKubeEnv(), startTestService('sqlite')]);
    k = new Kube(env.kubeConfig());
    await installCrds(k.kc);
    proxy = await startTcpProxy(env.server);
    op = await startTestOperator(env, svc, captureLogger().logger, {
      kubeConfig: kubeConfigVia(env, proxy.url),
      // only events (and relists) may bring changes in: a resync would hide a lost watch event
      resyncMs: 10 * 60_000,
      leaderElection: { enabled: false },
    });
    await op.whenRunning();
  }, 10 * 60_000);

  afterAll(async () => {
    await op?.stop();
    await proxy?.close();
    await svc?.close();
    await env?.stop();
  });

  async function setup(ns: string) {
    await k.ns(ns);
    await k.apply(secret(ns, 'key', { integrationKey: 'ik-resilience-0123456789' }));
    await k.apply(
      provider(ns, 'p', {
        type: 'IncidentManagement',
        incidentManagement: { integrationKeySecretRef: { name: 'key', key: 'integrationKey' } },
      }),
    );
    await k.apply(router(ns, 'old', { eventTypeId: EXPIRY, providerRef: { name: 'p' } }));
    await k.apply(router(ns, 'edited', { eventTypeId: EXPIRY, providerRef: { name: 'p' } }));
    const p = await k.waitReady('notificationproviders', 'p', ns);
    const old = await k.waitReady('notificationrouters', 'old', ns);
    await k.waitReady('notificationrouters', 'edited', ns);
    return { integrationId: p.status?.['integrationId'] as string, oldRouterId: old.status?.['routerId'] as string };
  }

  /** Changes made while the operator cannot see the apiserver. */
  async function changeWhileDisconnected(ns: string) {
    await k.apply(router(ns, 'new', { eventTypeId: ISSUER, filter: "type.endsWith('.notready')", providerRef: { name: 'p' } }));
    await k.apply(router(ns, 'edited', { eventTypeId: EXPIRY, providerRef: { name: 'p' }, filter: 'data.ruleId == 1', enabled: false }));
    await k.apply(
      provider(ns, 'p', {
        type: 'IncidentManagement',
        displayName: 'renamed while away',
        incidentManagement: { integrationKeySecretRef: { name: 'key', key: 'integrationKey' } },
      }),
    );
    await k.delete('notificationrouters', 'old', ns); // finalizer: stays until the operator cleans up
  }

  async function expectAllReconciled(ns: string, ids: { integrationId: string; oldRouterId: string }) {
    await k.waitReady('notificationrouters', 'new', ns, 30_000);
    await k.waitGone('notificationrouters', 'old', ns, 30_000);
    await waitFor('edited router updated', async () => {
      const r = (await storeRouters(svc)).find((x) => x.managedBy === managedBy('NotificationRouter', ns, 'edited'));
      return r?.filter === 'data.ruleId == 1' && r.enabled === false;
    });
    await waitFor(
      'provider renamed',
      async () => (await storeIntegrations(svc)).find((x) => x.id === ids.integrationId)?.name === 'renamed while away',
    );
    expect((await storeRouters(svc)).find((x) => x.id === ids.oldRouterId)).toBeUndefined();
    const mine = (await storeRouters(svc)).filter((x) => x.managedBy?.startsWith(`k8s:NotificationRouter/${ns}/`));
    expect(mine.map((x) => x.managedBy).sort()).toEqual([
      managedBy('NotificationRouter', ns, 'edited'),
      managedBy('NotificationRouter', ns, 'new'),
    ]);
  }

  it('a cut watch connection (held down while objects change) loses no reconcile', async () => {
    const ns = 'cut';
    const ids = await setup(ns);
    const before = op.stats().informers;
    proxy.block();
    proxy.cut();
    await changeWhileDisconnected(ns);
    await new Promise((r) => setTimeout(r, 1_500)); // the informers retry against the blocked proxy meanwhile
    proxy.unblock();
    await expectAllReconciled(ns, ids);
    const after = op.stats().informers;
    for (const name of ['notificationproviders', 'notificationrouters', 'secrets']) {
      expect(after[name]!.restarts, name).toBeGreaterThan(before[name]!.restarts);
    }
  });

  it('410 Gone: etcd compacted while disconnected → relist, and still no reconcile lost', async () => {
    const ns = 'gone';
    const ids = await setup(ns);
    await k.apply(secret(ns, 'slack', { url: 'https://hooks.slack.com/services/T/B/resilience' }));
    await k.apply(provider(ns, 'p2', { type: 'Slack', slack: { webhookUrlSecretRef: { name: 'slack', key: 'url' } } }));
    await k.waitReady('notificationproviders', 'p2', ns);
    const listsBefore = op.stats().informers['notificationrouters']!.lists;
    proxy.block();
    proxy.cut();
    await changeWhileDisconnected(ns);
    // a Secret deleted while away: only the relist's diff can tell (the provider must report it)
    await k.deleteSecret(ns, 'slack');
    await compactEtcd(env); // every resourceVersion the operator knows is now expired
    proxy.unblock();
    await expectAllReconciled(ns, ids);
    await waitFor('relisted after 410', () => op.stats().informers['notificationrouters']!.lists > listsBefore, { timeoutMs: 10_000 });
    const p2 = await k.waitCondition('notificationproviders', 'p2', ns, { status: 'False', reason: 'SecretNotFound' });
    expect(p2.status?.conditions?.find((c) => c.type === 'Ready')?.message).toBe(
      'Secret gone/slack (spec.slack.webhookUrlSecretRef) not found',
    );
  });

  it('an apiserver restart (connections refused for a while) loses no reconcile', async () => {
    const ns = 'restart';
    const ids = await setup(ns);
    const restarting = env.restartApiServer({ downMs: 1_000 });
    await restarting;
    await changeWhileDisconnected(ns);
    await expectAllReconciled(ns, ids);
  });
});
