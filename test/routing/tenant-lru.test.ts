/** TenantLru: bounded by entries and bytes, globally and per tenant; a tenant over its cap pays for itself. */
import { describe, expect, it } from 'vitest';
import { TenantLru, type EvictionReason, type LruLimits } from '../../src/routing/tenant-lru.js';

const limits = (l: Partial<LruLimits> = {}): LruLimits => ({
  maxEntries: 10,
  maxBytes: 1000,
  maxEntriesPerTenant: 4,
  maxBytesPerTenant: 400,
  ...l,
});

function lru(l?: Partial<LruLimits>) {
  const evicted: [EvictionReason, string, string][] = [];
  const c = new TenantLru<string>(limits(l), (r, t, k) => evicted.push([r, t, k]));
  return { c, evicted };
}

describe('TenantLru', () => {
  it.each([
    // [name, limits, inserts (tenant, key, bytes), expected keys left per tenant]
    [
      'per-tenant entry cap evicts the tenant’s own oldest',
      {},
      [
        ['a', '1', 1],
        ['a', '2', 1],
        ['a', '3', 1],
        ['a', '4', 1],
        ['a', '5', 1],
      ],
      { a: ['2', '3', '4', '5'] },
    ],
    [
      'per-tenant byte cap',
      {},
      [
        ['a', '1', 300],
        ['a', '2', 200],
      ],
      { a: ['2'] },
    ],
    [
      'an entry over the per-tenant byte cap is not stored',
      {},
      [
        ['a', '1', 10],
        ['a', 'big', 401],
      ],
      { a: ['1'] },
    ],
    [
      'global entry cap evicts from the largest tenant',
      { maxEntries: 5 },
      [
        ['a', '1', 1],
        ['a', '2', 1],
        ['a', '3', 1],
        ['b', '1', 1],
        ['b', '2', 1],
        ['c', '1', 1],
      ],
      { a: ['2', '3'], b: ['1', '2'], c: ['1'] },
    ],
    [
      'global byte cap evicts from the largest tenant',
      { maxBytes: 500 },
      [
        ['b', '1', 100],
        ['a', '1', 200],
        ['a', '2', 150],
        ['b', '2', 100],
      ],
      { a: ['2'], b: ['1', '2'] },
    ],
    [
      'equal shares: the tenant cached longest gives',
      { maxEntries: 2, maxEntriesPerTenant: 2 },
      [
        ['a', '1', 1],
        ['b', '1', 1],
        ['c', '1', 1],
      ],
      { b: ['1'], c: ['1'] },
    ],
  ] as [string, Partial<LruLimits>, [string, string, number][], Record<string, string[]>][])('%s', (_name, l, inserts, expected) => {
    const { c } = lru(l);
    for (const [t, k, b] of inserts) c.set(t, k, `${t}${k}`, b);
    for (const [t, keys] of Object.entries(expected)) for (const k of keys) expect(c.get(t, k)).toBe(`${t}${k}`);
    const total = Object.values(expected).reduce((n, ks) => n + ks.length, 0);
    expect(c.stats().entries).toBe(total);
  });

  it('a get refreshes recency', () => {
    const { c } = lru();
    for (const k of ['1', '2', '3', '4']) c.set('a', k, k, 1);
    c.get('a', '1');
    c.set('a', '5', '5', 1);
    expect(c.has('a', '1')).toBe(true);
    expect(c.has('a', '2')).toBe(false);
  });

  it('one tenant flooding cannot push out another tenant’s working set', () => {
    const { c } = lru({ maxEntries: 100, maxBytes: 10_000, maxEntriesPerTenant: 30, maxBytesPerTenant: 3_000 });
    for (let i = 0; i < 20; i++) c.set('victim', `v${i}`, 'v', 50);
    for (let i = 0; i < 100_000; i++) c.set('attacker', `x${i}`, 'x', 100);
    for (let i = 0; i < 20; i++) expect(c.has('victim', `v${i}`)).toBe(true);
    expect(c.tenantStats('attacker')).toEqual({ entries: 30, bytes: 3_000 });
    // many attackers (companies) at once still stay within the global caps, taking from the largest first
    for (let t = 0; t < 50; t++) for (let i = 0; i < 40; i++) c.set(`t${t}`, `${i}`, 'x', 100);
    expect(c.stats().entries).toBeLessThanOrEqual(100);
    expect(c.stats().bytes).toBeLessThanOrEqual(10_000);
  });

  it('bytes and entries are accounted exactly through replace, resize, delete, retainOnly and deleteTenant', () => {
    const { c, evicted } = lru();
    c.set('a', '1', 'x', 10);
    c.set('a', '1', 'y', 20); // replace
    c.set('a', '2', 'z', 30);
    expect(c.stats()).toEqual({ entries: 2, bytes: 50, tenants: 1 });
    c.resize('a', '2', 100);
    expect(c.tenantStats('a')).toEqual({ entries: 2, bytes: 120 });
    c.set('b', '1', 'b', 5);
    expect(c.retainOnly('a', new Set(['2']))).toBe(1);
    expect(c.stats()).toEqual({ entries: 2, bytes: 105, tenants: 2 });
    expect(c.deleteTenant('a')).toBe(1);
    expect(c.delete('b', '1')).toBe(true);
    expect(c.stats()).toEqual({ entries: 0, bytes: 0, tenants: 0 });
    expect(evicted.map(([r]) => r)).toEqual(['deleted', 'deleted', 'deleted']);
  });

  it("policy 'lru' evicts the entry used longest ago, whatever its tenant", () => {
    const c = new TenantLru<string>(limits({ maxEntries: 3 }), undefined, 'lru');
    c.set('a', '1', 'a1', 1);
    c.set('b', '1', 'b1', 1);
    c.set('a', '2', 'a2', 1);
    c.get('a', '1');
    c.set('c', '1', 'c1', 1);
    expect([c.has('a', '1'), c.has('b', '1'), c.has('a', '2'), c.has('c', '1')]).toEqual([true, false, true, true]);
    c.delete('a', '2');
    c.set('d', '1', 'd1', 1);
    c.set('e', '1', 'e1', 1);
    expect(c.stats().entries).toBe(3);
    expect(c.has('a', '1')).toBe(false);
  });

  it('rejects limits that are not positive numbers', () => {
    expect(() => new TenantLru(limits({ maxBytes: 0 }))).toThrow(/maxBytes/);
    expect(() => new TenantLru(limits({ maxEntries: Number.NaN }))).toThrow(/maxEntries/);
  });
});
