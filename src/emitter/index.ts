/**
 * The emitter: the third role. It watches cert-manager Issuers, ClusterIssuers and Certificates (health) and
 * TLS Secrets (expiry), and sends the spec's events to the service's `POST /v1/events`, which routes and
 * delivers them. Run it on the leader only: `startEmitter` when this replica starts leading, `stop()` when it
 * stops (state is in ConfigMaps, so the next leader carries on without re-alerting). See docs/emitter.md.
 */
import { existsSync, readFileSync } from 'node:fs';
import { CoreV1Api, KubeConfig, Watch, type KubernetesListObject, type V1Secret } from '@kubernetes/client-node';
import { Counter, Gauge, Registry } from 'prom-client';
import type { Logger } from 'pino';
import { KubeClient, collectionPath, type ResourceRef } from '../kube/client.js';
import { describeKubeError } from '../kube/errors.js';
import { ResilientInformer } from '../kube/informer.js';
import { loadKubeConfig } from '../kube/kubeconfig.js';
import { backoffDelay, realClock, sleep, type BackoffPolicy, type Clock } from '../runtime/timers.js';
import { reconcileMetricsFor } from '../runtime/metrics.js';
import { HealthController, type HealthMetrics } from './health/controller.js';
import type { HealthState } from './health/diff.js';
import { HEALTH_KINDS, type CertManagerObject, type HealthKind, type ResourceIdentity } from './health/observe.js';
import { MonitoringConfigSource } from './expiry/config.js';
import { ExpiryController, TLS_SECRET_TYPE, type ExpiryMetrics } from './expiry/controller.js';
import type { ExpiryMark, ExpiryState } from './expiry/due.js';
import { UUID_RE, resolveClusterId } from './cluster.js';
import { EventSender, type SenderMetrics } from './sender.js';
import { ConfigMapState } from './state.js';

export { diffReady } from './health/diff.js';
export { dueExpirations } from './expiry/due.js';

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
const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

function defaultStateNamespace(): string {
  try {
    if (existsSync(SA_NAMESPACE_FILE)) return readFileSync(SA_NAMESPACE_FILE, 'utf8').trim() || 'default';
  } catch {
    /* not in a pod */
  }
  return 'default';
}

const CERT_MANAGER: Record<HealthKind, ResourceRef> = {
  Issuer: { group: 'cert-manager.io', version: 'v1', plural: 'issuers', kind: 'Issuer', namespaced: true },
  ClusterIssuer: { group: 'cert-manager.io', version: 'v1', plural: 'clusterissuers', kind: 'ClusterIssuer', namespaced: false },
  Certificate: { group: 'cert-manager.io', version: 'v1', plural: 'certificates', kind: 'Certificate', namespaced: true },
};
const SECRETS_REF: ResourceRef = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };

/** Only what the expiry part reads: metadata, type and `tls.crt`. Private keys never reach the cache. */
export function stripSecret(s: V1Secret): V1Secret {
  const crt = s.data?.['tls.crt'];
  return { apiVersion: s.apiVersion, kind: s.kind, metadata: s.metadata, type: s.type, data: crt !== undefined ? { 'tls.crt': crt } : {} } as V1Secret;
}

/**
 * The Watch of the TLS Secret informer: adds the field selector (ResilientInformer's ListWatch passes none)
 * and strips every Secret to `tls.crt` before the cache sees it.
 */
class TlsSecretWatch extends Watch {
  constructor(
    kc: KubeConfig,
    private readonly fieldSelector: string,
  ) {
    super(kc);
  }
  override watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    cb: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const strip = (phase: string, obj: unknown, w?: unknown): void => {
      const o = obj as V1Secret | undefined;
      cb(phase, o && typeof o === 'object' && o.kind !== 'Status' && 'metadata' in o ? stripSecret(o) : obj, w);
    };
    return super.watch(path, { ...query, fieldSelector: this.fieldSelector }, strip, done);
  }
}

// ---------------------------------------------------------------------------------------------------------
// metrics (one set per registry: the emitter starts again at every leadership term)

interface EmitterMetrics {
  sender: SenderMetrics;
  health: HealthMetrics;
  expiry: ExpiryMetrics;
}

const metricsByRegistry = new WeakMap<Registry, EmitterMetrics>();

function metricsFor(registry: Registry): EmitterMetrics {
  const have = metricsByRegistry.get(registry);
  if (have) return have;
  const accepted = new Counter({ name: 'certmgr_notify_emitter_events_total', help: 'Events the emitter sent and the service accepted, by type', labelNames: ['type'], registers: [registry] });
  const failed = new Counter({
    name: 'certmgr_notify_emitter_send_failures_total',
    help: 'Failed POST /v1/events attempts (retried), by reason',
    labelNames: ['reason'],
    registers: [registry],
  });
  const pending = new Gauge({ name: 'certmgr_notify_emitter_pending_events', help: 'Events waiting for the service to accept them', registers: [registry] });
  const unhealthy = new Gauge({
    name: 'certmgr_notify_emitter_unhealthy_resources',
    help: 'Resources whose .notready was emitted and not yet resolved, by kind',
    labelNames: ['kind'],
    registers: [registry],
  });
  const scanned = new Counter({
    name: 'certmgr_notify_emitter_expiry_evaluations_total',
    help: 'TLS Secret evaluations by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const m: EmitterMetrics = {
    sender: { accepted: (type) => accepted.inc({ type }), failedAttempt: (reason) => failed.inc({ reason }), pending: (n) => pending.set(n) },
    health: { unhealthy: (kind, n) => unhealthy.set({ kind }, n) },
    expiry: { scanned: (outcome) => scanned.inc({ outcome }) },
  };
  metricsByRegistry.set(registry, m);
  return m;
}

// ---------------------------------------------------------------------------------------------------------
// state decoding (values written by this version; anything else is dropped with a warning)

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function decodeHealthState(raw: unknown): HealthState | undefined {
  if (!isObj(raw) || typeof raw['uid'] !== 'string' || typeof raw['notified'] !== 'boolean' || !isObj(raw['id'])) return undefined;
  const id = raw['id'] as unknown as ResourceIdentity;
  if (!(HEALTH_KINDS as readonly string[]).includes(id.kind) || typeof id.name !== 'string' || typeof id.namespace !== 'string') return undefined;
  return raw as unknown as HealthState;
}

function decodeExpiryState(raw: unknown): ExpiryState | undefined {
  if (!isObj(raw) || typeof raw['serial'] !== 'string' || typeof raw['notAfter'] !== 'number' || !Array.isArray(raw['marks'])) return undefined;
  const marks = (raw['marks'] as unknown[]).filter(
    (m): m is ExpiryMark => isObj(m) && typeof m['ruleId'] === 'number' && typeof m['threshold'] === 'number' && typeof m['daysLeft'] === 'number',
  );
  return { serial: raw['serial'], notAfter: raw['notAfter'], marks };
}

// ---------------------------------------------------------------------------------------------------------

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
  const stateNamespace = opts.stateNamespace ?? defaultStateNamespace();
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

  const informers: ResilientInformer<never>[] = [];
  const informerOf = <T extends CertManagerObject | V1Secret>(
    name: string,
    path: string,
    list: () => Promise<KubernetesListObject<T>>,
    watch?: Watch,
    relistAfterError = false,
  ): ResilientInformer<T> => {
    const inf = new ResilientInformer<T>({
      name,
      kc,
      path,
      list,
      log,
      clock,
      relistAfterError,
      ...(opts.informerBackoff ? { backoff: opts.informerBackoff } : {}),
      ...(watch ? { watch } : {}),
    });
    informers.push(inf as unknown as ResilientInformer<never>);
    return inf;
  };
  const cmInformer = (kind: HealthKind): ResilientInformer<CertManagerObject> => {
    const r = CERT_MANAGER[kind];
    // health is judged on transitions: after a failed watch, relist rather than replay what happened while blind
    // (a flap that ended where it started is then not reported, whether or not etcd was compacted meanwhile)
    return informerOf<CertManagerObject>(r.plural, collectionPath(r, ns), () => kube.list<CertManagerObject>(r, ns), undefined, true);
  };
  const cm: Partial<Record<HealthKind, ResilientInformer<CertManagerObject>>> = {};
  if (wantHealth) for (const k of HEALTH_KINDS) cm[k] = cmInformer(k);
  else if (wantExpiry) cm.Certificate = cmInformer('Certificate'); // application ids on Certificates
  const fieldSelector = `type=${TLS_SECRET_TYPE}`;
  const secrets = wantExpiry
    ? informerOf<V1Secret>(
        'tls-secrets',
        collectionPath(SECRETS_REF, ns),
        async () => {
          const list = (ns ? await core.listNamespacedSecret({ namespace: ns, fieldSelector }) : await core.listSecretForAllNamespaces({ fieldSelector })) as KubernetesListObject<V1Secret>;
          return { ...list, items: list.items.map(stripSecret) };
        },
        new TlsSecretWatch(kc, fieldSelector),
      )
    : undefined;

  const cluster = { id: '', name: clusterName };
  let health: HealthController | undefined;
  let expiry: ExpiryController | undefined;
  const running = { health: false, expiry: false };
  let runningResolve!: () => void;
  const runningPromise = new Promise<void>((r) => (runningResolve = r));
  const checkRunning = (): void => {
    if ((!wantHealth || running.health) && (!wantExpiry || running.expiry)) runningResolve();
  };

  /** Retry `fn` with backoff until it succeeds or the emitter stops. */
  const retrying = async <T>(what: string, fn: () => Promise<T>): Promise<T | undefined> => {
    for (let attempt = 1; !stopped; attempt++) {
      try {
        return await fn();
      } catch (e) {
        const delay = backoffDelay(attempt, { baseMs: 500, maxMs: 30_000, jitter: 0.2 });
        log.warn({ error: e instanceof Error && !('code' in e) ? e.message : describeKubeError(e), retryInMs: delay }, `${what} failed; retrying`);
        await sleep(clock, delay, abort.signal);
      }
    }
    return undefined;
  };

  const waitSynced = async (infs: ResilientInformer<never>[], what: string): Promise<boolean> => {
    const all = Promise.all(infs.map((i) => i.synced));
    const warn = clock.setTimeout(
      () => log.warn({ informers: infs.filter((i) => !i.hasSynced).map((i) => `${i.name}: ${i.stats.lastError ?? 'no list yet'}`) }, `${what}: caches not synced yet (cert-manager CRDs installed? RBAC?)`),
      60_000,
    );
    await Promise.race([all, new Promise((r) => abort.signal.addEventListener('abort', r, { once: true }))]);
    clock.clearTimeout(warn);
    return !stopped;
  };

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

// ---------------------------------------------------------------------------------------------------------

/** What `runEmitterWhileLeading` needs: RunningOperator's leader callbacks (or a LeaderElector's). */
export interface LeadershipSource {
  onStartedLeading(cb: () => void | Promise<void>): void;
  onStoppedLeading(cb: () => void | Promise<void>): void;
}

export interface LeaderBoundEmitter {
  /** the emitter of the current leadership term, if this replica leads */
  current(): RunningEmitter | undefined;
  /** stop the current emitter and start no other */
  stop(): Promise<void>;
}

/**
 * Runs an emitter only while this replica leads: started on onStartedLeading, stopped (and awaited by the
 * elector) on onStoppedLeading. Transitions run one after the other.
 */
export function runEmitterWhileLeading(leader: LeadershipSource, opts: EmitterOptions): LeaderBoundEmitter {
  let current: RunningEmitter | undefined;
  let closed = false;
  let chain: Promise<void> = Promise.resolve();
  const serial = (fn: () => Promise<void>): Promise<void> =>
    (chain = chain.then(fn).catch((e: unknown) => opts.logger.error({ err: e, component: 'emitter' }, 'emitter leadership transition failed')));
  const stopCurrent = async (): Promise<void> => {
    const c = current;
    current = undefined;
    await c?.stop();
  };
  leader.onStartedLeading(() =>
    serial(async () => {
      if (!closed && !current) current = await startEmitter(opts);
    }),
  );
  leader.onStoppedLeading(() => serial(stopCurrent));
  return {
    current: () => current,
    stop: () => {
      closed = true;
      return serial(stopCurrent);
    },
  };
}
