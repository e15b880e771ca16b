/**
 * Composition root of `certmgr-notify agent` (docs/agent.md): config → hub key file → Kubernetes → leadership
 * (a Lease, so two replicas are safe) → while leading: the emitter (health events + inventory reporting, no
 * local expiry) and, with --operator, the operator reconciling into the hub → /healthz, /readyz, /metrics.
 * No store, no API, no generated files.
 */
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { ConfigError, type AgentConfig } from '../config.js';
import { startEmitter, type EmitterOptions, type RunningEmitter } from '../emitter/index.js';
import { loadKubeConfig, podNamespace } from '../kube/kubeconfig.js';
import { kubeConfigAvailable, startOperator, type RunningOperator } from '../operator/index.js';
import {
  AlwaysLeader,
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RETRY_PERIOD_MS,
  createLeadership,
  runWhileLeading,
  type Elector,
} from '../runtime/leader.js';
import { realClock } from '../runtime/timers.js';
import { fileApiKey } from './api-key-file.js';
import { startOpsServer, type Readiness } from './http.js';

const AGENT_LEASE_NAME = 'certmgr-notify-agent';

export interface RunningAgent {
  url: string;
  port: number;
  readiness(): Readiness;
  close(): Promise<void>;
}

export interface AgentOverrides {
  kubeConfig?: KubeConfig;
  /** emitter timings (tests) */
  emitter?: Partial<EmitterOptions>;
}

export async function startAgent(cfg: AgentConfig, log: Logger, o: AgentOverrides = {}): Promise<RunningAgent> {
  if (!o.kubeConfig && !kubeConfigAvailable())
    throw new ConfigError('agent: no Kubernetes configuration found (KUBECONFIG, ~/.kube/config or in-cluster service account)');
  const apiKey = fileApiKey(cfg.apiKeyFile, log);
  const kc = o.kubeConfig ?? loadKubeConfig();
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'certmgr_notify_' });
  const leaderGauge = new Gauge({ name: 'certmgr_notify_agent_leader', help: '1 while this replica leads', registers: [registry] });
  const stateNamespace = cfg.stateNamespace ?? podNamespace();
  const leadership: Elector = cfg.leaderElect
    ? createLeadership({
        // the elector's default timings, which the readiness below counts on
        options: { leaseName: AGENT_LEASE_NAME, leaseNamespace: stateNamespace },
        coordination: kc.makeApiClient(CoordinationV1Api),
        identity: cfg.instanceId,
        defaultLeaseName: AGENT_LEASE_NAME,
        log: log.child({ component: 'leader' }),
      })
    : new AlwaysLeader(log);
  leadership.onStartedLeading(() => leaderGauge.set(1));
  leadership.onStoppedLeading(() => leaderGauge.set(0));

  // ready once the hub accepted a report of this process; a replica that is not leading is ready as a
  // standby once an election had time to pick it (else two replicas could never both be ready)
  const startedAt = realClock.now();
  let accepted = false;
  const readiness = (): Readiness => {
    if (accepted) return { ready: true };
    if (!leadership.isLeader())
      return realClock.now() - startedAt > DEFAULT_LEASE_DURATION_MS + 2 * DEFAULT_RETRY_PERIOD_MS
        ? { ready: true }
        : { ready: false, reason: 'leader election in progress' };
    return { ready: false, reason: 'the hub has not accepted an inventory report yet' };
  };
  const server = await startOpsServer({ port: cfg.port, host: cfg.host, registry, readiness });

  // an empty --watch-namespace means all namespaces, as an unset one does
  const watchNamespace = cfg.watchNamespace || undefined;
  const emitterOptions: EmitterOptions = {
    logger: log,
    kubeConfig: kc,
    serviceUrl: cfg.hubUrl,
    getApiKey: apiKey,
    clusterName: cfg.clusterName,
    clusterId: cfg.clusterId,
    stateNamespace,
    watchNamespace,
    gracePeriodMs: cfg.healthGracePeriodMs,
    unknownGracePeriodMs: cfg.healthUnknownGracePeriodMs,
    issuingGracePeriodMs: cfg.healthIssuingGracePeriodMs,
    renewalOverdueGraceMs: cfg.healthRenewalOverdueGraceMs,
    servingProbeIntervalMs: cfg.servingProbeIntervalMs,
    inventory: true,
    maxPendingEvents: cfg.maxPendingEvents,
    registry,
    ...o.emitter,
  };
  const emitter = runWhileLeading<RunningEmitter>(
    leadership,
    async () => {
      const e = await startEmitter(emitterOptions);
      void e.whenInventoryAccepted().then(() => (accepted = true));
      return e;
    },
    { name: 'emitter', log },
  );
  let operator: RunningOperator | undefined;
  try {
    if (cfg.operator)
      operator = await startOperator({
        logger: log,
        service: { url: cfg.hubUrl, apiKey },
        kubeConfig: kc,
        registry,
        leader: leadership,
        namespace: watchNamespace,
        identity: cfg.instanceId,
        cluster: cfg.clusterName,
        clusterId: cfg.clusterId,
      });
  } catch (e) {
    await emitter.stop();
    await server.close();
    throw e;
  }
  leadership.start();
  log.info(
    { url: server.url, hubUrl: cfg.hubUrl, clusterName: cfg.clusterName, instanceId: cfg.instanceId, operator: cfg.operator },
    'listening',
  );
  return {
    url: server.url,
    port: server.port,
    readiness,
    /** the roles first (each awaited), then the Lease is released, then the HTTP server */
    async close() {
      await emitter.stop();
      await operator?.stop();
      await leadership.stop();
      await server.close();
    },
  };
}
