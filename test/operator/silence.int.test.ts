/**
 * NotificationSilence against a REAL kube-apiserver v1.20.2 + etcd and the real in-process service: `kubectl
 * apply`-style creates reach the hub as a silence (Ready, observedGeneration, silenceId), an edit updates it in
 * place, a bad matcher is Stalled with its position and nothing is created, deleting the CR expires the silence,
 * and the silence mutes the notifications it matches. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION } from '../../src/api/index.js';
import type { RunningOperator } from '../../src/operator/index.js';
import { issuerNotReady } from '../fixtures/events.js';
import { ensureKubeBinaries, startKubeEnv, type KubeEnv } from '../support/kube.js';
import { startTestService, type TestService } from '../support/service.js';
import { COMPANY_A, Kube, captureLogger, installCrds, managedBy, startTestOperator, type CR, type CapturedLog } from './support.js';
import { limitsFile } from '../support/limits.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const ISSUER = 'certmgr-issuer-health-notification-config';

const silenceCr = (ns: string, name: string, spec: Record<string, unknown>): CR => ({
  apiVersion: API_VERSION,
  kind: 'NotificationSilence',
  metadata: { name, namespace: ns },
  spec,
});

describe.skipIf(skip)('operator: NotificationSilence reconciled into the service (real apiserver)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let k: Kube;
  let op: RunningOperator;
  let logs: CapturedLog;
  const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc] = await Promise.all([startKubeEnv(), startTestService('sqlite', [...limitsFile({ deliveryWorkers: 0 })])]);
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

  it('apply → a silence in the hub (Ready, silenceId); edit → updated in place; it mutes what it matches; delete → expired', async () => {
    const ns = 'maint';
    await k.ns(ns);
    const endsAt = inHours(2);
    await k.apply(
      silenceCr(ns, 'ingress', { matcher: 'data.issuerName == "le-prod"', eventTypeId: ISSUER, endsAt, comment: 'ingress upgrade' }),
    );
    const ready = await k.waitReady('notificationsilences', 'ingress', ns);
    const id = ready.status?.['silenceId'] as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(ready.status?.['state']).toBe('ACTIVE');
    expect(ready.status?.observedGeneration).toBe(ready.metadata?.generation);
    expect(ready.metadata?.finalizers).toContain('notify.certmgr.io/finalizer');
    const rec = await svc.store.getSilence(COMPANY_A, id);
    expect(rec).toMatchObject({
      matcher: 'data.issuerName == "le-prod"',
      eventTypeId: ISSUER,
      endsAt: Date.parse(endsAt),
      comment: 'ingress upgrade',
      createdBy: `k8s:${ns}/ingress`,
      managedBy: managedBy('NotificationSilence', ns, 'ingress'),
      expiredAt: null,
    });

    // it applies: simulateRouting through the hub's API says SILENCED for a router that would notify
    const hook = await svc
      .gql()
      .request<{ createWebhookIntegration: { id: string } }>(
        `mutation ($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
        { i: { name: 'hook', url: 'http://127.0.0.1:9/hook' } },
      );
    await svc.gql().request(
      `mutation ($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) {
        createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
      {
        d: { name: 'r', eventTypeId: ISSUER },
        f: { advancedFilterExpression: '' },
        i: { integrationId: hook.createWebhookIntegration.id },
      },
    );
    const sim = await svc
      .gql()
      .request<{ simulateRouting: { routers: { verdict: string; silencedBy: { id: string } | null }[] } }>(
        `query ($e: EventInput!) { simulateRouting(event: $e) { routers { verdict silencedBy { id } } } }`,
        { e: issuerNotReady({ issuerName: 'le-prod' }) },
      );
    expect(sim.simulateRouting.routers).toEqual([{ verdict: 'SILENCED', silencedBy: { id } }]);

    // edit: the same silence, changed
    const later = inHours(3);
    await k.replaceSpec('notificationsilences', 'ingress', ns, {
      matcher: 'data.issuerName == "le-prod"',
      eventTypeId: ISSUER,
      endsAt: later,
      comment: 'ingress upgrade, extended',
    });
    const edited = await k.waitReady('notificationsilences', 'ingress', ns);
    expect(edited.status?.['silenceId']).toBe(id);
    expect(await svc.store.getSilence(COMPANY_A, id)).toMatchObject({ endsAt: Date.parse(later), comment: 'ingress upgrade, extended' });

    // delete: the silence is expired (kept as history), the CR goes once its finalizer is removed
    await k.delete('notificationsilences', 'ingress', ns);
    await k.waitGone('notificationsilences', 'ingress', ns);
    const gone = await svc.store.getSilence(COMPANY_A, id);
    expect(gone?.expiredAt).not.toBeNull();
    const after = await svc
      .gql()
      .request<{ simulateRouting: { routers: { verdict: string }[] } }>(
        `query ($e: EventInput!) { simulateRouting(event: $e) { routers { verdict } } }`,
        {
          e: issuerNotReady({ issuerName: 'le-prod' }),
        },
      );
    expect(after.simulateRouting.routers).toEqual([{ verdict: 'MATCHED' }]);
  });

  it('a matcher that does not compile → Stalled InvalidFilter with its position, nothing created; fixed → Ready', async () => {
    const ns = 'bad-matcher';
    await k.ns(ns);
    const before = (await svc.store.listSilences(COMPANY_A, { now: Date.now(), limit: 1000 })).length;
    await k.apply(
      silenceCr(ns, 's', { matcher: 'data.issuerName == "x" && data.nope', eventTypeId: ISSUER, endsAt: inHours(1), comment: 'c' }),
    );
    const stalled = await k.waitCondition('notificationsilences', 's', ns, { status: 'True', type: 'Stalled', reason: 'InvalidFilter' });
    const msg = stalled.status?.conditions?.find((c) => c.type === 'Stalled')?.message ?? '';
    expect(msg).toBe(`spec.matcher: line 1, column 32: event data of ${ISSUER} has no field 'nope'`);
    expect((await svc.store.listSilences(COMPANY_A, { now: Date.now(), limit: 1000 })).length).toBe(before);

    await k.replaceSpec('notificationsilences', 's', ns, {
      matcher: 'data.issuerName == "x"',
      eventTypeId: ISSUER,
      endsAt: inHours(1),
      comment: 'c',
    });
    const ok = await k.waitReady('notificationsilences', 's', ns);
    expect(ok.status?.conditions?.find((c) => c.type === 'Stalled')).toBeUndefined();
    expect(await svc.store.getSilence(COMPANY_A, ok.status?.['silenceId'] as string)).toMatchObject({ matcher: 'data.issuerName == "x"' });
  });

  it('a window in the future is PENDING; one whose endsAt has passed is Ready, EXPIRED, with nothing live in the hub', async () => {
    const ns = 'windows';
    await k.ns(ns);
    await k.apply(silenceCr(ns, 'future', { matcher: 'true', startsAt: inHours(24), endsAt: inHours(26), comment: 'next week' }));
    const pending = await k.waitReady('notificationsilences', 'future', ns);
    expect(pending.status?.['state']).toBe('PENDING');
    await k.apply(silenceCr(ns, 'past', { matcher: 'true', startsAt: inHours(-3), endsAt: inHours(-2), comment: 'done' }));
    const past = await k.waitReady('notificationsilences', 'past', ns);
    expect(past.status?.['state']).toBe('EXPIRED');
    const live = await svc.store.listLiveSilences(COMPANY_A, Date.now(), 1000);
    expect(live.filter((s) => s.managedBy === managedBy('NotificationSilence', ns, 'past'))).toEqual([]);
  });
});
