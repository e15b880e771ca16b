/**
 * A narrow, typed client over @kubernetes/client-node for what the operator does: read/list custom resources
 * and Secrets, merge-patch metadata (finalizers), server-side-apply status, create Events, read/write Leases.
 */
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  PatchStrategy,
  RequestContext,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type V1Secret,
  Watch,
} from '@kubernetes/client-node';
import { FIELD_MANAGER, GROUP, VERSION, type KindDef } from '../api/meta.js';
import { shareKubeDispatchers } from './dispatcher.js';
import { isNotFound } from './errors.js';
import type { ListPage } from './informer.js';
import { JsonListStream, ProtoListStream } from './list-stream.js';
import { PROTOBUF, readSecret, readSecretList, readStatus } from './secret-proto.js';

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
/**
 * Metadata only (PartialObjectMetadata, GA since Kubernetes 1.15): the apiserver sends no `data`, so a Secret's
 * values never reach this process. Plain JSON after the comma: a server without it sends whole objects, which
 * the caller's transform then reduces (the same result, more bytes on the wire).
 */
const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const METADATA_WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const metadataList = setHeaderOptions('Accept', METADATA_LIST_ACCEPT);
const applyPatch = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
/**
 * LIST pages uncompressed: the apiserver gzips every response over 128 KiB, and a page of 500 TLS Secrets
 * (base64 keys and certificates, which barely compress) costs it more CPU to compress and this process more to
 * inflate than the bytes saved are worth inside a cluster (the apiserver's CPU bounds the sync).
 */
const uncompressed = setHeaderOptions('Accept-Encoding', 'identity');
/** client-node's own HTTP library (its undici, with the dispatcher its KubeConfig makes) */
const rawHttp = new IsomorphicFetchHttpLibrary();

export class KubeClient {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;

  constructor(
    readonly kc: KubeConfig,
    readonly fieldManager = FIELD_MANAGER,
  ) {
    shareKubeDispatchers(kc); // keep-alive connections with deadlines, not one per request (dispatcher.ts)
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.coordination = kc.makeApiClient(CoordinationV1Api);
  }

  /**
   * The whole list, or one page of it (`page`: see ResilientInformer). With `each`, the response is streamed
   * (list-stream.ts): every item goes to `each` as it arrives and the returned list has none, so a list served
   * in one response (resourceVersion=0, from the apiserver's watch cache) costs the memory of one item.
   */
  async list<T extends KubernetesObject>(
    r: ResourceRef,
    namespace?: string,
    page?: ListPage,
    each?: (item: T) => void,
  ): Promise<KubernetesListObject<T>> {
    if (each) {
      const q = streamQuery(page);
      const stream = new JsonListStream((o) => each(o as T));
      await this.getStream(collectionPath(r, namespace), q, 'application/json', () => stream);
      const env = stream.end();
      return {
        apiVersion: env.apiVersion ?? `${r.group}/${r.version}`,
        kind: env.kind ?? `${r.kind}List`,
        metadata: env.metadata,
        items: [],
      };
    }
    const base = { group: r.group, version: r.version, plural: r.plural, ...pageQuery(page) };
    return (
      namespace && r.namespaced
        ? await this.custom.listNamespacedCustomObject({ ...base, namespace }, uncompressed)
        : await this.custom.listClusterCustomObject(base, uncompressed)
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
      metadata: { name, namespace: r.namespaced ? namespace : undefined },
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

  /**
   * Secrets without client-node's V1Secret models (its ObjectSerializer copies every object of a page into them:
   * CPU, and a second copy of each page). With `keepData`, the page is read in the apiserver's protobuf
   * encoding (secret-proto.ts: several times cheaper for the apiserver to encode than JSON's base64, and only
   * the fields and the data keys asked for are read; the others, a private key, are skipped in the bytes and
   * never become strings here); without it, the whole JSON. Timestamps are strings, not Dates, either way.
   */
  async listSecrets(
    namespace?: string,
    page?: ListPage,
    fieldSelector?: string,
    keepData?: readonly string[],
    each?: (item: V1Secret) => void,
  ): Promise<KubernetesListObject<V1Secret>> {
    const path = namespace ? `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets` : '/api/v1/secrets';
    const q = streamQuery(page);
    if (fieldSelector !== undefined) q['fieldSelector'] = fieldSelector;
    if (each && keepData) {
      const keep = new Set(keepData);
      let stream: JsonListStream | ProtoListStream | undefined;
      await this.getStream(
        path,
        q,
        `${PROTOBUF}, application/json`,
        (contentType) =>
          (stream = contentType.startsWith(PROTOBUF)
            ? new ProtoListStream((b) => each(readSecret(b, keep) as V1Secret))
            : new JsonListStream((o) => each(keepOnly(o as V1Secret, keep)))),
      );
      const { metadata } = stream!.end();
      return { apiVersion: 'v1', kind: 'SecretList', metadata, items: [] };
    }
    if (!keepData) return JSON.parse((await this.getRaw(path, q, 'application/json')).bytes.toString()) as KubernetesListObject<V1Secret>;
    const keep = new Set(keepData);
    // JSON after the comma: an apiserver that cannot encode protobuf answers with it (filtered the same way)
    const { bytes, contentType } = await this.getRaw(path, q, `${PROTOBUF}, application/json`);
    if (contentType.startsWith(PROTOBUF)) return readSecretList(bytes, keep) as KubernetesListObject<V1Secret>;
    const list = JSON.parse(bytes.toString()) as KubernetesListObject<V1Secret>;
    for (const s of list.items) keepOnly(s, keep);
    return list;
  }

  /**
   * One Secret as its JSON has it (as `listSecrets` streams them), its data reduced to `keepData`; undefined when it
   * does not exist.
   */
  async getSecretJson(namespace: string | undefined, name: string, keepData: readonly string[]): Promise<V1Secret | undefined> {
    const s = await this.getJson<V1Secret>(SECRETS, name, namespace);
    return s && keepOnly(s, new Set(keepData));
  }

  /** GET `path` uncompressed (see `uncompressed`), its whole body; an HTTP error is an ApiException as client-node throws. */
  private async getRaw(path: string, query: Record<string, string>, accept: string): Promise<{ bytes: Buffer; contentType: string }> {
    const chunks: Uint8Array[] = [];
    let contentType = '';
    await this.getStream(path, query, accept, (type) => {
      contentType = type;
      return { push: (c) => void chunks.push(c) };
    });
    return { bytes: Buffer.concat(chunks), contentType };
  }

  /**
   * GET `path` uncompressed, its body handed chunk by chunk to the reader `open` makes for the response's content
   * type (backpressure: the next chunk is read once the reader has taken this one). An HTTP error is an
   * ApiException as client-node throws.
   */
  private async getStream(
    path: string,
    query: Record<string, string>,
    accept: string,
    open: (contentType: string) => { push(chunk: Uint8Array): void },
  ): Promise<void> {
    const server = this.kc.getCurrentCluster()?.server;
    if (!server) throw new Error('No currently active cluster');
    const url = new URL(server + path);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const ctx = new RequestContext(url.toString(), HttpMethod.GET);
    ctx.setHeaderParam('Accept', accept);
    ctx.setHeaderParam('Accept-Encoding', 'identity');
    await this.kc.applySecurityAuthentication(ctx);
    const res = await rawHttp.send(ctx).toPromise();
    const contentType = res.headers['content-type'] ?? '';
    const body = res.body.stream() as AsyncIterable<Uint8Array>;
    if (res.httpStatusCode < 200 || res.httpStatusCode >= 300) {
      const chunks: Uint8Array[] = [];
      let size = 0;
      // an error is a small Status; more than this is not read
      for await (const c of body) if ((size += c.length) <= MAX_ERROR_BODY) chunks.push(c);
      const bytes = Buffer.concat(chunks);
      const text = contentType.startsWith(PROTOBUF) ? JSON.stringify(readStatus(bytes) ?? {}) : bytes.toString();
      throw new ApiException(res.httpStatusCode, `HTTP ${res.httpStatusCode} on GET ${path}`, text, res.headers);
    }
    const reader = open(contentType);
    for await (const c of body) reader.push(c);
  }

  /**
   * Metadata only (see METADATA_LIST_ACCEPT) of any resource, streamed as `list` with `each`: a list from the watch
   * cache is one response of every object's metadata.
   */
  async listMetadata(
    r: ResourceRef,
    namespace: string | undefined,
    page: ListPage | undefined,
    fieldSelector: string | undefined,
    each: (item: KubernetesObject) => void,
  ): Promise<KubernetesListObject<KubernetesObject>> {
    const q = streamQuery(page);
    if (fieldSelector !== undefined) q['fieldSelector'] = fieldSelector;
    const stream = new JsonListStream((o) => each(o as KubernetesObject));
    await this.getStream(collectionPath(r, namespace && encodeURIComponent(namespace)), q, METADATA_LIST_ACCEPT, () => stream);
    const env = stream.end();
    return {
      apiVersion: env.apiVersion ?? 'meta.k8s.io/v1',
      kind: env.kind ?? 'PartialObjectMetadataList',
      metadata: env.metadata,
      items: [],
    };
  }

  /** One object as the apiserver's JSON has it (no client-node model: the same shape as a streamed list's items); undefined when it does not exist. */
  async getJson<T extends KubernetesObject>(r: ResourceRef, name: string, namespace?: string): Promise<T | undefined> {
    const path = `${collectionPath(r, namespace && encodeURIComponent(namespace))}/${encodeURIComponent(name)}`;
    try {
      return JSON.parse((await this.getRaw(path, {}, 'application/json')).bytes.toString()) as T;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  /** `listSecrets` without the Secrets' data: names, versions, labels, annotations (see METADATA_LIST_ACCEPT). */
  async listSecretsMetadata(
    namespace?: string,
    page?: ListPage,
    fieldSelector?: string,
    each?: (item: KubernetesObject) => void,
  ): Promise<KubernetesListObject<KubernetesObject>> {
    if (each) return this.listMetadata(SECRETS, namespace, page, fieldSelector, each);
    const q = pageQuery(page, fieldSelector);
    return (
      namespace
        ? await this.core.listNamespacedSecret({ namespace, ...q }, metadataList)
        : await this.core.listSecretForAllNamespaces(q, metadataList)
    ) as KubernetesListObject<KubernetesObject>;
  }
}

/** A Watch whose events carry metadata only (see METADATA_WATCH_ACCEPT). */
export function metadataWatch(kc: KubeConfig): Watch {
  const config = Object.create(kc) as KubeConfig;
  config.applySecurityAuthentication = async (ctx) => {
    await kc.applySecurityAuthentication(ctx);
    ctx.setHeaderParam('Accept', METADATA_WATCH_ACCEPT);
  };
  return new Watch(config);
}

/** The list parameters of a page for client-node, whose request types take a key only with a value. */
function pageQuery(page: ListPage | undefined, fieldSelector?: string): { limit?: number; _continue?: string; fieldSelector?: string } {
  const q: { limit?: number; _continue?: string; fieldSelector?: string } = {};
  if (page?.limit !== undefined) q.limit = page.limit;
  if (page?.continue !== undefined) q._continue = page.continue;
  if (fieldSelector !== undefined) q.fieldSelector = fieldSelector;
  return q;
}

/** The query of a page; `resourceVersion` only on a list's first request (the apiserver refuses it with `continue`). */
function streamQuery(page: ListPage | undefined): Record<string, string> {
  const q: Record<string, string> = {};
  if (page?.limit !== undefined) q['limit'] = String(page.limit);
  if (page?.continue !== undefined) q['continue'] = page.continue;
  else if (page?.resourceVersion !== undefined) q['resourceVersion'] = page.resourceVersion;
  return q;
}

/** `s` with only the data keys of `keep` (a JSON Secret: the others, a private key, do not outlive the read). */
function keepOnly(s: V1Secret, keep: ReadonlySet<string>): V1Secret {
  if (s.data) s.data = Object.fromEntries(Object.entries(s.data).filter(([k]) => keep.has(k)));
  return s;
}

/** bytes of an error response read (a Status is well under this) */
const MAX_ERROR_BODY = 64 * 1024;
