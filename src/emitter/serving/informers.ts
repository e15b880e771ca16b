/**
 * The serving informers (docs/serving.md): Ingresses (networking.k8s.io/v1) and Gateway API Gateways, cached as
 * the facts discovery reads (discover.ts), and the EndpointIndex they feed: the endpoints of each TLS Secret.
 *
 * Gateways: the Gateway API is a set of CRDs many clusters do not have. Its list tries v1, then v1beta1; when
 * neither is served (404), or the agent may not list them (403), the informer counts as synced with no objects,
 * says so once at info (403: warn), and looks again every `gatewayRecheckMs` (one LIST) instead of retrying the
 * watch with errors.
 */
import { Watch, type KubeConfig, type KubernetesListObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { collectionPath, type KubeClient, type ResourceRef } from '../../kube/client.js';
import { describeKubeError, kubeErrorCode } from '../../kube/errors.js';
import { ResilientInformer, type ListPage } from '../../kube/informer.js';
import { informerBase } from '../informers.js';
import type { BackoffPolicy, Clock } from '../../runtime/timers.js';
import {
  gatewayEndpoints,
  gatewayFacts,
  ingressEndpoints,
  ingressFacts,
  type GatewayFacts,
  type IngressFacts,
  type RawObject,
  type ServingObjectMeta,
} from './discover.js';
import { secretKeyOf, type Endpoint, type SecretKey } from './types.js';

const INGRESSES: ResourceRef = { group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', kind: 'Ingress', namespaced: true };
const GATEWAY_GROUP = 'gateway.networking.k8s.io';
/** tried in this order */
const GATEWAY_VERSIONS = ['v1', 'v1beta1'] as const;
const gatewayRef = (version: string): ResourceRef => ({
  group: GATEWAY_GROUP,
  version,
  plural: 'gateways',
  kind: 'Gateway',
  namespaced: true,
});
/** how often an absent (or forbidden) Gateway API is looked for again */
const GATEWAY_RECHECK_MS = 10 * 60_000;

type Kind = Endpoint['source']['kind'];

const sameEndpoint = (a: Endpoint, b: Endpoint): boolean =>
  a.host === b.host &&
  a.address === b.address &&
  a.reason === b.reason &&
  a.secret.namespace === b.secret.namespace &&
  a.secret.name === b.secret.name &&
  a.source.name === b.source.name &&
  a.source.namespace === b.source.namespace &&
  a.source.kind === b.source.kind;

const sameList = (a: readonly Endpoint[], b: readonly Endpoint[]): boolean =>
  a.length === b.length && a.every((e, i) => sameEndpoint(e, b[i]!));

const NONE: readonly Endpoint[] = Object.freeze([]);

/**
 * The endpoints of every TLS Secret, kept as discovery gives them per Ingress or Gateway: the informers set an
 * object's endpoints on add and update and remove them on delete; listeners hear of every Secret whose
 * endpoints changed (not of updates that changed none, such as a relist or a status write).
 */
export class EndpointIndex {
  /** per object (`<kind>\n<namespace>\n<name>`): its endpoints and the hosts its facts cut */
  private readonly byObject = new Map<string, { endpoints: readonly Endpoint[]; cut: number }>();
  private readonly bySecret = new Map<SecretKey, Endpoint[]>();
  private readonly listeners: ((namespace: string, secretName: string) => void)[] = [];
  private cutTotal = 0;

  /** The endpoints configured with the Secret (in the order found). */
  endpointsOf(namespace: string, secretName: string): readonly Endpoint[] {
    return this.bySecret.get(secretKeyOf(namespace, secretName)) ?? NONE;
  }

  *all(): Iterable<Endpoint> {
    for (const o of this.byObject.values()) yield* o.endpoints;
  }

  /** Called synchronously for every Secret whose endpoints changed. */
  onChange(listener: (namespace: string, secretName: string) => void): void {
    this.listeners.push(listener);
  }

  /** objects with endpoints, endpoints, and hosts cut (beyond the per-object bound) */
  get stats(): { objects: number; endpoints: number; secrets: number; cut: number } {
    let endpoints = 0;
    for (const o of this.byObject.values()) endpoints += o.endpoints.length;
    return { objects: this.byObject.size, endpoints, secrets: this.bySecret.size, cut: this.cutTotal };
  }

  setIngress(f: IngressFacts): void {
    this.set('Ingress', f.metadata, ingressEndpoints(f), f.cut ?? 0);
  }

  setGateway(f: GatewayFacts): void {
    this.set('Gateway', f.metadata, gatewayEndpoints(f), f.cut ?? 0);
  }

  delete(kind: Kind, md: Pick<ServingObjectMeta, 'name' | 'namespace'>): void {
    this.set(kind, md, NONE, 0);
  }

  /** An object's endpoints now (none: it is gone or serves nothing). */
  set(kind: Kind, md: Pick<ServingObjectMeta, 'name' | 'namespace'>, endpoints: readonly Endpoint[], cut = 0): void {
    const key = `${kind}\n${md.namespace}\n${md.name}`;
    const old = this.byObject.get(key);
    const before = old?.endpoints ?? NONE;
    this.cutTotal += cut - (old?.cut ?? 0);
    if (endpoints.length || cut) this.byObject.set(key, { endpoints: sameList(before, endpoints) ? before : endpoints, cut });
    else this.byObject.delete(key);
    if (sameList(before, endpoints)) return;
    const ofObject = (e: Endpoint): boolean => e.source.kind === kind && e.source.namespace === md.namespace && e.source.name === md.name;
    const changed = new Map<SecretKey, { namespace: string; name: string }>();
    for (const e of [...before, ...endpoints]) changed.set(secretKeyOf(e.secret.namespace, e.secret.name), e.secret);
    for (const [k, secret] of changed) {
      const kept = (this.bySecret.get(k) ?? []).filter((e) => !ofObject(e));
      for (const e of endpoints) if (e.secret.namespace === secret.namespace && e.secret.name === secret.name) kept.push(e);
      if (kept.length) this.bySecret.set(k, kept);
      else this.bySecret.delete(k);
    }
    for (const secret of changed.values()) for (const l of this.listeners) l(secret.namespace, secret.name);
  }
}

export interface ServingInformers {
  ingresses: ResilientInformer<IngressFacts, RawObject>;
  /** undefined when not asked for (`gateways: false`); present whether or not the CRD is installed */
  gateways: ResilientInformer<GatewayFacts, RawObject> | undefined;
  index: EndpointIndex;
  all: ResilientInformer<never>[];
}

export function servingInformers(o: {
  kc: KubeConfig;
  kube: KubeClient;
  /** watch only this namespace */
  namespace: string | undefined;
  log: Logger;
  clock: Clock;
  backoff?: BackoffPolicy | undefined;
  /** LIST page size; default 1000 */
  pageSize?: number | undefined;
  /** every LIST page read, by informer (a metric) */
  onListPage?: ((informer: string) => void) | undefined;
  /** watch Gateway API Gateways (when installed); default true */
  gateways?: boolean;
  /** see GATEWAY_RECHECK_MS */
  gatewayRecheckMs?: number;
}): ServingInformers {
  const ns = o.namespace;
  const index = new EndpointIndex();
  const common = (name: string) => informerBase(name, o);

  const ingresses = new ResilientInformer<IngressFacts, RawObject>({
    ...common('ingresses'),
    path: collectionPath(INGRESSES, ns),
    list: (page: ListPage, each) => o.kube.list<RawObject>(INGRESSES, ns, page, each),
    streamed: true,
    relistByMetadata: {
      list: (page, each) => o.kube.listMetadata(INGRESSES, ns, page, undefined, each),
      get: (name, namespace) => o.kube.getJson<RawObject>(INGRESSES, name, namespace),
    },
    transform: ingressFacts,
  });
  ingresses.on('add', (f) => index.setIngress(f));
  ingresses.on('update', (f) => index.setIngress(f));
  ingresses.on('delete', (f) => index.delete('Ingress', f.metadata));

  const all = [ingresses as unknown as ResilientInformer<never>];
  let gateways: ResilientInformer<GatewayFacts, RawObject> | undefined;
  if (o.gateways !== false) {
    gateways = gatewayInformer({ ...o, common: common('gateways') });
    gateways.on('add', (f) => index.setGateway(f));
    gateways.on('update', (f) => index.setGateway(f));
    gateways.on('delete', (f) => index.delete('Gateway', f.metadata));
    all.push(gateways as unknown as ResilientInformer<never>);
  }
  return { ingresses, gateways, index, all };
}

/** See the module comment: the Gateway informer, quiet while the Gateway API is not there. */
function gatewayInformer(o: {
  kc: KubeConfig;
  kube: KubeClient;
  namespace: string | undefined;
  log: Logger;
  clock: Clock;
  gatewayRecheckMs?: number;
  common: Omit<ConstructorParameters<typeof ResilientInformer<GatewayFacts, RawObject>>[0], 'path' | 'list'>;
}): ResilientInformer<GatewayFacts, RawObject> {
  const ns = o.namespace;
  const recheckMs = o.gatewayRecheckMs ?? GATEWAY_RECHECK_MS;
  /** the version listed last; undefined while none is served */
  let version: string | undefined;
  /** what was said last about an absent API ('' when it was found): said again only when it changes */
  let said: string | undefined;
  const list = async (page: ListPage, each?: (item: RawObject) => void): Promise<KubernetesListObject<RawObject>> => {
    let refusal: { code: number; error: string } | undefined;
    for (const v of GATEWAY_VERSIONS) {
      try {
        const l = await o.kube.list<RawObject>(gatewayRef(v), ns, page, each);
        if (version !== v || said !== '')
          o.log.info({ informer: 'gateways', version: `${GATEWAY_GROUP}/${v}` }, 'Gateway API found: watching Gateways');
        version = v;
        said = '';
        return l;
      } catch (e) {
        const code = kubeErrorCode(e);
        if (code !== 404 && code !== 403) throw e;
        refusal ??= { code, error: describeKubeError(e) };
      }
    }
    version = undefined;
    const forbidden = refusal?.code === 403;
    const what = forbidden
      ? 'Gateways may not be listed (RBAC: list and watch gateways.gateway.networking.k8s.io): Gateway listeners are not probed'
      : 'Gateway API not installed (no gateways.gateway.networking.k8s.io v1 or v1beta1): Gateway listeners are not probed';
    if (said !== what) o.log[forbidden ? 'warn' : 'info']({ informer: 'gateways', error: refusal?.error, recheckMs }, what);
    said = what;
    return { apiVersion: 'v1', kind: 'List', metadata: {}, items: [] };
  };
  const base = new Watch(o.kc);
  const watch = Object.create(base) as Watch;
  watch.watch = async (_path, query, cb, done) => {
    if (version !== undefined) return base.watch(collectionPath(gatewayRef(version), ns), query, cb, done);
    // nothing to watch: end in recheckMs with 410, so that the informer lists (looks) again
    const ac = new AbortController();
    const t = o.clock.setTimeout(() => {
      if (!ac.signal.aborted) done(Object.assign(new Error('looking for the Gateway API again'), { statusCode: 410 }));
    }, recheckMs);
    ac.signal.addEventListener('abort', () => o.clock.clearTimeout(t), { once: true });
    return ac;
  };
  return new ResilientInformer<GatewayFacts, RawObject>({
    ...o.common,
    path: collectionPath(gatewayRef(GATEWAY_VERSIONS[0]), ns),
    list,
    streamed: true,
    watch,
    transform: gatewayFacts,
  });
}
