/**
 * The emitter's informers: cert-manager Issuers, ClusterIssuers and Certificates (health; Certificates also
 * carry application ids for the inventory) and TLS Secrets (inventory; filtered by type on the server, parsed
 * into facts before caching: no certificate bytes, no key).
 */
import type { CoreV1Api, KubeConfig, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { collectionPath, type KubeClient, type ResourceRef } from '../kube/client.js';
import { ResilientInformer, type ListPage } from '../kube/informer.js';
import type { BackoffPolicy, Clock } from '../runtime/timers.js';
import { HEALTH_KINDS, type CertManagerObject, type HealthKind } from './health/observe.js';
import { TLS_SECRET_TYPE, tlsSecretFacts, type TlsSecretFacts } from './inventory/facts.js';
import { intern } from './intern.js';

const CERT_MANAGER: Record<HealthKind, ResourceRef> = {
  Issuer: { group: 'cert-manager.io', version: 'v1', plural: 'issuers', kind: 'Issuer', namespaced: true },
  ClusterIssuer: { group: 'cert-manager.io', version: 'v1', plural: 'clusterissuers', kind: 'ClusterIssuer', namespaced: false },
  Certificate: { group: 'cert-manager.io', version: 'v1', plural: 'certificates', kind: 'Certificate', namespaced: true },
};
const SECRETS_REF: ResourceRef = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };

export interface EmitterInformers {
  /** per kind; all three with health, only Certificate with the inventory alone */
  cm: Partial<Record<HealthKind, ResilientInformer<CertManagerObject>>>;
  /** inventory: TLS Secrets as parsed facts (no certificate bytes, no key) */
  facts: ResilientInformer<TlsSecretFacts, V1Secret> | undefined;
  all: ResilientInformer<never>[];
}

export function emitterInformers(o: {
  kc: KubeConfig;
  kube: KubeClient;
  core: CoreV1Api;
  /** watch only this namespace (ClusterIssuers are cluster-scoped) */
  namespace: string | undefined;
  health: boolean;
  inventory: boolean;
  log: Logger;
  clock: Clock;
  backoff?: BackoffPolicy;
  /** LIST page size; default 1000 */
  pageSize?: number;
  /** every LIST page read, by informer (a metric) */
  onListPage?: (informer: string) => void;
}): EmitterInformers {
  const ns = o.namespace;
  const all: ResilientInformer<never>[] = [];
  const common = (name: string) => ({
    name,
    kc: o.kc,
    log: o.log,
    clock: o.clock,
    ...(o.backoff ? { backoff: o.backoff } : {}),
    ...(o.pageSize ? { pageSize: o.pageSize } : {}),
    ...(o.onListPage ? { onListPage: () => o.onListPage!(name) } : {}),
  });
  const cmInformer = (kind: HealthKind): ResilientInformer<CertManagerObject> => {
    const r = CERT_MANAGER[kind];
    // health is judged on transitions: after a failed watch, relist rather than replay what happened while blind
    // (a flap that ended where it started is then not reported, whether or not etcd was compacted meanwhile)
    const inf = new ResilientInformer<CertManagerObject>({
      ...common(r.plural),
      path: collectionPath(r, ns),
      list: (page) => o.kube.list<CertManagerObject>(r, ns, page),
      relistAfterError: true,
      transform: certManagerFacts,
    });
    all.push(inf as unknown as ResilientInformer<never>);
    return inf;
  };
  const cm: EmitterInformers['cm'] = {};
  if (o.health) for (const k of HEALTH_KINDS) cm[k] = cmInformer(k);
  else if (o.inventory) cm.Certificate = cmInformer('Certificate'); // application ids on Certificates
  const fieldSelector = `type=${TLS_SECRET_TYPE}`;
  let facts: ResilientInformer<TlsSecretFacts, V1Secret> | undefined;
  if (o.inventory) {
    facts = new ResilientInformer<TlsSecretFacts, V1Secret>({
      ...common('tls-secret-facts'),
      path: collectionPath(SECRETS_REF, ns),
      list: (page: ListPage) => o.kube.listSecrets(ns, page, fieldSelector),
      fieldSelector,
      transform: tlsSecretFacts,
    });
    all.push(facts as unknown as ResilientInformer<never>);
  }
  return { cm, facts, all };
}

/** Annotations the emitter reads on cert-manager objects (policy.ts, inventory/facts.ts): all under this prefix. */
const NOTIFY_ANNOTATION_PREFIX = 'notify.certmgr.io/';
/** Conditions observe() and the inventory read; cert-manager's others are not kept. */
const KEPT_CONDITIONS = new Set(['Ready', 'Issuing']);

function notifyAnnotations(a: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!a) return undefined;
  let out: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(a)) if (k.startsWith(NOTIFY_ANNOTATION_PREFIX)) (out ??= {})[intern(k)] = v;
  return out;
}

const strings = (v: unknown): string[] | undefined => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : undefined);

/**
 * What the emitter keeps of an Issuer, ClusterIssuer or Certificate: the fields observe() (health), policy.ts and
 * the inventory (facts.ts, reporter.ts) read, nothing else. A Certificate as the apiserver sends it is several
 * KiB (managedFields, kubectl's last-applied copy, every condition, spec fields nobody here reads); this is a
 * few hundred bytes, which is what bounds the agent's memory at 100,000 Certificates.
 */
export function certManagerFacts(o: CertManagerObject): CertManagerObject {
  const md = o.metadata ?? {};
  const annotations = notifyAnnotations(md.annotations);
  const out: CertManagerObject = {
    ...(o.apiVersion !== undefined ? { apiVersion: intern(o.apiVersion) } : {}),
    ...(o.kind !== undefined ? { kind: intern(o.kind) } : {}),
    metadata: {
      ...(md.name !== undefined ? { name: md.name } : {}),
      ...(md.namespace !== undefined ? { namespace: intern(md.namespace) } : {}),
      ...(md.uid !== undefined ? { uid: md.uid } : {}),
      // ListWatch compares it to tell an update from a relisted copy
      ...(md.resourceVersion !== undefined ? { resourceVersion: md.resourceVersion } : {}),
      ...(md.generation !== undefined ? { generation: md.generation } : {}),
      ...(md.creationTimestamp !== undefined ? { creationTimestamp: md.creationTimestamp } : {}),
      ...(annotations ? { annotations } : {}),
    },
  };
  const spec = o.spec;
  if (spec) {
    const kept: NonNullable<CertManagerObject['spec']> = {};
    if (typeof spec.commonName === 'string') kept.commonName = spec.commonName;
    const dnsNames = strings(spec.dnsNames);
    if (dnsNames) kept.dnsNames = dnsNames;
    if (typeof spec.secretName === 'string') kept.secretName = spec.secretName;
    const r = spec.issuerRef;
    if (r && typeof r === 'object')
      kept.issuerRef = {
        ...(r.name !== undefined ? { name: intern(r.name) } : {}),
        ...(r.kind !== undefined ? { kind: intern(r.kind) } : {}),
        ...(r.group !== undefined ? { group: intern(r.group) } : {}),
      };
    const templateAnnotations = notifyAnnotations(spec.secretTemplate?.annotations);
    if (templateAnnotations) kept.secretTemplate = { annotations: templateAnnotations };
    const sub = spec.subject;
    if (sub && typeof sub === 'object') {
      const subject: NonNullable<NonNullable<CertManagerObject['spec']>['subject']> = {};
      for (const f of ['organizations', 'countries', 'organizationalUnits', 'localities', 'provinces'] as const) {
        const v = strings(sub[f]);
        if (v) subject[f] = v;
      }
      kept.subject = subject;
    }
    out.spec = kept;
  }
  const st = o.status;
  if (st) {
    const kept: NonNullable<CertManagerObject['status']> = {};
    if (Array.isArray(st.conditions))
      kept.conditions = st.conditions
        .filter((c) => c && typeof c.type === 'string' && KEPT_CONDITIONS.has(c.type))
        .map((c) =>
          // of Issuing, observe() reads the status only
          c.type === 'Ready'
            ? {
                type: intern(c.type),
                ...(c.status !== undefined ? { status: intern(c.status) } : {}),
                ...(c.reason !== undefined ? { reason: intern(c.reason) } : {}),
                ...(c.message !== undefined ? { message: intern(c.message) } : {}),
                ...(c.lastTransitionTime !== undefined ? { lastTransitionTime: c.lastTransitionTime } : {}),
                ...(c.observedGeneration !== undefined ? { observedGeneration: c.observedGeneration } : {}),
              }
            : { type: intern(c.type), ...(c.status !== undefined ? { status: intern(c.status) } : {}) },
        );
    if (st.notAfter !== undefined) kept.notAfter = st.notAfter;
    if (st.failedIssuanceAttempts !== undefined) kept.failedIssuanceAttempts = st.failedIssuanceAttempts;
    out.status = kept;
  }
  return out;
}
