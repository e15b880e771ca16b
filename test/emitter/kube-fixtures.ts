/**
 * The setup the emitter's end-to-end tests share: a REAL kube-apiserver + etcd with cert-manager's CRDs, the
 * in-process service, loopback webhook receivers with routers to them, and the emitter; and cert-manager's
 * controllers played as they write a status (read the object, change its status, PUT /status: UpdateStatus;
 * conditions as apiutil.SetCertificateCondition sets them; times in whole seconds as metav1.Time serializes them).
 * There is no cert-manager controller: a test writes each status itself.
 */
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { startEmitter, type RunningEmitter } from '../../src/emitter/index.js';
import type { EmitterOptions } from '../../src/emitter/options.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { captureLogger } from '../operator/support.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { COMPANY_A, KEY_A, startTestService, type TestService, type TestServiceOptions } from '../support/service.js';
import { TEST_EMITTER_BACKOFFS } from './fixtures.js';

/** The emitter's namespace (its health state ConfigMaps). */
export const STATE_NS = 'certmgr-notify';
/** The readiness controller's message for a valid certificate in the Secret. */
export const UP_TO_DATE = 'Certificate is up to date and has not expired';

/** A running apiserver (cert-manager CRDs installed), service and receivers; the emitter once started. */
export interface KubeWorld {
  env: KubeEnv;
  kc: KubeConfig;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  svc: TestService;
  hooks: Receiver[];
  /** Starts the emitter against this apiserver and service (KEY_A, STATE_NS, the tests' backoffs) once running. */
  startEmitter(
    opts: Omit<EmitterOptions, 'logger' | 'kubeConfig' | 'serviceUrl' | 'apiKey'> & Partial<Pick<EmitterOptions, 'logger'>>,
  ): Promise<RunningEmitter>;
  /** Stops the emitter, the receivers, the service and the apiserver, in that order. */
  stop(): Promise<void>;
}

/**
 * Starts the apiserver, the service (SQLite; `serviceArgs` and `serviceOptions` as startTestService takes them) and
 * `receivers` webhook receivers (default 1), installs cert-manager's CRDs and creates STATE_NS and `namespaces`.
 */
export async function startKubeWorld(o: {
  namespaces: readonly string[];
  receivers?: number;
  serviceArgs?: string[];
  serviceOptions?: TestServiceOptions;
}): Promise<KubeWorld> {
  await ensureKubeBinaries();
  const [env, svc, ...hooks] = await Promise.all([
    startKubeEnv(),
    startTestService('sqlite', o.serviceArgs ?? [], o.serviceOptions ?? {}),
    ...Array.from({ length: o.receivers ?? 1 }, () => startReceiver()),
  ]);
  const kc = env.kubeConfig();
  let emitter: RunningEmitter | undefined;
  const world: KubeWorld = {
    env,
    kc,
    custom: kc.makeApiClient(CustomObjectsApi),
    core: kc.makeApiClient(CoreV1Api),
    svc,
    hooks,
    async startEmitter(opts) {
      emitter = await startEmitter({
        logger: captureLogger().logger,
        kubeConfig: kc,
        serviceUrl: svc.url,
        apiKey: KEY_A,
        stateNamespace: STATE_NS,
        ...TEST_EMITTER_BACKOFFS,
        ...opts,
      });
      await emitter.whenRunning();
      return emitter;
    },
    async stop() {
      await emitter?.stop();
      for (const h of hooks) await h.close();
      await svc.close();
      await env.stop();
    },
  };
  try {
    await installCertManagerCrds(kc);
    for (const ns of [STATE_NS, ...o.namespaces]) await ensureNamespace(kc, ns);
  } catch (e) {
    await world.stop();
    throw e;
  }
  return world;
}

/** A webhook integration named `name` to `url`: its id. */
export async function webhookIntegration(svc: TestService, name: string, url: string): Promise<string> {
  const r = await svc
    .gql()
    .request<{ createWebhookIntegration: { id: string } }>(
      'mutation($name: String!, $url: String!) { createWebhookIntegration(input: { name: $name, url: $url }) { id } }',
      { name, url },
    );
  return r.createWebhookIntegration.id;
}

/** A router of one event family to one integration: `filter` is its CEL (empty: every event), `policy` its policyConfig. */
export async function createRouter(
  svc: TestService,
  o: { name: string; eventTypeId: string; integrationId: string; filter?: string; policy?: Record<string, unknown> | null },
): Promise<{ id: string; notificationRouterPolicyConfig: { holdUnderIssuer: boolean; groupWait: string } }> {
  const r = await svc.gql().request<{
    createNotificationRouter: { id: string; notificationRouterPolicyConfig: { holdUnderIssuer: boolean; groupWait: string } };
  }>(
    `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!, $p: NotificationRouterPolicyInput) {
      createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i, policyConfig: $p) { id notificationRouterPolicyConfig { holdUnderIssuer groupWait } }
    }`,
    {
      d: { name: o.name, eventTypeId: o.eventTypeId },
      f: { advancedFilterExpression: o.filter ?? '' },
      i: { integrationId: o.integrationId },
      p: o.policy ?? null,
    },
  );
  return r.createNotificationRouter;
}

/** An event at a webhook: the CloudEvent's type and the data of the event the service stored. */
export interface Delivered {
  type: string;
  data: Record<string, unknown>;
}

/** Every event that reached `hook`, in order of arrival. */
export async function deliveredEvents(svc: TestService, hook: Receiver): Promise<Delivered[]> {
  const out: Delivered[] = [];
  for (const r of hook.requests) {
    const ce = JSON.parse(r.body) as { data: { eventType: string; eventId: string } };
    const rec = await svc.store.getEvent(COMPANY_A, ce.data.eventId);
    out.push({ type: ce.data.eventType, data: (rec?.data ?? {}) as Record<string, unknown> });
  }
  return out;
}

/** Polls `list` until it has at least `n` items: those items. */
export const waitForCount = <T>(
  what: string,
  n: number,
  list: () => T[] | Promise<T[]>,
  opts?: { timeoutMs?: number; intervalMs?: number },
): Promise<T[]> =>
  waitFor(
    what,
    async () => {
      const items = await list();
      return items.length >= n ? items : undefined;
    },
    opts,
  );

/** metav1.Time on the wire: RFC 3339, whole seconds (truncated). */
export const metaTime = (ms: number = Date.now()): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration: number;
}

/** A Certificate, Issuer or ClusterIssuer as the apiserver returns it (the status fields the tests write). */
export interface CmObject {
  metadata: { name: string; namespace?: string; uid: string; generation: number; resourceVersion: string };
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

/** Where a cert-manager object is: a ClusterIssuer has no namespace. */
export type CmRef =
  | { plural: 'certificates' | 'issuers'; namespace: string; name: string }
  | { plural: 'clusterissuers'; namespace?: undefined; name: string };

/** apiutil.SetCertificateCondition (and SetIssuerCondition): a new lastTransitionTime only when the status changes. */
export function setCondition(o: CmObject, type: string, status: string, reason: string, message: string): void {
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

/**
 * A cert-manager controller's UpdateStatus: read the object, change its status (an empty one if it has none),
 * PUT /status (optimistic concurrency: a conflict fails the test). Returns the object as stored.
 */
export async function updateStatus(custom: CustomObjectsApi, ref: CmRef, change: (o: CmObject) => void): Promise<CmObject> {
  const at = { group: 'cert-manager.io', version: 'v1', plural: ref.plural, name: ref.name };
  const o = (
    ref.namespace === undefined
      ? await custom.getClusterCustomObject(at)
      : await custom.getNamespacedCustomObject({ ...at, namespace: ref.namespace })
  ) as CmObject;
  o.status ??= {};
  change(o);
  return (
    ref.namespace === undefined
      ? await custom.replaceClusterCustomObjectStatus({ ...at, body: o })
      : await custom.replaceNamespacedCustomObjectStatus({ ...at, namespace: ref.namespace, body: o })
  ) as CmObject;
}

/** The readiness controller's status for a valid certificate in the Secret: Ready=True, its times (ms). */
export function upToDate(o: CmObject, t: { notBefore: number; notAfter: number; renewalTime: number }): void {
  setCondition(o, 'Ready', 'True', 'Ready', UP_TO_DATE);
  o.status!.notBefore = metaTime(t.notBefore);
  o.status!.notAfter = metaTime(t.notAfter);
  o.status!.renewalTime = metaTime(t.renewalTime);
}

/** Creates (server-side apply) a Certificate; `spec` is the whole spec. Returns its uid. */
export async function applyCertificate(
  kc: KubeConfig,
  o: { name: string; namespace: string; annotations?: Record<string, string>; spec: Record<string, unknown> },
): Promise<string> {
  const c = await applyManifest(kc, {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: { name: o.name, namespace: o.namespace, ...(o.annotations ? { annotations: o.annotations } : {}) },
    spec: o.spec,
  } as never);
  return (c as { metadata: { uid: string } }).metadata.uid;
}
