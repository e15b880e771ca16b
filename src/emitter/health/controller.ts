/**
 * The thin I/O shell around `diffReady`: informer caches of Issuers, ClusterIssuers and Certificates feed one
 * keyed workqueue (`<Kind>/<namespace>/<name>`, namespace '' for ClusterIssuers). A reconcile reads the
 * object from the cache (level-triggered), decides, sends the event and waits for the service's 202, then
 * records the new state durably, and comes back when the grace period ends, a Certificate's notAfter passes
 * or its renewal becomes overdue (renewalTime + the overdue grace): the clock alone changes those, no watch
 * event does. A periodic resync looks at every cached object and every remembered one (deletions).
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
import type { EventRecorder } from '../../kube/events.js';
import { diffReady, type HealthOptions, type HealthState } from './diff.js';
import { HEALTH_KINDS, observe, type CertManagerObject, type HealthKind } from './observe.js';
import { CERTIFICATE_NAME_ANNOTATION, type TlsSecretFacts } from '../inventory/facts.js';
import { resourcePolicyOf, type ResourcePolicy } from '../policy.js';
import { withRootCause } from '../rootcause/event.js';
import type { RootCauseReader } from '../rootcause/reader.js';

/** `<Kind>/<namespace>/<name>`; ClusterIssuers have an empty namespace (so a stale one in an event is ignored). */
export function healthKey(kind: HealthKind, namespace: string | undefined, name: string): string {
  return kindKey(kind, kind === 'ClusterIssuer' ? '' : namespace, name);
}

export function parseHealthKey(key: string): { kind: HealthKind; namespace: string; name: string } | undefined {
  const k = parseKindKey(key);
  if (!k || !(HEALTH_KINDS as readonly string[]).includes(k.kind)) return undefined;
  return { ...k, kind: k.kind as HealthKind };
}

/** What the health part needs of the TLS Secret cache. */
type SecretCache = Pick<ResilientInformer<TlsSecretFacts>, 'on' | 'get'>;

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
  /**
   * The TLS Secrets (the inventory's informer), for the policy annotations on a Certificate's Secret
   * (docs/annotations.md). Without it only the Certificate's own annotations count.
   */
  secrets?: SecretCache;
  /** Kubernetes Events about annotations that were ignored (bad values); a warning is logged anyway */
  events?: EventRecorder;
  /** the root cause of a Certificate about to be notified unhealthy, read on demand (docs/emitter.md "Root cause") */
  rootCauses?: Pick<RootCauseReader, 'find'>;
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
    // a Secret's annotations are part of its Certificate's policy
    const secretChanged = (s: TlsSecretFacts): void => {
      const cert = s.metadata.annotations?.[CERTIFICATE_NAME_ANNOTATION];
      if (cert && this.started) this.controller.enqueue(healthKey('Certificate', s.metadata.namespace, cert));
    };
    opts.secrets?.on('add', secretChanged);
    opts.secrets?.on('update', secretChanged);
    opts.secrets?.on('delete', secretChanged);
  }

  /** The problems last reported per key: a bad annotation is reported once per change, not per reconcile. */
  private readonly reported = new Map<string, string>();

  private policyOf(kind: HealthKind, obj: CertManagerObject): ResourcePolicy {
    if (kind !== 'Certificate') return resourcePolicyOf(obj, undefined, kind);
    const secretName = obj.spec?.secretName;
    const secret = secretName ? this.opts.secrets?.get(secretName, obj.metadata?.namespace) : undefined;
    // a Secret another Certificate wrote (or none of cert-manager's) says nothing about this one
    const own = secret && secret.metadata.annotations?.[CERTIFICATE_NAME_ANNOTATION] === obj.metadata?.name ? secret : undefined;
    return resourcePolicyOf(obj, own?.metadata.annotations, kind);
  }

  private reportProblems(key: string, kind: HealthKind, obj: CertManagerObject | undefined, problems: readonly string[]): void {
    const text = problems.join(' ');
    if ((this.reported.get(key) ?? '') === text) return;
    if (text) this.reported.set(key, text);
    else this.reported.delete(key);
    if (!text || !obj) return;
    this.opts.log.warn({ key, problems }, 'annotation ignored: its value is not valid (docs/annotations.md)');
    void this.opts.events?.record(
      {
        apiVersion: obj.apiVersion ?? 'cert-manager.io/v1',
        kind,
        name: obj.metadata?.name ?? '',
        ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
        ...(obj.metadata?.uid ? { uid: obj.metadata.uid } : {}),
      },
      'Warning',
      'InvalidAnnotation',
      text,
    );
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
    const policy = obj ? this.policyOf(ref.kind, obj) : undefined;
    this.reportProblems(key, ref.kind, obj, policy?.problems ?? []);
    const obs = obj ? observe(ref.kind, obj, now, policy, this.opts.health) : undefined;
    const prev = this.opts.state.get(key);
    const d = diffReady(prev, obs, now, this.opts.health);
    if (d.event?.type === 'evt.healthstatus.certmgr-certificate-resource.notready' && obj && this.opts.rootCauses)
      d.event = withRootCause(d.event, await this.opts.rootCauses.find(obj));
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
    // the resync looks at every key anyway: a recheck later than that needs no delayed add of its own (100,000
    // healthy Certificates would each hold one, and be reconciled twice per resync period)
    if (d.recheckAt === undefined) return;
    const wait = Math.max(0, d.recheckAt - this.clock.now());
    if (wait < this.resyncMs) return { requeueAfter: wait };
  }
}
