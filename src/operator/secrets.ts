/**
 * The operator's view of Secrets. Providers read a few Secrets of their namespace; a cluster holds many more
 * (100,000 TLS Secrets with their private keys, Helm releases, tokens). So the informer keeps only each
 * Secret's name and version, to re-apply the providers that reference a Secret when it changes, and the
 * provider reconcile reads the referenced Secrets' data with a GET, used and dropped within that reconcile.
 *
 * - LIST and WATCH ask for metadata only (PartialObjectMetadata): no Secret's data reaches this process
 *   through the informer, and the transform keeps four fields whatever the server sends.
 * - `type!=kubernetes.io/tls`: TLS Secrets (the bulk of a cert-manager cluster) are not even listed. A provider
 *   reading a key of a TLS Secret still works (the GET reads it); a change to it is picked up by the resync.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { SECRETS, collectionPath, metadataWatch, type KubeClient } from '../kube/client.js';
import { ResilientInformer } from '../kube/informer.js';
import type { BackoffPolicy, Clock } from '../runtime/timers.js';

/** What the operator caches of a Secret. */
export interface SecretMeta extends KubernetesObject {
  metadata: { name: string; namespace: string; uid?: string; resourceVersion?: string };
}

export const PROVIDER_SECRETS_FIELD_SELECTOR = 'type!=kubernetes.io/tls';

/** Name, namespace, uid, resourceVersion: everything else (data, labels, annotations, managedFields) is dropped. */
function secretMeta(s: KubernetesObject): SecretMeta {
  const md = s.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: md.name ?? '',
      namespace: md.namespace ?? '',
      // spreads: SecretMeta is a KubernetesObject, whose V1ObjectMeta (client-node) does not allow an undefined uid
      ...(md.uid !== undefined ? { uid: md.uid } : {}),
      ...(md.resourceVersion !== undefined ? { resourceVersion: md.resourceVersion } : {}),
    },
  };
}

export function providerSecretsInformer(o: {
  kube: KubeClient;
  namespace: string | undefined;
  log: Logger;
  backoff?: BackoffPolicy | undefined;
  clock?: Clock | undefined;
}): ResilientInformer<SecretMeta, KubernetesObject> {
  const fieldSelector = PROVIDER_SECRETS_FIELD_SELECTOR;
  return new ResilientInformer<SecretMeta, KubernetesObject>({
    name: 'secrets',
    kc: o.kube.kc,
    path: collectionPath(SECRETS, o.namespace),
    // streamed from the watch cache (see `streamed`): the field selector leaves out the TLS Secrets, but a
    // paginated list from etcd reads and decodes every Secret of the cluster to apply it (100,000 TLS Secrets)
    list: (page, each) => o.kube.listSecretsMetadata(o.namespace, page, fieldSelector, each),
    streamed: true,
    watch: metadataWatch(o.kube.kc),
    fieldSelector,
    transform: secretMeta,
    log: o.log,
    backoff: o.backoff,
    clock: o.clock,
  });
}
