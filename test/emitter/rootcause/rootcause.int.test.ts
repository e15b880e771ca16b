/**
 * The root cause three objects down, on a REAL kube-apiserver v1.20.2 with cert-manager v1.10.2's own CRDs for
 * CertificateRequests, Orders and Challenges, written as cert-manager's controllers write them (sample 12: the
 * request annotated with the Certificate's revision and owned by it, the Order owned by the request, the Challenge
 * owned by the Order, every status through /status), through the real service to a webhook receiver.
 * A second emitter runs as a user without RBAC on Orders and Challenges: its notification goes out without a root
 * cause, and it says so once in its log.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { CustomObjectsApi, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmitter, type EmitterOptions, type RunningEmitter } from '../../../src/emitter/index.js';
import { ROOT_CAUSE_HINTS } from '../../../src/emitter/rootcause/classify.js';
import { installCertManagerRequestCrds } from '../../fixtures/cert-manager-acme-crds.js';
import { installCertManagerCrds } from '../../fixtures/cert-manager-crds.js';
import { startReceiver, type Receiver } from '../../integrations/helpers.js';
import { captureLogger, type CapturedLog } from '../../operator/support.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, startKubeEnv, waitFor, type KubeEnv } from '../../support/kube.js';
import { COMPANY_A, KEY_A, startTestService, type TestService } from '../../support/service.js';
import { TEST_EMITTER_BACKOFFS } from '../fixtures.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const GRACE = 1000;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const SELF_CHECK = "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'";
const RESTRICTED_USER = 'restricted-agent';
const CSR = Buffer.from('-----BEGIN CERTIFICATE REQUEST-----\nMIIBtest\n-----END CERTIFICATE REQUEST-----\n').toString('base64');
const ISSUER_REF = { name: 'letsencrypt-prod', kind: 'ClusterIssuer', group: 'cert-manager.io' };
const seconds = (d = new Date()) => d.toISOString().replace(/\.\d+Z$/, 'Z');

interface Delivered {
  type: string;
  payload: Record<string, unknown>;
  data: Record<string, unknown>;
}

describe.skipIf(skip)('root cause: Certificate → CertificateRequest → Order → Challenge (real apiserver + service)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let hook: Receiver;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  const emitters: RunningEmitter[] = [];
  let logs: CapturedLog;
  let restrictedLogs: CapturedLog;

  const emitterOptions = (kubeConfig: KubeConfig, ns: string, log: CapturedLog): EmitterOptions => ({
    logger: log.logger,
    kubeConfig,
    serviceUrl: svc.url,
    apiKey: KEY_A,
    clusterName: 'test-cluster',
    clusterId: '6f1c2b3a-1111-4c2d-9e8f-0a1b2c3d4e5f',
    stateNamespace: 'certmgr-notify',
    stateName: `state-${ns}`,
    watchNamespace: ns,
    inventory: false,
    gracePeriodMs: GRACE,
    unknownGracePeriodMs: 60_000,
    issuingGracePeriodMs: GRACE,
    resyncMs: 1_000,
    ...TEST_EMITTER_BACKOFFS,
  });

  /** The test apiserver's admin, impersonating a user bound only to what the restricted ClusterRole grants. */
  function restrictedKubeConfig(): KubeConfig {
    const admin = env.kubeConfig();
    const kc2 = new KubeConfig();
    kc2.loadFromOptions({
      clusters: admin.clusters,
      users: [{ name: 'restricted', token: env.token, impersonateUser: RESTRICTED_USER }],
      contexts: [{ name: 'restricted', cluster: admin.clusters[0]!.name, user: 'restricted' }],
      currentContext: 'restricted',
    });
    return kc2;
  }

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc, hook] = await Promise.all([startKubeEnv(), startTestService('sqlite'), startReceiver()]);
    kc = env.kubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
    await installCertManagerCrds(kc);
    await installCertManagerRequestCrds(kc);
    for (const ns of ['certmgr-notify', 'api', 'web']) await ensureNamespace(kc, ns);
    // everything the emitter needs, and certificaterequests, but no Orders and no Challenges
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: {
        metadata: { name: RESTRICTED_USER },
        rules: [
          { apiGroups: ['cert-manager.io'], resources: ['issuers', 'clusterissuers', 'certificates'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: ['cert-manager.io'], resources: ['certificaterequests'], verbs: ['get', 'list'] },
          { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
          { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        ],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: RESTRICTED_USER },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: RESTRICTED_USER },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: RESTRICTED_USER }],
      },
    });
    const gql = svc.gql();
    const { createWebhookIntegration } = await gql.request<{ createWebhookIntegration: { id: string } }>(
      'mutation($url: String!) { createWebhookIntegration(input: { name: "hook", url: $url }) { id } }',
      { url: `${hook.url}/in` },
    );
    const eventTypeId = 'certmgr-cert-resource-health-notification-config';
    await gql.request(
      'mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) { createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }',
      { d: { name: eventTypeId, eventTypeId }, f: { advancedFilterExpression: '' }, i: { integrationId: createWebhookIntegration.id } },
    );
    logs = captureLogger();
    restrictedLogs = captureLogger();
    emitters.push(await startEmitter(emitterOptions(env.kubeConfig(), 'api', logs)));
    emitters.push(await startEmitter(emitterOptions(restrictedKubeConfig(), 'web', restrictedLogs)));
    await Promise.all(emitters.map((e) => e.whenRunning()));
  }, 10 * 60_000);

  afterAll(async () => {
    for (const e of emitters) await e.stop();
    await hook?.close();
    await svc?.close();
    await env?.stop();
  });

  async function delivered(name: string): Promise<Delivered[]> {
    const out: Delivered[] = [];
    for (const r of hook.requests) {
      const ce = JSON.parse(r.body) as { data: Record<string, unknown> & { eventType: string; eventId: string } };
      const rec = await svc.store.getEvent(COMPANY_A, ce.data.eventId);
      const data = (rec?.data ?? {}) as Record<string, unknown>;
      if (data['certificateName'] === name) out.push({ type: ce.data.eventType, payload: ce.data, data });
    }
    return out;
  }

  async function setStatus(group: string, plural: string, ns: string, name: string, status: Record<string, unknown>): Promise<void> {
    await custom.patchNamespacedCustomObjectStatus({ group, version: 'v1', plural, namespace: ns, name, body: { status } }, mergePatch);
  }

  const ownerRef = (apiVersion: string, kind: string, name: string, uid: string) => ({
    apiVersion,
    kind,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  });

  /** Sample 12 in `ns`, as cert-manager's controllers make it; then the Certificate turns not ready. */
  async function acmeChainFailing(ns: string): Promise<void> {
    const labels = { app: 'api' };
    const cert = await applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'api-tls', namespace: ns, labels },
      spec: { secretName: 'api-tls', dnsNames: ['api.example.com'], issuerRef: ISSUER_REF },
    } as never);
    const certUid = (cert as { metadata: { uid: string } }).metadata.uid;
    // requestmanager: the Certificate's labels, its name and revision as annotations, controller owner reference
    const cr = await applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'CertificateRequest',
      metadata: {
        name: 'api-tls-1',
        namespace: ns,
        labels,
        annotations: {
          'cert-manager.io/certificate-name': 'api-tls',
          'cert-manager.io/certificate-revision': '1',
          'cert-manager.io/private-key-secret-name': 'api-tls-x7k2p',
        },
        ownerReferences: [ownerRef('cert-manager.io/v1', 'Certificate', 'api-tls', certUid)],
      },
      spec: { request: CSR, issuerRef: ISSUER_REF, usages: ['digital signature', 'key encipherment'] },
    } as never);
    const crUid = (cr as { metadata: { uid: string } }).metadata.uid;
    await setStatus('cert-manager.io', 'certificaterequests', ns, 'api-tls-1', {
      conditions: [
        {
          type: 'Approved',
          status: 'True',
          reason: 'cert-manager.io',
          message: 'Certificate request has been approved by cert-manager.io',
          lastTransitionTime: seconds(),
        },
        {
          type: 'Ready',
          status: 'False',
          reason: 'Pending',
          message: `Waiting on certificate issuance from order ${ns}/api-tls-1-2976254157: "pending"`,
          lastTransitionTime: seconds(),
        },
      ],
    });
    // certificaterequests/acme: the Order, named after the request, owned by it, with its labels
    const order = await applyManifest(kc, {
      apiVersion: 'acme.cert-manager.io/v1',
      kind: 'Order',
      metadata: {
        name: 'api-tls-1-2976254157',
        namespace: ns,
        labels,
        ownerReferences: [ownerRef('cert-manager.io/v1', 'CertificateRequest', 'api-tls-1', crUid)],
      },
      spec: { request: CSR, issuerRef: ISSUER_REF, dnsNames: ['api.example.com'] },
    } as never);
    const orderUid = (order as { metadata: { uid: string } }).metadata.uid;
    await setStatus('acme.cert-manager.io', 'orders', ns, 'api-tls-1-2976254157', {
      state: 'pending',
      url: 'https://acme-v02.api.letsencrypt.org/acme/order/1/2',
      finalizeURL: 'https://acme-v02.api.letsencrypt.org/acme/finalize/1/2',
      authorizations: [
        {
          url: 'https://acme-v02.api.letsencrypt.org/acme/authz/1',
          identifier: 'api.example.com',
          initialState: 'pending',
          wildcard: false,
          challenges: [{ type: 'http-01', url: 'https://acme-v02.api.letsencrypt.org/acme/chall/1', token: 'tok' }],
        },
      ],
    });
    // acmeorders: one Challenge per authorization, owned by the Order (no labels)
    await applyManifest(kc, {
      apiVersion: 'acme.cert-manager.io/v1',
      kind: 'Challenge',
      metadata: {
        name: 'api-tls-1-2976254157-1825524577',
        namespace: ns,
        ownerReferences: [ownerRef('acme.cert-manager.io/v1', 'Order', 'api-tls-1-2976254157', orderUid)],
      },
      spec: {
        authorizationURL: 'https://acme-v02.api.letsencrypt.org/acme/authz/1',
        dnsName: 'api.example.com',
        issuerRef: ISSUER_REF,
        key: 'tok.thumbprint',
        solver: { http01: { ingress: { class: 'nginx' } } },
        token: 'tok',
        type: 'HTTP-01',
        url: 'https://acme-v02.api.letsencrypt.org/acme/chall/1',
        wildcard: false,
      },
    } as never);
    // acmechallenges: presented, self check failing
    await setStatus('acme.cert-manager.io', 'challenges', ns, 'api-tls-1-2976254157-1825524577', {
      presented: true,
      processing: true,
      reason: SELF_CHECK,
      state: 'pending',
    });
    // the Certificate's issuing and readiness controllers: first issuance in progress, no Secret yet
    await setStatus('cert-manager.io', 'certificates', ns, 'api-tls', {
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'DoesNotExist',
          message: 'Issuing certificate as Secret does not exist',
          lastTransitionTime: seconds(),
          observedGeneration: 1,
        },
        {
          type: 'Issuing',
          status: 'True',
          reason: 'DoesNotExist',
          message: 'Issuing certificate as Secret does not exist',
          lastTransitionTime: seconds(),
          observedGeneration: 1,
        },
      ],
      nextPrivateKeySecretName: 'api-tls-x7k2p',
    });
  }

  it("a not-ready Certificate's notification carries its Challenge's reason, class http-self-check and the hint", async () => {
    await acmeChainFailing('api');
    const [e] = await waitFor('the notification of api/api-tls', async () => {
      const d = (await delivered('api-tls')).filter((x) => x.data['namespace'] === 'api');
      return d.length ? d : undefined;
    });
    expect(e!.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    const resource = 'Challenge api/api-tls-1-2976254157-1825524577 (HTTP-01 api.example.com)';
    expect(e!.data).toMatchObject({
      statusReason: 'DoesNotExist',
      rootCause: 'http-self-check',
      rootCauseHint: ROOT_CAUSE_HINTS['http-self-check'],
      rootCauseMessage: SELF_CHECK,
      rootCauseResource: resource,
    });
    expect(e!.data['statusMessage']).toBe(
      `Issuing certificate as Secret does not exist\nRoot cause (http-self-check) in ${resource}: ${SELF_CHECK}\nNext step: ${ROOT_CAUSE_HINTS['http-self-check']}`,
    );
    // the webhook payload shows them too
    expect(e!.payload['rootCause']).toEqual({
      class: 'http-self-check',
      hint: ROOT_CAUSE_HINTS['http-self-check'],
      message: SELF_CHECK,
      resource,
    });
  });

  it('without RBAC on Orders and Challenges the notification still goes out, without a root cause, said once in the log', async () => {
    await acmeChainFailing('web');
    const [e] = await waitFor('the notification of web/api-tls', async () => {
      const d = (await delivered('api-tls')).filter((x) => x.data['namespace'] === 'web');
      return d.length ? d : undefined;
    });
    expect(e!.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(e!.data['statusMessage']).toBe('Issuing certificate as Secret does not exist');
    for (const f of ['rootCause', 'rootCauseHint', 'rootCauseMessage', 'rootCauseResource']) expect(e!.data).not.toHaveProperty(f);
    expect(e!.payload['rootCause']).toBeNull();
    const told = restrictedLogs.lines.filter((l) => l.includes('root causes are off'));
    expect(told).toHaveLength(1);
    expect(JSON.parse(told[0]!)).toMatchObject({ resource: 'orders.acme.cert-manager.io' });
    // the admin emitter never said it
    expect(logs.lines.some((l) => l.includes('root causes are off'))).toBe(false);
  });
});
