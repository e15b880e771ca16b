/** What `startEmitter` takes and returns. */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ApiKey } from '../client/api-key.js';
import type { BackoffPolicy, Clock } from '../runtime/timers.js';
import type { ServingProberOptions } from './serving/prober.js';

export interface EmitterOptions {
  logger: Logger;
  /** service base URL (the in-process service's URL, or a remote one) */
  serviceUrl: string;
  /** API key for `svc-api-key` (a value or a getter); or `getApiKey` when it rotates; or `apiKeySecret` (re-read every minute) */
  apiKey?: ApiKey | undefined;
  getApiKey?: (() => string) | undefined;
  apiKeySecret?: { namespace: string; name: string; key: string } | undefined;
  /** default: KUBECONFIG / ~/.kube/config / in-cluster */
  kubeConfig?: KubeConfig | undefined;
  /** `clusterName` of health events; default DEFAULT_CLUSTER_NAME (cluster.ts) */
  clusterName?: string | undefined;
  /** `clusterId` of health events (UUID); default the kube-system namespace's uid */
  clusterId?: string | undefined;
  /** namespace of the state ConfigMaps; default the pod's namespace, else `default` */
  stateNamespace?: string | undefined;
  /** ConfigMap name prefix; default `certmgr-notify-emitter` (→ `-health-0..127`) */
  stateName?: string | undefined;
  /** watch only this namespace (Issuers, Certificates, Secrets); ClusterIssuers are always watched */
  watchNamespace?: string | undefined;
  /** Ready=False this long before `.notready`; default DEFAULT_HEALTH_GRACE_PERIOD_MS (health/diff.ts, as the next two) */
  gracePeriodMs?: number | undefined;
  /** Ready=Unknown / no Ready condition this long before `.notready`; default DEFAULT_HEALTH_UNKNOWN_GRACE_PERIOD_MS */
  unknownGracePeriodMs?: number | undefined;
  /** Certificate being issued (Issuing=True, no failed attempt) this long before `.notready`; default DEFAULT_HEALTH_ISSUING_GRACE_PERIOD_MS */
  issuingGracePeriodMs?: number | undefined;
  /** Ready Certificate whose renewalTime passed this long ago without a new certificate: unhealthy (RenewalOverdue); default DEFAULT_RENEWAL_OVERDUE_GRACE_MS (health/renewal.ts) */
  renewalOverdueGraceMs?: number | undefined;
  /** every health object is evaluated at least this often; default DEFAULT_RESYNC_MS (runtime/controller.ts) */
  resyncMs?: number | undefined;
  /**
   * read the root cause of a Certificate about to be notified unhealthy (its CertificateRequest, Order and
   * Challenges, on demand; docs/emitter.md "Root cause"); default true
   */
  rootCauses?: boolean | undefined;
  /** run the health part (default true) */
  health?: boolean | undefined;
  /**
   * report the certificate inventory to `POST /v1/inventory` (default true): the hub evaluates expiry over it
   * (src/expiry/); false only in tests of the health part alone
   */
  inventory?: boolean | undefined;
  /** inventory: delta batching (default 1 s), heartbeat (60 s), retry backoff (1 s doubling to 30 s), 404 retry (5 min) */
  inventoryBatchMs?: number | undefined;
  inventoryHeartbeatMs?: number | undefined;
  inventoryBackoff?: BackoffPolicy | undefined;
  inventoryUnsupportedRetryMs?: number | undefined;
  /**
   * serving probes (docs/serving.md): every Ingress and Gateway endpoint with a TLS Secret is probed this often
   * and its served certificate held against the Secret's; 0: off; default DEFAULT_SERVING_PROBE_INTERVAL_MS
   * (serving/prober.ts). Needs the inventory (its TLS Secret cache).
   */
  servingProbeIntervalMs?: number | undefined;
  /** the serving prober's other bounds and graces (defaults in serving/prober.ts and verdict.ts); tests shorten them */
  servingProbe?:
    | Pick<
        ServingProberOptions,
        'timeoutMs' | 'ratePerSecond' | 'concurrency' | 'unreachableGraceMs' | 'reloadGraceMs' | 'renewalProbeDelayMs'
      >
    | undefined;
  /** health events waiting for the service at most (default DEFAULT_MAX_PENDING_EVENTS); see EventSender */
  maxPendingEvents?: number | undefined;
  /** LIST page size of the informers; default 500 */
  listPageSize?: number | undefined;
  /** concurrent health reconciles; default 512 (I/O-bound, batched: see health/controller.ts) */
  concurrency?: number | undefined;
  /** POST /v1/events: events per request (default 100), retry backoff (500 ms doubling to 30 s), timeout (10 s) */
  sendBatchMax?: number | undefined;
  sendBackoff?: BackoffPolicy | undefined;
  requestTimeoutMs?: number | undefined;
  /** informer restart backoff; default 500 ms doubling to 30 s */
  informerBackoff?: BackoffPolicy | undefined;
  /** per-key retry backoff of the workqueues */
  queueBackoff?: BackoffPolicy | undefined;
  /** prom-client registry; default a private one */
  registry?: Registry | undefined;
  clock?: Clock | undefined;
  /** inject fetch (tests) */
  fetch?: typeof fetch | undefined;
}

export interface EmitterStats {
  clusterId?: string | undefined;
  running: { health: boolean; inventory: boolean };
  /** the hub accepted an inventory report (undefined: no inventory reporting) */
  inventoryAccepted?: boolean | undefined;
  informers: Record<string, { synced: boolean; objects: number; lists: number; restarts: number; errors: number; lastError?: string }>;
  queues: Record<string, { length: number; delayed: number }>;
  pendingEvents: number;
  state: { health: number };
  /** the serving prober (undefined: probing is off) */
  serving?: { endpoints: number; inFlight: number; probes: number; failures: number } | undefined;
}

export interface RunningEmitter {
  /** resolves once the enabled parts run (caches synced, state loaded) */
  whenRunning(): Promise<void>;
  /** resolves once the hub accepted the first inventory report (never without inventory reporting) */
  whenInventoryAccepted(): Promise<void>;
  stats(): EmitterStats;
  /** stop informers and queues; events not yet accepted are dropped from memory and re-sent by the next leader */
  stop(): Promise<void>;
}
