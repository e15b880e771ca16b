/**
 * Two operator replicas against the REAL apiserver share a coordination.k8s.io/v1 Lease: exactly one leads
 * (only it runs controllers); when it stops (gracefully: the lease is released) or dies (it can no longer
 * reach the apiserver: the lease expires) the other takes over within the lease duration and reconciles.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinationV1Api } from '@kubernetes/client-node';
import type { RunningOperator } from '../../src/operator/index.js';
import { ensureKubeBinaries, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { startTestService, type TestService } from '../support/service.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import {
  KEY_A,
  Kube,
  captureLogger,
  installCrds,
  kubeConfigVia,
  provider,
  secret,
  startTestOperator,
  type CapturedLog,
} from './support.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const LEASE_MS = 2_000;

describe.skipIf(skip)('operator: leader election on a Lease, remote service mode (real apiserver)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let k: Kube;
  const running: RunningOperator[] = [];
  const proxies: TcpProxy[] = [];

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc] = await Promise.all([startKubeEnv(), startTestService('sqlite')]);
    k = new Kube(env.kubeConfig());
    await installCrds(k.kc);
    await k.ns('le');
    await k.apply(secret('le', 'key', { integrationKey: 'ik-leader-election-0123' }));
  }, 10 * 60_000);

  afterAll(async () => {
    for (const op of running) await op.stop().catch(() => {});
    for (const p of proxies) await p.close();
    await svc?.close();
    await env?.stop();
  });

  async function replica(
    leaseName: string,
    identity: string,
    log: CapturedLog,
    via?: TcpProxy,
  ): Promise<RunningOperator & { transitions: string[] }> {
    const transitions: string[] = [];
    const op = await startTestOperator(env, svc, log.logger, {
      identity,
      ...(via ? { kubeConfig: kubeConfigVia(env, via.url) } : {}),
      leaderElection: { leaseName, leaseNamespace: 'default', leaseDurationMs: LEASE_MS, renewDeadlineMs: 1_500, retryPeriodMs: 250 },
    });
    op.onStartedLeading(() => void transitions.push(`start@${Date.now()}`));
    op.onStoppedLeading(() => void transitions.push(`stop@${Date.now()}`));
    running.push(op);
    return Object.assign(op, { transitions });
  }

  const at = (t: string | undefined): number => Number(t?.split('@')[1]);

  it('remote service mode: the API key comes from a Secret and a rotated key is picked up without restart', async () => {
    await k.ns('remote');
    await k.apply(secret('remote', 'key', { integrationKey: 'ik-remote-0123456789' }));
    await k.apply(secret('default', 'svc-key', { key: 'wrong-key-000000000000' }));
    const op = await startTestOperator(env, svc, captureLogger().logger, {
      service: { url: svc.url, apiKeySecret: { namespace: 'default', name: 'svc-key', key: 'key' } },
      serviceKeyRefreshMs: 300,
      namespace: 'remote',
      leaderElection: { enabled: false },
    });
    running.push(op);
    await op.whenRunning();
    await k.apply(
      provider('remote', 'p', {
        type: 'IncidentManagement',
        incidentManagement: { integrationKeySecretRef: { name: 'key', key: 'integrationKey' } },
      }),
    );
    const denied = await k.waitCondition('notificationproviders', 'p', 'remote', { status: 'False', reason: 'ServiceUnavailable' });
    expect(denied.status?.conditions?.find((c) => c.type === 'Ready')?.message).toMatch(/UNAUTHENTICATED/);
    await k.apply(secret('default', 'svc-key', { key: KEY_A }));
    await k.waitReady('notificationproviders', 'p', 'remote', 30_000);
    await op.stop();
  });

  it('one leads; stop it and the other takes over (and reconciles) within the lease duration', async () => {
    const a = await replica('le-graceful', 'replica-a', captureLogger());
    await waitFor('a leads', () => a.isLeader());
    const b = await replica('le-graceful', 'replica-b', captureLogger());
    await new Promise((r) => setTimeout(r, LEASE_MS + 500)); // b keeps trying meanwhile
    expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);
    expect(b.stats().running).toBe(false); // followers run no controllers
    const lease = await k.kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'le-graceful', namespace: 'default' });
    expect(lease.spec?.holderIdentity).toBe('replica-a');

    await k.apply(
      provider('le', 'p1', {
        type: 'IncidentManagement',
        incidentManagement: { integrationKeySecretRef: { name: 'key', key: 'integrationKey' } },
      }),
    );
    await k.waitReady('notificationproviders', 'p1', 'le');

    const t0 = Date.now();
    await a.stop(); // releases the lease
    await waitFor('b leads', () => b.isLeader(), { timeoutMs: LEASE_MS });
    const took = Date.now() - t0;
    expect(took).toBeLessThan(LEASE_MS);
    await b.whenRunning();
    await k.apply(
      provider('le', 'p2', {
        type: 'IncidentManagement',
        incidentManagement: { integrationKeySecretRef: { name: 'key', key: 'integrationKey' } },
      }),
    );
    await k.waitReady('notificationproviders', 'p2', 'le');
    await b.stop();
  });

  it('a leader that dies (cut off from the apiserver) loses the lease; the other takes over after it expires', async () => {
    const proxy = await startTcpProxy(env.server);
    proxies.push(proxy);
    const a = await replica('le-crash', 'replica-a2', captureLogger(), proxy);
    await waitFor('a leads', () => a.isLeader());
    await a.whenRunning();
    const b = await replica('le-crash', 'replica-b2', captureLogger());
    await new Promise((r) => setTimeout(r, 600));
    expect(b.isLeader()).toBe(false);

    const t0 = Date.now();
    proxy.block();
    proxy.cut();
    await waitFor('b leads', () => b.isLeader(), { timeoutMs: LEASE_MS + 2_000 });
    const took = Date.now() - t0;
    // b must wait for the lease to expire (it last saw a renewal up to one retry period before the cut)
    expect(took).toBeGreaterThanOrEqual(LEASE_MS - 300);
    expect(took).toBeLessThan(LEASE_MS + 1_500);
    // a stepped down (renew deadline) before b took over: never two leaders
    await waitFor('a stepped down', () => !a.isLeader());
    expect(at(a.transitions.find((t) => t.startsWith('stop')))).toBeLessThanOrEqual(at(b.transitions.find((t) => t.startsWith('start'))));

    await b.whenRunning();
    await k.apply(
      provider('le', 'p3', {
        type: 'IncidentManagement',
        incidentManagement: { integrationKeySecretRef: { name: 'key', key: 'integrationKey' } },
      }),
    );
    await k.waitReady('notificationproviders', 'p3', 'le');

    // a comes back: it stays a follower
    proxy.unblock();
    await new Promise((r) => setTimeout(r, 1_000));
    expect([a.isLeader(), b.isLeader()]).toEqual([false, true]);
  });
});
