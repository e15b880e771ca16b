/**
 * Silent clusters (docs/inventory.md#silent-clusters): a cluster whose agent has not reported for
 * clusterSilenceAfter (--limits-file). A gauge counts silent and reporting clusters (two series, no per-cluster label). The
 * leader's watch marks each cluster that crosses into silence (clusters.silent_since, migration 8) and, in the
 * same transaction, accepts an `evt.healthstatus.certmgr-agent.notready` through the ingestion path of
 * POST /v1/events (docs/inventory.md "Silent clusters as events"): delivered only where the company has a router
 * on certmgr-agent-health-notification-config. The mark is written only from NULL and only while last_seen_at is
 * what the watch read, so a restart, a failover or two leaders at once never repeat or forget an event; the
 * report that ends the silence clears the mark and accepts the `.active` (src/service/inventory.ts).
 */
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { LogLimiter } from '../log/limiter.js';
import { isoUtc, unhealthyDurationOf } from '../events/wire-formats.js';
import type { InternalEvent } from '../events/families.js';
import { sanitizeEvent } from '../events/sanitize.js';
import type { AgentActiveData, AgentNotReadyData } from '../events/types.js';
import { serviceContext } from '../service/context.js';
import { acceptEventsInTransaction, type IngestDeps } from '../ingest/pipeline.js';
import type { ClusterRecord, InventoryOps, Store } from '../store/types.js';

// ---------------------------------------------------------------------------------------------------------------
// Decisions (pure)

export type SilenceDecision =
  /** reported within the silence period */
  | { action: 'reporting' }
  /** silent, and its .notready was already accepted (by this or another replica, before or after a restart) */
  | { action: 'notified' }
  /** silent and not yet notified: mark it silent since `silentSince` and accept the .notready */
  | { action: 'notify'; silentSince: number };

/** The watch's decision for one cluster at `now`. Silent: no report for more than `silenceAfterMs`. */
export function decideSilence(c: Pick<ClusterRecord, 'lastSeenAt' | 'silentSince'>, now: number, silenceAfterMs: number): SilenceDecision {
  if (now - c.lastSeenAt <= silenceAfterMs) return { action: 'reporting' };
  if (c.silentSince !== null) return { action: 'notified' };
  // the moment it crossed, not when a check noticed it: the same on every replica and after any restart
  return { action: 'notify', silentSince: c.lastSeenAt + silenceAfterMs };
}

/** The apply's decision when a report comes in: resolve (accept the .active, clear the mark) if it was notified. */
export function decideReporting(
  state: Pick<ClusterRecord, 'silentSince'> | null,
  now: number,
): { resolve: false } | { resolve: true; silentForMs: number } {
  if (state === null || state.silentSince === null) return { resolve: false };
  return { resolve: true, silentForMs: Math.max(0, now - state.silentSince) };
}

/** `evt.healthstatus.certmgr-agent.notready` for a cluster silent since `silentSince`. */
export function agentSilentEvent(c: ClusterRecord, silentSince: number, silenceAfterMs: number): InternalEvent {
  const data: AgentNotReadyData = {
    clusterId: c.id,
    clusterName: c.name,
    lastSeenAt: isoUtc(c.lastSeenAt),
    statusTransition: isoUtc(silentSince),
    statusMessage: `The certmgr-notify agent of cluster ${c.name} has not reported its inventory for ${unhealthyDurationOf(silenceAfterMs)} (clusterSilenceAfter in --limits-file); its certificates are not watched until it reports again`,
    statusReason: 'AgentSilent',
    agentVersion: c.agentVersion,
  };
  return sanitizeEvent({ type: 'evt.healthstatus.certmgr-agent.notready', data: { ...data } });
}

const ACTIVE_MESSAGES = {
  // the report at `now` ends the silence
  AgentReporting: (name: string, d: string) =>
    `The certmgr-notify agent of cluster ${name} reports its inventory again after ${d} of silence`,
  // deleteClusters removed a silent cluster: the incident its .notready opened must not stay open
  ClusterDeleted: (name: string, d: string) => `Cluster ${name} was removed from the certificate inventory after ${d} of silence`,
} as const;

/** `evt.healthstatus.certmgr-agent.active` ending a silence of `silentForMs`: the cluster reports again, or was deleted. */
export function agentActiveEvent(
  cluster: { clusterId: string; clusterName: string; agentVersion: string; lastSeenAt: number },
  now: number,
  silentForMs: number,
  reason: keyof typeof ACTIVE_MESSAGES,
): InternalEvent {
  const unhealthyDuration = unhealthyDurationOf(silentForMs);
  const data: AgentActiveData = {
    clusterId: cluster.clusterId,
    clusterName: cluster.clusterName,
    lastSeenAt: isoUtc(cluster.lastSeenAt),
    statusTransition: isoUtc(now),
    statusMessage: ACTIVE_MESSAGES[reason](cluster.clusterName, unhealthyDuration),
    statusReason: reason,
    agentVersion: cluster.agentVersion,
    unhealthyDuration,
  };
  return sanitizeEvent({ type: 'evt.healthstatus.certmgr-agent.active', data: { ...data } });
}

// ---------------------------------------------------------------------------------------------------------------
// Shells

/** How often the leader looks for clusters that fell silent: a fraction of the silence, within 1 s .. 1 min. */
export function silenceCheckInterval(silenceAfterMs: number): number {
  return Math.min(60_000, Math.max(1_000, Math.floor(silenceAfterMs / 4)));
}

/** Most clusters marked per check (one small transaction each); the next check takes the next oldest. */
const MAX_MARKED_PER_CHECK = 1000;

/** The gauge, on every replica: computed from the store at scrape time. */
export function registerClusterGauge(
  registry: Registry,
  store: InventoryOps,
  silenceAfterMs: number,
  now: () => number,
  log: Logger,
): void {
  new Gauge({
    name: 'certmgr_notify_clusters',
    help: 'Inventory clusters by state: silent (no report for clusterSilenceAfter in --limits-file) or reporting',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      try {
        const c = await store.clusterCounts(now() - silenceAfterMs);
        this.set({ state: 'silent' }, c.silent);
        this.set({ state: 'reporting' }, c.reporting);
      } catch (err) {
        log.debug({ err }, 'cluster gauge: store unavailable; keeping the last values');
      }
    },
  });
}

export interface SilenceWatch {
  /** One check now (the timer calls it; tests may too); returns how many clusters it marked silent. */
  check(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The leader's periodic check: marks each cluster that crossed into silence, accepts its `.notready` in the same
 * transaction, and logs a warn line for it. No per-cluster state in memory: the mark is the state.
 */
export function startSilenceWatch(opts: {
  store: Store;
  /** the ingestion dependencies of POST /v1/events: routing snapshots, metrics, the delivery signal */
  ingest: IngestDeps;
  log: Logger;
  logLimiter?: LogLimiter;
  silenceAfterMs: number;
  now: () => number;
}): SilenceWatch {
  const { store, ingest, log, silenceAfterMs } = opts;
  let running: Promise<number> | undefined;
  const markOne = async (c: ClusterRecord, now: number): Promise<boolean> => {
    const d = decideSilence(c, now, silenceAfterMs);
    if (d.action !== 'notify') return false;
    // read before the transaction: the routing snapshot reads the store
    const snap = await ingest.snapshots.get(c.companyId);
    const ctx = serviceContext(store, c.companyId, { now: () => now });
    const accepted = await store.transaction(async (tx) => {
      // the apply's per-cluster lock (PostgreSQL): a report applied meanwhile is seen here, and one that comes
      // now waits for this transaction, then sees the mark and accepts the .active
      const cur = await tx.lockCluster(c.companyId, c.id);
      const now2 = cur && decideSilence(cur, now, silenceAfterMs);
      if (!cur || now2?.action !== 'notify') return undefined;
      // conditional: another leader's check, or a report, that came first leaves nothing to do
      if (!(await tx.markClusterSilent(c.companyId, c.id, cur.lastSeenAt, now2.silentSince))) return undefined;
      return acceptEventsInTransaction(ctx, tx, snap, [agentSilentEvent(cur, now2.silentSince, silenceAfterMs)], ingest);
    });
    if (!accepted) return false;
    accepted.committed();
    if (!opts.logLimiter || opts.logLimiter.admit(log, 'warn', c.companyId, 'cluster_silence'))
      log.warn(
        {
          companyId: c.companyId,
          clusterId: c.id,
          clusterName: c.name,
          lastSeenAt: new Date(c.lastSeenAt).toISOString(),
          eventId: accepted.accepted[0]?.id,
          deliveries: accepted.accepted[0]?.deliveries ?? 0,
        },
        'cluster silent: no inventory report within clusterSilenceAfter (--limits-file)',
      );
    return true;
  };
  const check = async (): Promise<number> => {
    const now = opts.now();
    const due = await store.clustersToMarkSilent(now - silenceAfterMs, MAX_MARKED_PER_CHECK);
    let marked = 0;
    for (const c of due) {
      try {
        if (await markOne(c, now)) marked++;
      } catch (err) {
        // one cluster's failure must not hold back the others; it is tried again at the next check
        log.warn({ err, companyId: c.companyId, clusterId: c.id }, 'marking a silent cluster failed; retried at the next check');
      }
    }
    if (due.length === MAX_MARKED_PER_CHECK) log.warn({ marked }, 'more clusters fell silent than one check marks; the next check goes on');
    return marked;
  };
  const timer = setInterval(() => {
    if (running) return;
    running = check()
      .catch((err: unknown) => (log.warn({ err }, 'silent cluster check failed; retried at the next interval'), 0))
      .finally(() => (running = undefined));
  }, silenceCheckInterval(silenceAfterMs));
  timer.unref();
  return {
    check,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
