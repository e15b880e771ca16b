/**
 * The emitter's informers: cert-manager Issuers, ClusterIssuers and Certificates (health; Certificates also
 * carry application ids for expiry) and TLS Secrets (expiry; filtered by type on the server, stripped to
 * `tls.crt` before caching).
 */
import type { CoreV1Api, KubeConfig, KubernetesListObject, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { collectionPath, type KubeClient, type ResourceRef } from '../kube/client.js';
import { ResilientInformer } from '../kube/informer.js';
import type { BackoffPolicy, Clock } from '../runtime/timers.js';
import { HEALTH_KINDS, type CertManagerObject, type HealthKind } from './health/observe.js';
import { TLS_SECRET_TYPE, stripSecret } from './expiry/controller.js';

const CERT_MANAGER: Record<HealthKind, ResourceRef> = {
  Issuer: { group: 'cert-manager.io', version: 'v1', plural: 'issuers', kind: 'Issuer', namespaced: true },
  ClusterIssuer: { group: 'cert-manager.io', version: 'v1', plural: 'clusterissuers', kind: 'ClusterIssuer', namespaced: false },
  Certificate: { group: 'cert-manager.io', version: 'v1', plural: 'certificates', kind: 'Certificate', namespaced: true },
};
const SECRETS_REF: ResourceRef = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };

export interface EmitterInformers {
  /** per kind; all three with health, only Certificate with expiry alone */
  cm: Partial<Record<HealthKind, ResilientInformer<CertManagerObject>>>;
  secrets: ResilientInformer<V1Secret> | undefined;
  all: ResilientInformer<never>[];
}

export function emitterInformers(o: {
  kc: KubeConfig;
  kube: KubeClient;
  core: CoreV1Api;
  /** watch only this namespace (ClusterIssuers are cluster-scoped) */
  namespace: string | undefined;
  health: boolean;
  expiry: boolean;
  log: Logger;
  clock: Clock;
  backoff?: BackoffPolicy;
}): EmitterInformers {
  const ns = o.namespace;
  const all: ResilientInformer<never>[] = [];
  const common = { kc: o.kc, log: o.log, clock: o.clock, ...(o.backoff ? { backoff: o.backoff } : {}) };
  const cmInformer = (kind: HealthKind): ResilientInformer<CertManagerObject> => {
    const r = CERT_MANAGER[kind];
    // health is judged on transitions: after a failed watch, relist rather than replay what happened while blind
    // (a flap that ended where it started is then not reported, whether or not etcd was compacted meanwhile)
    const inf = new ResilientInformer<CertManagerObject>({
      ...common,
      name: r.plural,
      path: collectionPath(r, ns),
      list: () => o.kube.list<CertManagerObject>(r, ns),
      relistAfterError: true,
    });
    all.push(inf as unknown as ResilientInformer<never>);
    return inf;
  };
  const cm: EmitterInformers['cm'] = {};
  if (o.health) for (const k of HEALTH_KINDS) cm[k] = cmInformer(k);
  else if (o.expiry) cm.Certificate = cmInformer('Certificate'); // application ids on Certificates
  let secrets: ResilientInformer<V1Secret> | undefined;
  if (o.expiry) {
    const fieldSelector = `type=${TLS_SECRET_TYPE}`;
    secrets = new ResilientInformer<V1Secret>({
      ...common,
      name: 'tls-secrets',
      path: collectionPath(SECRETS_REF, ns),
      list: async () =>
        (ns
          ? await o.core.listNamespacedSecret({ namespace: ns, fieldSelector })
          : await o.core.listSecretForAllNamespaces({ fieldSelector })) as KubernetesListObject<V1Secret>,
      fieldSelector,
      transform: stripSecret,
    });
    all.push(secrets as unknown as ResilientInformer<never>);
  }
  return { cm, secrets, all };
}
