/**
 * Silent clusters (docs/inventory.md#silent-clusters): a cluster whose agent has not reported for
 * --cluster-silence-after. A gauge counts silent and reporting clusters (two series, no per-cluster label), and
 * the leader logs one warn line when a cluster falls silent (rate-limited per tenant); the apply logs one when
 * it reports again (src/service/inventory.ts). No per-cluster state in memory: a cluster fell silent between two
 * checks exactly when its lastSeenAt lies in the window the pure `silenceWindow` gives.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { LogLimiter } from '../log/limiter.js';
import type { Store } from '../store/types.js';

/** Clusters last seen in [from, to) fell silent after the check at `prev` and by the check at `now`. */
export function silenceWindow(prev: number, now: number, silenceAfterMs: number): { from: number; to: number } {
  return { from: prev - silenceAfterMs, to: now - silenceAfterMs };
}

/** How often the leader looks for clusters that fell silent: a fraction of the silence, within 1 s .. 1 min. */
export function silenceCheckInterval(silenceAfterMs: number): number {
  return Math.min(60_000, Math.max(1_000, Math.floor(silenceAfterMs / 4)));
}

/** Most clusters logged per check (the rest are summarized in one line). */
const MAX_LOGGED_PER_CHECK = 1000;

/** The gauge, on every replica: computed from the store at scrape time. */
export function registerClusterGauge(registry: Registry, store: Store, silenceAfterMs: number, now: () => number, log: Logger): void {
  new Gauge({
    name: 'certmgr_notify_clusters',
    help: 'Inventory clusters by state: silent (no report for --cluster-silence-after) or reporting',
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
  /** One check now (the timer calls it; tests may too). */
  check(): Promise<number>;
  stop(): Promise<void>;
}

/** The leader's periodic check: a warn line per cluster that fell silent since the previous check. */
export function startSilenceWatch(opts: {
  store: Store;
  log: Logger;
  logLimiter?: LogLimiter;
  silenceAfterMs: number;
  now: () => number;
}): SilenceWatch {
  let prev = opts.now();
  let running: Promise<number> | undefined;
  const check = async (): Promise<number> => {
    const now = opts.now();
    const w = silenceWindow(prev, now, opts.silenceAfterMs);
    const fell = await opts.store.clustersLastSeenBetween(w.from, w.to, MAX_LOGGED_PER_CHECK + 1);
    prev = now; // only after a successful read: a failed check is covered by the next one's window
    for (const c of fell.slice(0, MAX_LOGGED_PER_CHECK)) {
      if (opts.logLimiter && !opts.logLimiter.admit(opts.log, 'warn', c.companyId, 'cluster_silence')) continue;
      opts.log.warn(
        { companyId: c.companyId, clusterId: c.id, clusterName: c.name, lastSeenAt: new Date(c.lastSeenAt).toISOString() },
        'cluster silent: no inventory report within --cluster-silence-after',
      );
    }
    if (fell.length > MAX_LOGGED_PER_CHECK) opts.log.warn({ logged: MAX_LOGGED_PER_CHECK }, 'more clusters fell silent than logged');
    return fell.length;
  };
  const timer = setInterval(() => {
    if (running) return;
    running = check()
      .catch((err: unknown) => (opts.log.warn({ err }, 'silent cluster check failed; retried at the next interval'), 0))
      .finally(() => (running = undefined));
  }, silenceCheckInterval(opts.silenceAfterMs));
  timer.unref();
  return {
    check,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
