/**
 * Composition root of the Kubernetes operator: informers (providers, routers, monitoring configs, Secrets' names),
 * one controller (keyed workqueue) per kind, leader election on a Lease, the service API client.
 * Only the leader runs informers and controllers; `isLeader` / `onStartedLeading` let other roles (emitter,
 * delivery) follow the same leadership. `stop()` drains in-flight reconciles and releases the lease.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { Gauge, Registry } from 'prom-client';
import type { Logger } from 'pino';
import { MonitoringConfigKind, type MonitoringConfig } from '../api/monitoringconfig.js';
import { NotificationProviderKind, type NotificationProvider } from '../api/notificationprovider.js';
import { NotificationRouterKind, type NotificationRouter } from '../api/notificationrouter.js';
import { NotificationSilenceKind, type NotificationSilence } from '../api/notificationsilence.js';
import { FIELD_MANAGER } from '../api/meta.js';
import { monitoringHandler } from './reconcilers/monitoring.js';
import { providerHandler, providersUsingSecret } from './reconcilers/provider.js';
import { routerHandler, routersUsingProvider } from './reconcilers/router.js';
import { routersUsingTemplate, templateHandler } from './reconcilers/template.js';
import { NotificationTemplateKind, type NotificationTemplate } from '../api/notificationtemplate.js';
import { silenceHandler } from './reconcilers/silence.js';
import { providerSecretsInformer } from './secrets.js';
import {
  Controller,
  DEFAULT_RESYNC_MS,
  keyOf,
  reconcileResource,
  watchPrimary,
  watchRelated,
  type ReconcileDeps,
  type ReconcileMetrics,
  type ResourceHandler,
} from '../runtime/controller.js';
import { SecretApiKey, type ApiKey, type SecretKeySelector } from '../client/api-key.js';
import { reconcileMetricsFor } from '../runtime/metrics.js';
import { GraphQLServiceApi, type ServiceApi } from '../client/service-api.js';
import type { BaseStatus } from '../runtime/status.js';
import { KubeClient, collectionPath, resourceOf, type ResourceRef } from '../kube/client.js';
import { k8sEventRecorder } from '../kube/events.js';
import { ResilientInformer, type ListPage } from '../kube/informer.js';
import { detectKubeConfig, loadKubeConfig } from '../kube/kubeconfig.js';
import {
  LeaderElector,
  createLeadership,
  runWhileLeading,
  type LeaderCallback,
  type Leadership,
  type LeadershipOptions,
} from '../runtime/leader.js';
import { realClock, type BackoffPolicy, type Clock } from '../runtime/timers.js';

export { loadKubeConfig } from '../kube/kubeconfig.js';
export type { ServiceApi } from '../client/service-api.js';

export type { SecretKeySelector } from '../client/api-key.js';

export type ServiceTarget =
  /** in-process (the URL `startService` returned) or remote, with the key at hand */
  | { url: string; apiKey: ApiKey }
  /** remote, the key read from a Secret (re-read every minute, so rotation needs no restart) */
  | { url: string; apiKeySecret: SecretKeySelector }
  /** a ready client (tests) */
  | { api: ServiceApi };

export type LeaderElectionOptions = LeadershipOptions;

export interface OperatorOptions {
  logger: Logger;
  service: ServiceTarget;
  /** default: KUBECONFIG / ~/.kube/config / in-cluster */
  kubeConfig?: KubeConfig;
  /** watch only this namespace (providers, routers, Secrets); default all namespaces */
  namespace?: string | undefined;
  /**
   * The process's leadership (the composition root creates it once and starts and stops it). Without it the
   * operator creates its own from `leaderElection` and stops it in `stop()` (standalone use, tests).
   */
  leader?: Leadership;
  leaderElection?: LeaderElectionOptions;
  /** unique per replica; default <hostname>_<random> */
  identity?: string;
  /** every object is reconciled at least this often (reverts drift made through the API); default DEFAULT_RESYNC_MS */
  resyncMs?: number;
  /**
   * set when several clusters reconcile into one service (same company): managedBy becomes
   * `k8s:<kind>/<namespace>/<name>@<cluster>` so they never adopt or clean up each other's records
   */
  cluster?: string | undefined;
  /**
   * --cluster-id: names this cluster in the monitoring configuration's manager key when `cluster` is unset, so
   * two clusters sharing a service never look like one manager (docs/operator.md, "Ownership")
   */
  clusterId?: string | undefined;
  /** concurrent reconciles per controller; default DEFAULT_RECONCILE_CONCURRENCY */
  concurrency?: number;
  /** per-key retry backoff; default 100 ms doubling to 60 s */
  backoff?: BackoffPolicy;
  /** informer restart backoff; default 500 ms doubling to 30 s */
  informerBackoff?: BackoffPolicy;
  /** service API request timeout; default 10 s */
  serviceTimeoutMs?: number;
  /** with `apiKeySecret`: how often the key is re-read; default 60 s */
  serviceKeyRefreshMs?: number;
  /** prom-client registry for the operator's metrics; default a private one */
  registry?: Registry;
  clock?: Clock;
  /** retry intervals while waiting on something (tests shorten them) */
  waits?: { providerRetryMs?: number; secretRetryMs?: number; deletionRetryMs?: number; staleRetryMs?: number };
}

export interface OperatorStats {
  leader: boolean;
  /** controllers are running (this replica leads and its caches are synced) */
  running: boolean;
  informers: Record<string, { synced: boolean; lists: number; restarts: number; errors: number; lastError?: string }>;
  queues: Record<string, { length: number; delayed: number }>;
}

export interface RunningOperator {
  readonly identity: string;
  isLeader(): boolean;
  /** runs when this replica becomes leader (immediately if it is) */
  onStartedLeading(cb: LeaderCallback): void;
  onStoppedLeading(cb: LeaderCallback): void;
  /** resolves once this replica leads and its caches are synced (controllers running) */
  whenRunning(): Promise<void>;
  stats(): OperatorStats;
  /** graceful: stop controllers (in-flight reconciles finish), informers, release the lease */
  stop(): Promise<void>;
}

export const DEFAULT_LEASE_NAME = 'certmgr-notify-operator';
/** Concurrent reconciles per controller. */
export const DEFAULT_RECONCILE_CONCURRENCY = 4;
interface OperatorMetrics extends ReconcileMetrics {
  leader: Gauge;
}

const leaderGauges = new WeakMap<Registry, Gauge>();

function createMetrics(registry: Registry): OperatorMetrics {
  let leader = leaderGauges.get(registry);
  if (!leader) {
    leader = new Gauge({ name: 'certmgr_notify_operator_leader', help: '1 while this replica leads', registers: [registry] });
    leaderGauges.set(registry, leader);
  }
  return { leader, ...reconcileMetricsFor(registry) };
}

/** The controllers of one leadership term. */
class Term {
  private readonly abort = new AbortController();
  private readonly informers: ResilientInformer<KubernetesObject>[] = [];
  readonly controllers: Controller[] = [];
  readonly running: Promise<void>;
  private stopped = false;
  /** controllers started (caches synced) */
  started = false;

  constructor(
    private readonly opts: OperatorOptions,
    kube: KubeClient,
    service: ServiceApi,
    deps: ReconcileDeps,
    metrics: ReconcileMetrics,
  ) {
    const ns = opts.namespace;
    const log = opts.logger;
    const clock = opts.clock ?? realClock;
    const informerOf = <T extends KubernetesObject>(
      name: string,
      r: ResourceRef,
      list: (page: ListPage) => Promise<{ items: T[] }>,
    ): ResilientInformer<T> => {
      const inf = new ResilientInformer<T>({
        name,
        kc: kube.kc,
        path: collectionPath(r, ns),
        list: list as never,
        log,
        backoff: opts.informerBackoff,
        clock,
      });
      this.informers.push(inf as unknown as ResilientInformer<KubernetesObject>);
      return inf;
    };
    const crInformer = <T extends KubernetesObject>(k: typeof NotificationProviderKind): ResilientInformer<T> => {
      const r = resourceOf(k);
      return informerOf<T>(k.plural, r, (page) => kube.list<T>(r, ns, page));
    };
    const providers = crInformer<NotificationProvider>(NotificationProviderKind);
    const routers = crInformer<NotificationRouter>(NotificationRouterKind);
    const configs = crInformer<MonitoringConfig>(MonitoringConfigKind);
    const templates = crInformer<NotificationTemplate>(NotificationTemplateKind);
    const silences = crInformer<NotificationSilence>(NotificationSilenceKind);
    // names and versions only, never a Secret's data (src/operator/secrets.ts)
    const secrets = providerSecretsInformer({
      kube,
      namespace: ns,
      log,
      backoff: opts.informerBackoff,
      clock,
    });
    this.informers.push(secrets as unknown as ResilientInformer<KubernetesObject>);

    const w = opts.waits ?? {};
    const controllerOf = <T extends KubernetesObject & { status?: BaseStatus }>(
      h: ResourceHandler<T>,
      inf: ResilientInformer<T>,
    ): Controller => {
      const c = new Controller({
        name: h.kind.kind,
        reconcile: (key) => reconcileResource(h, key, deps),
        keys: () => inf.list().map(keyOf),
        resyncMs: opts.resyncMs ?? DEFAULT_RESYNC_MS,
        concurrency: opts.concurrency ?? DEFAULT_RECONCILE_CONCURRENCY,
        backoff: opts.backoff ?? { baseMs: 100, maxMs: 60_000, jitter: 0.1 },
        clock,
        log: log.child({ controller: h.kind.kind }),
        metrics,
      });
      watchPrimary(inf, c);
      this.controllers.push(c);
      return c;
    };

    const providerC = controllerOf(
      providerHandler({
        service,
        providers,
        readSecret: (namespace, name) => kube.getSecret(namespace, name),
        cluster: opts.cluster,
        secretRetryMs: w.secretRetryMs,
        deletionRetryMs: w.deletionRetryMs,
        staleRetryMs: w.staleRetryMs,
      }),
      providers,
    );
    const routerC = controllerOf(
      routerHandler({
        service,
        routers,
        providers,
        templates,
        cluster: opts.cluster,
        providerRetryMs: w.providerRetryMs,
        requeueProvider: (k) => providerC.enqueue(k),
      }),
      routers,
    );
    controllerOf(
      templateHandler({
        service,
        templates,
        cluster: opts.cluster,
        deletionRetryMs: w.deletionRetryMs,
      }),
      templates,
    );
    const monitoringCluster = opts.cluster ?? opts.clusterId;
    controllerOf(monitoringHandler({ service, configs, cluster: monitoringCluster }), configs);
    controllerOf(silenceHandler({ service, silences, cluster: opts.cluster }), silences);

    // a Secret change re-applies the providers that read it; a provider change re-evaluates its routers
    watchRelated(secrets, providerC, (s) => providersUsingSecret(providers.list(), s.metadata?.namespace ?? '', s.metadata?.name ?? ''));
    watchRelated(providers, routerC, (p) => routersUsingProvider(routers.list(), p.metadata?.namespace ?? '', p.metadata?.name ?? ''));
    // a template change (Ready, id, deletion) re-evaluates the routers that reference it
    watchRelated(templates, routerC, (t) => routersUsingTemplate(routers.list(), t.metadata?.namespace ?? '', t.metadata?.name ?? ''));

    this.running = this.run();
  }

  private async run(): Promise<void> {
    const log = this.opts.logger;
    await Promise.all(this.informers.map((i) => i.start().catch(() => {})));
    // controllers start only with complete caches: e.g. "provider not found" must mean it does not exist
    await Promise.race([
      Promise.all(this.informers.map((i) => i.synced)),
      new Promise((r) => this.abort.signal.addEventListener('abort', r)),
    ]);
    if (this.stopped) return;
    for (const c of this.controllers) c.start();
    this.started = true;
    log.info({ namespace: this.opts.namespace ?? '(all)' }, 'operator controllers running');
  }

  stats(): Pick<OperatorStats, 'informers' | 'queues'> {
    const informers: OperatorStats['informers'] = {};
    for (const i of this.informers) informers[i.name] = { synced: i.hasSynced, ...i.stats };
    const queues: OperatorStats['queues'] = {};
    for (const c of this.controllers) queues[c.name] = { length: c.queue.length, delayed: c.queue.pendingDelayed };
    return { informers, queues };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await Promise.all(this.controllers.map((c) => c.stop()));
    await Promise.all(this.informers.map((i) => i.stop().catch(() => {})));
  }
}

export async function startOperator(opts: OperatorOptions): Promise<RunningOperator> {
  const log = opts.logger.child({ component: 'operator' });
  const kc = opts.kubeConfig ?? loadKubeConfig();
  const kube = new KubeClient(kc, FIELD_MANAGER);
  const identity = opts.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
  const clock = opts.clock ?? realClock;
  const registry = opts.registry ?? new Registry();
  const metrics = createMetrics(registry);

  let keySource: SecretApiKey | undefined;
  let service: ServiceApi;
  // 0 means the client's default, as unset does
  const timeoutMs = opts.serviceTimeoutMs || undefined;
  const t = opts.service;
  if ('api' in t) service = t.api;
  else if ('apiKeySecret' in t) {
    keySource = new SecretApiKey({
      read: (ns, name) => kube.getSecret(ns, name),
      secret: t.apiKeySecret,
      log,
      refreshMs: opts.serviceKeyRefreshMs ?? 60_000,
    });
    await keySource.load();
    keySource.start();
    service = new GraphQLServiceApi({
      url: t.url,
      apiKey: keySource.get,
      timeoutMs,
    });
  } else
    service = new GraphQLServiceApi({
      url: t.url,
      apiKey: t.apiKey,
      timeoutMs,
    });

  const deps: ReconcileDeps = {
    kube,
    events: k8sEventRecorder(kube.core, { component: 'certmgr-notify-operator', instance: identity, log }),
    log: log.child({ identity }),
    clock,
  };
  const termOpts: OperatorOptions = { ...opts, logger: log };

  // standalone (no leadership passed in): this operator owns one and stops it in stop()
  const owned = opts.leader
    ? undefined
    : createLeadership({
        options: opts.leaderElection ?? {},
        coordination: kube.coordination,
        identity,
        defaultLeaseName: DEFAULT_LEASE_NAME,
        clock,
        log,
      });
  const leader: Leadership = opts.leader ?? owned!;
  let runningWaiters: (() => void)[] = [];
  leader.onStartedLeading(() => metrics.leader.set(1));
  leader.onStoppedLeading(() => metrics.leader.set(0));
  const terms = runWhileLeading(
    leader,
    async () => {
      const t2 = new Term(termOpts, kube, service, deps, metrics);
      void t2.running.then(() => {
        if (terms.current() !== t2) return;
        const w = runningWaiters;
        runningWaiters = [];
        for (const r of w) r();
      });
      return t2;
    },
    { name: 'operator', log },
  );
  owned?.start();
  log.info({ identity, leaderElection: leader instanceof LeaderElector, namespace: opts.namespace ?? '(all)' }, 'operator started');

  const op: RunningOperator = {
    identity,
    isLeader: () => leader.isLeader(),
    onStartedLeading: (cb) => leader.onStartedLeading(cb),
    onStoppedLeading: (cb) => leader.onStoppedLeading(cb),
    whenRunning() {
      const t2 = terms.current();
      if (t2) return t2.running.then(() => (terms.current() === t2 ? undefined : op.whenRunning()));
      return new Promise((r) => runningWaiters.push(r));
    },
    stats() {
      const t2 = terms.current();
      const s = t2?.stats() ?? { informers: {}, queues: {} };
      return { leader: op.isLeader(), running: Boolean(t2?.started), ...s };
    },
    async stop() {
      // the term first (in-flight reconciles finish), then the owned leadership: other roles' stop callbacks
      // run and the lease is released
      await terms.stop();
      await owned?.stop();
      keySource?.stop();
      log.info({ identity }, 'operator stopped');
    },
  };
  return op;
}

/** For `--kube auto`: whether a Kubernetes configuration is present. */
export function kubeConfigAvailable(env: NodeJS.ProcessEnv = process.env): boolean {
  return detectKubeConfig(env) !== undefined;
}
