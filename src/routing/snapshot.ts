/**
 * Per-company routing snapshots: routers compiled once, indexed by family, with integrations and the
 * monitoring configuration. Rebuilt when this process changes configuration (invalidate). Otherwise, once a
 * snapshot is `ttlMs` old, a cheap fingerprint query tells whether another replica changed anything; only
 * then is it rebuilt (and at the latest after `maxStaleMs`), so replicas sharing PostgreSQL converge without
 * recompiling thousands of routers every few seconds.
 *
 * Bounded state: both caches are TenantLru's, bounded by entries and estimated bytes, globally and
 * per company, so one tenant cannot grow them without limit nor push the other tenants' working sets out.
 *  - compiled filters, by (company, eventTypeId, expression): reused across rebuilds of that company's
 *    snapshot; entries no router of the company uses any more are dropped at every rebuild and on
 *    invalidate (router deleted or updated), so deleted filters do not stay behind;
 *  - snapshots, one per company: the companies cached are capped, the least recently used go first.
 *
 * Building a snapshot is CPU-bound (a company may have a thousand filters of 2,000 characters to compile), so it
 * runs in time slices like routing itself (src/routing/slicer.ts): a step of a router's filter compile (parse;
 * check and price; fold and plan; closures), a silence or a router of a family's prefilter index at a time,
 * yielding to the event loop when the slice is used up. Concurrent callers share the one build
 * of the cached entry. A build whose entry was invalidated (or replaced) meanwhile still answers the callers that
 * were waiting for it, but is not cached, adds no filters to the cache and does not prune the company's filters.
 */
import { compileFilter, compileFilterSteps, filterConstraints, FilterCompileError, type CompiledFilter } from '../cel/index.js';
import { EVENT_TYPE_IDS, type EventTypeId } from '../events/families.js';
import { defaultMonitoringConfig } from '../model/monitoring.js';
import type { ConfigOps, IntegrationRecord, RouterRecord, SilenceOps, SilenceRecord } from '../store/types.js';
import { compileSilence, type CompiledSilence } from '../silences/decide.js';
import type { CompiledRouter } from './compiled-router.js';
import { buildRoutingIndexSliced, type RoutingSnapshot } from './match.js';
import { runSliced, TimeSlicer } from './slicer.js';
import { TenantLru, type EvictionReason, type LruLimits, type LruStats } from './tenant-lru.js';

interface Entry {
  snapshot: Promise<RoutingSnapshot>;
  fingerprint: Promise<string>;
  /** when the snapshot was last known current */
  checkedAt: number;
  /** when it was built */
  builtAt: number;
  /** the built snapshot, once the load finished */
  resolved?: RoutingSnapshot;
}

interface Compiled {
  filter: CompiledFilter | null;
  error?: string;
  /** the compile error itself (a silence's matcher tries every family: compileMatcher needs its position) */
  err?: FilterCompileError;
}

/** Silences read per snapshot: the quota's ceiling (maxSilencesPerCompany is at most 100,000). */
const MAX_SNAPSHOT_SILENCES = 100_000;

export interface RoutingCacheLimits {
  filters: LruLimits;
  snapshots: LruLimits;
}

const MiB = 1024 * 1024;

/**
 * Defaults, the one place they are written. A compiled filter's heap grows with its length, estimated by
 * filterBytes() as 4 KiB + 72 B per character; a company at the default router quota with maximum-length filters
 * stays within a company's share of the filter cache. Compiled filters are charged to the filter cache only:
 * a snapshot is charged its own records and prefilter index (snapshotBytes), and loses its place when the filter
 * cache evicts one of its company's filters, so that it never keeps alive filters nobody counts. The sum of the
 * global byte caps is the routing caches' budget, well under the chart's memory request
 * (test/routing/cache-budget.test.ts).
 */
export const DEFAULT_ROUTING_CACHE_LIMITS: RoutingCacheLimits = {
  filters: { maxEntries: 50_000, maxBytes: 144 * MiB, maxEntriesPerTenant: 2_000, maxBytesPerTenant: 144 * MiB },
  snapshots: { maxEntries: 10_000, maxBytes: 48 * MiB, maxEntriesPerTenant: 1, maxBytesPerTenant: 24 * MiB },
};

/** Estimated heap bytes of one compiled filter (see DEFAULT_ROUTING_CACHE_LIMITS). */
export function filterBytes(expression: string): number {
  return 4096 + 72 * expression.length;
}

/**
 * Estimated heap bytes of a snapshot besides its compiled filters (charged to the filter cache): the router,
 * silence and integration records, and the prefilter index, about 5 B per character of the filters it indexes.
 */
function snapshotBytes(
  routers: readonly RouterRecord[],
  integrations: readonly IntegrationRecord[],
  silences: readonly SilenceRecord[],
): number {
  let n = 4096;
  for (const s of silences) n += 1024 + 2 * s.comment.length + 8 * s.matcher.length;
  for (const r of routers) n += 1024 + 2 * r.name.length + 8 * r.filter.length;
  for (const i of integrations) n += 2048 + 2 * i.name.length;
  return n;
}

const filterKey = (eventTypeId: string, filter: string) => `${eventTypeId}\u0000${filter}`;
/** The one key of a company's snapshot in its partition. */
const SNAPSHOT = '';

export interface RoutingCacheStats {
  filters: LruStats;
  snapshots: LruStats;
  evictions: Record<'filters' | 'snapshots', Record<EvictionReason, number>>;
}

export class RoutingSnapshots {
  private readonly cache: TenantLru<Entry>;
  /** Compiled filters by company and (eventTypeId, expression): unchanged routers are not recompiled on reload. */
  private readonly compiled: TenantLru<Compiled>;
  private readonly evictions: RoutingCacheStats['evictions'] = {
    filters: { tenant_cap: 0, global_cap: 0, deleted: 0 },
    snapshots: { tenant_cap: 0, global_cap: 0, deleted: 0 },
  };

  constructor(
    private readonly store: ConfigOps & Pick<SilenceOps, 'listLiveSilences'>,
    private readonly opts: {
      ttlMs?: number;
      maxStaleMs?: number;
      now?: () => number;
      limits?: Partial<RoutingCacheLimits>;
      /** The time slicer of one build (tests inject a clock and count the yields). */
      slicer?: () => TimeSlicer;
    } = {},
  ) {
    const limits = { ...DEFAULT_ROUTING_CACHE_LIMITS, ...opts.limits };
    // one snapshot per company: shares are equal, recency decides
    this.cache = new TenantLru(limits.snapshots, (reason) => this.evictions.snapshots[reason]++, 'lru');
    this.compiled = new TenantLru(limits.filters, (reason, companyId) => {
      this.evictions.filters[reason]++;
      // a filter evicted for room (not deleted with its router): the company's snapshot would keep it alive
      // uncounted, so it goes too (rebuilt on next use, recompiling only what is missing)
      if (reason !== 'deleted' && this.cache.has(companyId, SNAPSHOT)) {
        this.cache.delete(companyId, SNAPSHOT, false);
        this.evictions.snapshots[reason]++;
      }
    });
  }

  /**
   * Forgets the company's snapshot (or every snapshot) after a configuration change. With `routerIds` (routers
   * deleted or updated), their compiled filters are evicted at once unless another router of the company uses
   * the same one; anything missed (e.g. a change made by another replica) is dropped at the next rebuild.
   */
  invalidate(companyId?: string, routerIds?: readonly string[]): void {
    if (companyId === undefined) {
      this.cache.clear();
      this.compiled.clear();
      return;
    }
    const snap = this.cache.has(companyId, SNAPSHOT) ? this.cache.get(companyId, SNAPSHOT)?.resolved : undefined;
    this.cache.delete(companyId, SNAPSHOT);
    if (!routerIds?.length || !snap) return;
    const changed = new Set(routerIds);
    const keep = new Set<string>();
    const drop = new Set<string>();
    for (const routers of snap.byFamily.values())
      for (const { record: r } of routers) (changed.has(r.id) ? drop : keep).add(filterKey(r.eventTypeId, r.filter));
    for (const key of drop) if (!keep.has(key)) this.compiled.delete(companyId, key);
  }

  stats(): RoutingCacheStats {
    return {
      filters: this.compiled.stats(),
      snapshots: this.cache.stats(),
      evictions: { filters: { ...this.evictions.filters }, snapshots: { ...this.evictions.snapshots } },
    };
  }

  /** Compiled filters cached for one company (tests, debugging). */
  companyStats(companyId: string): { filters: number; filterBytes: number } {
    const s = this.compiled.tenantStats(companyId);
    return { filters: s.entries, filterBytes: s.bytes };
  }

  get(companyId: string): Promise<RoutingSnapshot> {
    const now = (this.opts.now ?? Date.now)();
    const hit = this.cache.get(companyId, SNAPSHOT);
    if (hit && now - hit.checkedAt < (this.opts.ttlMs ?? 5_000)) return hit.snapshot;
    if (hit && now - hit.builtAt < (this.opts.maxStaleMs ?? 60_000)) {
      // revalidate: keep the snapshot when the fingerprint is unchanged
      hit.checkedAt = now;
      const prev = hit.snapshot;
      const fp = this.store.routingFingerprint(companyId);
      const snapshot = Promise.all([fp, hit.fingerprint]).then(([cur, old]) => {
        if (cur === old) return prev;
        this.#drop(companyId, hit);
        return this.get(companyId);
      });
      hit.snapshot = snapshot;
      snapshot.catch(() => this.#drop(companyId, hit));
      return snapshot;
    }
    // the fingerprint is read before the records, so a change racing the load makes the next check reload
    const fingerprint = this.store.routingFingerprint(companyId);
    const entry: Entry = { snapshot: undefined as unknown as Promise<RoutingSnapshot>, fingerprint, checkedAt: now, builtAt: now };
    entry.snapshot = fingerprint.then(() => this.load(companyId, entry));
    // a placeholder size until the snapshot is built (concurrent gets share the pending load)
    this.cache.set(companyId, SNAPSHOT, entry, 4096);
    entry.snapshot.catch(() => this.#drop(companyId, entry));
    return entry.snapshot;
  }

  /**
   * The company's snapshot as stored now: like get(), but the fingerprint (one cheap query) is checked at once
   * rather than after `ttlMs`, so a change made through another replica shows at once. While the fingerprint is
   * unchanged the shared snapshot is reused as is: nothing is reloaded, recompiled or invalidated (simulateRouting
   * calls it on every request).
   */
  async current(companyId: string): Promise<RoutingSnapshot> {
    const hit = this.cache.get(companyId, SNAPSHOT);
    if (!hit) return this.get(companyId);
    const [cur, old] = await Promise.all([this.store.routingFingerprint(companyId), hit.fingerprint.catch(() => null)]);
    if (cur === old && this.cache.get(companyId, SNAPSHOT) === hit) {
      hit.checkedAt = (this.opts.now ?? Date.now)();
      return hit.snapshot;
    }
    this.#drop(companyId, hit);
    return this.get(companyId);
  }

  /** Removes the company's cached entry if it is still `entry` (a newer one may have replaced it). */
  #drop(companyId: string, entry: Entry): void {
    if (this.cache.has(companyId, SNAPSHOT) && this.cache.get(companyId, SNAPSHOT) === entry) this.cache.delete(companyId, SNAPSHOT, false);
  }

  /**
   * A router's filter from the company's cache, compiled on a miss in steps within the build's slices (one
   * compile of a long filter is several slices' worth). `keep`, asked once compiled: whether to cache it (not for
   * a build overtaken by a change: its filters may be gone).
   */
  private async compile(
    companyId: string,
    r: RouterRecord,
    used: Set<string>,
    keep: () => boolean,
    slicer: TimeSlicer,
  ): Promise<CompiledRouter> {
    const key = filterKey(r.eventTypeId, r.filter);
    used.add(key);
    let c = this.compiled.get(companyId, key);
    if (!c) {
      try {
        c = { filter: await runSliced(compileFilterSteps(r.filter, r.eventTypeId), slicer) };
      } catch (e) {
        c = { filter: null, error: e instanceof FilterCompileError ? e.message : String(e) };
      }
      if (keep()) this.compiled.set(companyId, key, c, filterBytes(r.filter));
    }
    return c.error !== undefined ? { record: r, filter: null, compileError: c.error } : { record: r, filter: c.filter };
  }

  /** A filter from the company's cache (compiled on a miss); throws its FilterCompileError (silence matchers). */
  private cachedFilter(companyId: string, expression: string, eventTypeId: EventTypeId, used: Set<string>, keep: boolean): CompiledFilter {
    const key = filterKey(eventTypeId, expression);
    used.add(key);
    let c = this.compiled.get(companyId, key);
    if (!c) {
      try {
        c = { filter: compileFilter(expression, eventTypeId) };
      } catch (e) {
        if (!(e instanceof FilterCompileError)) throw e;
        c = { filter: null, error: e.message, err: e };
      }
      if (keep) this.compiled.set(companyId, key, c, filterBytes(expression));
    }
    if (c.filter) return c.filter;
    throw c.err ?? new FilterCompileError(c.error ?? 'does not compile', 1, 1);
  }

  /** Whether `entry` is still the company's cached entry (not invalidated, evicted or replaced since). */
  #isCurrent(companyId: string, entry: Entry): boolean {
    return this.cache.has(companyId, SNAPSHOT) && this.cache.get(companyId, SNAPSHOT) === entry;
  }

  private async load(companyId: string, entry: Entry): Promise<RoutingSnapshot> {
    const [routers, integrations, monitoring, silenceRecords] = await Promise.all([
      this.store.listRouters(companyId),
      this.store.listIntegrations(companyId),
      this.store.getMonitoringConfig(companyId),
      this.store.listLiveSilences(companyId, (this.opts.now ?? Date.now)(), MAX_SNAPSHOT_SILENCES),
    ]);
    const slicer = this.opts.slicer?.() ?? new TimeSlicer();
    const byFamily = new Map<EventTypeId, CompiledRouter[]>(EVENT_TYPE_IDS.map((id) => [id, []]));
    const used = new Set<string>();
    for (const r of routers) {
      const cr = await this.compile(companyId, r, used, () => this.#isCurrent(companyId, entry), slicer);
      if (slicer.due()) await slicer.yield();
      // the prefilter index reads each filter's constraints: derived here, within the slices, not in one index build
      if (cr.filter) filterConstraints(cr.filter);
      byFamily.get(r.eventTypeId)?.push(cr);
      if (slicer.due()) await slicer.yield();
    }
    const silences: CompiledSilence[] = [];
    for (const s of silenceRecords) {
      const keep = this.#isCurrent(companyId, entry);
      silences.push(compileSilence(s, (expression, eventTypeId) => this.cachedFilter(companyId, expression, eventTypeId, used, keep)));
      if (slicer.due()) await slicer.yield();
    }
    // filters of deleted or changed routers are not kept for this company (by the current build only: an older
    // one would drop the filters of the routers changed since it read them)
    if (this.#isCurrent(companyId, entry)) this.compiled.retainOnly(companyId, used);
    const snapshot: RoutingSnapshot = {
      companyId,
      byFamily,
      integrations: new Map(integrations.map((i) => [i.id, i])),
      monitoring: monitoring ?? defaultMonitoringConfig(companyId),
      silences,
    };
    // Build the prefilter indexes now rather than on the first event (the snapshot is not shared before this returns).
    for (const id of EVENT_TYPE_IDS) await buildRoutingIndexSliced(snapshot, id, slicer);
    // the real size, now known; too large a snapshot is not kept (rebuilt when next needed)
    entry.resolved = snapshot;
    if (this.#isCurrent(companyId, entry)) this.cache.resize(companyId, SNAPSHOT, snapshotBytes(routers, integrations, silenceRecords));
    return snapshot;
  }
}
