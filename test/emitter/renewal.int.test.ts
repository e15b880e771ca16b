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
import type { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Receiver } from '../integrations/helpers.js';
import { waitFor } from '../support/kube.js';
import type { TestService } from '../support/service.js';
import {
  applyCertificate,
  createRouter,
  deliveredEvents,
  metaTime,
  setCondition,
  startKubeWorld,
  STATE_NS,
  updateStatus,
  upToDate,
  UP_TO_DATE,
  waitForCount,
  webhookIntegration,
  type CmObject,
  type Delivered,
  type KubeWorld,
} from './kube-fixtures.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const NS = 'shop';
const GRACE = 1000;
const OVERDUE_GRACE = 4000;
const DAY = 86_400_000;
const CA_SAYS =
  'Failed to wait for order resource "shop-tls-2-3339274843" to become ready: order is in "invalid" state: 429 urn:ietf:params:acme:error:rateLimited: too many certificates already issued for exact set of domains';
const FAILED_MESSAGE = `The certificate request has failed to complete and will be retried: ${CA_SAYS}`;

/** Go's "2006-01-02 15:04:05 -0700 MST" as the trigger controller prints renewalTime. */
const goTime = (iso: string): string => `${iso.replace('T', ' ').replace('Z', '')} +0000 UTC`;

describe.skipIf(skip)('emitter: renewal failing and overdue while Ready=True (real apiserver + service)', () => {
  let world: KubeWorld | undefined;
  let svc: TestService;
  let hook: Receiver;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;

  beforeAll(async () => {
    world = await startKubeWorld({ namespaces: [NS] });
    ({ svc, kc, custom, core } = world);
    hook = world.hooks[0]!;
    await createRouter(svc, {
      name: 'certificates',
      eventTypeId: 'certmgr-cert-resource-health-notification-config',
      integrationId: await webhookIntegration(svc, 'hook', `${hook.url}/in`),
    });
    await world.startEmitter({
      clusterName: 'renewal-cluster',
      gracePeriodMs: GRACE,
      unknownGracePeriodMs: GRACE,
      issuingGracePeriodMs: GRACE,
      renewalOverdueGraceMs: OVERDUE_GRACE,
      // no resync within the test: what the clock changes must be rechecked by the emitter itself
      resyncMs: 10 * 60_000,
      inventory: false,
    });
  }, 10 * 60_000);

  afterAll(async () => {
    await world?.stop();
  });

  const eventsFor = async (name: string): Promise<Delivered[]> =>
    (await deliveredEvents(svc, hook)).filter((e) => e.data['certificateName'] === name);

  const waitEvents = (name: string, n: number) =>
    waitForCount(`${n} event(s) for ${name}`, n, () => eventsFor(name), { timeoutMs: 30_000, intervalMs: 100 });

  async function stateEntries(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const cm of (await core.listNamespacedConfigMap({ namespace: STATE_NS })).items) Object.assign(out, cm.data ?? {});
    return out;
  }

  const createCertificate = (name: string): Promise<string> =>
    applyCertificate(kc, {
      name,
      namespace: NS,
      spec: {
        secretName: name,
        dnsNames: [`${name}.example.com`],
        issuerRef: { name: 'letsencrypt-prod', kind: 'ClusterIssuer', group: 'cert-manager.io' },
      },
    });

  /** cert-manager's UpdateStatus of the Certificate `name`. */
  const updateCertificate = (name: string, change: (c: CmObject) => void) =>
    updateStatus(custom, { plural: 'certificates', namespace: NS, name }, change);

  /** readiness controller: the Secret holds a certificate valid notBefore..notAfter, renewal at renewalTime. */
  const readiness = (name: string, notBefore: number, notAfter: number, renewalTime: number) =>
    updateCertificate(name, (c) => upToDate(c, { notBefore, notAfter, renewalTime }));

  /** trigger controller: renewal is due (or its back-off is over). */
  const trigger = (name: string) =>
    updateCertificate(name, (c) =>
      setCondition(c, 'Issuing', 'True', 'Renewing', `Renewing certificate as renewal was scheduled at ${goTime(c.status!.renewalTime!)}`),
    );

  /** issuing controller, failIssueCertificate: the CertificateRequest failed with (reason, message). */
  const failIssue = (name: string, reason: string, message: string) =>
    updateCertificate(name, (c) => {
      c.status!.lastFailureTime = metaTime();
      c.status!.failedIssuanceAttempts = (c.status!.failedIssuanceAttempts ?? 0) + 1;
      setCondition(c, 'Issuing', 'False', reason, `The certificate request has failed to complete and will be retried: ${message}`);
    });

  /** issuing controller, issueCertificate: the new certificate is in the Secret. */
  const issue = (name: string) =>
    updateCertificate(name, (c) => {
      c.status!.revision = (c.status!.revision ?? 0) + 1;
      c.status!.conditions = c.status!.conditions!.filter((x) => x.type !== 'Issuing');
      delete c.status!.failedIssuanceAttempts;
      delete c.status!.lastFailureTime;
    });

  /** A Certificate issued 60 days ago (90-day lifetime), Ready=True since, renewal due at `renewalTime`. */
  async function issuedLongAgo(name: string, renewalTime: number): Promise<string> {
    const uid = await createCertificate(name);
    const issuedAt = Date.now() - 60 * DAY;
    await updateCertificate(name, (c) => {
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
