/**
 * The emitter: the third role. It watches cert-manager Issuers, ClusterIssuers and Certificates (health) and
 * sends the spec's health events to the service's `POST /v1/events`, which routes and delivers them; and it
 * reports the TLS Secrets' certificates to `POST /v1/inventory`, over which the hub evaluates expiry
 * (src/expiry/). Run it on the leader only (runtime/leader.ts `runWhileLeading`): state is in ConfigMaps, so
 * the next leader carries on without re-alerting. See docs/emitter.md. This file composes the parts.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { KubeClient } from '../kube/client.js';
import { whenSynced, type ResilientInformer } from '../kube/informer.js';
import { loadKubeConfig, podNamespace } from '../kube/kubeconfig.js';
import { reconcileMetricsFor } from '../runtime/metrics.js';
import { retryUntilAborted } from '../runtime/retry.js';
import { realClock } from '../runtime/timers.js';
import { HealthController } from './health/controller.js';
import { RootCauseReader, kubeRootCauseApi } from './rootcause/reader.js';
import { k8sEventRecorder } from '../kube/events.js';
import {
  DEFAULT_HEALTH_GRACE_PERIOD_MS,
  DEFAULT_HEALTH_ISSUING_GRACE_PERIOD_MS,
  DEFAULT_HEALTH_UNKNOWN_GRACE_PERIOD_MS,
} from './health/diff.js';
import { HEALTH_KINDS, type CertManagerObject, type HealthKind } from './health/observe.js';
import { DEFAULT_RENEWAL_OVERDUE_GRACE_MS } from './health/renewal.js';
import { SecretApiKey, apiKeyGetter } from '../client/api-key.js';
import { DEFAULT_CLUSTER_NAME, UUID_RE, resolveClusterId } from './cluster.js';
import { emitterInformers } from './informers.js';
import { metricsFor } from './metrics.js';
import { EventSender } from '../client/events.js';
import { InventoryClient } from '../client/inventory.js';
import { InventoryReporter } from './inventory/reporter.js';
import { findConsumers } from './serving/consumers.js';
import { servingInformers } from './serving/informers.js';
import { DEFAULT_SERVING_PROBE_INTERVAL_MS, ServingProber } from './serving/prober.js';
import type { EmitterOptions, EmitterStats, RunningEmitter } from './options.js';
import { DEFAULT_STATE_NAME, emitterStates } from './states.js';

export type { EmitterOptions, RunningEmitter } from './options.js';

/** `agentVersion` of inventory reports */
const AGENT_VERSION = '0.1.0';

export async function startEmitter(opts: EmitterOptions): Promise<RunningEmitter> {
  const log = opts.logger.child({ component: 'emitter' });
  if (!opts.apiKey && !opts.getApiKey && !opts.apiKeySecret)
    throw new TypeError('startEmitter: apiKey, getApiKey or apiKeySecret is required');
  if (opts.clusterId !== undefined && !UUID_RE.test(opts.clusterId))
    throw new TypeError(`startEmitter: clusterId must be a UUID, got '${opts.clusterId}'`);
  const kc = opts.kubeConfig ?? loadKubeConfig();
  const kube = new KubeClient(kc);
  const core = kc.makeApiClient(CoreV1Api);
  const clock = opts.clock ?? realClock;
  const keySecret =
    opts.apiKeySecret && !opts.apiKey && !opts.getApiKey
      ? new SecretApiKey({ read: (ns, name) => kube.getSecret(ns, name), secret: opts.apiKeySecret, log, clock })
      : undefined;
  const apiKey = opts.getApiKey ?? keySecret?.get ?? apiKeyGetter(opts.apiKey!);
  const registry = opts.registry ?? new Registry();
  const metrics = metricsFor(registry);
  const reconcileMetrics = reconcileMetricsFor(registry);
  const clusterName = opts.clusterName ?? DEFAULT_CLUSTER_NAME;
  const stateNamespace = opts.stateNamespace ?? podNamespace();
  const stateName = opts.stateName ?? DEFAULT_STATE_NAME;
  const ns = opts.watchNamespace;
  const wantHealth = opts.health ?? true;
  const wantInventory = opts.inventory ?? true;
  const abort = new AbortController();
  let stopped = false;

  const sender = new EventSender({
    url: opts.serviceUrl,
    apiKey,
    log,
    clock,
    metrics: metrics.sender,
    fetch: opts.fetch,
    // here and below, a number option of 0 is its default (as unset)
    batchMax: opts.sendBatchMax || undefined,
    backoff: opts.sendBackoff,
    timeoutMs: opts.requestTimeoutMs || undefined,
    maxPending: opts.maxPendingEvents || undefined,
  });
  const { health: healthState } = emitterStates({ core, namespace: stateNamespace, name: stateName, log });

  const {
    cm,
    facts,
    all: baseInformers,
  } = emitterInformers({
    kc,
    kube,
    core,
    namespace: ns,
    health: wantHealth,
    inventory: wantInventory,
    log,
    clock,
    backoff: opts.informerBackoff,
    pageSize: opts.listPageSize,
    onListPage: metrics.listPage,
  });
  // served truth (docs/serving.md): Ingresses and Gateways give endpoints, the prober holds what each serves
  // against its TLS Secret (the inventory's cache); its verdicts go to the health part and the inventory
  const servingIntervalMs = opts.servingProbeIntervalMs ?? DEFAULT_SERVING_PROBE_INTERVAL_MS;
  const served =
    facts && servingIntervalMs > 0
      ? servingInformers({
          kc,
          kube,
          namespace: ns,
          log,
          clock,
          backoff: opts.informerBackoff,
          pageSize: opts.listPageSize,
          onListPage: metrics.listPage,
        })
      : undefined;
  const prober =
    facts && served
      ? new ServingProber({
          endpoints: served.index,
          secrets: facts,
          consumers: async (namespace, secretName) => (await findConsumers(core, namespace, secretName, { clock })).workloads,
          log: log.child({ part: 'serving' }),
          clock,
          intervalMs: servingIntervalMs,
          ...opts.servingProbe,
        })
      : undefined;
  const informers = [...baseInformers, ...(served?.all ?? [])];

  const cluster = { id: '', name: clusterName };
  let health: HealthController | undefined;
  let inventory: InventoryReporter | undefined;
  let inventoryAcceptedResolve!: () => void;
  const inventoryAccepted = new Promise<void>((r) => (inventoryAcceptedResolve = r));
  const running = { health: false, inventory: false };
  let runningResolve!: () => void;
  const runningPromise = new Promise<void>((r) => (runningResolve = r));
  const checkRunning = (): void => {
    if ((!wantHealth || running.health) && (!wantInventory || running.inventory)) runningResolve();
  };

  const retrying = <T>(what: string, fn: () => Promise<T>): Promise<T | undefined> =>
    retryUntilAborted(what, fn, { signal: abort.signal, clock, log });
  const waitSynced = (infs: ResilientInformer<never>[], what: string): Promise<boolean> =>
    whenSynced(infs, { what, signal: abort.signal, clock, log });

  const run = async (): Promise<void> => {
    if (keySecret) {
      if (!(await retrying('reading the API key Secret', async () => (await keySecret.load(), true)))) return;
      keySecret.start();
    }
    const id = await retrying('resolving the cluster id', () =>
      resolveClusterId(core, {
        configured: opts.clusterId || undefined,
        clusterName,
        server: kc.getCurrentCluster()?.server ?? '',
      }),
    );
    if (!id) return;
    cluster.id = id.id;
    log.info({ clusterId: id.id, source: id.source, clusterName }, 'cluster identity');
    if (wantHealth && !(await retrying('loading the health state', async () => (await healthState.load(), true)))) return;
    if (stopped) return;
    for (const i of informers) i.onList(() => metrics.listDone(i.name));
    await Promise.all(informers.map((i) => i.start().catch(() => {})));

    const queue = {
      sink: sender,
      clock,
      reconcileMetrics,
      concurrency: opts.concurrency || undefined,
      backoff: opts.queueBackoff,
    };
    const parts: Promise<void>[] = [];
    if (wantHealth) {
      health = new HealthController({
        informers: cm as Record<HealthKind, ResilientInformer<CertManagerObject>>,
        ...queue,
        state: healthState,
        health: {
          cluster,
          gracePeriodMs: opts.gracePeriodMs ?? DEFAULT_HEALTH_GRACE_PERIOD_MS,
          unknownGracePeriodMs: opts.unknownGracePeriodMs ?? DEFAULT_HEALTH_UNKNOWN_GRACE_PERIOD_MS,
          issuingGracePeriodMs: opts.issuingGracePeriodMs ?? DEFAULT_HEALTH_ISSUING_GRACE_PERIOD_MS,
          renewalOverdueGraceMs: opts.renewalOverdueGraceMs ?? DEFAULT_RENEWAL_OVERDUE_GRACE_MS,
        },
        log: log.child({ part: 'health' }),
        resyncMs: opts.resyncMs || undefined,
        metrics: metrics.health,
        // the policy annotations of a Certificate's Secret (docs/annotations.md), when the inventory watches Secrets
        secrets: facts,
        serving: prober,
        events: k8sEventRecorder(core, { component: 'certmgr-notify-emitter', instance: clusterName, log }),
        rootCauses:
          opts.rootCauses !== false
            ? new RootCauseReader({ api: kubeRootCauseApi(kube.custom), log: log.child({ part: 'root-cause' }), clock })
            : undefined,
      });
      const h = health;
      // with the Secrets: a Certificate ignored on its Secret must not alert before that Secret is known
      const healthInformers = [...HEALTH_KINDS.map((k) => cm[k]!), ...(facts ? [facts] : [])];
      parts.push(
        waitSynced(healthInformers as unknown as ResilientInformer<never>[], 'health').then((ok) => {
          if (!ok) return;
          h.start();
          running.health = true;
          log.info({ healthStateEntries: healthState.persistedSize }, 'emitter health part running');
          checkRunning();
        }),
      );
    }
    if (wantInventory && facts) {
      const reporter = new InventoryReporter({
        client: new InventoryClient({
          url: opts.serviceUrl,
          apiKey,
          fetch: opts.fetch,
          timeoutMs: opts.requestTimeoutMs || undefined,
        }),
        secrets: facts,
        certificates: cm.Certificate,
        cluster,
        agentVersion: AGENT_VERSION,
        log: log.child({ part: 'inventory' }),
        clock,
        batchMs: opts.inventoryBatchMs || undefined,
        heartbeatMs: opts.inventoryHeartbeatMs || undefined,
        backoff: opts.inventoryBackoff,
        unsupportedRetryMs: opts.inventoryUnsupportedRetryMs || undefined,
        metrics: metrics.inventory,
        serving: prober,
      });
      inventory = reporter;
      void reporter.firstAccepted.then(inventoryAcceptedResolve);
      // the Certificates' facts (uid, Ready, issuerRef) join the Secrets': the snapshot waits for both caches
      const waitFor = [facts, ...(cm.Certificate ? [cm.Certificate] : [])] as unknown as ResilientInformer<never>[];
      parts.push(
        waitSynced(waitFor, 'inventory').then((ok) => {
          if (!ok || stopped) return;
          reporter.start();
          running.inventory = true;
          log.info('emitter inventory part running');
          checkRunning();
        }),
      );
    }
    if (prober && facts && served) {
      const p = prober;
      parts.push(
        waitSynced([facts, ...served.all] as unknown as ResilientInformer<never>[], 'serving').then((ok) => {
          if (ok && !stopped) p.start();
        }),
      );
    }
    await Promise.all(parts);
  };
  const runPromise = run().catch((e: unknown) => log.error({ err: e }, 'emitter failed to start'));
  log.info(
    {
      stateNamespace,
      watchNamespace: ns ?? '(all)',
      health: wantHealth,
      inventory: wantInventory,
      servingProbeIntervalMs: prober ? servingIntervalMs : 0,
    },
    'emitter starting',
  );

  return {
    whenRunning: () => runningPromise,
    whenInventoryAccepted: () => inventoryAccepted,
    stats() {
      const inf: EmitterStats['informers'] = {};
      for (const i of informers) inf[i.name] = { synced: i.hasSynced, objects: i.list().length, ...i.stats };
      const queues: EmitterStats['queues'] = {};
      if (health) queues['health'] = { length: health.queue.length, delayed: health.queue.pendingDelayed };
      return {
        clusterId: cluster.id || undefined,
        running: { ...running },
        inventoryAccepted: inventory?.accepted,
        informers: inf,
        queues,
        pendingEvents: sender.pending,
        state: { health: healthState.persistedSize },
        serving: prober && { ...prober.size, probes: prober.stats.probes, failures: prober.stats.failures },
      };
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      abort.abort();
      keySecret?.stop();
      // reconciles waiting for a 202 fail now (their state is not written: the next leader re-sends)
      await sender.stop();
      await Promise.all([health?.stop(), inventory?.stop(), prober?.stop()]);
      await Promise.all(informers.map((i) => i.stop().catch(() => {})));
      await runPromise;
      running.health = running.inventory = false;
      log.info('emitter stopped');
    },
  };
}
