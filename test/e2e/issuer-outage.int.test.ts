/**
 * A ClusterIssuer outage end to end: a REAL kube-apiserver v1.20.2 + etcd (cert-manager CRDs), the emitter and the
 * real in-process service. 200 Certificates of one ClusterIssuer are Ready=True; cert-manager's controllers write the
 * outage as they would (read the object, set the Ready condition as apiutil.SetCertificateCondition does, PUT
 * /status): the CA ClusterIssuer's key pair is gone (Ready=False ErrGetKeyPair), then every Certificate's Ready goes
 * False; later the issuer and the certificates recover. A certificate health router with `holdUnderIssuer: true`
 * (docs/grouping.md "Held under the issuer") pages its webhook ONCE for the outage and sends ONE summary ("all 200
 * recovered", `group.allResolved`); the issuer's own router gets the issuer's two events.
 * Absence is asserted only after a control certificate failing later has reached the same webhook.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmitter, type RunningEmitter } from '../../src/emitter/index.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { captureLogger } from '../operator/support.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { COMPANY_A, KEY_A, startTestService, type TestService } from '../support/service.js';
import { TEST_EMITTER_BACKOFFS } from '../emitter/fixtures.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const N = 200;
const NAMESPACES = ['shop', 'payments', 'search', 'media'];
const STATE_NS = 'certmgr-notify';
const ISSUER = 'ca-issuer';
const CONTROL_ISSUER = 'vault-issuer';
const GRACE = 1000;
const CONCURRENCY = 20;
const DAY = 86_400_000;
const UP_TO_DATE = 'Certificate is up to date and has not expired';
const NO_KEY_PAIR = `Error getting keypair for CA issuer: secrets "ca-key-pair" not found`;
const CERT_NOTREADY = 'evt.healthstatus.certmgr-certificate-resource.notready';
const CERT_ACTIVE = 'evt.healthstatus.certmgr-certificate-resource.active';

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration: number;
}

interface CmObject {
  metadata: { name: string; namespace?: string; generation: number };
  status?: { conditions?: Condition[]; notBefore?: string; notAfter?: string; renewalTime?: string };
}

/** The `group` member of the webhook payload v1 (docs/webhook-payload.v1.schema.json). */
interface PayloadGroup {
  key: string;
  labels: Record<string, string>;
  firingCount: number;
  resolvedCount: number;
  allResolved: boolean;
  firing: { name: string | null; namespace: string | null; kind: string }[];
  resolved: { name: string | null; namespace: string | null; kind: string }[];
}

interface Payload {
  kind: string;
  state: string;
  eventType: string;
  summary: string;
  correlationKey: string;
  resource: { kind: string; namespace: string; name: string } | null;
  reason: string | null;
  group: PayloadGroup | null;
}

/** metav1.Time on the wire: RFC 3339, whole seconds. */
const metaTime = (ms: number = Date.now()): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

/** apiutil.SetCertificateCondition (and the issuer's SetIssuerCondition): a new lastTransitionTime only on a status change. */
function setCondition(o: CmObject, type: string, status: string, reason: string, message: string): void {
  const conditions = ((o.status ??= {}).conditions ??= []);
  const next: Condition = { type, status, reason, message, lastTransitionTime: metaTime(), observedGeneration: o.metadata.generation };
  const i = conditions.findIndex((c) => c.type === type);
  if (i < 0) conditions.push(next);
  else
    conditions[i] = {
      ...next,
      lastTransitionTime: conditions[i]!.status === status ? conditions[i]!.lastTransitionTime : next.lastTransitionTime,
    };
}

/** Runs `fn` over `items`, `CONCURRENCY` at a time. */
async function batched<T>(items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const certs = Array.from({ length: N }, (_, i) => ({ name: `app-${i}-tls`, namespace: NAMESPACES[i % NAMESPACES.length]! }));

describe.skipIf(skip)(`a ClusterIssuer outage breaking ${N} Certificates (real apiserver + emitter + service)`, () => {
  let env: KubeEnv;
  let svc: TestService;
  let held: Receiver;
  let issuerHook: Receiver;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  let emitter: RunningEmitter | undefined;

  const certRef = (c: { name: string; namespace: string }) => ({
    group: 'cert-manager.io',
    version: 'v1',
    plural: 'certificates',
    namespace: c.namespace,
    name: c.name,
  });
  const issuerRef = (name: string) => ({ group: 'cert-manager.io', version: 'v1', plural: 'clusterissuers', name });

  /** A cert-manager controller's UpdateStatus of a Certificate: read it, change its status, PUT /status. */
  async function updateCertificate(c: { name: string; namespace: string }, change: (o: CmObject) => void): Promise<void> {
    const o = (await custom.getNamespacedCustomObject(certRef(c))) as CmObject;
    change(o);
    await custom.replaceNamespacedCustomObjectStatus({ ...certRef(c), body: o });
  }

  /** The issuers controller's UpdateStatus of a ClusterIssuer. */
  async function updateIssuer(name: string, change: (o: CmObject) => void): Promise<void> {
    const o = (await custom.getClusterCustomObject(issuerRef(name))) as CmObject;
    change(o);
    await custom.replaceClusterCustomObjectStatus({ ...issuerRef(name), body: o });
  }

  /** readiness controller: the Secret holds a valid certificate (issued now, 90 days). */
  const certReady = (c: { name: string; namespace: string }) =>
    updateCertificate(c, (o) => {
      const now = Date.now();
      setCondition(o, 'Ready', 'True', 'Ready', UP_TO_DATE);
      o.status!.notBefore = metaTime(now);
      o.status!.notAfter = metaTime(now + 90 * DAY);
      o.status!.renewalTime = metaTime(now + 60 * DAY);
    });

  /** readiness controller: the Secret has no certificate (policy chain: SecretDoesNotExist). */
  const certNotReady = (c: { name: string; namespace: string }) =>
    updateCertificate(c, (o) => {
      setCondition(o, 'Ready', 'False', 'DoesNotExist', 'Issuing certificate as Secret does not exist');
      delete o.status!.notBefore;
      delete o.status!.notAfter;
      delete o.status!.renewalTime;
    });

  /** CA issuer setup (pkg/issuer/ca/setup.go): the key pair verified, or not found. */
  const issuerReady = (name: string) =>
    updateIssuer(name, (o) => setCondition(o, 'Ready', 'True', 'KeyPairVerified', 'Signing CA verified'));
  const issuerBroken = (name: string) => updateIssuer(name, (o) => setCondition(o, 'Ready', 'False', 'ErrGetKeyPair', NO_KEY_PAIR));

  const createCertificate = (c: { name: string; namespace: string }, issuerName: string) =>
    applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: c.name, namespace: c.namespace },
      spec: {
        secretName: c.name,
        dnsNames: [`${c.name}.${c.namespace}.example.com`],
        issuerRef: { name: issuerName, kind: 'ClusterIssuer', group: 'cert-manager.io' },
      },
    } as never);

  const createIssuer = (name: string) =>
    applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'ClusterIssuer',
      metadata: { name },
      spec: { ca: { secretName: `${name}-key-pair` } },
    } as never);

  const payloads = (r: Receiver): Payload[] => r.requests.map((q) => (JSON.parse(q.body) as { data: Payload }).data);

  /** Certificate events of `type` the service has accepted. */
  const accepted = async (type: string) => (await svc.store.listEvents(COMPANY_A, { type }, null, 1000)).length;

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc, held, issuerHook] = await Promise.all([startKubeEnv(), startTestService('sqlite'), startReceiver(), startReceiver()]);
    kc = env.kubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
    await installCertManagerCrds(kc);
    for (const ns of [STATE_NS, ...NAMESPACES]) await ensureNamespace(kc, ns);

    const gql = svc.gql();
    const webhook = async (name: string, url: string) =>
      (
        await gql.request<{ createWebhookIntegration: { id: string } }>(
          'mutation($url: String!, $name: String!) { createWebhookIntegration(input: { name: $name, url: $url }) { id } }',
          { name, url },
        )
      ).createWebhookIntegration.id;
    const router = (name: string, eventTypeId: string, integrationId: string, policy: Record<string, unknown> | null) =>
      gql.request<{ createNotificationRouter: { notificationRouterPolicyConfig: { holdUnderIssuer: boolean; groupWait: string } } }>(
        `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!, $p: NotificationRouterPolicyInput) {
          createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i, policyConfig: $p) { notificationRouterPolicyConfig { holdUnderIssuer groupWait } }
        }`,
        { d: { name, eventTypeId }, f: { advancedFilterExpression: '' }, i: { integrationId }, p: policy },
      );
    const holding = await router(
      'certificates held under their issuer',
      'certmgr-cert-resource-health-notification-config',
      await webhook('held', `${held.url}/held`),
      { holdUnderIssuer: true, groupWait: '2s' },
    );
    expect(holding.createNotificationRouter.notificationRouterPolicyConfig).toEqual({ holdUnderIssuer: true, groupWait: '2s' });
    await router('issuers', 'certmgr-issuer-health-notification-config', await webhook('issuers', `${issuerHook.url}/issuers`), null);

    // all Ready=True before the emitter starts
    for (const name of [ISSUER, CONTROL_ISSUER]) {
      await createIssuer(name);
      await issuerReady(name);
    }
    const control = { name: 'control-tls', namespace: 'shop' };
    await batched([...certs, control], async (c) => {
      await createCertificate(c, c === control ? CONTROL_ISSUER : ISSUER);
      await certReady(c);
    });

    emitter = await startEmitter({
      logger: captureLogger().logger,
      kubeConfig: kc,
      serviceUrl: svc.url,
      apiKey: KEY_A,
      clusterName: 'outage-cluster',
      stateNamespace: STATE_NS,
      gracePeriodMs: GRACE,
      unknownGracePeriodMs: GRACE,
      issuingGracePeriodMs: GRACE,
      resyncMs: 10 * 60_000,
      inventory: false,
      ...TEST_EMITTER_BACKOFFS,
    });
    await emitter.whenRunning();
  }, 10 * 60_000);

  afterAll(async () => {
    await emitter?.stop();
    await held?.close();
    await issuerHook?.close();
    await svc?.close();
    await env?.stop();
  });

  it(`pages once for the outage (not ${N} times) and sends one "all ${N} recovered" summary`, async () => {
    // the CA key pair Secret is gone: the issuers controller marks the ClusterIssuer not ready
    await issuerBroken(ISSUER);
    const [issuerDown] = await waitFor('the issuer’s .notready at its router', () => {
      const p = payloads(issuerHook);
      return p.length >= 1 ? p : undefined;
    });
    expect(issuerDown).toMatchObject({
      eventType: 'evt.healthstatus.certmgr-issuer.notready',
      resource: { kind: 'Issuer', namespace: '', name: ISSUER },
      reason: 'ErrGetKeyPair',
    });

    // every Certificate of the issuer fails after it (the hub already knows the issuer is down)
    await batched(certs, certNotReady);
    await waitFor(`${N} certificate .notready accepted`, async () => (await accepted(CERT_NOTREADY)) === N, { timeoutMs: 60_000 });
    const [opening] = await waitFor('the hold’s opening', () => {
      const p = payloads(held);
      return p.length >= 1 ? p : undefined;
    });
    expect(opening!.eventType).toBe(CERT_NOTREADY);
    expect(opening!.group).toMatchObject({
      allResolved: false,
      resolvedCount: 0,
      labels: { 'data.issuerName': ISSUER, 'data.clusterName': 'outage-cluster', issuer: 'not ready' },
    });
    expect(opening!.group!.key).toMatch(/^certmgr:hold:/);
    expect(opening!.correlationKey).toBe(opening!.group!.key);
    expect(opening!.summary).toContain(`Issuer ${ISSUER} in cluster outage-cluster (issuer not ready): `);
    // the certificates the hub had when groupWait ended; the later ones change counts, not pages
    expect(opening!.group!.firingCount).toBeGreaterThanOrEqual(1);
    expect(opening!.group!.firingCount).toBeLessThanOrEqual(N);
    expect(opening!.group!.firing.length).toBe(Math.min(20, opening!.group!.firingCount));
    for (const m of opening!.group!.firing) expect(certs).toContainEqual({ name: m.name, namespace: m.namespace });

    // recovery: the key pair is back, the issuer is ready; then cert-manager reissues every certificate
    await issuerReady(ISSUER);
    await waitFor('the issuer’s .active at its router', () => payloads(issuerHook).length >= 2);
    await batched(certs, certReady);
    await waitFor(`${N} certificate .active accepted`, async () => (await accepted(CERT_ACTIVE)) === N, { timeoutMs: 60_000 });
    const [, summary] = await waitFor('the hold’s summary', () => {
      const p = payloads(held);
      return p.length >= 2 ? p : undefined;
    });
    expect(summary!.group).toMatchObject({
      key: opening!.group!.key,
      allResolved: true,
      firingCount: 0,
      resolvedCount: N,
      firing: [],
      labels: { 'data.issuerName': ISSUER, 'data.clusterName': 'outage-cluster', issuer: 'ready again' },
    });
    expect(summary!.group!.resolved).toHaveLength(20);
    expect(summary!.summary).toContain(`Issuer ${ISSUER} in cluster outage-cluster (issuer ready again): all ${N} recovered`);

    // control: a certificate of another (ready) issuer fails afterwards and is notified on its own
    const control = { name: 'control-tls', namespace: 'shop' };
    await certNotReady(control);
    const all = await waitFor('the control certificate at the holding router', () => {
      const p = payloads(held);
      return p.some((x) => x.resource?.name === control.name) ? p : undefined;
    });
    // the outage: one page and one summary, nothing else; the control certificate: its own notification
    expect(all).toHaveLength(3);
    expect(all[2]).toMatchObject({ eventType: CERT_NOTREADY, group: null, resource: { kind: 'Certificate', name: control.name } });
    expect(payloads(issuerHook).map((p) => p.eventType)).toEqual([
      'evt.healthstatus.certmgr-issuer.notready',
      'evt.healthstatus.certmgr-issuer.active',
    ]);
    expect(await accepted(CERT_NOTREADY)).toBe(N + 1);
  });
});
