/**
 * The thin I/O shell around `diffReady`: informer caches of Issuers, ClusterIssuers and Certificates feed one
 * keyed workqueue (`<Kind>/<namespace>/<name>`, namespace '' for ClusterIssuers). A reconcile reads the
 * object from the cache (level-triggered), decides, sends the event and waits for the service's 202, then
 * records the new state durably, and comes back when the grace period ends, a Certificate's notAfter passes
 * or its renewal becomes overdue (renewalTime + the overdue grace): the clock alone changes those, no watch
 * event does. A periodic resync looks at every cached object and every remembered one (deletions).
 *
 * With the endpoint verdicts (`serving`, docs/serving.md), a change of a Secret's verdicts enqueues the
 * Certificate that owns the Secret (its `cert-manager.io/certificate-name` annotation), or `Secret/<ns>/<name>`
 * when no Certificate manages it: such a Secret is a resource of the certificate health family of its own.
 */
import type { Logger } from 'pino';
import type { ResilientInformer } from '../../kube/informer.js';
import { Controller, DEFAULT_RESYNC_MS } from '../../runtime/controller.js';
import { kindKey, parseKindKey } from '../../runtime/keys.js';
import type { ReconcileMetrics } from '../../runtime/metrics.js';
import type { Result } from '../../runtime/workqueue.js';
import { realClock, type BackoffPolicy, type Clock } from '../../runtime/timers.js';
import type { KeyedState } from '../state.js';
import type { EventSink } from '../../client/events.js';
import type { EventRecorder } from '../../kube/events.js';
import { diffReady, type HealthOptions, type HealthState } from './diff.js';
import {
  HEALTH_KINDS,
  HEALTH_RESOURCE_KINDS,
  observe,
  observeSecret,
  type CertManagerObject,
  type HealthKind,
  type HealthResourceKind,
  type Observation,
} from './observe.js';
import { isServingReason } from './serving.js';
import { SERVING_REASONS } from '../../model/serving.js';
import type { EndpointVerdict, SecretKey, ServingVerdicts } from '../serving/types.js';
import { secretKeyOf } from '../serving/types.js';
import { CERTIFICATE_NAME_ANNOTATION, type TlsSecretFacts } from '../inventory/facts.js';
import { resourcePolicyOf, type ResourcePolicy } from '../policy.js';
import { withRootCause } from '../rootcause/event.js';
import type { RootCauseReader } from '../rootcause/reader.js';

/** `<Kind>/<namespace>/<name>`; ClusterIssuers have an empty namespace (so a stale one in an event is ignored). */
export function healthKey(kind: HealthResourceKind, namespace: string | undefined, name: string): string {
  return kindKey(kind, kind === 'ClusterIssuer' ? '' : namespace, name);
}

export function parseHealthKey(key: string): { kind: HealthResourceKind; namespace: string; name: string } | undefined {
  const k = parseKindKey(key);
  if (!k || !(HEALTH_RESOURCE_KINDS as readonly string[]).includes(k.kind)) return undefined;
  return { ...k, kind: k.kind as HealthResourceKind };
}

/** What the health part needs of the TLS Secret cache. */
type SecretCache = Pick<ResilientInformer<TlsSecretFacts>, 'on' | 'get'>;

export interface HealthMetrics {
  unhealthy(kind: HealthResourceKind, n: number): void;
}

export interface HealthControllerOptions {
  informers: Record<HealthKind, ResilientInformer<CertManagerObject>>;
  state: KeyedState<HealthState>;
  sink: EventSink;
  health: HealthOptions;
  log: Logger;
  clock?: Clock;
  /** every key is looked at again this often; default DEFAULT_RESYNC_MS (runtime/controller.ts) */
  resyncMs?: number | undefined;
  /**
   * reconciles in flight; default 512. A reconcile waits on I/O only (its event's 202, then its state write), and
   * both are batched across reconciles (100 events a POST, one merge patch per state shard), so the batches fill
   * only when many wait at once: a small number makes an outage that breaks many certificates one PATCH each.
   */
  concurrency?: number | undefined;
  backoff?: BackoffPolicy | undefined;
  metrics?: HealthMetrics;
  /** reconcile metrics (controller="health") */
  reconcileMetrics?: ReconcileMetrics | undefined;
  /**
   * The TLS Secrets (the inventory's informer), for the policy annotations on a Certificate's Secret
   * (docs/annotations.md). Without it only the Certificate's own annotations count.
   */
  secrets?: SecretCache | undefined;
  /** Kubernetes Events about annotations that were ignored (bad values); a warning is logged anyway */
  events?: EventRecorder;
  /** the root cause of a Certificate about to be notified unhealthy, read on demand (docs/emitter.md "Root cause") */
  rootCauses?: Pick<RootCauseReader, 'find'> | undefined;
  /**
   * The endpoints' verdicts per TLS Secret (docs/serving.md): a non-ok verdict makes the Certificate that owns the
   * Secret unhealthy, or the Secret itself when no Certificate manages it (that needs `secrets`).
   */
  serving?: ServingVerdicts | undefined;
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
      metrics: opts.reconcileMetrics,
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
    // a Secret no Certificate manages with an open episode: its update or deletion may end it
    const unmanagedChanged = (s: TlsSecretFacts): void => {
      const key = healthKey('Secret', s.metadata.namespace, s.metadata.name);
      if (this.started && this.opts.state.get(key)) this.controller.enqueue(key);
    };
    opts.secrets?.on('update', unmanagedChanged);
    opts.secrets?.on('delete', unmanagedChanged);
    opts.serving?.onChange((namespace, name) => {
      // before start the caches may not be synced (a Secret not seen yet looks unmanaged): mapped at start
      if (!this.started) this.servingBeforeStart.add(secretKeyOf(namespace, name));
      else {
        // only a problem, or a key with an open (or pending) episode, can change anything: the first ok verdicts
        // of every endpoint after a start are not worth a reconcile each
        const problem = opts.serving!.of(namespace, name).some((v) => Object.hasOwn(SERVING_REASONS, v.status));
        for (const k of this.keysOfSecret(namespace, name)) if (problem || this.opts.state.get(k)) this.controller.enqueue(k);
      }
    });
  }

  /** Secrets whose verdicts changed before start(). */
  private readonly servingBeforeStart = new Set<SecretKey>();

  /**
   * The keys a change of the Secret's verdicts concerns: the Certificate named by its annotation, else the Secret
   * itself. Without the Secret cache, the Certificates whose spec.secretName it is.
   */
  private keysOfSecret(namespace: string, name: string): string[] {
    const secrets = this.opts.secrets;
    if (!secrets)
      return this.opts.informers.Certificate.list()
        .filter((c) => c.metadata?.namespace === namespace && c.spec?.secretName === name)
        .map((c) => healthKey('Certificate', namespace, c.metadata?.name ?? ''));
    const cert = secrets.get(name, namespace)?.metadata.annotations?.[CERTIFICATE_NAME_ANNOTATION];
    const secretKey = healthKey('Secret', namespace, name);
    if (!cert) return [secretKey];
    // managed now: an episode the Secret had on its own ends too
    const certKey = healthKey('Certificate', namespace, cert);
    return this.opts.state.get(secretKey) ? [certKey, secretKey] : [certKey];
  }

  /** The verdicts on the endpoints of the Certificate's own Secret; undefined without verdicts or such a Secret. */
  private servingOf(obj: CertManagerObject): readonly EndpointVerdict[] | undefined {
    const serving = this.opts.serving;
    const namespace = obj.metadata?.namespace;
    const secretName = obj.spec?.secretName;
    if (!serving || !namespace || !secretName) return undefined;
    if (this.opts.secrets) {
      // a Secret another Certificate wrote (or none yet) is not this one's certificate
      const s = this.opts.secrets.get(secretName, namespace);
      if (s?.metadata.annotations?.[CERTIFICATE_NAME_ANNOTATION] !== obj.metadata?.name) return undefined;
    }
    return serving.of(namespace, secretName);
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
        namespace: obj.metadata?.namespace || undefined,
        uid: obj.metadata?.uid || undefined,
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
    return this.opts.resyncMs ?? DEFAULT_RESYNC_MS;
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
    for (const k of this.servingBeforeStart) {
      const i = k.indexOf('/');
      for (const key of this.keysOfSecret(k.slice(0, i), k.slice(i + 1))) this.controller.enqueue(key);
    }
    this.servingBeforeStart.clear();
    this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private reportUnhealthy(): void {
    if (!this.opts.metrics) return;
    const counts: Record<HealthResourceKind, number> = { Issuer: 0, ClusterIssuer: 0, Certificate: 0, Secret: 0 };
    for (const k of this.opts.state.keys()) {
      const s = this.opts.state.get(k);
      if (s?.notified) counts[s.id.kind]++;
    }
    for (const kind of HEALTH_RESOURCE_KINDS) this.opts.metrics.unhealthy(kind, counts[kind]);
  }

  async reconcile(key: string): Promise<Result | void> {
    const ref = parseHealthKey(key);
    if (!ref) return;
    const now = this.clock.now();
    let obs: Observation | undefined;
    let obj: CertManagerObject | undefined;
    if (ref.kind === 'Secret') {
      const s = this.opts.secrets?.get(ref.name, ref.namespace);
      obs = s
        ? observeSecret(s, this.opts.serving?.of(ref.namespace, ref.name) ?? [], resourcePolicyOf(undefined, s.metadata.annotations))
        : undefined;
    } else {
      obj = this.opts.informers[ref.kind].get(ref.name, ref.kind === 'ClusterIssuer' ? undefined : ref.namespace);
      const policy = obj ? this.policyOf(ref.kind, obj) : undefined;
      this.reportProblems(key, ref.kind, obj, policy?.problems ?? []);
      if (obj) obs = observe(ref.kind, obj, now, policy, this.opts.health, ref.kind === 'Certificate' ? this.servingOf(obj) : undefined);
    }
    const prev = this.opts.state.get(key);
    const d = diffReady(prev, obs, now, this.opts.health);
    // the root cause explains an issuance; a serving problem is past it
    const rootCause = d.event?.type === 'evt.healthstatus.certmgr-certificate-resource.notready' && !isServingReason(obs?.reason ?? '');
    if (rootCause && obj && this.opts.rootCauses) d.event = withRootCause(d.event!, await this.opts.rootCauses.find(obj));
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
