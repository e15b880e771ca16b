/**
 * A narrow, typed client over @kubernetes/client-node for what the operator does: read/list custom resources
 * and Secrets, merge-patch metadata (finalizers), server-side-apply status, create Events, read/write Leases.
 */
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type V1Secret,
} from '@kubernetes/client-node';
import { FIELD_MANAGER, GROUP, VERSION, type KindDef } from '../api/meta.js';
import { reuseKubeDispatchers } from './dispatchers.js';
import { isNotFound } from './errors.js';
import type { ListPage } from './informer.js';

export interface ResourceRef {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export function resourceOf(k: KindDef): ResourceRef {
  return { group: GROUP, version: VERSION, plural: k.plural, kind: k.kind, namespaced: k.scope === 'Namespaced' };
}

/** Collection path for a watch: all namespaces, or one. */
export function collectionPath(r: ResourceRef, namespace?: string): string {
  const base = r.group === '' ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  return namespace && r.namespaced ? `${base}/namespaces/${namespace}/${r.plural}` : `${base}/${r.plural}`;
}

export const SECRETS: ResourceRef = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const applyPatch = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

export class KubeClient {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;

  constructor(
    readonly kc: KubeConfig,
    readonly fieldManager = FIELD_MANAGER,
  ) {
    reuseKubeDispatchers(kc);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.coordination = kc.makeApiClient(CoordinationV1Api);
  }

  /** The whole list, or one page of it (`page`: see ResilientInformer). */
  async list<T extends KubernetesObject>(r: ResourceRef, namespace?: string, page?: ListPage): Promise<KubernetesListObject<T>> {
    const base = { group: r.group, version: r.version, plural: r.plural, ...pageQuery(page) };
    return (
      namespace && r.namespaced
        ? await this.custom.listNamespacedCustomObject({ ...base, namespace })
        : await this.custom.listClusterCustomObject(base)
    ) as KubernetesListObject<T>;
  }

  async get<T extends KubernetesObject>(r: ResourceRef, name: string, namespace?: string): Promise<T | undefined> {
    try {
      const base = { group: r.group, version: r.version, plural: r.plural, name };
      return (
        r.namespaced
          ? await this.custom.getNamespacedCustomObject({ ...base, namespace: namespace ?? '' })
          : await this.custom.getClusterCustomObject(base)
      ) as T;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  /** RFC 7386 merge patch of the main resource (metadata: finalizers, with a resourceVersion precondition). */
  async mergePatch<T extends KubernetesObject>(r: ResourceRef, name: string, namespace: string | undefined, body: unknown): Promise<T> {
    const base = { group: r.group, version: r.version, plural: r.plural, name, body, fieldManager: this.fieldManager };
    return (
      r.namespaced
        ? await this.custom.patchNamespacedCustomObject({ ...base, namespace: namespace ?? '' }, mergePatch)
        : await this.custom.patchClusterCustomObject(base, mergePatch)
    ) as T;
  }

  /** Server-side apply of the whole `.status` (fieldManager, force): fields the operator no longer sends are removed. */
  async applyStatus<T extends KubernetesObject>(r: ResourceRef, name: string, namespace: string | undefined, status: unknown): Promise<T> {
    const body = {
      apiVersion: `${r.group}/${r.version}`,
      kind: r.kind,
      metadata: { name, ...(r.namespaced ? { namespace } : {}) },
      status,
    };
    const base = { group: r.group, version: r.version, plural: r.plural, name, body, fieldManager: this.fieldManager, force: true };
    return (
      r.namespaced
        ? await this.custom.patchNamespacedCustomObjectStatus({ ...base, namespace: namespace ?? '' }, applyPatch)
        : await this.custom.patchClusterCustomObjectStatus(base, applyPatch)
    ) as T;
  }

  async getSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ namespace, name });
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async listSecrets(namespace?: string, page?: ListPage, fieldSelector?: string): Promise<KubernetesListObject<V1Secret>> {
    const q = { ...pageQuery(page), ...(fieldSelector !== undefined ? { fieldSelector } : {}) };
    return (
      namespace ? await this.core.listNamespacedSecret({ namespace, ...q }) : await this.core.listSecretForAllNamespaces(q)
    ) as KubernetesListObject<V1Secret>;
  }
}

function pageQuery(page: ListPage | undefined): { limit?: number; _continue?: string } {
  if (!page) return {};
  return { limit: page.limit, ...(page.continue !== undefined ? { _continue: page.continue } : {}) };
}
