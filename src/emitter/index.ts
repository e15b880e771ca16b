/**
 * The emitter: the third role. It watches cert-manager Issuers, ClusterIssuers and Certificates (health) and
 * TLS Secrets (expiry), and sends the spec's events to the service's `POST /v1/events`, which routes and
 * delivers them. Run it on the leader only (runtime/leader.ts `runWhileLeading`): state is in ConfigMaps, so
 * the next leader carries on without re-alerting. See docs/emitter.md. This file composes the parts.
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { KubeClient } from '../kube/client.js';
import { describeKubeError } from '../kube/errors.js';
import { whenSynced, type ResilientInformer } from '../kube/informer.js';
import { loadKubeConfig, podNamespace } from '../kube/kubeconfig.js';
import { reconcileMetricsFor } from '../runtime/metrics.js';
import { retryUntilAborted } from '../runtime/retry.js';
import { realClock, sleep, type BackoffPolicy, type Clock } from '../runtime/timers.js';
import { HealthController } from './health/controller.js';
import { decodeHealthState, type HealthState } from './health/diff.js';
import { HEALTH_KINDS, type CertManagerObject, type HealthKind } from './health/observe.js';
import { MonitoringConfigSource } from './expiry/config.js';
import { ExpiryController } from './expiry/controller.js';
import { decodeExpiryState, type ExpiryState } from './expiry/due.js';
import { UUID_RE, resolveClusterId } from './cluster.js';
import { emitterInformers } from './informers.js';
import { metricsFor } from './metrics.js';
import { EventSender } from './sender.js';
import { ConfigMapState } from './state.js';

export interface EmitterOptions {
  logger: Logger;
  /** service base URL (the in-process service's URL, or a remote one) */
  serviceUrl: string;
  /** API key for `svc-api-key`; or `getApiKey` when it rotates; or `apiKeySecret` (re-read every minute) */
  apiKey?: string;
  getApiKey?: () => string;
  apiKeySecret?: { namespace: string; name: string; key: string };
  /** default: KUBECONFIG / ~/.kube/config / in-cluster */
  kubeConfig?: KubeConfig;
  /** `clusterName` of health events; default `kubernetes` */
  clusterName?: string;
  /** `clusterId` of health events (UUID); default the kube-system namespace's uid */
  clusterId?: string;
  /** namespace of the state ConfigMaps; default the pod's namespace, else `default` */
  stateNamespace?: string;
  /** ConfigMap name prefix; default `certmgr-notify-emitter` (→ `-health`, `-expiry-0..3`) */
  stateName?: string;
  /** watch only this namespace (Issuers, Certificates, Secrets); ClusterIssuers are always watched */
  watchNamespace?: string;
  /** Ready=False this long before `.notready`; default 5 min */
  gracePeriodMs?: number;
  /** Ready=Unknown / no Ready condition this long before `.notready`; default 10 min */
  unknownGracePeriodMs?: number;
  /** Certificate being issued (Issuing=True, no failed attempt) this long before `.notready`; default 15 min */
  issuingGracePeriodMs?: number;
  /** every TLS Secret is evaluated at least this often; default 1 h */
  scanIntervalMs?: number;
  /** the monitoring configuration is polled this often (a change re-evaluates every Secret); default 60 s */
  configPollMs?: number;
  /** every health object is evaluated at least this often; default 5 min */
  resyncMs?: number;
  /** run the health part (default true) / the expiry part (default true) */
  health?: boolean;
  expiry?: boolean;
  /** concurrent reconciles per part; default 8 */
  concurrency?: number;
  /** POST /v1/events: events per request (default 100), retry backoff (500 ms doubling to 30 s), timeout (10 s) */
  sendBatchMax?: number;
  sendBackoff?: BackoffPolicy;
  requestTimeoutMs?: number;
  /** informer restart backoff; default 500 ms doubling to 30 s */
  informerBackoff?: BackoffPolicy;
  /** per-key retry backoff of the workqueues */
  queueBackoff?: BackoffPolicy;
  /** prom-client registry; default a private one */
  registry?: Registry;
  clock?: Clock;
  /** inject fetch (tests) */
  fetch?: typeof fetch;
}

export interface EmitterStats {
  clusterId?: string;
  running: { health: boolean; expiry: boolean };
  informers: Record<string, { synced: boolean; objects: number; lists: number; restarts: number; errors: number; lastError?: string }>;
  queues: Record<string, { length: number; delayed: number }>;
  pendingEvents: number;
  state: { health: number; expiry: number };
}

export interface RunningEmitter {
  /** resolves once the enabled parts run (caches synced, state loaded) */
  whenRunning(): Promise<void>;
  stats(): EmitterStats;
  /** stop informers and queues; events not yet accepted are dropped from memory and re-sent by the next leader */
  stop(): Promise<void>;
}

export const DEFAULT_STATE_NAME = 'certmgr-notify-emitter';
export const EXPIRY_STATE_SHARDS = 4;

export async function startEmitter(opts: EmitterOptions): Promise<RunningEmitter> {
  const log = opts.logger.child({ component: 'emitter' });
  if (!opts.apiKey && !opts.getApiKey && !opts.apiKeySecret) throw new TypeError('startEmitter: apiKey, getApiKey or apiKeySecret is required');
  if (opts.clusterId !== undefined && !UUID_RE.test(opts.clusterId)) throw new TypeError(`startEmitter: clusterId must be a UUID, got '${opts.clusterId}'`);
  let secretKey = '';
  const apiKey = opts.getApiKey ?? (opts.apiKey !== undefined ? (): string => opts.apiKey! : (): string => secretKey);
  const kc = opts.kubeConfig ?? loadKubeConfig();
  const kube = new KubeClient(kc);
  const core = kc.makeApiClient(CoreV1Api);
  const clock = opts.clock ?? realClock;
  const registry = opts.registry ?? new Registry();
  const metrics = metricsFor(registry);
  const reconcileMetrics = reconcileMetricsFor(registry);
  const clusterName = opts.clusterName ?? 'kubernetes';
  const stateNamespace = opts.stateNamespace ?? podNamespace();
  const stateName = opts.stateName ?? DEFAULT_STATE_NAME;
  const ns = opts.watchNamespace;
  const wantHealth = opts.health ?? true;
  const wantExpiry = opts.expiry ?? true;
  const abort = new AbortController();
  let stopped = false;

  const sender = new EventSender({
    url: opts.serviceUrl,
    apiKey,
    log,
    clock,
    metrics: metrics.sender,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    ...(opts.sendBatchMax ? { batchMax: opts.sendBatchMax } : {}),
    ...(opts.sendBackoff ? { backoff: opts.sendBackoff } : {}),
    ...(opts.requestTimeoutMs ? { timeoutMs: opts.requestTimeoutMs } : {}),
  });
  const healthState = new ConfigMapState<HealthState>({
    core,
    namespace: stateNamespace,
    name: `${stateName}-health`,
    persist: (s) => s.notified,
    decode: decodeHealthState,
    log,
  });
  const expiryState = new ConfigMapState<ExpiryState>({
    core,
    namespace: stateNamespace,
    name: `${stateName}-expiry`,
    shards: EXPIRY_STATE_SHARDS,
    persist: (s) => s.marks.length > 0,
    decode: decodeExpiryState,
    log,
  });

  const { cm, secrets, all: informers } = emitterInformers({
    kc,
    kube,
    core,
    namespace: ns,
    health: wantHealth,
    expiry: wantExpiry,
    log,
    clock,
    ...(opts.informerBackoff ? { backoff: opts.informerBackoff } : {}),
  });

  const cluster = { id: '', name: clusterName };
  let health: HealthController | undefined;
  let expiry: ExpiryController | undefined;
  const running = { health: false, expiry: false };
  let runningResolve!: () => void;
  const runningPromise = new Promise<void>((r) => (runningResolve = r));
  const checkRunning = (): void => {
    if ((!wantHealth || running.health) && (!wantExpiry || running.expiry)) runningResolve();
  };

  const retrying = <T>(what: string, fn: () => Promise<T>): Promise<T | undefined> => retryUntilAborted(what, fn, { signal: abort.signal, clock, log });
  const waitSynced = (infs: ResilientInformer<never>[], what: string): Promise<boolean> => whenSynced(infs, { what, signal: abort.signal, clock, log });

  let keyTimer: unknown;
  const readKeySecret = async (): Promise<string> => {
    const sel = opts.apiKeySecret!;
    const sec = await core.readNamespacedSecret({ namespace: sel.namespace, name: sel.name });
    const b64 = sec.data?.[sel.key];
    if (!b64) throw new Error(`API key Secret ${sel.namespace}/${sel.name} has no key ${sel.key}`);
    return Buffer.from(b64, 'base64').toString('utf8').trim();
  };
  const refreshKey = (): void => {
    keyTimer = clock.setTimeout(() => {
      readKeySecret().then(
        (k) => (secretKey = k),
        (e: unknown) => log.warn({ error: e instanceof Error && !('code' in e) ? e.message : describeKubeError(e) }, 'could not re-read the API key Secret; keeping the last key'),
      ).finally(() => {
        if (!stopped) refreshKey();
      });
    }, 60_000);
  };

  const run = async (): Promise<void> => {
    if (opts.apiKeySecret && !opts.apiKey && !opts.getApiKey) {
      const k = await retrying('reading the API key Secret', readKeySecret);
      if (k === undefined) return;
      secretKey = k;
      refreshKey();
    }
    const id = await retrying('resolving the cluster id', () => resolveClusterId(core, { ...(opts.clusterId ? { configured: opts.clusterId } : {}), clusterName, server: kc.getCurrentCluster()?.server ?? '' }));
    if (!id) return;
    cluster.id = id.id;
    log.info({ clusterId: id.id, source: id.source, clusterName }, 'cluster identity');
    if (wantHealth && !(await retrying('loading the health state', async () => (await healthState.load(), true)))) return;
    if (wantExpiry && !(await retrying('loading the expiry state', async () => (await expiryState.load(), true)))) return;
    if (stopped) return;
    await Promise.all(informers.map((i) => i.start().catch(() => {})));

    const parts: Promise<void>[] = [];
    if (wantHealth) {
      health = new HealthController({
        informers: cm as Record<HealthKind, ResilientInformer<CertManagerObject>>,
        state: healthState,
        sink: sender,
        health: {
          cluster,
          gracePeriodMs: opts.gracePeriodMs ?? 5 * 60_000,
          unknownGracePeriodMs: opts.unknownGracePeriodMs ?? 10 * 60_000,
          issuingGracePeriodMs: opts.issuingGracePeriodMs ?? 15 * 60_000,
        },
        log: log.child({ part: 'health' }),
        clock,
        ...(opts.resyncMs ? { resyncMs: opts.resyncMs } : {}),
        ...(opts.concurrency ? { concurrency: opts.concurrency } : {}),
        ...(opts.queueBackoff ? { backoff: opts.queueBackoff } : {}),
        metrics: metrics.health,
        reconcileMetrics,
      });
      const h = health;
      parts.push(
        waitSynced(HEALTH_KINDS.map((k) => cm[k]!) as unknown as ResilientInformer<never>[], 'health').then((ok) => {
          if (!ok) return;
          h.start();
          running.health = true;
          log.info({ healthStateEntries: healthState.persistedSize }, 'emitter health part running');
          checkRunning();
        }),
      );
    }
    if (wantExpiry && secrets) {
      const config = new MonitoringConfigSource({
        url: opts.serviceUrl,
        apiKey,
        clock,
        maxAgeMs: Math.min(30_000, opts.configPollMs ?? 30_000),
        ...(opts.fetch ? { fetch: opts.fetch } : {}),
        ...(opts.requestTimeoutMs ? { timeoutMs: opts.requestTimeoutMs } : {}),
      });
      expiry = new ExpiryController({
        secrets,
        ...(cm.Certificate ? { certificates: cm.Certificate } : {}),
        config,
        state: expiryState,
        sink: sender,
        cluster,
        log: log.child({ part: 'expiry' }),
        clock,
        ...(opts.scanIntervalMs ? { scanIntervalMs: opts.scanIntervalMs } : {}),
        ...(opts.configPollMs ? { configPollMs: opts.configPollMs } : {}),
        ...(opts.concurrency ? { concurrency: opts.concurrency } : {}),
        ...(opts.queueBackoff ? { backoff: opts.queueBackoff } : {}),
        metrics: metrics.expiry,
        reconcileMetrics,
      });
      const x = expiry;
      // application ids are read from Certificates when they are cached; Secrets alone are enough to start
      parts.push(
        waitSynced([secrets] as unknown as ResilientInformer<never>[], 'expiry').then(async (ok) => {
          if (!ok) return;
          if (cm.Certificate && !cm.Certificate.hasSynced) await Promise.race([cm.Certificate.synced, sleep(clock, 5_000, abort.signal)]);
          if (stopped) return;
          x.start();
          running.expiry = true;
          log.info({ expiryStateEntries: expiryState.persistedSize }, 'emitter expiry part running');
          checkRunning();
        }),
      );
    }
    await Promise.all(parts);
  };
  const runPromise = run().catch((e: unknown) => log.error({ err: e }, 'emitter failed to start'));
  log.info({ stateNamespace, watchNamespace: ns ?? '(all)', health: wantHealth, expiry: wantExpiry }, 'emitter starting');

  return {
    whenRunning: () => runningPromise,
    stats() {
      const inf: EmitterStats['informers'] = {};
      for (const i of informers) inf[i.name] = { synced: i.hasSynced, objects: i.list().length, ...i.stats };
      const queues: EmitterStats['queues'] = {};
      if (health) queues['health'] = { length: health.queue.length, delayed: health.queue.pendingDelayed };
      if (expiry) queues['expiry'] = { length: expiry.queue.length, delayed: expiry.queue.pendingDelayed };
      return {
        ...(cluster.id ? { clusterId: cluster.id } : {}),
        running: { ...running },
        informers: inf,
        queues,
        pendingEvents: sender.pending,
        state: { health: healthState.persistedSize, expiry: expiryState.persistedSize },
      };
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      abort.abort();
      if (keyTimer !== undefined) clock.clearTimeout(keyTimer);
      // reconciles waiting for a 202 fail now (their state is not written: the next leader re-sends)
      await sender.stop();
      await Promise.all([health?.stop(), expiry?.stop()]);
      await Promise.all(informers.map((i) => i.stop().catch(() => {})));
      await runPromise;
      running.health = running.expiry = false;
      log.info('emitter stopped');
    },
  };
}
