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
  /** LIST page size; default 500 */
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
      transform: withoutBookkeeping,
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

/** managedFields and kubectl's last-applied copy are often most of an object's size, and nothing here reads them. */
function withoutBookkeeping(o: CertManagerObject): CertManagerObject {
  const md = o.metadata;
  if (!md) return o;
  const { managedFields: _m, annotations, ...rest } = md;
  const { 'kubectl.kubernetes.io/last-applied-configuration': _l, ...kept } = annotations ?? {};
  return { ...o, metadata: { ...rest, ...(annotations ? { annotations: kept } : {}) } };
}
