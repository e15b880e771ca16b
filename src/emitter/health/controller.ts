/**
 * The thin I/O shell around `diffReady`: informer caches of Issuers, ClusterIssuers and Certificates feed one
 * keyed workqueue (`<Kind>/<namespace>/<name>`, namespace '' for ClusterIssuers). A reconcile reads the
 * object from the cache (level-triggered), decides, sends the event and waits for the service's 202, then
 * records the new state durably, and comes back when the grace period ends or a Certificate's notAfter
 * passes. A periodic resync looks at every cached object and every remembered one (deletions).
 */
import type { Logger } from 'pino';
import type { ResilientInformer } from '../../kube/informer.js';
import { Controller } from '../../runtime/controller.js';
import { kindKey, parseKindKey } from '../../runtime/keys.js';
import type { ReconcileMetrics } from '../../runtime/metrics.js';
import type { Result } from '../../runtime/workqueue.js';
import { realClock, type BackoffPolicy, type Clock } from '../../runtime/timers.js';
import type { KeyedState } from '../state.js';
import type { EventSink } from '../../client/events.js';
import { diffReady, type HealthOptions, type HealthState } from './diff.js';
import { HEALTH_KINDS, observe, type CertManagerObject, type HealthKind } from './observe.js';

/** `<Kind>/<namespace>/<name>`; ClusterIssuers have an empty namespace (so a stale one in an event is ignored). */
export function healthKey(kind: HealthKind, namespace: string | undefined, name: string): string {
  return kindKey(kind, kind === 'ClusterIssuer' ? '' : namespace, name);
}

export function parseHealthKey(key: string): { kind: HealthKind; namespace: string; name: string } | undefined {
  const k = parseKindKey(key);
  if (!k || !(HEALTH_KINDS as readonly string[]).includes(k.kind)) return undefined;
  return { ...k, kind: k.kind as HealthKind };
}

export interface HealthMetrics {
  unhealthy(kind: HealthKind, n: number): void;
}

export interface HealthControllerOptions {
  informers: Record<HealthKind, ResilientInformer<CertManagerObject>>;
  state: KeyedState<HealthState>;
  sink: EventSink;
  health: HealthOptions;
  log: Logger;
  clock?: Clock;
  /** every key is looked at again this often; default 5 min */
  resyncMs?: number;
  /**
   * reconciles in flight; default 512. A reconcile waits on I/O only (its event's 202, then its state write), and
   * both are batched across reconciles (100 events a POST, one merge patch per state shard), so the batches fill
   * only when many wait at once: with 8, an outage breaking 10,000 certificates took ~100 s (one PATCH each);
   * with 512, ~23 s and ~1,600 PATCHes (bench/health-state.ts).
   */
  concurrency?: number;
  backoff?: BackoffPolicy;
  metrics?: HealthMetrics;
  /** reconcile metrics (controller="health") */
  reconcileMetrics?: ReconcileMetrics;
}

const HEALTH_CONCURRENCY = 512;

export class HealthController {
  private readonly controller: Controller;
  private readonly clock: Clock;
  private started = false;

  constructor(private readonly opts: HealthControllerOptions) {
    this.clock = opts.clock ?? realClock;
    this.controller = new Controller({
      name: 'health',
      reconcile: (key) => this.reconcile(key),
      keys: () => this.keys(),
      resyncMs: this.resyncMs,
      onResync: () => this.reportUnhealthy(),
      concurrency: opts.concurrency ?? HEALTH_CONCURRENCY,
      backoff: opts.backoff ?? { baseMs: 200, maxMs: 60_000, jitter: 0.1 },
      clock: this.clock,
      log: opts.log,
      ...(opts.reconcileMetrics ? { metrics: opts.reconcileMetrics } : {}),
    });
    for (const kind of HEALTH_KINDS) {
      const inf = opts.informers[kind];
      const enqueue = (o: CertManagerObject): void =>
        this.controller.enqueue(healthKey(kind, o.metadata?.namespace, o.metadata?.name ?? ''));
      inf.on('add', enqueue);
      inf.on('update', enqueue);
      inf.on('delete', enqueue);
      // after a relist (410, restart), objects deleted meanwhile are gone from the cache: look at all state too
      inf.onList(() => {
        if (this.started) this.controller.enqueueAll();
      });
    }
  }

  get queue(): Controller['queue'] {
    return this.controller.queue;
  }

  private get resyncMs(): number {
    return this.opts.resyncMs ?? 5 * 60_000;
  }

  /** Every cached object and every remembered key. */
  keys(): string[] {
    const keys = new Set<string>(this.opts.state.keys());
    for (const kind of HEALTH_KINDS)
      for (const o of this.opts.informers[kind].list()) keys.add(healthKey(kind, o.metadata?.namespace, o.metadata?.name ?? ''));
    return [...keys];
  }

  /** Start once the caches are synced (so "not in the cache" means deleted). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.controller.enqueueAll();
    this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private reportUnhealthy(): void {
    if (!this.opts.metrics) return;
    const counts: Record<HealthKind, number> = { Issuer: 0, ClusterIssuer: 0, Certificate: 0 };
    for (const k of this.opts.state.keys()) {
      const s = this.opts.state.get(k);
      if (s?.notified) counts[s.id.kind]++;
    }
    for (const kind of HEALTH_KINDS) this.opts.metrics.unhealthy(kind, counts[kind]);
  }

  async reconcile(key: string): Promise<Result | void> {
    const ref = parseHealthKey(key);
    if (!ref) return;
    const now = this.clock.now();
    const obj = this.opts.informers[ref.kind].get(ref.name, ref.kind === 'ClusterIssuer' ? undefined : ref.namespace);
    const obs = obj ? observe(ref.kind, obj, now) : undefined;
    const prev = this.opts.state.get(key);
    const d = diffReady(prev, obs, now, this.opts.health);
    if (d.event) {
      await this.opts.sink.send([d.event]);
      this.opts.log.info(
        { key, type: d.event.type, reason: d.event.data['statusReason'], unhealthyDuration: d.event.data['unhealthyDuration'] },
        'health event accepted by the service',
      );
    }
    // durable only after the 202: a crash in between re-sends (at-least-once), never loses the event
    await this.opts.state.set(key, d.next);
    if (d.event) this.reportUnhealthy();
    // the resync looks at every key anyway (and timers cannot wait longer than ~24.8 days)
    if (d.recheckAt !== undefined) return { requeueAfter: Math.min(Math.max(0, d.recheckAt - this.clock.now()), this.resyncMs) };
  }
}
