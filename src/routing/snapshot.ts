/**
 * Per-company routing snapshots: routers compiled once, indexed by family, with integrations and the
 * monitoring configuration. Rebuilt when this process changes configuration (invalidate). Otherwise, once a
 * snapshot is `ttlMs` old, a cheap fingerprint query tells whether another replica changed anything; only
 * then is it rebuilt (and at the latest after `maxStaleMs`), so replicas sharing PostgreSQL converge without
 * recompiling thousands of routers every few seconds.
 */
import { compileFilter, FilterCompileError, type CompiledFilter } from '../cel/index.js';
import { EVENT_TYPE_IDS, type EventTypeId } from '../events/families.js';
import { defaultMonitoringConfig } from '../service/monitoring.js';
import type { RouterRecord, Store } from '../store/types.js';
import { routingIndex, type CompiledRouter, type RoutingSnapshot } from './match.js';

interface Entry {
  snapshot: Promise<RoutingSnapshot>;
  fingerprint: Promise<string>;
  /** when the snapshot was last known current */
  checkedAt: number;
  /** when it was built */
  builtAt: number;
}

export class RoutingSnapshots {
  private readonly cache = new Map<string, Entry>();
  /** Compiled filters by (eventTypeId, expression): unchanged routers are not recompiled on reload. */
  private readonly compiled = new Map<string, { filter: CompiledFilter | null; error?: string }>();

  constructor(
    private readonly store: Store,
    private readonly opts: { ttlMs?: number; maxStaleMs?: number; now?: () => number } = {},
  ) {}

  invalidate(companyId?: string): void {
    if (companyId === undefined) this.cache.clear();
    else this.cache.delete(companyId);
  }

  get(companyId: string): Promise<RoutingSnapshot> {
    const now = (this.opts.now ?? Date.now)();
    const hit = this.cache.get(companyId);
    if (hit && now - hit.checkedAt < (this.opts.ttlMs ?? 5_000)) return hit.snapshot;
    if (hit && now - hit.builtAt < (this.opts.maxStaleMs ?? 60_000)) {
      // revalidate: keep the snapshot when the fingerprint is unchanged
      hit.checkedAt = now;
      const prev = hit.snapshot;
      const fp = this.store.routingFingerprint(companyId);
      const snapshot = Promise.all([fp, hit.fingerprint]).then(([cur, old]) => {
        if (cur === old) return prev;
        if (this.cache.get(companyId) === hit) this.cache.delete(companyId);
        return this.get(companyId);
      });
      hit.snapshot = snapshot;
      snapshot.catch(() => this.cache.delete(companyId));
      return snapshot;
    }
    // the fingerprint is read before the records, so a change racing the load makes the next check reload
    const fingerprint = this.store.routingFingerprint(companyId);
    const snapshot = fingerprint.then(() => this.load(companyId));
    this.cache.set(companyId, { snapshot, fingerprint, checkedAt: now, builtAt: now });
    snapshot.catch(() => this.cache.delete(companyId));
    return snapshot;
  }

  private compile(r: RouterRecord): CompiledRouter {
    const key = `${r.eventTypeId}\u0000${r.filter}`;
    let c = this.compiled.get(key);
    if (!c) {
      try {
        c = { filter: compileFilter(r.filter, r.eventTypeId) };
      } catch (e) {
        c = { filter: null, error: e instanceof FilterCompileError ? e.message : String(e) };
      }
      if (this.compiled.size > 50_000) this.compiled.clear();
      this.compiled.set(key, c);
    }
    return c.error !== undefined ? { record: r, filter: null, compileError: c.error } : { record: r, filter: c.filter };
  }

  private async load(companyId: string): Promise<RoutingSnapshot> {
    const [routers, integrations, monitoring] = await Promise.all([
      this.store.listRouters(companyId),
      this.store.listIntegrations(companyId),
      this.store.getMonitoringConfig(companyId),
    ]);
    const byFamily = new Map<EventTypeId, CompiledRouter[]>(EVENT_TYPE_IDS.map((id) => [id, []]));
    for (const r of routers) byFamily.get(r.eventTypeId)?.push(this.compile(r));
    const snapshot: RoutingSnapshot = {
      companyId,
      byFamily,
      integrations: new Map(integrations.map((i) => [i.id, i])),
      monitoring: monitoring ?? defaultMonitoringConfig(companyId),
    };
    // Build the prefilter indexes now rather than on the first event (filter constraints are cached per filter).
    for (const id of EVENT_TYPE_IDS) routingIndex(snapshot, id);
    return snapshot;
  }
}
