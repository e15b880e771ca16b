/**
 * The per-resource policy annotations (docs/annotations.md) change what is emitted: the emitter against a REAL
 * kube-apiserver + etcd (cert-manager CRDs) and the real in-process service (its expiry scan over the inventory)
 * with one router per family to a loopback webhook receiver. Absence is asserted only after a control object
 * created at the same time has produced its event (and a few resyncs more), never by a timer alone.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { X509Certificate } from 'node:crypto';
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Receiver } from '../integrations/helpers.js';
import { captureLogger, type CapturedLog } from '../operator/support.js';
import { applyManifest, waitFor } from '../support/kube.js';
import { COMPANY_A, type TestService } from '../support/service.js';
import { selfSigned } from './fixtures.js';
import {
  applyCertificate,
  createRouter,
  deliveredEvents,
  metaTime,
  startKubeWorld,
  waitForCount,
  webhookIntegration,
  type Delivered,
  type KubeWorld,
} from './kube-fixtures.js';
import { limitsFile } from '../support/limits.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const NS = 'policy';
const GRACE = 500;
const RUNBOOK = 'https://wiki.example.com/runbooks/tls?team=shop';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(skip)('emitter: per-resource policy annotations (real apiserver + service)', () => {
  let world: KubeWorld | undefined;
  let svc: TestService;
  let hook: Receiver;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let logs: CapturedLog;

  beforeAll(async () => {
    world = await startKubeWorld({ namespaces: [NS], serviceArgs: [...limitsFile({ expiryScanInterval: '1s' })] });
    ({ svc, kc, custom, core } = world);
    hook = world.hooks[0]!;
    const integrationId = await webhookIntegration(svc, 'hook', `${hook.url}/in`);
    for (const eventTypeId of [
      'certmgr-issuer-health-notification-config',
      'certmgr-cert-resource-health-notification-config',
      'cert-expiry-ext-notification-config',
    ]) {
      await createRouter(svc, { name: eventTypeId, eventTypeId, integrationId });
    }
    logs = captureLogger();
    await world.startEmitter({
      logger: logs.logger,
      clusterName: 'policy-cluster',
      gracePeriodMs: GRACE,
      unknownGracePeriodMs: GRACE,
      issuingGracePeriodMs: GRACE,
      resyncMs: 500,
      inventoryBatchMs: 100,
    });
  }, 10 * 60_000);

  afterAll(async () => {
    await world?.stop();
  });

  const about = (name: string) => (d: Delivered) => d.data['issuerName'] === name || d.data['certificateName'] === name;
  const eventsFor = async (name: string) => (await deliveredEvents(svc, hook)).filter(about(name));
  const waitEvents = (name: string, n: number) =>
    waitForCount(`${n} event(s) for ${name}`, n, () => eventsFor(name), { timeoutMs: 20_000, intervalMs: 100 });

  const failed = () => ({
    conditions: [
      {
        type: 'Ready',
        status: 'False',
        reason: 'Failed',
        message: 'The certificate request has failed to complete and will be retried',
        lastTransitionTime: metaTime(),
        observedGeneration: 1,
      },
    ],
  });

  async function certificate(name: string, annotations: Record<string, string> = {}): Promise<void> {
    await applyCertificate(kc, {
      name,
      namespace: NS,
      annotations,
      spec: { secretName: `${name}-tls`, dnsNames: [`${name}.example.com`], issuerRef: { name: 'ca', kind: 'ClusterIssuer' } },
    });
    await custom.patchNamespacedCustomObjectStatus(
      { group: 'cert-manager.io', version: 'v1', plural: 'certificates', namespace: NS, name, body: { status: failed() } },
      mergePatch,
    );
  }

  async function annotateCertificate(name: string, annotations: Record<string, string>): Promise<void> {
    await custom.patchNamespacedCustomObject(
      { group: 'cert-manager.io', version: 'v1', plural: 'certificates', namespace: NS, name, body: { metadata: { annotations } } },
      mergePatch,
    );
  }

  async function tlsSecret(name: string, certificateName: string, days: number, annotations: Record<string, string> = {}) {
    const crt = selfSigned({ cn: `${certificateName}.example.com`, dns: [`${certificateName}.example.com`], days });
    await applyManifest(kc, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name, namespace: NS, annotations: { 'cert-manager.io/certificate-name': certificateName, ...annotations } },
      data: { 'tls.crt': Buffer.from(crt.pem).toString('base64'), 'tls.key': Buffer.from(crt.keyPem).toString('base64') },
    } as never);
    return crt;
  }

  it('an ignored Certificate (on itself or on its Secret) emits nothing; its unannotated twin does', async () => {
    await tlsSecret('quiet-secret-tls', 'quiet-secret', 90, { 'notify.certmgr.io/ignore': 'true' });
    await Promise.all([certificate('loud'), certificate('quiet', { 'notify.certmgr.io/ignore': 'true' }), certificate('quiet-secret')]);
    const [loud] = await waitEvents('loud', 1);
    expect(loud!.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(loud!.data).not.toHaveProperty('runbookUrl');
    await sleep(4 * 500); // resyncs of the same controller, after the twin's event
    expect(await eventsFor('quiet')).toEqual([]);
    expect(await eventsFor('quiet-secret')).toEqual([]);
  });

  it('ignored while its .notready is open: one final .active (reason Ignored), then nothing', async () => {
    await certificate('later');
    await waitEvents('later', 1);
    await annotateCertificate('later', { 'notify.certmgr.io/ignore': 'true' });
    const both = await waitEvents('later', 2);
    expect(both[1]!.type).toBe('evt.healthstatus.certmgr-certificate-resource.active');
    expect(both[1]!.data).toMatchObject({ statusReason: 'Ignored', certificateName: 'later' });
    await sleep(4 * 500);
    expect(await eventsFor('later')).toHaveLength(2);
  });

  it('the runbook URL reaches the Certificate’s and the ClusterIssuer’s events as data.runbookUrl', async () => {
    await certificate('documented', { 'notify.certmgr.io/runbook-url': RUNBOOK });
    await applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'ClusterIssuer',
      metadata: { name: 'documented-ca', annotations: { 'notify.certmgr.io/runbook-url': 'https://wiki.example.com/runbooks/ca' } },
      spec: { ca: { secretName: 'ca-key-pair' } },
    } as never);
    await custom.patchClusterCustomObjectStatus(
      { group: 'cert-manager.io', version: 'v1', plural: 'clusterissuers', name: 'documented-ca', body: { status: failed() } },
      mergePatch,
    );
    const [cert] = await waitEvents('documented', 1);
    expect(cert!.data['runbookUrl']).toBe(RUNBOOK);
    const [iss] = await waitEvents('documented-ca', 1);
    expect(iss!.type).toBe('evt.healthstatus.certmgr-issuer.notready');
    expect(iss!.data['runbookUrl']).toBe('https://wiki.example.com/runbooks/ca');
  });

  it('a bad annotation value is ignored with a warning and a Kubernetes Event; the resource is still watched', async () => {
    await certificate('typo', { 'notify.certmgr.io/ignore': 'yes please', 'notify.certmgr.io/runbook-url': 'javascript:alert(1)' });
    const [e] = await waitEvents('typo', 1);
    expect(e!.data).not.toHaveProperty('runbookUrl');
    const ev = await waitFor(
      'InvalidAnnotation event',
      async () =>
        (await core.listNamespacedEvent({ namespace: NS })).items.find(
          (x) => x.involvedObject.name === 'typo' && x.reason === 'InvalidAnnotation',
        ),
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(ev.type).toBe('Warning');
    expect(ev.message).toMatch(/notify\.certmgr\.io\/ignore: "yes please" is neither/);
    expect(ev.message).toMatch(/notify\.certmgr\.io\/runbook-url/);
    expect(logs.lines.some((l) => l.includes('annotation ignored'))).toBe(true);
  });

  it('expiry: own thresholds replace the company’s (rule 1001..), ignore silences, the hub’s fields are in the event', async () => {
    // company thresholds 30/14/7: a certificate 10 days from expiry would get rule 2
    const control = await tlsSecret('control-tls', 'control', 10);
    const own = await tlsSecret('own-tls', 'own', 10, {
      'notify.certmgr.io/expiry-thresholds': '3,11,12',
      'notify.certmgr.io/runbook-url': RUNBOOK,
    });
    await tlsSecret('short-tls', 'short', 10, { 'notify.certmgr.io/expiry-thresholds': '3' });
    await tlsSecret('muted-tls', 'muted', 5, { 'notify.certmgr.io/ignore': 'true' });
    const [c] = await waitEvents('control', 1);
    // 10 days less the time to the scan: 9 whole days
    expect(c!.data).toMatchObject({ ruleId: 2, threshold: 14, daysUntilExpiry: 9 });
    expect(c!.data['message']).toContain(control.serial);
    const [o] = await waitEvents('own', 1);
    expect(o!.type).toBe('evt.policy.expiringcertificates.failed');
    // 12 and 11 are both crossed at 10 days: one event, the most urgent (11 = rule 1002), 1001 covered
    expect(o!.data).toMatchObject({
      ruleId: 1002,
      threshold: 11,
      runbookUrl: RUNBOOK,
      certificateName: 'own',
      namespace: NS,
      clusterName: 'policy-cluster',
      daysUntilExpiry: 9,
      dnsNames: ['own.example.com'],
    });
    expect(o!.data['notAfter']).toBe(new X509Certificate(own.pem).validToDate.toISOString());
    await sleep(2_500); // two scans after the control's event
    expect(await eventsFor('own')).toHaveLength(1);
    expect(await eventsFor('short')).toEqual([]);
    expect(await eventsFor('muted')).toEqual([]);
    // the thresholds annotation removed: the company's 30/14 are passed already (no repeat), 7 is not reached
    await core.patchNamespacedSecret(
      { namespace: NS, name: 'own-tls', body: { metadata: { annotations: { 'notify.certmgr.io/expiry-thresholds': null } } } },
      mergePatch,
    );
    await waitFor('the inventory row without own thresholds', async () => {
      const rows = await svc.store.listInventory(COMPANY_A, {}, null, 100);
      return rows.some((r) => r.secretName === 'own-tls' && r.expiryThresholds === null) || undefined;
    });
    await sleep(2_500);
    expect(await eventsFor('own')).toHaveLength(1);
  });
});
