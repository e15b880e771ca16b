/**
 * The finalizer helper. Pure list functions plus the two writes: add (before any apply) and remove (after a
 * successful cleanup). Both are merge patches carrying the resourceVersion the decision was made on, so a
 * stale cache or a concurrent writer gets 409 Conflict (retried) instead of clobbering someone's finalizer.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient, ResourceRef } from '../kube/client.js';

export function hasFinalizer(obj: KubernetesObject, name: string): boolean {
  return (obj.metadata?.finalizers ?? []).includes(name);
}

function withFinalizer(list: readonly string[] | undefined, name: string): string[] {
  const l = [...(list ?? [])];
  return l.includes(name) ? l : [...l, name];
}

function withoutFinalizer(list: readonly string[] | undefined, name: string): string[] {
  return (list ?? []).filter((f) => f !== name);
}

export function isDeleting(obj: KubernetesObject): boolean {
  return Boolean(obj.metadata?.deletionTimestamp);
}

async function patchFinalizers<T extends KubernetesObject>(client: KubeClient, r: ResourceRef, obj: T, finalizers: string[]): Promise<T> {
  return client.mergePatch<T>(r, obj.metadata?.name ?? '', obj.metadata?.namespace, {
    metadata: { finalizers, resourceVersion: obj.metadata?.resourceVersion },
  });
}

/** Adds `name` (no-op when present); returns the updated object. */
export async function addFinalizer<T extends KubernetesObject>(client: KubeClient, r: ResourceRef, obj: T, name: string): Promise<T> {
  if (hasFinalizer(obj, name)) return obj;
  return patchFinalizers(client, r, obj, withFinalizer(obj.metadata?.finalizers, name));
}

/** Removes `name` (no-op when absent). The apiserver deletes the object once no finalizer is left. */
export async function removeFinalizer<T extends KubernetesObject>(client: KubeClient, r: ResourceRef, obj: T, name: string): Promise<void> {
  if (!hasFinalizer(obj, name)) return;
  await patchFinalizers(client, r, obj, withoutFinalizer(obj.metadata?.finalizers, name));
}
