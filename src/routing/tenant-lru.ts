/**
 * An LRU cache partitioned by tenant (company), bounded by entries AND estimated bytes, globally and per tenant.
 *
 * Why not lru-cache: it is not in the dependencies, and a single LRU cannot give a fair share: one tenant
 * inserting fast would push every other tenant's working set out. Here:
 *  - a tenant over its own cap evicts its own least recently used entries, never anybody else's;
 *  - when the whole cache is over its cap, policy 'largest' (default) evicts the least recently used entry of
 *    the tenant holding the largest share (of bytes, or of entries when over the entry cap): the heaviest user
 *    pays first; O(tenants) per such eviction. Policy 'lru' evicts the least recently used entry overall, O(1):
 *    for caches of one entry per tenant (snapshots), where shares are equal and only recency tells.
 * An entry larger than the per-tenant byte cap is not stored at all.
 *
 * Pure data structure (no I/O, no timers); O(1) get/set.
 */

export interface LruLimits {
  maxEntries: number;
  maxBytes: number;
  maxEntriesPerTenant: number;
  maxBytesPerTenant: number;
}

export type EvictionPolicy = 'largest' | 'lru';

export type EvictionReason = 'tenant_cap' | 'global_cap' | 'deleted';

interface Slot<V> {
  value: V;
  bytes: number;
}

interface Partition<V> {
  /** Insertion order = recency order (a use moves the key to the end). */
  slots: Map<string, Slot<V>>;
  bytes: number;
}

export interface LruStats {
  entries: number;
  bytes: number;
  tenants: number;
}

export class TenantLru<V> {
  readonly #parts = new Map<string, Partition<V>>();
  #entries = 0;
  #bytes = 0;
  /** Policy 'lru' only: every entry in recency order, by a key unambiguous for any tenant and key. */
  readonly #order = new Map<string, [tenant: string, key: string]>();

  constructor(
    readonly limits: LruLimits,
    private readonly onEvict: (reason: EvictionReason, tenant: string, key: string) => void = () => {},
    readonly policy: EvictionPolicy = 'largest',
  ) {
    for (const [k, v] of Object.entries(limits)) {
      if (!(Number.isFinite(v) && v >= 1)) throw new RangeError(`TenantLru: ${k} must be a finite number >= 1, got ${v}`);
    }
  }

  get(tenant: string, key: string): V | undefined {
    const p = this.#parts.get(tenant);
    const s = p?.slots.get(key);
    if (!p || !s) return undefined;
    p.slots.delete(key);
    p.slots.set(key, s);
    if (this.policy === 'lru') {
      const k = orderKey(tenant, key);
      this.#order.delete(k);
      this.#order.set(k, [tenant, key]);
    }
    return s.value;
  }

  has(tenant: string, key: string): boolean {
    return this.#parts.get(tenant)?.slots.has(key) ?? false;
  }

  /** Stores (or replaces) an entry; returns false when it is too large to be cached at all. */
  set(tenant: string, key: string, value: V, bytes: number): boolean {
    const size = Math.max(1, Math.ceil(bytes));
    this.delete(tenant, key, false);
    if (size > this.limits.maxBytesPerTenant || size > this.limits.maxBytes) return false;
    let p = this.#parts.get(tenant);
    if (!p) this.#parts.set(tenant, (p = { slots: new Map(), bytes: 0 }));
    p.slots.set(key, { value, bytes: size });
    if (this.policy === 'lru') this.#order.set(orderKey(tenant, key), [tenant, key]);
    p.bytes += size;
    this.#entries++;
    this.#bytes += size;
    // the tenant's own cap first: it pays for its own growth
    while (p.slots.size > this.limits.maxEntriesPerTenant || p.bytes > this.limits.maxBytesPerTenant) {
      this.#evictOldest(tenant, p, 'tenant_cap');
    }
    while (this.#entries > this.limits.maxEntries) this.#evictFromLargest('entries');
    while (this.#bytes > this.limits.maxBytes) this.#evictFromLargest('bytes');
    return this.has(tenant, key);
  }

  /** Updates the byte estimate of an existing entry (e.g. once a pending value resolved), enforcing the caps. */
  resize(tenant: string, key: string, bytes: number): boolean {
    const s = this.#parts.get(tenant)?.slots.get(key);
    if (!s) return false;
    return this.set(tenant, key, s.value, bytes);
  }

  delete(tenant: string, key: string, notify = true): boolean {
    const p = this.#parts.get(tenant);
    const s = p?.slots.get(key);
    if (!p || !s) return false;
    this.#remove(tenant, p, key, s);
    if (notify) this.onEvict('deleted', tenant, key);
    return true;
  }

  /** Drops every entry of a tenant. */
  deleteTenant(tenant: string): number {
    const p = this.#parts.get(tenant);
    if (!p) return 0;
    const n = p.slots.size;
    for (const [key, s] of [...p.slots]) {
      this.#remove(tenant, p, key, s);
      this.onEvict('deleted', tenant, key);
    }
    return n;
  }

  /** Drops the tenant's entries whose key is not in `keep` (records deleted or changed since). */
  retainOnly(tenant: string, keep: ReadonlySet<string>): number {
    const p = this.#parts.get(tenant);
    if (!p) return 0;
    let n = 0;
    for (const [key, s] of [...p.slots]) {
      if (keep.has(key)) continue;
      this.#remove(tenant, p, key, s);
      this.onEvict('deleted', tenant, key);
      n++;
    }
    return n;
  }

  clear(): void {
    this.#parts.clear();
    this.#order.clear();
    this.#entries = 0;
    this.#bytes = 0;
  }

  stats(): LruStats {
    return { entries: this.#entries, bytes: this.#bytes, tenants: this.#parts.size };
  }

  tenantStats(tenant: string): { entries: number; bytes: number } {
    const p = this.#parts.get(tenant);
    return { entries: p?.slots.size ?? 0, bytes: p?.bytes ?? 0 };
  }

  #remove(tenant: string, p: Partition<V>, key: string, s: Slot<V>): void {
    p.slots.delete(key);
    if (this.policy === 'lru') this.#order.delete(orderKey(tenant, key));
    p.bytes -= s.bytes;
    this.#entries--;
    this.#bytes -= s.bytes;
    if (p.slots.size === 0) this.#parts.delete(tenant);
  }

  #evictOldest(tenant: string, p: Partition<V>, reason: EvictionReason): void {
    const first = p.slots.entries().next();
    if (first.done) return;
    const [key, s] = first.value;
    this.#remove(tenant, p, key, s);
    this.onEvict(reason, tenant, key);
  }

  /**
   * Policy 'largest': evicts the LRU entry of the tenant with the largest share; among equal shares, of the tenant
   * cached longest. Policy 'lru': the entry used longest ago.
   */
  #evictFromLargest(by: 'entries' | 'bytes'): void {
    if (this.policy === 'lru') {
      const oldest = this.#order.values().next().value;
      if (!oldest) return;
      const [tenant, key] = oldest;
      const p = this.#parts.get(tenant);
      const s = p?.slots.get(key);
      if (p && s) {
        this.#remove(tenant, p, key, s);
        this.onEvict('global_cap', tenant, key);
      } else this.#order.delete(orderKey(tenant, key));
      return;
    }
    // one pass, no allocation: among equal shares the first partition wins, i.e. the tenant cached longest
    let best: Partition<V> | undefined;
    let bestTenant = '';
    let bestShare = -1;
    for (const [tenant, p] of this.#parts) {
      const share = by === 'entries' ? p.slots.size : p.bytes;
      if (share <= bestShare) continue;
      best = p;
      bestTenant = tenant;
      bestShare = share;
    }
    if (best) this.#evictOldest(bestTenant, best, 'global_cap');
  }
}

function orderKey(tenant: string, key: string): string {
  return `${tenant.length}:${tenant}${key}`;
}
