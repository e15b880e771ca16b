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
import type { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Receiver } from '../integrations/helpers.js';
import { applyManifest, waitFor } from '../support/kube.js';
import { COMPANY_A, type TestService } from '../support/service.js';
import {
  applyCertificate,
  createRouter,
  setCondition,
  startKubeWorld,
  updateStatus,
  upToDate,
  waitForCount,
  webhookIntegration,
  type CmObject,
  type KubeWorld,
} from '../emitter/kube-fixtures.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const N = 200;
const NAMESPACES = ['shop', 'payments', 'search', 'media'];
const ISSUER = 'ca-issuer';
const CONTROL_ISSUER = 'vault-issuer';
const GRACE = 1000;
const CONCURRENCY = 20;
const DAY = 86_400_000;
const NO_KEY_PAIR = `Error getting keypair for CA issuer: secrets "ca-key-pair" not found`;
const CERT_NOTREADY = 'evt.healthstatus.certmgr-certificate-resource.notready';
const CERT_ACTIVE = 'evt.healthstatus.certmgr-certificate-resource.active';

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
  let world: KubeWorld | undefined;
  let svc: TestService;
  let held: Receiver;
  let issuerHook: Receiver;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;

  /** A cert-manager controller's UpdateStatus of a Certificate. */
  const updateCertificate = (c: { name: string; namespace: string }, change: (o: CmObject) => void) =>
    updateStatus(custom, { plural: 'certificates', ...c }, change);

  /** The issuers controller's UpdateStatus of a ClusterIssuer. */
  const updateIssuer = (name: string, change: (o: CmObject) => void) => updateStatus(custom, { plural: 'clusterissuers', name }, change);

  /** readiness controller: the Secret holds a valid certificate (issued now, 90 days). */
  const certReady = (c: { name: string; namespace: string }) =>
    updateCertificate(c, (o) => {
      const now = Date.now();
      upToDate(o, { notBefore: now, notAfter: now + 90 * DAY, renewalTime: now + 60 * DAY });
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
    applyCertificate(kc, {
      ...c,
      spec: {
        secretName: c.name,
        dnsNames: [`${c.name}.${c.namespace}.example.com`],
        issuerRef: { name: issuerName, kind: 'ClusterIssuer', group: 'cert-manager.io' },
      },
    });

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
    world = await startKubeWorld({ namespaces: NAMESPACES, receivers: 2 });
    ({ svc, kc, custom } = world);
    [held, issuerHook] = world.hooks as [Receiver, Receiver];

    const holding = await createRouter(svc, {
      name: 'certificates held under their issuer',
      eventTypeId: 'certmgr-cert-resource-health-notification-config',
      integrationId: await webhookIntegration(svc, 'held', `${held.url}/held`),
      policy: { holdUnderIssuer: true, groupWait: '2s' },
    });
    expect(holding.notificationRouterPolicyConfig).toEqual({ holdUnderIssuer: true, groupWait: '2s' });
    await createRouter(svc, {
      name: 'issuers',
      eventTypeId: 'certmgr-issuer-health-notification-config',
      integrationId: await webhookIntegration(svc, 'issuers', `${issuerHook.url}/issuers`),
    });

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

    await world.startEmitter({
      clusterName: 'outage-cluster',
      gracePeriodMs: GRACE,
      unknownGracePeriodMs: GRACE,
      issuingGracePeriodMs: GRACE,
      resyncMs: 10 * 60_000,
      inventory: false,
    });
  }, 10 * 60_000);

  afterAll(async () => {
    await world?.stop();
  });

  it(`pages once for the outage (not ${N} times) and sends one "all ${N} recovered" summary`, async () => {
    // the CA key pair Secret is gone: the issuers controller marks the ClusterIssuer not ready
    await issuerBroken(ISSUER);
    const [issuerDown] = await waitForCount('the issuer’s .notready at its router', 1, () => payloads(issuerHook));
    expect(issuerDown).toMatchObject({
      eventType: 'evt.healthstatus.certmgr-issuer.notready',
      resource: { kind: 'Issuer', namespace: '', name: ISSUER },
      reason: 'ErrGetKeyPair',
    });

    // every Certificate of the issuer fails after it (the hub already knows the issuer is down)
    await batched(certs, certNotReady);
    await waitFor(`${N} certificate .notready accepted`, async () => (await accepted(CERT_NOTREADY)) === N, { timeoutMs: 60_000 });
    const [opening] = await waitForCount('the hold’s opening', 1, () => payloads(held));
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
    const [, summary] = await waitForCount('the hold’s summary', 2, () => payloads(held));
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
