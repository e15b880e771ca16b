/**
 * A relist that reads names and resourceVersions first. After an apiserver restart (or any 410) an informer must
 * list again, and almost every object is as it was: its cached copy is still right. Reading every whole object
 * again (at scale, hundreds of MB of Secret data and JSON) costs the apiserver
 * its encoding and this process its parsing, while both share the CPU with the new apiserver refilling its caches,
 * which every client waits for. So the relist lists metadata only (PartialObjectMetadataList), keeps the cached
 * object whose resourceVersion is unchanged, and GETs the few that changed or are new; when too many did, or a GET
 * fails, the caller lists whole objects instead.
 *
 * A GET answers at the object's current version, newer than the list's. The watch then starts from the list's
 * resourceVersion and replays the changes in between, so the informer drops each replayed event of a fetched
 * object that is not newer than what the GET returned (`isStale`); without that, the cache would step back to an
 * older state and forward again (a health flap that never happened). That comparison reads resourceVersions as
 * numbers (etcd revisions, which every Kubernetes apiserver sends); when one is not, the relist is not done this
 * way.
 */
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';

export interface MetadataRelist<R extends KubernetesObject> {
  /** the informer's list, metadata only: streamed to `each`, the returned list without items */
  list: (page: { resourceVersion: string }, each: (item: KubernetesObject) => void) => Promise<KubernetesListObject<KubernetesObject>>;
  /** one object as the informer's list returns it; undefined when it does not exist (any more) */
  get: (name: string, namespace: string | undefined) => Promise<R | undefined>;
}

/** More changed or new objects than this and the relist reads whole objects (one list beats many GETs). */
export const MAX_RELIST_GETS = 256;
/** GETs in flight at once */
const GET_CONCURRENCY = 8;

/** A resourceVersion as the etcd revision it is, or undefined when it is not a plain number. */
export function revision(rv: string | undefined): number | undefined {
  return rv !== undefined && /^\d{1,15}$/.test(rv) ? Number(rv) : undefined;
}

const objectKey = (md: { name?: string; namespace?: string } | undefined): string => `${md?.namespace ?? ''}/${md?.name ?? ''}`;

export interface RelistResult<T> {
  items: T[];
  resourceVersion: string;
  /** objects read by GET at a version newer than the list's: key → revision (see `isStale`) */
  ahead: Map<string, number>;
  gets: number;
}

/**
 * The relist from `resourceVersion` by metadata, or undefined when it cannot be done that way (too many objects
 * changed, a paginated answer, a resourceVersion that is not a number): the caller then lists whole objects.
 */
export async function relistByMetadata<T extends KubernetesObject, R extends KubernetesObject>(o: {
  meta: MetadataRelist<R>;
  resourceVersion: string;
  cached: (name: string, namespace: string | undefined) => T | undefined;
  transform: ((obj: R) => T) | undefined;
}): Promise<RelistResult<T> | undefined> {
  const items: (T | undefined)[] = [];
  const changed: { at: number; name: string; namespace: string | undefined }[] = [];
  const list = await o.meta.list({ resourceVersion: o.resourceVersion }, (m) => {
    const md = m.metadata;
    if (md?.name === undefined) return;
    const cached = o.cached(md.name, md.namespace);
    if (cached !== undefined && md.resourceVersion && cached.metadata?.resourceVersion === md.resourceVersion) items.push(cached);
    else if (changed.length <= MAX_RELIST_GETS) changed.push({ at: items.push(undefined) - 1, name: md.name, namespace: md.namespace });
  });
  const meta = list.metadata as { resourceVersion?: string; continue?: string; _continue?: string } | undefined;
  const listRevision = revision(meta?.resourceVersion);
  if (changed.length > MAX_RELIST_GETS || meta?.continue || meta?._continue || listRevision === undefined) return undefined;
  const ahead = new Map<string, number>();
  // A GET failed (a 403: the agent's RBAC grants list and watch on Secrets, not get, unless it runs the operator) or
  // answered without a revision: the other workers stop and the relist reads whole objects. Rethrown, the same
  // refusal would fail every relist from the same resourceVersion, and the informer would never list again.
  let unreadable = false;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < changed.length && !unreadable) {
      const c = changed[next++]!;
      let obj: R | undefined;
      try {
        obj = await o.meta.get(c.name, c.namespace);
      } catch {
        unreadable = true;
        return;
      }
      if (obj === undefined) continue; // deleted since the list: the watch replays its deletion
      const rev = revision(obj.metadata?.resourceVersion);
      if (rev === undefined) {
        unreadable = true;
        return;
      }
      if (rev > listRevision) ahead.set(objectKey(obj.metadata), rev);
      items[c.at] = o.transform ? o.transform(obj) : (obj as unknown as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(GET_CONCURRENCY, changed.length) }, worker));
  if (unreadable) return undefined;
  return {
    items: changed.length === 0 ? (items as T[]) : items.filter((x): x is T => x !== undefined),
    resourceVersion: meta!.resourceVersion!,
    ahead,
    gets: changed.length,
  };
}

/** A watch event the relist's GETs have already gone past: its object was read at a newer version (see `ahead`). */
export function isStale(ahead: Map<string, number>, obj: KubernetesObject): boolean {
  if (ahead.size === 0) return false;
  const key = objectKey(obj.metadata);
  const fetched = ahead.get(key);
  if (fetched === undefined) return false;
  const rev = revision(obj.metadata?.resourceVersion);
  if (rev !== undefined && rev <= fetched) return true;
  ahead.delete(key); // caught up: later events are newer
  return false;
}
