/**
 * The routing caches' memory: the default budgets fit well within the chart's memory request and are the figures
 * the docs give; a compiled filter evicted for room takes its company's cached snapshot with it, so that no
 * snapshot keeps alive filters the filter cache no longer counts.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_ROUTING_CACHE_LIMITS, filterBytes, RoutingSnapshots } from '../../src/routing/snapshot.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';

const MiB = 1024 * 1024;
const root = new URL('../../', import.meta.url);

/** A Kubernetes memory quantity in bytes (the binary and decimal suffixes the chart may use). */
function quantity(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?$/.exec(q);
  if (!m) throw new Error(`not a memory quantity: ${q}`);
  const unit = { Ki: 1024, Mi: MiB, Gi: 1024 * MiB, K: 1e3, M: 1e6, G: 1e9 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}

describe('routing cache budgets', () => {
  const { filters, snapshots } = DEFAULT_ROUTING_CACHE_LIMITS;
  const budget = filters.maxBytes + snapshots.maxBytes;

  it('sum to at most half the chart’s memory request (the image gives V8’s old space half the limit), as the chart says', () => {
    const text = readFileSync(new URL('charts/certmgr-notify/values.yaml', root), 'utf8');
    expect(text).toContain(`hold at most ${budget / MiB} MiB`);
    const values = parse(text) as {
      resources: { requests: { memory: string }; limits: { memory: string } };
    };
    const request = quantity(values.resources.requests.memory);
    const limit = quantity(values.resources.limits.memory);
    expect(budget).toBeLessThanOrEqual(Math.min(request, limit) / 2);
  });

  it('fit a company at the router quota with maximum-length filters in its share of the filter cache', () => {
    expect(1000 * filterBytes('x'.repeat(2000))).toBeLessThanOrEqual(filters.maxBytesPerTenant);
  });

  it('are the figures docs/security.md gives', () => {
    const doc = readFileSync(new URL('docs/security.md', root), 'utf8');
    const n = (x: number) => x.toLocaleString('en-US');
    expect(doc).toContain(`| ${n(filters.maxEntries)} entries / ${filters.maxBytes / MiB} MiB `);
    expect(doc).toContain(` entries / ${filters.maxBytesPerTenant / MiB} MiB `);
    expect(doc).toContain(`| ${n(snapshots.maxEntries)} companies / ${snapshots.maxBytes / MiB} MiB `);
    expect(doc).toContain(`| ${snapshots.maxBytesPerTenant / MiB} MiB `);
    expect(doc).toContain(`Together the routing caches hold at most ${budget / MiB} MiB`);
  });
});

describe('a filter evicted for room', () => {
  const A = '11111111-1111-4111-8111-111111111111';
  const B = '22222222-2222-4222-8222-222222222222';
  let store: Store;
  beforeEach(async () => {
    store = await openStore('sqlite::memory:');
    await store.migrate();
  });
  afterEach(async () => {
    await store.close();
  });

  async function addRouters(companyId: string, n: number): Promise<void> {
    const t = 1_000_000;
    const integ = await store.createIntegration({
      id: randomUUID(),
      companyId,
      name: 'i',
      type: 'WEBHOOK',
      enabled: true,
      config: {},
      secrets: { url: 'http://127.0.0.1:9/x' },
      managedBy: null,
      createdAt: t,
      updatedAt: t,
    });
    for (let i = 0; i < n; i++)
      await store.createRouter({
        id: randomUUID(),
        companyId,
        name: `r${i}`,
        eventTypeId: 'certmgr-issuer-health-notification-config',
        enabled: true,
        filter: `data.issuerName == '${companyId.slice(0, 1)}${i}'`,
        integrationId: integ.id,
        templateId: null,
        generation: 'ROUTER',
        ...ROUTER_POLICY_DEFAULTS,
        managedBy: null,
        createdAt: t,
        updatedAt: t,
      });
  }

  const one = filterBytes("data.issuerName == '10'");

  it('under the whole cache’s cap takes the evicted company’s snapshot with it', async () => {
    await addRouters(A, 4);
    await addRouters(B, 3);
    // room for 6 filters in all, 4 per company: B's build evicts A's oldest filter (A has the largest share)
    const big = { maxEntries: 100, maxBytes: 1e9, maxEntriesPerTenant: 100, maxBytesPerTenant: 1e9 };
    const snaps = new RoutingSnapshots(store, {
      limits: { filters: { ...big, maxBytes: 6 * one, maxBytesPerTenant: 4 * one }, snapshots: big },
    });
    const a = await snaps.get(A);
    expect(snaps.stats().snapshots.entries).toBe(1);
    await snaps.get(B);
    expect(snaps.companyStats(A).filters).toBe(3);
    expect(snaps.stats().evictions.snapshots.global_cap).toBe(1);
    // A's snapshot is rebuilt on its next use
    expect(await snaps.get(A)).not.toBe(a);
  });

  it('under the company’s own cap: a company whose filters do not fit its share keeps no snapshot', async () => {
    await addRouters(A, 5);
    const big = { maxEntries: 100, maxBytes: 1e9, maxEntriesPerTenant: 100, maxBytesPerTenant: 1e9 };
    const snaps = new RoutingSnapshots(store, { limits: { filters: { ...big, maxBytesPerTenant: 4 * one }, snapshots: big } });
    const first = await snaps.get(A);
    expect(first.byFamily.get('certmgr-issuer-health-notification-config')).toHaveLength(5);
    expect(snaps.stats().snapshots.entries).toBe(0);
    expect(snaps.stats().evictions.snapshots.tenant_cap).toBeGreaterThan(0);
  });
});
