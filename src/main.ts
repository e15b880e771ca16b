/** Composition root of the `serve` command: store, keys, HTTP app, (later) delivery and Kubernetes roles. */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { ConfigError, type ApiKeyEntry, type ServeConfig } from './config.js';
import { openStore } from './store/index.js';
import { SecretKeyError, openSecretBox, secretKeySource, type SecretKeySource } from './store/secret-box.js';
import type { IntegrationType, Store } from './store/types.js';
import { ApiKeyRing } from './http/auth.js';
import { DeliveryWorker } from './delivery/index.js';
import { DeliverySignal } from './delivery/signal.js';
import type { RateLimit } from './delivery/rate-limit.js';
import { CoordinationV1Api } from '@kubernetes/client-node';
import {
  DEFAULT_LEASE_NAME,
  kubeConfigAvailable,
  loadKubeConfig,
  startOperator,
  type RunningOperator,
  type ServiceTarget,
} from './operator/index.js';
import { startAdmissionWebhook } from './admission/index.js';
import { DEFAULT_CLUSTER_NAME } from './emitter/cluster.js';
import { startEmitter, type EmitterOptions, type RunningEmitter } from './emitter/index.js';
import { AlwaysLeader, createLeadership, runWhileLeading, type Elector, type WhileLeading } from './runtime/leader.js';
import { createApp } from './http/app.js';
import { createHttpMetrics } from './http/metrics.js';
import { createRuntime, ingestDepsOf } from './service/runtime.js';
import { ExpiryScanner } from './expiry/scanner.js';
import { ReminderScanner } from './reminders/scanner.js';
import { snapshotSilencer } from './reminders/silences.js';
import { realClock, type Clock } from './runtime/timers.js';
import { registerClusterGauge, startSilenceWatch } from './inventory/silence.js';
import { registerCertificateExpiryGauge } from './inventory/metrics.js';
import { TemplateRenderer } from './templates/renderer.js';
import { GroupFlusher } from './grouping/flusher.js';

export interface RunningService {
  url: string;
  port: number;
  store: Store;
  close(): Promise<void>;
}

/** With no key configured, reuse or generate one in `path` (mode 0600). The key itself is never logged. */
function ensureGeneratedKey(path: string, companyId: string, log: Logger): ApiKeyEntry {
  if (existsSync(path)) {
    const key = readFileSync(path, 'utf8').trim();
    if (key.length >= 16) {
      log.info({ path }, 'no API key configured; using the generated key stored in this file');
      return { key, companyId };
    }
  }
  mkdirSync(dirname(path), { recursive: true });
  const key = 'cmn_' + randomBytes(24).toString('base64url');
  writeFileSync(path, key + '\n', { mode: 0o600 });
  chmodSync(path, 0o600);
  log.warn({ path }, 'no API key configured; generated one into this file (mode 0600)');
  return { key, companyId };
}

/** Until the app is ready (store open, migrations done) the bound port answers 503 instead of holding requests. */
const starting: RequestListener = (_req, res) => {
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
  res.end(JSON.stringify({ errors: [{ code: 'SERVICE_UNAVAILABLE', message: 'starting; retry shortly' }] }));
};

/**
 * Binds the HTTP port. A bind failure (taken port, privileged port, foreign address) is a configuration error
 * naming the address: exit code 2, and nothing else has started yet.
 */
async function bindHttpServer(
  cfg: Pick<ServeConfig, 'port' | 'host' | 'requestTimeoutMs'>,
): Promise<{ server: Server; setHandler(h: RequestListener): void }> {
  let handler: RequestListener = starting;
  const server = createServer(
    {
      // a client must send the whole request within requestTimeout (408 otherwise), the headers sooner
      requestTimeout: cfg.requestTimeoutMs,
      headersTimeout: Math.min(cfg.requestTimeoutMs, 10_000),
      keepAliveTimeout: 65_000,
      // how often those two are checked (Node's default is 30 s)
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(cfg.requestTimeoutMs / 2))),
    },
    (req: IncomingMessage, res: ServerResponse) => handler(req, res),
  );
  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException) => {
      const addr = `${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${cfg.port}`;
      const why: Record<string, string> = {
        EADDRINUSE: 'is already in use',
        EACCES: 'needs privileges this process does not have',
        EADDRNOTAVAIL: 'is not an address of this host',
      };
      reject(e.code && why[e.code] ? new ConfigError(`cannot listen on ${addr} (--host/--port): the address ${why[e.code]}`) : e);
    };
    server.once('error', onError);
    server.listen(cfg.port, cfg.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  return { server, setHandler: (h) => (handler = h) };
}

/**
 * Stops accepting, lets in-flight requests finish for `deadlineMs`, then closes every connection that is
 * still open (keep-alive, slow senders, hung handlers), so a stop never waits on a client.
 */
function closeHttpServer(server: Server, deadlineMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), deadlineMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** The emitter's keys of the limits file (those whose help names the emitter), as its options. */
export function emitterLimits(k: ServeConfig['kubeOptions']) {
  return {
    gracePeriodMs: k.healthGracePeriodMs,
    unknownGracePeriodMs: k.healthUnknownGracePeriodMs,
    issuingGracePeriodMs: k.healthIssuingGracePeriodMs,
    renewalOverdueGraceMs: k.healthRenewalOverdueGraceMs,
    // 0: probing off
    servingProbeIntervalMs: k.servingProbeIntervalMs,
    resyncMs: k.resyncMs,
    maxPendingEvents: k.maxPendingEvents,
  } satisfies Partial<EmitterOptions>;
}

/** Test seams of startService (never set by the CLI). */
export interface ServiceHooks {
  /**
   * The clock of the reminder scanner and the delivery worker: a test moves it ahead to make reminders due without
   * waiting out a repeatInterval (at least 1 minute).
   */
  clock?: Clock;
  /** Overrides of the per-integration delivery rate limits (a bench measuring latency, not the limiter). */
  rateLimits?: Partial<Record<IntegrationType, RateLimit>>;
}

export async function startService(cfg: ServeConfig, log: Logger, hooks: ServiceHooks = {}): Promise<RunningService> {
  const clock = hooks.clock ?? realClock;
  if (cfg.kube === 'on' && !kubeConfigAvailable())
    throw new ConfigError('--kube on: no Kubernetes configuration found (KUBECONFIG, ~/.kube/config or in-cluster service account)');
  let keySource: SecretKeySource;
  let opened: ReturnType<typeof openSecretBox>;
  try {
    keySource = secretKeySource(cfg.store, cfg.secretKeyFile);
    opened = openSecretBox(keySource);
  } catch (e) {
    if (e instanceof SecretKeyError) throw new ConfigError(e.message);
    throw e;
  }
  const { box, created } = opened;
  if (created)
    log.warn(
      { path: 'path' in keySource ? keySource.path : undefined },
      'no --secret-key-file configured; generated a secret key into this file (mode 0600): back it up, the stored secrets cannot be read without it',
    );
  // bind first: a taken port is reported before the store is opened or migrated
  const { server, setHandler } = await bindHttpServer(cfg);
  let store: Store;
  try {
    store = await openStore(cfg.store, { secretBox: box });
    await store.migrate();
  } catch (e) {
    await closeHttpServer(server, 0);
    throw e;
  }
  log.info({ dialect: store.dialect, secretKeys: box.keyIds, encryptingKey: box.primary }, 'store ready');
  // Moves plaintext rows (before encryption) and rows sealed with an older key to the first key.
  // Never fails the start: rows it cannot decrypt are reported, and only their deliveries fail (retried).
  const pass = await store.reencryptSecrets().catch((err: unknown) => {
    log.error({ err }, 'the re-encryption pass over integration secrets failed; it runs again at the next start');
    return { checked: 0, reencrypted: 0, failed: 0, errors: [] };
  });
  if (pass.reencrypted)
    log.info({ reencrypted: pass.reencrypted, checked: pass.checked }, 'integration secrets re-encrypted with the current key');
  if (pass.failed)
    log.error(
      { failed: pass.failed, checked: pass.checked, reasons: pass.errors, keyIds: box.keyIds },
      'integration secrets that the configured secret keys cannot decrypt: their deliveries fail until the key that sealed them is in --secret-key-file',
    );
  const keys = cfg.apiKeys.length ? cfg.apiKeys : [ensureGeneratedKey(cfg.apiKeyPath, cfg.companyId, log)];
  const kubeWanted = cfg.kube === 'on' || (cfg.kube === 'auto' && kubeConfigAvailable());
  if (cfg.kube === 'auto' && !kubeWanted) log.info('no Kubernetes configuration found (--kube auto): operator not started');
  // The in-process operator calls this service's own API with a key that exists only in memory.
  const operatorKey = kubeWanted && !cfg.serviceUrl ? 'cmn_op_' + randomBytes(24).toString('base64url') : undefined;
  const ring = new ApiKeyRing(operatorKey ? [...keys, { key: operatorKey, companyId: cfg.companyId }] : keys);
  const metrics = createHttpMetrics();
  // whoever commits deliveries (ingestion, retries, reminders, the group flusher) notifies it; the worker waits on it
  const deliverySignal = new DeliverySignal();
  const runtime = createRuntime({
    store,
    cfg,
    log,
    registry: metrics.registry,
    deliverySignal,
    rateLimits: hooks.rateLimits,
  });
  const app = createApp({
    store,
    keys: ring,
    logger: log,
    metrics,
    runtime,
    onChange: (what, companyId, ids) => runtime.snapshots.invalidate(companyId, what === 'routers' ? ids : undefined),
    requestTimeoutMs: cfg.requestTimeoutMs,
    quotas: {
      maxRoutersPerCompany: cfg.maxRoutersPerCompany,
      maxIntegrationsPerCompany: cfg.maxIntegrationsPerCompany,
      maxClustersPerCompany: cfg.maxClustersPerCompany,
      maxCertificatesPerCompany: cfg.maxCertificatesPerCompany,
      maxTemplatesPerCompany: cfg.maxTemplatesPerCompany,
      maxSilencesPerCompany: cfg.maxSilencesPerCompany,
    },
    clusterSilenceAfterMs: cfg.clusterSilenceAfterMs,
    consoleDir: cfg.consoleDir,
  });
  registerClusterGauge(metrics.registry, store, cfg.clusterSilenceAfterMs, Date.now, log);
  registerCertificateExpiryGauge(metrics.registry, store, Date.now, log);
  setHandler(app);
  const port = (server.address() as AddressInfo).port;
  const host = cfg.host === '0.0.0.0' || cfg.host === '::' ? '127.0.0.1' : cfg.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let worker: DeliveryWorker | undefined;
  if (cfg.deliveryWorkers > 0) {
    worker = new DeliveryWorker({
      store,
      notifiers: runtime.notifiers,
      signal: deliverySignal,
      rateLimiter: runtime.rateLimiter,
      templates: new TemplateRenderer(store, metrics.registry, { publicUrl: cfg.publicUrl }),
      instanceId: cfg.instanceId,
      logger: log, // the worker adds its own component key
      metrics: metrics.registry,
      clock: () => clock.now(),
      logLimiter: runtime.logLimiter,
      options: {
        concurrency: cfg.deliveryWorkers,
        attemptTimeoutMs: cfg.deliveryTimeoutMs,
        maxAgeMs: cfg.deliveryMaxAgeMs,
        baseDelayMs: cfg.deliveryBaseDelayMs,
      },
    });
  }
  // Leadership is created once, here: the operator, the emitter and the delivery worker run only while this
  // replica leads (without Kubernetes or with --leader-elect=false, always). Roles register in the order
  // their stop callbacks run on a step-down.
  const kc = kubeWanted ? loadKubeConfig() : undefined;
  const k = cfg.kubeOptions;
  // an empty flag value is unset (the default)
  const leaseNamespace = k.leaseNamespace || undefined;
  const clusterId = k.clusterId || undefined;
  const leadership: Elector =
    kc && k.leaderElect
      ? createLeadership({
          options: {
            leaseName: k.leaseName || undefined,
            leaseNamespace,
            leaseDurationMs: k.leaseDurationMs,
            renewDeadlineMs: k.renewDeadlineMs,
            retryPeriodMs: k.retryPeriodMs,
          },
          coordination: kc.makeApiClient(CoordinationV1Api),
          // one name per process: the Lease holder is the delivery-claim owner, so a restarted pod (same name)
          // renews its own Lease at once instead of waiting it out under a new random identity
          identity: cfg.instanceId,
          defaultLeaseName: DEFAULT_LEASE_NAME,
          log: log.child({ component: 'operator' }),
        })
      : new AlwaysLeader(log);
  let operator: RunningOperator | undefined;
  let emitter: WhileLeading<RunningEmitter> | undefined;
  let webhook: { close(): Promise<void> } | undefined;
  if (cfg.webhookCertDir) {
    // stateless; every replica serves it, leader or not
    webhook = await startAdmissionWebhook({
      port: cfg.webhookPort,
      host: cfg.host,
      certFile: join(cfg.webhookCertDir, 'tls.crt'),
      keyFile: join(cfg.webhookCertDir, 'tls.key'),
      logger: log, // adds component: admission-webhook
      registry: metrics.registry,
    });
  }
  if (kc) {
    const service: Exclude<ServiceTarget, { api: unknown }> = !cfg.serviceUrl
      ? { url, apiKey: operatorKey! }
      : cfg.serviceApiKeySecret
        ? { url: cfg.serviceUrl, apiKeySecret: cfg.serviceApiKeySecret }
        : { url: cfg.serviceUrl, apiKey: cfg.serviceApiKey! };
    operator = await startOperator({
      logger: log, // adds component: operator
      service,
      kubeConfig: kc,
      registry: metrics.registry,
      leader: leadership,
      namespace: k.watchNamespace || undefined,
      identity: cfg.instanceId,
      cluster: k.clusterName || undefined,
      clusterId,
      resyncMs: k.resyncMs,
      concurrency: k.concurrency,
    });
    if (k.emitter) {
      // it sends to the same service, as the operator does
      const emitterOptions: EmitterOptions = {
        logger: log,
        kubeConfig: kc,
        serviceUrl: service.url,
        apiKeySecret: 'apiKeySecret' in service ? service.apiKeySecret : undefined,
        apiKey: 'apiKey' in service ? service.apiKey : undefined,
        clusterName: k.clusterName ?? DEFAULT_CLUSTER_NAME,
        clusterId,
        stateNamespace: leaseNamespace,
        watchNamespace: k.emitterWatchNamespace || undefined,
        ...emitterLimits(k),
        // the inventory goes to this service's POST /v1/inventory like an agent's; the ExpiryScanner below
        // evaluates it: one expiry path, standalone or not
        registry: metrics.registry,
      };
      emitter = runWhileLeading(leadership, () => startEmitter(emitterOptions), { name: 'emitter', log });
    }
  }
  // Expiry evaluation over the inventory (docs/expiry.md): on every replica, leader or not; a per-company lock
  // in the store lets one replica at a time evaluate a company, so several replicas neither repeat nor miss.
  const expiry = new ExpiryScanner({
    store,
    ingest: ingestDepsOf(runtime, log),
    log,
    intervalMs: cfg.expiryScanIntervalMs,
    registry: metrics.registry,
  });
  expiry.start();
  // Reminders (docs/reminders.md): on every replica; each due row is claimed by one scanner (FOR UPDATE SKIP LOCKED)
  const reminders = new ReminderScanner({
    store,
    log,
    intervalMs: cfg.reminderScanIntervalMs,
    registry: metrics.registry,
    deliverySignal,
    // a reminder inside an active silence is recorded SILENCED, decided like ingestion over the routing snapshot
    silencer: snapshotSilencer(runtime.snapshots),
    silencedCounter: runtime.routingMetrics.silenced,
    clock,
  });
  reminders.start();
  // only the leader delivers (and reconciles); a follower serves the API and accepts events
  const w = worker;
  const delivery = w
    ? runWhileLeading(
        leadership,
        async () => {
          w.start();
          return w;
        },
        { name: 'delivery', log },
      )
    : undefined;
  // grouping (docs/grouping.md): group notifications are written where deliveries are made, while leading (the
  // flusher locks the groups it works on, so several flushers would be safe too)
  const flusher = w ? new GroupFlusher({ store, log, registry: metrics.registry, deliverySignal }) : undefined;
  const grouping = flusher
    ? runWhileLeading(
        leadership,
        async () => {
          flusher.start();
          return flusher;
        },
        { name: 'grouping', log },
      )
    : undefined;
  // one replica logs clusters falling silent (every replica serves the gauge)
  const silence = runWhileLeading(
    leadership,
    async () =>
      startSilenceWatch({
        store,
        ingest: ingestDepsOf(runtime, log),
        log: log.child({ component: 'inventory' }),
        logLimiter: runtime.logLimiter,
        silenceAfterMs: cfg.clusterSilenceAfterMs,
        now: Date.now,
      }),
    { name: 'inventory-silence', log },
  );
  leadership.start();
  log.info({ url, companies: new Set(keys.map((k) => k.companyId)).size }, 'listening');
  return {
    url,
    port,
    store,
    /**
     * Shutdown order: (0) the expiry and reminder scanners (a running transaction commits or rolls back while the
     * store is open), (1) the emitter (its events still reach this process's API), (2) the operator's
     * controllers (in-flight reconciles call the API too), (3) the group flusher (its batch commits), the delivery worker (in-flight sends finish or
     * go back to PENDING), each awaited; (4) leadership: the Lease is released only now, so the next leader
     * never runs alongside this replica's roles; (5) the admission webhook, the HTTP server, outbound
     * connections, the store.
     */
    async close() {
      await expiry.stop();
      await reminders.stop();
      await emitter?.stop();
      await operator?.stop();
      await grouping?.stop();
      await delivery?.stop();
      await silence.stop();
      await leadership.stop();
      await webhook?.close();
      await closeHttpServer(server, cfg.shutdownTimeoutMs);
      // pooled keep-alive connections to tenant receivers (after the worker and the requests that used them)
      await runtime.egress.close();
      runtime.logLimiter?.close();
      await store.close();
    },
  };
}
