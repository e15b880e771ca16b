/**
 * Renewal truth on a REAL kube-apiserver + etcd (cert-manager CRDs) with the real in-process service and a
 * router for the certificate family to a loopback webhook receiver. cert-manager is played exactly as its
 * controllers write a Certificate's status (read the object, change its status, PUT /status: UpdateStatus;
 * conditions set as apiutil.SetCertificateCondition does, keeping lastTransitionTime when the status is
 * unchanged; times in whole seconds as metav1.Time serializes them):
 * - readiness controller: Ready=True "Certificate is up to date and has not expired", notBefore, notAfter,
 *   renewalTime, from the certificate in the Secret;
 * - trigger controller: Issuing=True (Renewing) at renewalTime, and again after its back-off;
 * - issuing controller, failIssueCertificate: lastFailureTime = now, failedIssuanceAttempts + 1, Issuing=False
 *   with the CertificateRequest's reason and "The certificate request has failed to complete and will be
 *   retried: <its message>"; issueCertificate: revision + 1, Issuing removed, failedIssuanceAttempts and
 *   lastFailureTime cleared.
 * Ready stays True throughout, as cert-manager's readiness policy chain keeps it. The health resync is 10
 * minutes, so an overdue renewal is found by the emitter's own recheck at renewalTime + grace, not by a resync
 * or a watch event. Absence is asserted only after a control object written later has produced its event.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmitter, type RunningEmitter } from '../../src/emitter/index.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { captureLogger } from '../operator/support.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { COMPANY_A, KEY_A, startTestService, type TestService } from '../support/service.js';
import { TEST_EMITTER_BACKOFFS } from './fixtures.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const NS = 'shop';
const STATE_NS = 'certmgr-notify';
const GRACE = 1000;
const OVERDUE_GRACE = 4000;
const DAY = 86_400_000;
const UP_TO_DATE = 'Certificate is up to date and has not expired';
const CA_SAYS =
  'Failed to wait for order resource "shop-tls-2-3339274843" to become ready: order is in "invalid" state: 429 urn:ietf:params:acme:error:rateLimited: too many certificates already issued for exact set of domains';
const FAILED_MESSAGE = `The certificate request has failed to complete and will be retried: ${CA_SAYS}`;

interface Delivered {
  type: string;
  data: Record<string, unknown>;
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration: number;
}

interface CertificateObject {
  metadata: { name: string; namespace: string; uid: string; generation: number; resourceVersion: string };
  status?: {
    conditions?: Condition[];
    notBefore?: string;
    notAfter?: string;
    renewalTime?: string;
    revision?: number;
    failedIssuanceAttempts?: number;
    lastFailureTime?: string;
  };
}

/** metav1.Time on the wire: RFC 3339, whole seconds (truncated). */
const metaTime = (ms: number = Date.now()): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
/** Go's "2006-01-02 15:04:05 -0700 MST" as the trigger controller prints renewalTime. */
const goTime = (iso: string): string => `${iso.replace('T', ' ').replace('Z', '')} +0000 UTC`;

/** apiutil.SetCertificateCondition: a new lastTransitionTime only when the status changes. */
function setCondition(c: CertificateObject, type: string, status: string, reason: string, message: string): void {
  const conditions = (c.status!.conditions ??= []);
  const next: Condition = { type, status, reason, message, lastTransitionTime: metaTime(), observedGeneration: c.metadata.generation };
  const i = conditions.findIndex((x) => x.type === type);
  if (i < 0) conditions.push(next);
  else
    conditions[i] = {
      ...next,
      lastTransitionTime: conditions[i]!.status === status ? conditions[i]!.lastTransitionTime : next.lastTransitionTime,
    };
}

describe.skipIf(skip)('emitter: renewal failing and overdue while Ready=True (real apiserver + service)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let hook: Receiver;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let emitter: RunningEmitter | undefined;

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc, hook] = await Promise.all([startKubeEnv(), startTestService('sqlite'), startReceiver()]);
    kc = env.kubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
    core = kc.makeApiClient(CoreV1Api);
    await installCertManagerCrds(kc);
    for (const ns of [STATE_NS, NS]) await ensureNamespace(kc, ns);
    const gql = svc.gql();
    const { createWebhookIntegration } = await gql.request<{ createWebhookIntegration: { id: string } }>(
      'mutation($url: String!) { createWebhookIntegration(input: { name: "hook", url: $url }) { id } }',
      { url: `${hook.url}/in` },
    );
    await gql.request(
      'mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) { createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }',
      {
        d: { name: 'certificates', eventTypeId: 'certmgr-cert-resource-health-notification-config' },
        f: { advancedFilterExpression: '' },
        i: { integrationId: createWebhookIntegration.id },
      },
    );
    emitter = await startEmitter({
      logger: captureLogger().logger,
      kubeConfig: kc,
      serviceUrl: svc.url,
      apiKey: KEY_A,
      clusterName: 'renewal-cluster',
      stateNamespace: STATE_NS,
      gracePeriodMs: GRACE,
      unknownGracePeriodMs: GRACE,
      issuingGracePeriodMs: GRACE,
      renewalOverdueGraceMs: OVERDUE_GRACE,
      // no resync within the test: what the clock changes must be rechecked by the emitter itself
      resyncMs: 10 * 60_000,
      inventory: false,
      ...TEST_EMITTER_BACKOFFS,
    });
    await emitter.whenRunning();
  }, 10 * 60_000);

  afterAll(async () => {
    await emitter?.stop();
    await hook?.close();
    await svc?.close();
    await env?.stop();
  });

  async function eventsFor(name: string): Promise<Delivered[]> {
    const out: Delivered[] = [];
    for (const r of hook.requests) {
      const ce = JSON.parse(r.body) as { data: { eventType: string; eventId: string } };
      const rec = await svc.store.getEvent(COMPANY_A, ce.data.eventId);
      const data = (rec?.data ?? {}) as Record<string, unknown>;
      if (data['certificateName'] === name) out.push({ type: ce.data.eventType, data });
    }
    return out;
  }

  const waitEvents = (name: string, n: number) =>
    waitFor(
      `${n} event(s) for ${name}`,
      async () => {
        const e = await eventsFor(name);
        return e.length >= n ? e : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );

  async function stateEntries(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const cm of (await core.listNamespacedConfigMap({ namespace: STATE_NS })).items) Object.assign(out, cm.data ?? {});
    return out;
  }

  const ref = (name: string) => ({ group: 'cert-manager.io', version: 'v1', plural: 'certificates', namespace: NS, name });

  async function createCertificate(name: string): Promise<string> {
    const o = await applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name, namespace: NS },
      spec: {
        secretName: name,
        dnsNames: [`${name}.example.com`],
        issuerRef: { name: 'letsencrypt-prod', kind: 'ClusterIssuer', group: 'cert-manager.io' },
      },
    } as never);
    return (o as { metadata: { uid: string } }).metadata.uid;
  }

  /** A cert-manager controller's UpdateStatus: read the object, change its status, PUT /status (optimistic concurrency). */
  async function updateStatus(name: string, change: (c: CertificateObject) => void): Promise<CertificateObject> {
    const c = (await custom.getNamespacedCustomObject(ref(name))) as CertificateObject;
    c.status ??= {};
    change(c);
    return (await custom.replaceNamespacedCustomObjectStatus({ ...ref(name), body: c })) as CertificateObject;
  }

  /** readiness controller: the Secret holds a certificate valid notBefore..notAfter, renewal at renewalTime. */
  const readiness = (name: string, notBefore: number, notAfter: number, renewalTime: number) =>
    updateStatus(name, (c) => {
      setCondition(c, 'Ready', 'True', 'Ready', UP_TO_DATE);
      c.status!.notBefore = metaTime(notBefore);
      c.status!.notAfter = metaTime(notAfter);
      c.status!.renewalTime = metaTime(renewalTime);
    });

  /** trigger controller: renewal is due (or its back-off is over). */
  const trigger = (name: string) =>
    updateStatus(name, (c) =>
      setCondition(c, 'Issuing', 'True', 'Renewing', `Renewing certificate as renewal was scheduled at ${goTime(c.status!.renewalTime!)}`),
    );

  /** issuing controller, failIssueCertificate: the CertificateRequest failed with (reason, message). */
  const failIssue = (name: string, reason: string, message: string) =>
    updateStatus(name, (c) => {
      c.status!.lastFailureTime = metaTime();
      c.status!.failedIssuanceAttempts = (c.status!.failedIssuanceAttempts ?? 0) + 1;
      setCondition(c, 'Issuing', 'False', reason, `The certificate request has failed to complete and will be retried: ${message}`);
    });

  /** issuing controller, issueCertificate: the new certificate is in the Secret. */
  const issue = (name: string) =>
    updateStatus(name, (c) => {
      c.status!.revision = (c.status!.revision ?? 0) + 1;
      c.status!.conditions = c.status!.conditions!.filter((x) => x.type !== 'Issuing');
      delete c.status!.failedIssuanceAttempts;
      delete c.status!.lastFailureTime;
    });

  /** A Certificate issued 60 days ago (90-day lifetime), Ready=True since, renewal due at `renewalTime`. */
  async function issuedLongAgo(name: string, renewalTime: number): Promise<string> {
    const uid = await createCertificate(name);
    const issuedAt = Date.now() - 60 * DAY;
    await updateStatus(name, (c) => {
      c.status!.conditions = [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Ready',
          message: UP_TO_DATE,
          lastTransitionTime: metaTime(issuedAt),
          observedGeneration: 1,
        },
      ];
      c.status!.revision = 1;
    });
    await readiness(name, issuedAt, issuedAt + 90 * DAY, renewalTime);
    return uid;
  }

  it('a failing renewal with Ready=True: notified once with the CA’s reason, not again on the next failed retry; resolved by the renewal with .active', async () => {
    const uid = await issuedLongAgo('shop-tls', Date.now());
    await trigger('shop-tls');
    const first = await failIssue('shop-tls', 'Failed', CA_SAYS);
    expect(first.status!.conditions!.find((c) => c.type === 'Ready')!.status).toBe('True');

    const [notready] = await waitEvents('shop-tls', 1);
    expect(notready!.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(notready!.data).toMatchObject({
      clusterName: 'renewal-cluster',
      certificateName: 'shop-tls',
      namespace: NS,
      issuerName: 'letsencrypt-prod',
      statusReason: 'Failed',
      statusMessage: FAILED_MESSAGE,
      statusTransition: first.status!.lastFailureTime,
      SANs: { 'DNS Names': ['shop-tls.example.com'] },
    });
    await waitFor('health state entry', async () => (await stateEntries())['Certificate_shop_shop-tls']);

    // the trigger controller's back-off is over: a retry, which fails again (a new lastFailureTime, attempt 2)
    await trigger('shop-tls');
    const second = await failIssue('shop-tls', 'Failed', CA_SAYS);
    expect(second.status).toMatchObject({ failedIssuanceAttempts: 2 });
    expect(second.status!.conditions!.find((c) => c.type === 'Ready')!.status).toBe('True');
    // a control Certificate failing after it has been notified: the retry has been looked at by then
    await issuedLongAgo('control-tls', Date.now());
    await trigger('control-tls');
    await failIssue('control-tls', 'Failed', 'the CA is unreachable');
    await waitEvents('control-tls', 1);
    expect((await eventsFor('shop-tls')).map((e) => e.type)).toEqual(['evt.healthstatus.certmgr-certificate-resource.notready']);

    // the renewal succeeds: the issuing controller stores it, the readiness controller reads its times
    await trigger('shop-tls');
    await issue('shop-tls');
    const now = Date.now();
    const renewed = await readiness('shop-tls', now, now + 90 * DAY, now + 60 * DAY);
    expect(renewed.status).not.toHaveProperty('failedIssuanceAttempts');
    expect(renewed.status!.conditions!.map((c) => c.type)).toEqual(['Ready']);
    const events = await waitEvents('shop-tls', 2);
    expect(events.map((e) => e.type)).toEqual([
      'evt.healthstatus.certmgr-certificate-resource.notready',
      'evt.healthstatus.certmgr-certificate-resource.active',
    ]);
    expect(events[1]!.data).toMatchObject({
      statusReason: 'Ready',
      statusMessage: UP_TO_DATE,
      resourceId: uid,
      certificateName: 'shop-tls',
    });
    expect(events[1]!.data['unhealthyDuration']).toMatch(/^0h[0-9]+m[0-9]+(\.[0-9]+)?s$/);
    expect(Date.parse(String(events[1]!.data['statusTransition']))).toBeGreaterThanOrEqual(Date.parse(first.status!.lastFailureTime!));
    await waitFor('health state entry removed', async () => !(await stateEntries())['Certificate_shop_shop-tls']);
  });

  it('an overdue renewal (no failure recorded, no controller renewing) is notified when renewalTime + grace passes; a certificate renewed in time stays silent', async () => {
    const renewalTime = Math.ceil(Date.now() / 1000) * 1000 + 1000;
    // renewed in time: the trigger and the issuing controller complete within the grace
    await issuedLongAgo('healthy-tls', renewalTime);
    // stuck: nothing happens after renewalTime (no cert-manager running); no write after this one
    await issuedLongAgo('stuck-tls', renewalTime);
    await waitFor('renewal due', () => Date.now() > renewalTime);
    await trigger('healthy-tls');
    await issue('healthy-tls');
    const now = Date.now();
    await readiness('healthy-tls', now, now + 90 * DAY, now + 60 * DAY);

    const [overdue] = await waitEvents('stuck-tls', 1);
    expect(overdue!.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(overdue!.data).toMatchObject({ statusReason: 'RenewalOverdue', statusTransition: metaTime(renewalTime) });
    expect(overdue!.data['statusMessage']).toMatch(
      /^Renewal was due at .+ UTC and no new certificate has been issued \(the current certificate expires on .+ UTC\); no issuance is in progress: is cert-manager running\?$/,
    );
    // stuck-tls was created after healthy-tls, and healthy-tls renewed before stuck-tls became overdue
    expect(await eventsFor('healthy-tls')).toEqual([]);
  });
});
