/**
 * The operator against a REAL kube-apiserver and the real service with issue-7 limits (a quota of one router,
 * the production egress policy): refusals show as Stalled conditions that name the limit or the spec field,
 * and a quota refusal clears on the resync once there is room. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningOperator } from '../../src/operator/index.js';
import { ensureKubeBinaries, startKubeEnv, type KubeEnv } from '../support/kube.js';
import { startTestService, type TestService } from '../support/service.js';
import { Kube, captureLogger, installCrds, provider, router, secret, startTestOperator, type CapturedLog } from './support.js';
import { limitsFile } from '../support/limits.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const ISSUER = 'certmgr-issuer-health-notification-config';
const TOKEN = 'tok-0123456789abcdef';

describe.skipIf(skip)('operator: service limits surface as Stalled conditions (real apiserver)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let k: Kube;
  let op: RunningOperator;
  let logs: CapturedLog;

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc] = await Promise.all([
      startKubeEnv(),
      startTestService('sqlite', [...limitsFile({ maxRoutersPerCompany: 1 })], { loopbackAllowed: false }),
    ]);
    k = new Kube(env.kubeConfig());
    await installCrds(k.kc);
    logs = captureLogger();
    op = await startTestOperator(env, svc, logs.logger);
    await op.whenRunning();
  }, 10 * 60_000);

  afterAll(async () => {
    await op?.stop();
    await svc?.close();
    await env?.stop();
  });

  it('a webhook URL refused by the egress policy → Stalled InvalidSecret naming the field; never the URL', async () => {
    const ns = 'egress';
    await k.ns(ns);
    await k.apply(secret(ns, 'hook', { url: `http://127.0.0.1:9/hooks/${TOKEN}` }));
    await k.apply(provider(ns, 'hook', { type: 'Webhook', webhook: { urlSecretRef: { name: 'hook', key: 'url' } } }));
    const p = await k.waitCondition('notificationproviders', 'hook', ns, { status: 'True', type: 'Stalled', reason: 'InvalidSecret' });
    const stalled = p.status?.conditions?.find((c) => c.type === 'Stalled');
    expect(stalled?.message).toMatch(
      /^spec\.webhook\.urlSecretRef \(Secret hook, key url\): the service refused the value: it points to a loopback address/,
    );
    expect(p.status?.conditions?.find((c) => c.type === 'Reconciling')).toBeUndefined();
    expect(p.status?.observedGeneration).toBe(p.metadata?.generation);
    expect(JSON.stringify(p.status)).not.toContain(TOKEN);
    expect(logs.lines.join('\n')).not.toContain(TOKEN);
  });

  it('one router more than the quota → Stalled QuotaExceeded with limit and count; Ready once there is room', async () => {
    const ns = 'quota';
    await k.ns(ns);
    await k.apply(secret(ns, 'ik', { integrationKey: 'ik-0123456789abcdef-secret' }));
    await k.apply(
      provider(ns, 'oncall', {
        type: 'IncidentManagement',
        incidentManagement: { integrationKeySecretRef: { name: 'ik', key: 'integrationKey' } },
      }),
    );
    await k.waitReady('notificationproviders', 'oncall', ns);
    await k.apply(router(ns, 'first', { eventTypeId: ISSUER, filter: 'true', providerRef: { name: 'oncall' } }));
    await k.waitReady('notificationrouters', 'first', ns);

    await k.apply(router(ns, 'second', { eventTypeId: ISSUER, filter: 'true', providerRef: { name: 'oncall' } }));
    const r = await k.waitCondition('notificationrouters', 'second', ns, { status: 'True', type: 'Stalled', reason: 'QuotaExceeded' });
    expect(r.status?.conditions?.find((c) => c.type === 'Stalled')?.message).toMatch(
      /at most 1 routers \(maxRoutersPerCompany in --limits-file\) and this one has 1/,
    );
    expect(r.status?.conditions?.find((c) => c.type === 'Reconciling')).toBeUndefined();

    // room again: the periodic resync (not a spec change) makes it Ready
    await k.delete('notificationrouters', 'first', ns);
    await k.waitGone('notificationrouters', 'first', ns);
    await k.waitReady('notificationrouters', 'second', ns);
  });
});
