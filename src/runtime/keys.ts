/**
 * Workqueue keys: the one place that writes and reads them. Reconcilers receive only a key and read the
 * current state from a cache (level-triggered), so a key is all that identifies an object.
 *  - `objectKey`: `<namespace>/<name>`, or `<name>` for cluster-scoped objects (client-go's format).
 *  - `kindKey`: `<Kind>/<namespace>/<name>` with an empty namespace for cluster-scoped objects, for queues
 *    that hold several kinds. The emitter persists these keys in its state ConfigMaps: the format is stable.
 */
import type { KubernetesObject } from '@kubernetes/client-node';

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function parseKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

export function keyOf(o: KubernetesObject): string {
  return objectKey(o.metadata?.namespace, o.metadata?.name ?? '');
}

export function kindKey(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ''}/${name}`;
}

/** The parts of a `kindKey`; undefined when `key` has no kind, namespace and name parts. */
export function parseKindKey(key: string): { kind: string; namespace: string; name: string } | undefined {
  const i = key.indexOf('/');
  const j = i < 0 ? -1 : key.indexOf('/', i + 1);
  if (i <= 0 || j < 0 || j === key.length - 1) return undefined;
  return { kind: key.slice(0, i), namespace: key.slice(i + 1, j), name: key.slice(j + 1) };
}
