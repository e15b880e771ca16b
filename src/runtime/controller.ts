/**
 * The controller runtime: a reconcile returns `{ requeueAfter }` or throws.
 *  - TerminalError(reason): Stalled; no retry with backoff (events and the periodic resync still look
 *    again, which changes nothing until the spec does, but lets e.g. a provider's deletion proceed).
 *  - WaitError(reason, requeueAfter?): Ready=False/Reconciling=True; requeued after the delay, or with
 *    backoff when none is given (ServiceUnavailable).
 *  - anything else: Ready=False reason ReconcileError, retried with per-key exponential backoff.
 * `reconcileResource` is the one skeleton every kind uses: read from the informer cache (level-triggered),
 * finalizer handling (add before apply, cleanup then remove), one status write at the end (server-side
 * apply, only when it changed), and a Kubernetes Event when the Ready condition transitions.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_VERSION, FINALIZER, Reason, type KindDef } from '../api/meta.js';
import type { KubeClient, ResourceRef } from '../kube/client.js';
import { describeKubeError, isNotFound, kubeErrorCode } from '../kube/errors.js';
import type { EventRecorder } from '../kube/events.js';
import { addFinalizer, hasFinalizer, isDeleting, removeFinalizer } from './finalizer.js';
import type { ResilientInformer } from '../kube/informer.js';
import { WorkQueue, type Result } from './workqueue.js';
import type { BackoffPolicy, Clock } from './timers.js';
import { realClock } from './timers.js';
import { keyOf, parseKey } from './keys.js';
import type { ReconcileMetrics } from './metrics.js';
import { deepEqual, nextStatus, readyTransition, type BaseStatus, type Outcome, type StatusFields } from './status.js';

export { keyOf, objectKey, parseKey } from './keys.js';
export type { ReconcileMetrics } from './metrics.js';

export class TerminalError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    readonly fields?: StatusFields,
  ) {
    super(message);
    this.name = 'TerminalError';
  }
}

export class WaitError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    readonly opts: { requeueAfter?: number; fields?: StatusFields } = {},
  ) {
    super(message);
    this.name = 'WaitError';
  }
}

// ---------------------------------------------------------------------------------------------------------
// controller

/** The operator's and the emitter's controllers look at every object at least this often, reverting drift. */
export const DEFAULT_RESYNC_MS = 5 * 60_000;

export interface ControllerOptions {
  name: string;
  reconcile: (key: string) => Promise<Result | void>;
  /** keys to enqueue on each resync */
  keys: () => string[];
  resyncMs: number;
  /**
   * Runs (awaited) before each resync enqueues the keys, e.g. to refresh what every reconcile reads. A
   * failure is logged and the keys are enqueued anyway (the reconciles retry with backoff).
   */
  onResync?: () => void | Promise<void>;
  concurrency: number;
  backoff?: BackoffPolicy;
  clock?: Clock;
  log: Logger;
  metrics?: ReconcileMetrics | undefined;
}

/** One keyed workqueue, fed by informer events and a periodic resync. */
export class Controller {
  readonly queue: WorkQueue;
  private resyncTimer: unknown;
  private running = false;
  private readonly clock: Clock;

  constructor(private readonly opts: ControllerOptions) {
    this.clock = opts.clock ?? realClock;
    this.queue = new WorkQueue({
      name: opts.name,
      concurrency: opts.concurrency,
      backoff: opts.backoff,
      clock: this.clock,
      handler: (key) => opts.reconcile(key),
      onError: (key, err, retryInMs, failures) => {
        opts.log.warn({ key, retryInMs, failures, error: safeMessage(err) }, 'reconcile failed; retrying');
      },
      onDone: (_key, outcome, ms) => opts.metrics?.observe(opts.name, outcome, ms / 1000),
    });
  }

  get name(): string {
    return this.opts.name;
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.queue.start();
    this.armResync();
  }

  /** Runs `onResync`, then enqueues every key. */
  async resync(): Promise<void> {
    if (this.opts.onResync) {
      try {
        await this.opts.onResync();
      } catch (e) {
        this.opts.log.warn({ error: safeMessage(e) }, 'resync hook failed; enqueueing every key anyway');
      }
    }
    if (this.running) this.enqueueAll();
  }

  enqueueAll(): void {
    for (const k of this.opts.keys()) this.queue.add(k);
  }

  private armResync(): void {
    this.resyncTimer = this.clock.setTimeout(() => {
      this.resyncTimer = undefined;
      if (!this.opts.onResync) {
        // no hook: synchronously, as timers of fake clocks expect
        this.enqueueAll();
        this.armResync();
        return;
      }
      void this.resync().then(() => {
        if (this.running) this.armResync();
      });
    }, this.opts.resyncMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.resyncTimer !== undefined) this.clock.clearTimeout(this.resyncTimer);
    this.resyncTimer = undefined;
    await this.queue.stop();
  }
}

/**
 * Enqueue on add/delete and on updates that matter to the object itself: generation (spec), deletion,
 * finalizers, labels/annotations. The operator's own status writes don't retrigger its reconcile.
 */
export function watchPrimary<T extends KubernetesObject>(informer: ResilientInformer<T>, c: Controller): void {
  const seen = new Map<string, string>();
  const sig = (o: KubernetesObject): string =>
    JSON.stringify([
      o.metadata?.uid,
      o.metadata?.generation,
      o.metadata?.deletionTimestamp ?? null,
      o.metadata?.finalizers ?? [],
      o.metadata?.annotations ?? {},
    ]);
  informer.on('add', (o) => {
    seen.set(keyOf(o), sig(o));
    c.enqueue(keyOf(o));
  });
  informer.on('update', (o) => {
    const k = keyOf(o);
    const s = sig(o);
    if (seen.get(k) === s) return;
    seen.set(k, s);
    c.enqueue(k);
  });
  informer.on('delete', (o) => {
    seen.delete(keyOf(o));
    c.enqueue(keyOf(o));
  });
  // after a (re)list — e.g. a 410 relist — look at everything again
  informer.onList((items) => {
    for (const o of items) c.enqueue(keyOf(o));
  });
}

/** Enqueue the keys `map` returns for any change of a related object. */
export function watchRelated<T extends KubernetesObject>(
  informer: Pick<ResilientInformer<T, never>, 'on'>,
  c: Controller,
  map: (o: T) => string[],
): void {
  const h = (o: T): void => {
    for (const k of map(o)) c.enqueue(k);
  };
  informer.on('add', h);
  informer.on('update', h);
  informer.on('delete', h);
}

// ---------------------------------------------------------------------------------------------------------
// the reconcile skeleton

export interface Applied {
  message: string;
  fields: StatusFields;
  /** come back sooner than the resync (e.g. a stale record could not be deleted yet) */
  requeueAfter?: number | undefined;
}

export type Cleaned = { done: true } | { done: false; reason: string; message: string; requeueAfter: number };

export interface ResourceHandler<T extends KubernetesObject> {
  kind: KindDef;
  resource: ResourceRef;
  cache: ResilientInformer<T>;
  /** whether deleting the object must remove something in the service */
  needsFinalizer(obj: T): boolean;
  apply(obj: T, log: Logger): Promise<Applied>;
  cleanup(obj: T, log: Logger): Promise<Cleaned>;
}

export interface ReconcileDeps {
  kube: KubeClient;
  events: EventRecorder;
  log: Logger;
  clock?: Clock;
}

type WithStatus = KubernetesObject & { status?: BaseStatus };

/** Messages of unexpected errors: first line, bounded; ServiceApiError/TerminalError messages are already safe. */
function safeMessage(e: unknown): string {
  if (kubeErrorCode(e) !== undefined) return describeKubeError(e).slice(0, 512);
  const m = e instanceof Error ? e.message : String(e);
  return (m.split('\n')[0] ?? '').slice(0, 512);
}

let reconcileSeq = 0;

export async function reconcileResource<T extends WithStatus>(h: ResourceHandler<T>, key: string, deps: ReconcileDeps): Promise<Result> {
  const { namespace, name } = parseKey(key);
  const log = deps.log.child({ kind: h.kind.kind, key, reconcileID: (++reconcileSeq).toString(36) });
  let obj = h.cache.get(name, namespace);
  if (!obj) return {}; // gone: its finalizer ran before
  const generation = obj.metadata?.generation ?? 0;
  const now = (): string => new Date((deps.clock ?? realClock).now()).toISOString().replace(/\.\d{3}Z$/, 'Z');

  const writeStatus = async (o: T, outcome: Outcome): Promise<void> => {
    const next = nextStatus(o.status, generation, outcome, now());
    if (deepEqual(o.status ?? {}, next)) return;
    try {
      await deps.kube.applyStatus(h.resource, name, namespace, next);
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    const t = readyTransition(o.status, next);
    if (t) {
      log.info({ reason: t.reason, ready: t.type === 'Normal' }, `Ready → ${t.type === 'Normal' ? 'True' : 'False'}: ${t.message}`);
      await deps.events.record(
        {
          apiVersion: API_VERSION,
          kind: h.kind.kind,
          name,
          namespace: namespace || undefined,
          uid: o.metadata?.uid || undefined,
        },
        t.type,
        t.reason,
        t.message,
      );
    }
  };

  if (isDeleting(obj)) {
    if (!hasFinalizer(obj, FINALIZER)) return {};
    let r: Cleaned;
    try {
      r = await h.cleanup(obj, log);
    } catch (e) {
      await writeStatus(obj, {
        kind: 'waiting',
        reason: e instanceof WaitError ? e.reason : Reason.ReconcileError,
        message: `deleting: ${safeMessage(e)}`,
      }).catch(() => {});
      throw e;
    }
    if (r.done) {
      await removeFinalizer(deps.kube, h.resource, obj, FINALIZER);
      log.info('cleaned up; finalizer removed');
      return {};
    }
    await writeStatus(obj, { kind: 'waiting', reason: r.reason, message: r.message });
    return { requeueAfter: r.requeueAfter };
  }

  if (h.needsFinalizer(obj) && !hasFinalizer(obj, FINALIZER)) {
    obj = await addFinalizer(deps.kube, h.resource, obj, FINALIZER);
  }

  let outcome: Outcome;
  let result: Result = {};
  let rethrow: unknown;
  try {
    const a = await h.apply(obj, log);
    outcome = { kind: 'ready', message: a.message, fields: a.fields };
    if (a.requeueAfter !== undefined) result = { requeueAfter: a.requeueAfter };
  } catch (e) {
    if (e instanceof TerminalError) {
      outcome = { kind: 'stalled', reason: e.reason, message: e.message, fields: e.fields };
      log.info({ reason: e.reason, error: e.message }, 'stalled until the spec changes');
    } else if (e instanceof WaitError) {
      outcome = { kind: 'waiting', reason: e.reason, message: e.message, fields: e.opts.fields };
      if (e.opts.requeueAfter !== undefined) result = { requeueAfter: e.opts.requeueAfter };
      else rethrow = e;
    } else {
      outcome = { kind: 'waiting', reason: Reason.ReconcileError, message: safeMessage(e) };
      log.error({ error: safeMessage(e) }, 'reconcile error');
      rethrow = e;
    }
  }
  await writeStatus(obj, outcome);
  if (rethrow) throw rethrow;
  return result;
}
