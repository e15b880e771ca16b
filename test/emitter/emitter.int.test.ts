/**
 * The emitter against a REAL kube-apiserver v1.20.2 + etcd (cert-manager CRDs, status written through
 * /status as cert-manager would) and the real in-process service with one router per family to a loopback
 * webhook receiver: the events that reach the receiver, their exact data (from the service's store), the
 * durable state, and a restart that neither re-alerts nor forgets to resolve.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { startEmitter, type EmitterOptions, type RunningEmitter } from '../../src/emitter/index.js';
import { runWhileLeading, type WhileLeading } from '../../src/runtime/leader.js';
import { startOperator, type RunningOperator } from '../../src/operator/index.js';
import { MONITORING_CONFIG_PATH } from '../../src/client/operations.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { startTcpProxy } from '../operator/tcp-proxy.js';
import { captureLogger, installCrds, testOperatorOptions, type CapturedLog } from '../operator/support.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, errorCode, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { COMPANY_A, KEY_A, startTestService, type TestService } from '../support/service.js';
import { selfSigned, TEST_EMITTER_BACKOFFS } from './fixtures.js';
import { limitsFile } from '../support/limits.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const STATE_NS = 'certmgr-notify';
const GRACE = 1000;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Delivered {
  type: string;
  eventId: string;
  data: Record<string, unknown>;
  /** when the service accepted it (ms) */
  receivedAt: number;
}

describe.skipIf(skip)('emitter: cert-manager conditions and TLS Secrets → events (real apiserver + service)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let hook: Receiver;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let emitter: RunningEmitter | undefined;
  let logs: CapturedLog;
  let kubeSystemUid: string;
  const registry = new Registry();

  const emitterOptions = (): EmitterOptions => ({
    logger: logs.logger,
    kubeConfig: env.kubeConfig(),
    serviceUrl: svc.url,
    apiKey: KEY_A,
    clusterName: 'test-cluster',
    stateNamespace: STATE_NS,
    gracePeriodMs: GRACE,
    unknownGracePeriodMs: 60_000,
    issuingGracePeriodMs: GRACE,
    resyncMs: 1_000,
    // TLS Secrets go to the service's POST /v1/inventory; its scanner (expiryScanInterval 1s) sends expirations
    inventoryBatchMs: 100,
    ...TEST_EMITTER_BACKOFFS,
    registry, // shared across restarts, as in `serve` (metrics are registered once)
  });

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc, hook] = await Promise.all([
      startKubeEnv(),
      startTestService('sqlite', [...limitsFile({ expiryScanInterval: '1s' })]),
      startReceiver(),
    ]);
    kc = env.kubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
    core = kc.makeApiClient(CoreV1Api);
    await installCertManagerCrds(kc);
    for (const ns of [STATE_NS, 'team-a', 'shop', 'apps']) await ensureNamespace(kc, ns);
    kubeSystemUid = (await core.readNamespace({ name: 'kube-system' })).metadata!.uid!;
    // one router per family, no filter, to the receiver
    const gql = svc.gql();
    const { createWebhookIntegration } = await gql.request<{ createWebhookIntegration: { id: string } }>(
      'mutation($url: String!) { createWebhookIntegration(input: { name: "hook", url: $url }) { id } }',
      { url: `${hook.url}/in` },
    );
    for (const eventTypeId of [
      'certmgr-issuer-health-notification-config',
      'certmgr-cert-resource-health-notification-config',
      'cert-expiry-ext-notification-config',
    ]) {
      await gql.request(
        'mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) { createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }',
        { d: { name: eventTypeId, eventTypeId }, f: { advancedFilterExpression: '' }, i: { integrationId: createWebhookIntegration.id } },
      );
    }
    logs = captureLogger();
    emitter = await startEmitter(emitterOptions());
    await emitter.whenRunning();
  }, 10 * 60_000);

  afterAll(async () => {
    await emitter?.stop();
    await hook?.close();
    await svc?.close();
    await env?.stop();
  });

  /** Webhook deliveries so far, with the internal event the service stored for each. */
  async function delivered(): Promise<Delivered[]> {
    const out: Delivered[] = [];
    for (const r of hook.requests) {
      const ce = JSON.parse(r.body) as { data: { eventType: string; eventId: string } };
      const rec = await svc.store.getEvent(COMPANY_A, ce.data.eventId);
      out.push({
        type: ce.data.eventType,
        eventId: ce.data.eventId,
        data: (rec?.data ?? {}) as Record<string, unknown>,
        receivedAt: rec?.receivedAt ?? 0,
      });
    }
    return out;
  }

  const about = (name: string) => (d: Delivered) =>
    d.data['issuerName'] === name || d.data['certificateName'] === name || String(d.data['message'] ?? '').includes(`/${name} `);

  async function eventsFor(name: string): Promise<Delivered[]> {
    return (await delivered()).filter(about(name));
  }

  async function waitEvents(name: string, n: number, timeoutMs = 15_000): Promise<Delivered[]> {
    return waitFor(
      `${n} event(s) for ${name}`,
      async () => {
        const e = await eventsFor(name);
        return e.length >= n ? e : undefined;
      },
      { timeoutMs, intervalMs: 100 },
    );
  }

  type Plural = 'issuers' | 'clusterissuers' | 'certificates';
  const KIND: Record<Plural, string> = { issuers: 'Issuer', clusterissuers: 'ClusterIssuer', certificates: 'Certificate' };

  async function create(plural: Plural, name: string, ns: string | undefined, spec: Record<string, unknown>): Promise<string> {
    const o = await applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: KIND[plural],
      metadata: { name, ...(ns ? { namespace: ns } : {}) },
      spec,
    } as never);
    return (o as { metadata: { uid: string } }).metadata.uid;
  }

  /** What cert-manager does: write `.status` through the status subresource. */
  async function setStatus(plural: Plural, name: string, ns: string | undefined, status: Record<string, unknown>): Promise<void> {
    const base = { group: 'cert-manager.io', version: 'v1', plural, name, body: { status } };
    if (ns) await custom.patchNamespacedCustomObjectStatus({ ...base, namespace: ns }, mergePatch);
    else await custom.patchClusterCustomObjectStatus(base, mergePatch);
  }

  /**
   * An episode starts when the object is created (no Ready condition yet), and creationTimestamp has whole
   * seconds: create objects just after a second boundary so a 1 s grace period is not shortened by rounding.
   */
  const alignToSecond = () => sleep(1000 - (Date.now() % 1000) + 20);
  /** Kubernetes timestamps have whole seconds: round up, so an episode cannot seem to have started earlier */
  const nextSecond = () => new Date(Math.ceil(Date.now() / 1000) * 1000);
  const readyCond = (status: 'True' | 'False', reason: string, message: string, at = nextSecond()) => ({
    conditions: [
      { type: 'Ready', status, reason, message, lastTransitionTime: at.toISOString().replace(/\.\d+Z$/, 'Z'), observedGeneration: 1 },
    ],
  });

  async function stateEntries(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    const list = await core.listNamespacedConfigMap({ namespace: STATE_NS });
    for (const cm of list.items) Object.assign(out, cm.data ?? {});
    return out;
  }

  it('Issuer: Ready=False → .notready only after the grace period; Ready=True → .active with unhealthyDuration', async () => {
    await alignToSecond();
    const createdAt = Math.floor(Date.now() / 1000) * 1000;
    const uid = await create('issuers', 'acme', 'team-a', { acme: { server: 'https://acme.example/directory' } });
    const msg = 'Failed to update ACME account:400 urn:ietf:params:acme:error:invalidContact';
    const failedAt = nextSecond();
    await setStatus('issuers', 'acme', 'team-a', readyCond('False', 'ErrUpdateACMEAccount', msg, failedAt));
    await sleep(GRACE / 2 - 100);
    expect(await eventsFor('acme')).toEqual([]);
    const [notready] = await waitEvents('acme', 1);
    expect(notready!.type).toBe('evt.healthstatus.certmgr-issuer.notready');
    expect(notready!.receivedAt - createdAt).toBeGreaterThanOrEqual(GRACE);
    expect(notready!.data).toEqual({
      clusterId: kubeSystemUid,
      clusterName: 'test-cluster',
      issuerName: 'acme',
      namespace: 'team-a',
      resourceId: uid,
      statusMessage: msg,
      statusReason: 'ErrUpdateACMEAccount',
      statusTransition: failedAt.toISOString().replace(/\.\d+Z$/, 'Z'),
    });
    // the state is durable once accepted
    await waitFor('health state entry', async () => (await stateEntries())['Issuer_team-a_acme']);

    await setStatus(
      'issuers',
      'acme',
      'team-a',
      readyCond('True', 'ACMEAccountRegistered', 'The ACME account was registered with the ACME server'),
    );
    const events = await waitEvents('acme', 2);
    expect(events.map((e) => e.type)).toEqual(['evt.healthstatus.certmgr-issuer.notready', 'evt.healthstatus.certmgr-issuer.active']);
    expect(events[1]!.data).toMatchObject({ statusReason: 'ACMEAccountRegistered', resourceId: uid, namespace: 'team-a' });
    const dur = events[1]!.data['unhealthyDuration'] as string;
    expect(dur).toMatch(/^0h0m[0-9]+(\.[0-9]+)?s$/);
    expect(Number(/m([0-9.]+)s$/.exec(dur)![1])).toBeGreaterThanOrEqual(1);
    await waitFor('health state entry removed', async () => !(await stateEntries())['Issuer_team-a_acme']);
    await sleep(1_500); // resyncs change nothing
    expect(await eventsFor('acme')).toHaveLength(2);
  });

  it('a blip shorter than the grace period sends nothing', async () => {
    await alignToSecond();
    await create('issuers', 'blip', 'team-a', { selfSigned: {} });
    await setStatus('issuers', 'blip', 'team-a', readyCond('False', 'ErrInitIssuer', 'transient'));
    await sleep(GRACE / 4);
    await setStatus('issuers', 'blip', 'team-a', readyCond('True', 'IsReady', ''));
    await sleep(GRACE * 2);
    expect(await eventsFor('blip')).toEqual([]);
  });

  it('ClusterIssuer: namespace "" ; Certificate with stale Ready=True after notAfter: .notready Expired, subject and SANs from the spec', async () => {
    await create('clusterissuers', 'ca-issuer', undefined, { ca: { secretName: 'ca-key-pair' } });
    await setStatus(
      'clusterissuers',
      'ca-issuer',
      undefined,
      readyCond('False', 'ErrGetKeyPair', 'Error getting keypair for CA issuer: secrets "ca-key-pair" not found'),
    );
    const [ciss] = await waitEvents('ca-issuer', 1);
    expect(ciss!.data).toMatchObject({ namespace: '', issuerName: 'ca-issuer', statusReason: 'ErrGetKeyPair' });

    await create('certificates', 'thinkopp', 'shop', {
      secretName: 'thinkopp-tls',
      commonName: 'thinkopp.example.com',
      dnsNames: ['thinkopp.example.com'],
      subject: { organizations: ['Think'], countries: ['DE'] },
      issuerRef: { name: 'letsencrypt-prod', kind: 'ClusterIssuer' },
    });
    const notAfter = '2025-08-02T13:50:04Z';
    await setStatus('certificates', 'thinkopp', 'shop', {
      ...readyCond('True', 'Ready', 'Certificate is up to date and has not expired', new Date('2025-05-04T14:48:37Z')),
      notAfter,
    });
    const [cert] = await waitEvents('thinkopp', 1);
    expect(cert!.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(cert!.data).toMatchObject({
      clusterId: kubeSystemUid,
      certificateName: 'thinkopp',
      namespace: 'shop',
      issuerName: 'letsencrypt-prod',
      statusReason: 'Expired',
      statusMessage: 'Certificate expired on Sat, 02 Aug 2025 13:50:04 UTC',
      statusTransition: notAfter,
      subject: {
        commonName: 'thinkopp.example.com',
        countries: ['DE'],
        localities: [],
        organizationalUnits: [],
        organizations: ['Think'],
        provinces: [],
      },
      SANs: { 'DNS Names': ['thinkopp.example.com'] },
    });
    expect(cert!.data).not.toHaveProperty('resourceId');

    // deleted while not ready: resolved with reason Deleted
    await custom.deleteNamespacedCustomObject({
      group: 'cert-manager.io',
      version: 'v1',
      plural: 'certificates',
      namespace: 'shop',
      name: 'thinkopp',
    });
    const both = await waitEvents('thinkopp', 2);
    expect(both[1]!.type).toBe('evt.healthstatus.certmgr-certificate-resource.active');
    expect(both[1]!.data).toMatchObject({ statusReason: 'Deleted', certificateName: 'thinkopp' });
  });

  it('TLS Secret expiring in 10 days → inventory → the service’s scan: one expiration event for rule 2 (14 days), not again on the next scans', async () => {
    const crt = selfSigned({ cn: 'web.example.com', dns: ['web.example.com'], days: 10 });
    await applyManifest(kc, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name: 'web-tls', namespace: 'shop', annotations: { 'cert-manager.io/certificate-name': 'web' } },
      data: { 'tls.crt': Buffer.from(crt.pem).toString('base64'), 'tls.key': Buffer.from(crt.keyPem).toString('base64') },
    } as never);
    // an Opaque Secret is never looked at
    await applyManifest(kc, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name: 'opaque', namespace: 'shop' },
      data: { 'tls.crt': Buffer.from(crt.pem).toString('base64') },
    } as never);
    const [e] = await waitEvents('web', 1);
    expect(e!.type).toBe('evt.policy.expiringcertificates.failed');
    expect(e!.data).toMatchObject({ ruleId: 2, threshold: 14, applicationIds: [], name: 'Certificate expiring in 9 days' }); // 10 days less the time to the scan, rounded down
    expect(e!.data['notificationDate']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/);
    expect(e!.data['message']).toContain(crt.serial);
    await sleep(2_500); // two scans
    expect(await eventsFor('web')).toHaveLength(1);
    expect((await delivered()).filter((d) => String(d.data['message']).includes('opaque'))).toEqual([]);
    // the informer only holds TLS Secrets (field selector), parsed into facts
    expect(emitter!.stats().informers['tls-secret-facts']?.objects).toBe(1);

    // renewal: a new serial expiring in 5 days → rule 3
    const renewed = selfSigned({ cn: 'web.example.com', dns: ['web.example.com'], days: 5 });
    await core.patchNamespacedSecret(
      { namespace: 'shop', name: 'web-tls', body: { data: { 'tls.crt': Buffer.from(renewed.pem).toString('base64') } } },
      mergePatch,
    );
    const after = await waitEvents('web', 2);
    expect(after[1]!.data).toMatchObject({ ruleId: 3, threshold: 7 });
    expect(after[1]!.data['message']).toContain(renewed.serial);
  });

  it('monitoring configuration: only monitored applications; a change is picked up without a restart', async () => {
    const put = (c: Record<string, unknown>) =>
      svc.rest(MONITORING_CONFIG_PATH, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          inventoryMonitoringConfiguration: { inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION', ...c },
        }),
      });
    expect(
      (await put({ enabled: true, thresholds: [30, 14, 7], applicationIds: ['app-1'], includeUnassignedCertificates: false })).status,
    ).toBe(200);
    await sleep(1_200); // a scan with the new configuration
    const secret = (name: string, apps?: string) => {
      const c = selfSigned({ cn: `${name}.example.com`, days: 20 });
      return applyManifest(kc, {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: { name, namespace: 'apps', ...(apps ? { annotations: { 'notify.certmgr.io/application-ids': apps } } : {}) },
        data: { 'tls.crt': Buffer.from(c.pem).toString('base64'), 'tls.key': Buffer.from(c.keyPem).toString('base64') },
      } as never);
    };
    await secret('unassigned-tls');
    await secret('other-app-tls', 'app-2');
    await secret('app1-tls', 'app-1, app-3');
    const [e] = await waitEvents('app1-tls', 1);
    expect(e!.data).toMatchObject({ ruleId: 1, threshold: 30, applicationIds: ['app-1', 'app-3'] });
    await sleep(1_500);
    expect(await eventsFor('unassigned-tls')).toEqual([]);
    expect(await eventsFor('other-app-tls')).toEqual([]);

    // monitor unassigned certificates too: picked up by the next scan
    expect(
      (await put({ enabled: true, thresholds: [30, 14, 7], applicationIds: ['app-1'], includeUnassignedCertificates: true })).status,
    ).toBe(200);
    await waitEvents('unassigned-tls', 1);
    expect(await eventsFor('other-app-tls')).toEqual([]);
    // disabled: nothing new
    expect((await put({ enabled: false, thresholds: [30, 14, 7], applicationIds: [], includeUnassignedCertificates: true })).status).toBe(
      200,
    );
    await sleep(1_500);
    expect(await eventsFor('other-app-tls')).toEqual([]);
    expect((await put({ enabled: true, thresholds: [30, 14, 7], applicationIds: [], includeUnassignedCertificates: true })).status).toBe(
      200,
    );
    await waitEvents('other-app-tls', 1);
  });

  it('restart: the new emitter neither re-alerts nor forgets to resolve', async () => {
    await create('issuers', 'vault', 'team-a', { vault: { server: 'https://vault.example' } });
    await setStatus(
      'issuers',
      'vault',
      'team-a',
      readyCond('False', 'VaultError', 'Failed to initialize Vault client: connection refused'),
    );
    await waitEvents('vault', 1);
    // written right after the 202 (the webhook delivery may be faster)
    const entry = await waitFor('state entry', async () => (await stateEntries())['Issuer_team-a_vault']);
    expect(JSON.parse(entry)).toMatchObject({ key: 'Issuer/team-a/vault', value: { notified: true } });
    const before = (await delivered()).length;

    await emitter!.stop();
    // this time the API key comes from a Secret (as with a remote service)
    await applyManifest(kc, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'service-key', namespace: STATE_NS },
      data: { 'api-key': Buffer.from(KEY_A).toString('base64') },
    } as never);
    const { apiKey: _omit, ...withoutKey } = emitterOptions();
    emitter = await startEmitter({ ...withoutKey, apiKeySecret: { namespace: STATE_NS, name: 'service-key', key: 'api-key' } });
    await emitter.whenRunning();
    expect(emitter.stats().state.health).toBeGreaterThanOrEqual(1);
    await sleep(3 * GRACE); // grace periods, resyncs and scans pass
    expect((await delivered()).length).toBe(before); // nothing re-sent: not the Issuer, not the expirations

    await setStatus('issuers', 'vault', 'team-a', readyCond('True', 'VaultVerified', 'Vault verified'));
    const events = await waitEvents('vault', 2);
    expect(events.map((e) => e.type)).toEqual(['evt.healthstatus.certmgr-issuer.notready', 'evt.healthstatus.certmgr-issuer.active']);
    expect(events[1]!.data['unhealthyDuration']).toMatch(/^0h0m[0-9]+(\.[0-9]+)?s$/);
  });

  it('the service being unreachable delays events, never loses them; a stop before the 202 leaves them to the next leader', async () => {
    const proxy = await startTcpProxy(svc.url);
    try {
      await emitter!.stop();
      emitter = await startEmitter({
        ...emitterOptions(),
        serviceUrl: proxy.url.replace('https:', 'http:'),
        inventory: false,
      });
      await emitter.whenRunning();
      proxy.block();
      const retries = () => logs.lines.filter((l) => l.includes('sending events to the service failed')).length;
      const before = retries();
      await create('issuers', 'outage', 'team-a', { selfSigned: {} });
      await setStatus('issuers', 'outage', 'team-a', readyCond('False', 'ErrGetKeyPair', 'down'));
      await waitFor('retried sends', () => retries() >= before + 2, { timeoutMs: 10_000 });
      expect(emitter.stats().pendingEvents).toBe(1);
      expect(await eventsFor('outage')).toEqual([]);
      proxy.unblock();
      await waitEvents('outage', 1);
      // the hub stores the event before the emitter has read its 202: wait for the sender to take it off
      await waitFor('sent', () => emitter!.stats().pendingEvents === 0, { timeoutMs: 10_000 });
      expect(emitter.stats().pendingEvents).toBe(0);

      // stopped while the service is unreachable: not recorded as sent, so the next leader sends it
      proxy.block();
      proxy.cut(); // and drop the kept-alive connection
      await create('issuers', 'outage2', 'team-a', { selfSigned: {} });
      await setStatus('issuers', 'outage2', 'team-a', readyCond('False', 'ErrGetKeyPair', 'down'));
      await waitFor('pending', () => emitter!.stats().pendingEvents === 1, { timeoutMs: 10_000 });
      await emitter.stop();
      expect((await stateEntries())['Issuer_team-a_outage2']).toBeUndefined();
      emitter = await startEmitter(emitterOptions());
      await emitter.whenRunning();
      const [e] = await waitEvents('outage2', 1);
      expect(e!.type).toBe('evt.healthstatus.certmgr-issuer.notready');
      await sleep(GRACE);
      expect(await eventsFor('outage')).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it('runs only while its replica leads: the next leader carries on from the state', async () => {
    await emitter!.stop();
    emitter = undefined;
    await installCrds(kc);
    const ops: RunningOperator[] = [];
    const bound: WhileLeading<RunningEmitter>[] = [];
    for (const identity of ['replica-a', 'replica-b']) {
      const op = await startOperator(
        testOperatorOptions(env, svc, logs.logger, {
          identity,
          leaderElection: {
            leaseNamespace: 'default',
            leaseName: 'emitter-ha',
            leaseDurationMs: 3_000,
            renewDeadlineMs: 2_000,
            retryPeriodMs: 200,
          },
        }),
      );
      ops.push(op);
      bound.push(runWhileLeading(op, () => startEmitter(emitterOptions()), { name: 'emitter', log: logs.logger }));
    }
    const leaderIndex = await waitFor('a leader', () => {
      const i = ops.findIndex((o) => o.isLeader());
      return i >= 0 ? i + 1 : undefined;
    });
    const [leader, follower] = leaderIndex === 1 ? [0, 1] : [1, 0];
    await waitFor('the leader’s emitter', () => bound[leader]!.current());
    await bound[leader]!.current()!.whenRunning();
    expect(bound[follower]!.current()).toBeUndefined();

    await create('issuers', 'ha', 'team-a', { selfSigned: {} });
    await setStatus('issuers', 'ha', 'team-a', readyCond('False', 'ErrInitIssuer', 'x'));
    await waitEvents('ha', 1);

    await ops[leader]!.stop(); // releases the lease; its emitter stops first
    expect(bound[leader]!.current()).toBeUndefined();
    await waitFor('the new leader’s emitter', () => bound[follower]!.current(), { timeoutMs: 15_000 });
    await bound[follower]!.current()!.whenRunning();
    await setStatus('issuers', 'ha', 'team-a', readyCond('True', 'IsReady', ''));
    const events = await waitEvents('ha', 2);
    await sleep(GRACE);
    expect((await eventsFor('ha')).map((e) => e.type)).toEqual([
      'evt.healthstatus.certmgr-issuer.notready',
      'evt.healthstatus.certmgr-issuer.active',
    ]);
    expect(events).toHaveLength(2);
    await bound[follower]!.stop();
    await ops[follower]!.stop();
    expect(await registry.metrics()).toContain('certmgr_notify_emitter_events_total{type="evt.healthstatus.certmgr-issuer.active"}');
  });

  it('never logs the API key', () => {
    expect(logs.lines.join('\n')).not.toContain(KEY_A);
  });

  it('state ConfigMaps are the emitter’s own', async () => {
    const list = await core.listNamespacedConfigMap({ namespace: STATE_NS, labelSelector: 'app.kubernetes.io/component=emitter' });
    expect(list.items.map((c) => c.metadata?.name).sort()[0]).toMatch(/^certmgr-notify-emitter-/);
    try {
      await core.readNamespacedConfigMap({ namespace: 'default', name: 'certmgr-notify-emitter-health' });
      expect.unreachable('state must live in the state namespace');
    } catch (e) {
      expect(errorCode(e)).toBe(404);
    }
  });
});
