/**
 * The thin reader behind the root cause (docs/emitter.md "Root cause"): on demand, for one unhealthy Certificate
 * about to be notified, it reads the objects cert-manager made for the current issuance and hands them to the
 * pure classifier (classify.ts). Nothing is cached and nothing is watched: a cluster's CertificateRequests, Orders
 * and Challenges are never held in memory, only the few pages one lookup reads.
 *
 * - Certificate: read again (get), for what the informer's cache leaves out to stay small: its labels and
 *   status.revision.
 * - CertificateRequest: listed in the Certificate's namespace, by the Certificate's labels (cert-manager copies
 *   them onto its requests and their Orders), at most `pageSize` × `maxPages`; kept when its controller owner is
 *   the Certificate (uid) and its `cert-manager.io/certificate-revision` is the revision being issued
 *   (status.revision + 1), else the current one.
 * - Order (ACME only: the request's Ready condition names it): read by the name the request's message gives, else
 *   listed by the request's labels; kept when the request owns it.
 * - Challenges: listed in the namespace (cert-manager gives them no labels; they live only while their Order is
 *   being solved), kept when the Order owns them.
 * - Bounds: one deadline for the whole lookup (`timeoutMs`, waiting for a slot included: a notification is
 *   never held longer), at most `concurrency` lookups at once, and the text is cut by the classifier.
 * - RBAC: a 403 (the chart grants get/list on the three kinds; a cluster may not) means no root causes: logged
 *   once, and not asked again for `forbiddenRetryMs`. Any other failure: this notification goes without one.
 */
import type { CustomObjectsApi, KubernetesObject, RequestContext, ResponseContext } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { kubeErrorCode } from '../../kube/errors.js';
import { realClock, type Clock } from '../../runtime/timers.js';
import type { CertManagerObject } from '../health/condition.js';
import {
  rootCauseOf,
  type ChallengeFacts,
  type ConditionFacts,
  type IssuanceChain,
  type OrderFacts,
  type RequestFacts,
  type RootCause,
} from './classify.js';

export type RootCausePlural = 'certificates' | 'certificaterequests' | 'orders' | 'challenges';

const GROUPS: Record<RootCausePlural, string> = {
  certificates: 'cert-manager.io',
  certificaterequests: 'cert-manager.io',
  orders: 'acme.cert-manager.io',
  challenges: 'acme.cert-manager.io',
};

export const REVISION_ANNOTATION = 'cert-manager.io/certificate-revision';

/** The parts of a CertificateRequest, Order or Challenge the reader looks at. */
export interface IssuanceObject extends KubernetesObject {
  spec?: { type?: string; dnsName?: string; [k: string]: unknown };
  status?: {
    conditions?: ConditionFacts[];
    state?: string;
    reason?: string;
    presented?: boolean;
    processing?: boolean;
    [k: string]: unknown;
  };
}

export interface ListQuery {
  labelSelector?: string | undefined;
  limit: number;
  continue?: string | undefined;
}

/** The two calls the reader makes; kubeRootCauseApi is the real one. */
export interface RootCauseApi {
  list(
    plural: RootCausePlural,
    namespace: string,
    q: ListQuery,
    signal: AbortSignal,
  ): Promise<{ items: IssuanceObject[]; continue?: string | undefined }>;
  get(plural: RootCausePlural, namespace: string, name: string, signal: AbortSignal): Promise<IssuanceObject | undefined>;
}

type RequestOptions = Parameters<CustomObjectsApi['listNamespacedCustomObject']>[1];

/** Request options that make the request abortable by `signal` (client-node's middleware: pre runs before fetch). */
function withSignal(signal: AbortSignal): RequestOptions {
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(signal);
          return { toPromise: () => Promise.resolve(ctx) };
        },
        post: (res: ResponseContext) => ({ toPromise: () => Promise.resolve(res) }),
      },
    ],
    middlewareMergeStrategy: 'append',
  } as unknown as RequestOptions;
}

/** The reader's calls over client-node's CustomObjectsApi (namespaced list with a limit, get; 404 is undefined). */
export function kubeRootCauseApi(custom: CustomObjectsApi): RootCauseApi {
  const base = (plural: RootCausePlural) => ({ group: GROUPS[plural], version: 'v1', plural });
  return {
    async list(plural, namespace, q, signal) {
      const res = (await custom.listNamespacedCustomObject(
        {
          ...base(plural),
          namespace,
          limit: q.limit,
          // spreads: client-node's request takes a key only with a value
          ...(q.labelSelector ? { labelSelector: q.labelSelector } : {}),
          ...(q.continue ? { _continue: q.continue } : {}),
        },
        withSignal(signal),
      )) as { items?: IssuanceObject[]; metadata?: { continue?: string } };
      return { items: res.items ?? [], continue: res.metadata?.continue || undefined };
    },
    async get(plural, namespace, name, signal) {
      try {
        return (await custom.getNamespacedCustomObject({ ...base(plural), namespace, name }, withSignal(signal))) as IssuanceObject;
      } catch (e) {
        if (kubeErrorCode(e) === 404) return undefined;
        throw e;
      }
    },
  };
}

export interface RootCauseReaderOptions {
  api: RootCauseApi;
  log: Logger;
  clock?: Clock;
  /** one lookup, all its requests and its wait for a slot; default 5 s */
  timeoutMs?: number;
  /** lookups at once; default 8 */
  concurrency?: number;
  /** objects per list request; default 250 */
  pageSize?: number;
  /** list requests per kind per lookup; default 4 */
  maxPages?: number;
  /** after a 403, no lookups for this long; default 10 min */
  forbiddenRetryMs?: number;
}

class Forbidden extends Error {
  constructor(readonly plural: RootCausePlural) {
    super(`forbidden: ${plural}`);
  }
}

const ownedBy = (o: KubernetesObject, uid: string | undefined): boolean =>
  !!uid && (o.metadata?.ownerReferences ?? []).some((r) => r.uid === uid && r.controller === true);

const created = (o: KubernetesObject): number => {
  const t = o.metadata?.creationTimestamp as string | Date | undefined;
  const ms = t instanceof Date ? t.getTime() : typeof t === 'string' ? Date.parse(t) : NaN;
  return Number.isFinite(ms) ? ms : 0;
};
const newest = <T extends KubernetesObject>(xs: T[]): T | undefined =>
  xs.reduce<T | undefined>((a, b) => (!a || created(b) > created(a) ? b : a), undefined);

/** `k=v,...` of an object's labels (label keys and values need no escaping in a selector); undefined for none. */
function labelSelectorOf(o: KubernetesObject): string | undefined {
  const labels = Object.entries(o.metadata?.labels ?? {});
  return labels.length ? labels.map(([k, v]) => `${k}=${v}`).join(',') : undefined;
}

/** The Order a request's Ready condition names, as cert-manager's ACME request controller writes it. */
export function orderNameOf(message: string | undefined, namespace: string): string | undefined {
  if (!message) return undefined;
  const qualified = /\b(?:from order|Order resource|to Order|Order) ([a-z0-9][a-z0-9.-]*)\/([a-z0-9][a-z0-9.-]*)/i.exec(message);
  if (qualified && qualified[1] === namespace) return qualified[2];
  return /\border resource "([a-z0-9][a-z0-9.-]*)"/i.exec(message)?.[1];
}

/** The revisions a Certificate's current issuance may carry, preferred first. */
function wantedRevisions(cert: CertManagerObject): string[] {
  const rev = cert.status?.['revision'];
  return typeof rev === 'number' && Number.isSafeInteger(rev) && rev > 0 ? [String(rev + 1), String(rev)] : ['1'];
}

const requestFacts = (o: IssuanceObject): RequestFacts => ({
  namespace: o.metadata?.namespace ?? '',
  name: o.metadata?.name ?? '',
  conditions: Array.isArray(o.status?.conditions) ? o.status.conditions : [],
});
/** A field's value when it has the type the classifier reads (an object from the apiserver may hold anything). */
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const bool = (v: unknown): boolean | undefined => (typeof v === 'boolean' ? v : undefined);
const orderFacts = (o: IssuanceObject): OrderFacts => ({
  namespace: o.metadata?.namespace ?? '',
  name: o.metadata?.name ?? '',
  state: str(o.status?.state),
  reason: str(o.status?.reason),
});
const challengeFacts = (o: IssuanceObject): ChallengeFacts => ({
  namespace: o.metadata?.namespace ?? '',
  name: o.metadata?.name ?? '',
  type: str(o.spec?.type),
  dnsName: str(o.spec?.dnsName),
  state: str(o.status?.state),
  reason: str(o.status?.reason),
  presented: bool(o.status?.presented),
  processing: bool(o.status?.processing),
});

/** Challenges kept per lookup (an Order has one per DNS name). */
const MAX_CHALLENGES = 100;

export class RootCauseReader {
  private readonly clock: Clock;
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private forbiddenUntil = 0;
  private toldForbidden = false;

  constructor(private readonly opts: RootCauseReaderOptions) {
    this.clock = opts.clock ?? realClock;
  }

  private get timeoutMs(): number {
    return this.opts.timeoutMs ?? 5_000;
  }

  /** The root cause of an unhealthy Certificate, or undefined (none found, not allowed, too slow, failed). */
  async find(cert: { metadata?: { namespace?: string; name?: string } }): Promise<RootCause | undefined> {
    if (this.clock.now() < this.forbiddenUntil) return undefined;
    const signal = AbortSignal.timeout(this.timeoutMs);
    if (!(await this.slot(signal))) return undefined;
    try {
      return rootCauseOf(await this.chain(cert, signal));
    } catch (e) {
      if (e instanceof Forbidden) this.forbidden(e.plural);
      else
        this.opts.log.debug(
          { err: e, certificate: `${cert.metadata?.namespace}/${cert.metadata?.name}` },
          'root cause lookup failed; the notification goes without it',
        );
      return undefined;
    } finally {
      this.release();
    }
  }

  private forbidden(plural: RootCausePlural): void {
    this.forbiddenUntil = this.clock.now() + (this.opts.forbiddenRetryMs ?? 10 * 60_000);
    if (this.toldForbidden) return;
    this.toldForbidden = true;
    this.opts.log.warn(
      { resource: `${plural}.${GROUPS[plural]}` },
      'root causes are off: the agent may not list certificaterequests, orders and challenges (RBAC); notifications are sent without them',
    );
  }

  private async slot(signal: AbortSignal): Promise<boolean> {
    if (this.running < (this.opts.concurrency ?? 8)) {
      this.running++;
      return true;
    }
    return new Promise<boolean>((resolve) => {
      const go = (): void => {
        signal.removeEventListener('abort', giveUp);
        this.running++;
        resolve(true);
      };
      const giveUp = (): void => {
        const i = this.waiting.indexOf(go);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(false);
      };
      this.waiting.push(go);
      signal.addEventListener('abort', giveUp, { once: true });
    });
  }

  private release(): void {
    this.running--;
    this.waiting.shift()?.();
  }

  private async call<T>(plural: RootCausePlural, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (kubeErrorCode(e) === 403) throw new Forbidden(plural);
      throw e;
    }
  }

  /** Every object of `plural` in the namespace that `keep` accepts, at most maxPages pages. */
  private async listOwned(
    plural: RootCausePlural,
    namespace: string,
    labelSelector: string | undefined,
    keep: (o: IssuanceObject) => boolean,
    signal: AbortSignal,
  ): Promise<IssuanceObject[]> {
    const out: IssuanceObject[] = [];
    let cont: string | undefined;
    for (let page = 0; page < (this.opts.maxPages ?? 4); page++) {
      const q: ListQuery = { limit: this.opts.pageSize ?? 250, labelSelector: labelSelector || undefined, continue: cont || undefined };
      const res = await this.call(plural, () => this.opts.api.list(plural, namespace, q, signal));
      for (const o of res.items) if (keep(o)) out.push(o);
      cont = res.continue;
      if (!cont) break;
    }
    return out;
  }

  private async chain(ref: { metadata?: { namespace?: string; name?: string } }, signal: AbortSignal): Promise<IssuanceChain> {
    const namespace = ref.metadata?.namespace ?? '';
    const name = ref.metadata?.name ?? '';
    const cert = (await this.call('certificates', () => this.opts.api.get('certificates', namespace, name, signal))) as
      CertManagerObject | undefined;
    if (!cert) return {};
    const uid = cert.metadata?.uid;
    const revisions = wantedRevisions(cert);
    const requests = await this.listOwned(
      'certificaterequests',
      namespace,
      labelSelectorOf(cert),
      (o) => ownedBy(o, uid) && revisions.includes(o.metadata?.annotations?.[REVISION_ANNOTATION] ?? ''),
      signal,
    );
    const rev = revisions.find((r) => requests.some((o) => o.metadata?.annotations?.[REVISION_ANNOTATION] === r));
    const request = newest(requests.filter((o) => o.metadata?.annotations?.[REVISION_ANNOTATION] === rev));
    if (!request) return {};
    const facts = requestFacts(request);
    const ready = facts.conditions.find((c) => c.type === 'Ready');
    // only an ACME request speaks of an Order; others have none to look for
    if (ready?.status === 'True' || !/\border\b/i.test(`${ready?.reason ?? ''} ${ready?.message ?? ''}`)) return { request: facts };
    const named = orderNameOf(ready?.message, namespace);
    let order = named ? await this.call('orders', () => this.opts.api.get('orders', namespace, named, signal)) : undefined;
    if (order && !ownedBy(order, request.metadata?.uid)) order = undefined;
    if (!order && !named)
      order = newest(await this.listOwned('orders', namespace, labelSelectorOf(request), (o) => ownedBy(o, request.metadata?.uid), signal));
    if (!order) return { request: facts };
    const challenges =
      order.status?.state === 'valid'
        ? []
        : await this.listOwned('challenges', namespace, undefined, (o) => ownedBy(o, order.metadata?.uid), signal);
    return { request: facts, order: orderFacts(order), challenges: challenges.slice(0, MAX_CHALLENGES).map(challengeFacts) };
  }
}
