/**
 * The hint of a serving verdict: which workloads mount a TLS Secret (pods of its namespace whose volumes or env
 * reference it), named by their owner, so that the message can say what needs a reload. The product never
 * restarts anything. Read on demand when a verdict turns non-ok: a bounded list of the namespace's pods (a few
 * pages, a timeout), never watched.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describeKubeError } from '../../kube/errors.js';
import type { Clock } from '../../runtime/timers.js';

/** workload names listed; the rest are counted ("and N more") */
export const MAX_CONSUMERS = 10;

/** The fields of a pod read here (client-node's V1Pod, or the apiserver's JSON). */
export type PodLike = Pick<V1Pod, 'metadata' | 'spec' | 'status'>;

/** Does the pod reference the Secret: a secret or projected volume, an env secretKeyRef, an envFrom secretRef? */
export function podMountsSecret(pod: PodLike, secretName: string): boolean {
  const spec = pod.spec;
  if (!spec) return false;
  for (const v of spec.volumes ?? []) {
    if (v.secret?.secretName === secretName) return true;
    for (const s of v.projected?.sources ?? []) if (s.secret?.name === secretName) return true;
  }
  const containers = [...(spec.containers ?? []), ...(spec.initContainers ?? []), ...(spec.ephemeralContainers ?? [])];
  for (const c of containers) {
    for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef?.name === secretName) return true;
    for (const e of c.envFrom ?? []) if (e.secretRef?.name === secretName) return true;
  }
  return false;
}

/** the alphabet of the pod-template hash (k8s.io/apimachinery rand.SafeEncodeString) */
const TEMPLATE_HASH = /^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/;

/**
 * The workload a pod belongs to, as `Kind/name`: its controller's, with a ReplicaSet named after a Deployment
 * (`<deployment>-<pod-template-hash>`) as that Deployment; a pod without an owner as `Pod/<name>`.
 */
export function workloadOf(pod: PodLike): string {
  const md = pod.metadata ?? {};
  const refs = md.ownerReferences ?? [];
  const owner = refs.find((r) => r.controller) ?? refs[0];
  if (!owner?.kind || !owner.name) return `Pod/${md.name ?? '?'}`;
  if (owner.kind === 'ReplicaSet') {
    const hash = md.labels?.['pod-template-hash'];
    const dash = owner.name.lastIndexOf('-');
    const suffix = dash > 0 ? owner.name.slice(dash + 1) : undefined;
    if (suffix !== undefined && (hash !== undefined ? suffix === hash : TEMPLATE_HASH.test(suffix)))
      return `Deployment/${owner.name.slice(0, dash)}`;
  }
  return `${owner.kind}/${owner.name}`;
}

export interface Consumers {
  /** at most MAX_CONSUMERS workload names (`Deployment/web`), in the order found */
  workloads: string[];
  /** further workloads found, not listed */
  more: number;
  /** the pod list was cut (pages, timeout, an error): there may be more */
  partial: boolean;
  /** why it was cut: the error or the bound reached (for the caller's log) */
  cutBy?: string | undefined;
}

/** The workloads of the pods that mount the Secret, deduplicated (pods that ended are not counted). */
export function consumersOf(pods: Iterable<PodLike>, secretName: string, into?: Set<string>): Set<string> {
  const found = into ?? new Set<string>();
  for (const p of pods) {
    const phase = p.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') continue;
    if (podMountsSecret(p, secretName)) found.add(workloadOf(p));
  }
  return found;
}

/** `Deployment/web, Pod/x and 3 more` (and "may be more" when the list was cut); '' when none. */
export function describeConsumers(c: Consumers): string {
  if (!c.workloads.length) return '';
  const more = c.more > 0 ? ` and ${c.more} more` : '';
  return `${c.workloads.join(', ')}${more}${c.partial ? ' (pods listed in part)' : ''}`;
}

/** The names for EndpointVerdict.consumers: the workloads, then `and N more` when there are more. */
export function consumerNames(c: Consumers): string[] {
  return c.more > 0 ? [...c.workloads, `and ${c.more} more`] : c.workloads;
}

/** The pod list of client-node's CoreV1Api (or a stand-in). */
export interface PodLister {
  listNamespacedPod(req: { namespace: string; limit?: number; _continue?: string | undefined }): Promise<{
    items: PodLike[];
    metadata?: { _continue?: string };
  }>;
}

export interface FindConsumersOptions {
  clock: Clock;
  /** pods per page; default 500 */
  pageSize?: number;
  /** pages read at most; default 4 */
  maxPages?: number;
  /** the whole look-up; default 10 s */
  timeoutMs?: number;
}

/**
 * The workloads in `namespace` that mount the Secret: the namespace's pods, paginated and bounded (maxPages,
 * timeoutMs); a look-up cut short (or failed) returns what it found with `partial`, never throws.
 */
export async function findConsumers(api: PodLister, namespace: string, secretName: string, opts: FindConsumersOptions): Promise<Consumers> {
  const pageSize = opts.pageSize ?? 500;
  const maxPages = opts.maxPages ?? 4;
  const found = new Set<string>();
  let cutBy: string | undefined;
  let timer: unknown;
  const timedOut = new Promise<'timeout'>((resolve) => (timer = opts.clock.setTimeout(() => resolve('timeout'), opts.timeoutMs ?? 10_000)));
  try {
    let cont: string | undefined;
    for (let page = 0; ; page++) {
      if (page >= maxPages) {
        cutBy = `more than ${maxPages} pages of ${pageSize} pods`;
        break;
      }
      const request = api.listNamespacedPod({ namespace, limit: pageSize, _continue: cont });
      const res = await Promise.race([request, timedOut]);
      if (res === 'timeout') {
        void request.catch(() => {});
        cutBy = `timeout after ${opts.timeoutMs ?? 10_000} ms`;
        break;
      }
      consumersOf(res.items, secretName, found);
      cont = res.metadata?._continue || undefined;
      if (cont === undefined) break;
    }
  } catch (e) {
    cutBy = describeKubeError(e);
  } finally {
    opts.clock.clearTimeout(timer);
  }
  const all = [...found];
  return {
    workloads: all.slice(0, MAX_CONSUMERS),
    more: Math.max(0, all.length - MAX_CONSUMERS),
    partial: cutBy !== undefined,
    cutBy,
  };
}
