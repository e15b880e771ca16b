/**
 * Snapshot builds in time slices: compiling a company's routers yields to the event loop between slices (an
 * injected clock decides when a slice is used up), concurrent callers share one build, and a build overtaken by
 * a router change is neither cached nor allowed to prune the filters of the build that replaced it.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileFilter } from '../../src/cel/index.js';
import { familyOf } from '../../src/events/families.js';
import { buildPrefilterIndex, buildPrefilterIndexSliced } from '../../src/routing/index-prefilter.js';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import { TimeSlicer } from '../../src/routing/slicer.js';
import { openStore } from '../../src/store/index.js';
import type { RouterRecord, Store } from '../../src/store/types.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';

const A = '11111111-1111-4111-8111-111111111111';
const FAMILY = 'certmgr-issuer-health-notification-config' as const;
const N = 40;
let store: Store;
let listRouterCalls: number;

beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  await store.migrate();
  listRouterCalls = 0;
  const list = store.listRouters.bind(store);
  store.listRouters = (companyId) => {
    listRouterCalls++;
    return list(companyId);
  };
});
afterEach(async () => {
  await store.close();
});

async function addRouters(n: number): Promise<RouterRecord[]> {
  const t = 1_000_000;
  const integ = await store.createIntegration({
    id: randomUUID(),
    companyId: A,
    name: 'i',
    type: 'WEBHOOK',
    enabled: true,
    config: {},
    secrets: { url: 'http://127.0.0.1:9/x' },
    managedBy: null,
    createdAt: t,
    updatedAt: t,
  });
  const out: RouterRecord[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      await store.createRouter({
        id: randomUUID(),
        companyId: A,
        name: `r${i}`,
        eventTypeId: FAMILY,
        enabled: true,
        filter: `data.issuerName == 'n${i}'`,
        integrationId: integ.id,
        templateId: null,
        generation: 'ROUTER',
        ...ROUTER_POLICY_DEFAULTS,
        managedBy: null,
        createdAt: t,
        updatedAt: t,
      }),
    );
  }
  return out;
}

/** A slicer on a clock that advances one unit per reading: a 2-unit slice is used up every other due(). */
class CountingSlicer extends TimeSlicer {
  yields = 0;
  dues = 0;
  /** `sliceUnits` 0: every due() is true. */
  constructor(
    private readonly onYield?: (n: number) => Promise<void>,
    sliceUnits = 2,
  ) {
    let t = 0;
    super(sliceUnits, () => t++);
  }
  override due(): boolean {
    this.dues++;
    return super.due();
  }
  override async yield(): Promise<void> {
    this.yields++;
    await this.onYield?.(this.yields);
    await super.yield();
  }
}

const filtersOf = (snap: Awaited<ReturnType<RoutingSnapshots['get']>>) => snap.byFamily.get(FAMILY)!.map((r) => r.record.filter);

describe('RoutingSnapshots builds in time slices', () => {
  it('yields between slices of the compilation, so work scheduled meanwhile runs before the build ends', async () => {
    await addRouters(N);
    const slicers: CountingSlicer[] = [];
    let done = false;
    let seen: { done: boolean; dues: number } | undefined;
    const slicer = () => {
      const s = new CountingSlicer();
      slicers.push(s);
      // scheduled when the build starts its compilation (the records are read)
      setImmediate(() => (seen = { done, dues: s.dues }));
      return s;
    };
    const snaps = new RoutingSnapshots(store, { slicer });
    const snap = await snaps.get(A).then((s) => ((done = true), s));
    expect(filtersOf(snap)).toHaveLength(N);
    expect(slicers).toHaveLength(1);
    // one due() per router at least, a yield every other one
    expect(slicers[0]!.dues).toBeGreaterThanOrEqual(N);
    expect(slicers[0]!.yields).toBeGreaterThanOrEqual(N / 2 - 1);
    // the other work ran mid-build: after the first slice, before the last
    expect(seen).toBeDefined();
    expect(seen!.done).toBe(false);
    expect(seen!.dues).toBeGreaterThan(0);
    expect(seen!.dues).toBeLessThan(slicers[0]!.dues);
  });

  it('compiles a long filter in steps: the event loop runs before that one filter is compiled', async () => {
    const [r] = await addRouters(1);
    const long = Array.from({ length: 40 }, (_, k) => `data.issuerName == 'issuer-${k}'`).join(' || ');
    await store.updateRouter(A, r!.id, { filter: long }, 2_000_000);
    // every slice used up at once: the build yields wherever it may
    const midCompile: number[] = [];
    const snaps: RoutingSnapshots = new RoutingSnapshots(store, {
      slicer: () =>
        new CountingSlicer(async (n) => {
          if (snaps.companyStats(A).filters === 0) midCompile.push(n);
        }, 0),
    });
    const snap = await snaps.get(A);
    expect(filtersOf(snap)).toEqual([long]);
    expect(snap.byFamily.get(FAMILY)![0]!.filter).not.toBeNull();
    // parse | check and price | fold and plan | closures: three yields before the compiled filter is cached
    expect(midCompile).toEqual([1, 2, 3]);
    expect(snaps.companyStats(A).filters).toBe(1);
  });

  it('concurrent callers share one build', async () => {
    await addRouters(N);
    let builds = 0;
    const snaps = new RoutingSnapshots(store, { slicer: () => (builds++, new CountingSlicer()) });
    const [a, b, c] = await Promise.all([snaps.get(A), snaps.current(A), snaps.get(A)]);
    expect(b).toBe(a);
    expect(c).toBe(a);
    expect(builds).toBe(1);
    expect(listRouterCalls).toBe(1);
    expect(await snaps.current(A)).toBe(a);
    expect(listRouterCalls).toBe(1);
  });

  it('a build overtaken by a router change is not cached and does not prune the newer build’s filters', async () => {
    const routers = await addRouters(N);
    const changed = routers[3]!;
    const deleted = routers[5]!;
    let newer: Promise<unknown> | undefined;
    let builds = 0;
    const slicer = () =>
      builds++ === 0
        ? new CountingSlicer(async (n) => {
            if (n !== 1) return;
            // mid-build: a router changes and another is deleted (as the service does: write, then invalidate)
            // and a caller asks again; the first build resumes only once the second one is done
            await store.updateRouter(A, changed.id, { filter: "data.issuerName == 'changed'" }, 2_000_000);
            await store.deleteRouters(A, [deleted.id]);
            snaps.invalidate(A, [changed.id, deleted.id]);
            newer = snaps.get(A);
            await newer;
          })
        : new CountingSlicer();
    // the slicer runs only once a build started, after this assignment
    const snaps: RoutingSnapshots = new RoutingSnapshots(store, { slicer });
    const first = await snaps.get(A);
    // the callers that asked before the change get the build they waited for
    expect(filtersOf(first)).toContain("data.issuerName == 'n3'");
    const second = await newer;
    expect(second).not.toBe(first);
    // later callers get the newer build, cached, with the change; no third build
    const later = await snaps.get(A);
    expect(later).toBe(second);
    expect(filtersOf(later)).toContain("data.issuerName == 'changed'");
    expect(filtersOf(later)).not.toContain("data.issuerName == 'n3'");
    expect(filtersOf(later)).not.toContain("data.issuerName == 'n5'");
    expect(builds).toBe(2);
    // the cache holds the current routers' filters: the older build neither pruned the changed one nor added
    // back the replaced and deleted ones (counts: N - 1 either way only when both hold)
    expect(snaps.companyStats(A).filters).toBe(N - 1);
  });

  it('builds the prefilter index in slices, with the same candidates as the one-block build', async () => {
    const compiled = Array.from({ length: N }, (_, i) => ({
      record: { id: `r${i}` } as RouterRecord,
      filter: compileFilter(i % 2 ? `data.issuerName == 'n${i}'` : `data.statusMessage.contains('m${i}')`, FAMILY),
    }));
    const types = familyOf(FAMILY).types;
    const slicer = new CountingSlicer();
    const sliced = await buildPrefilterIndexSliced(compiled, types, () => true, slicer);
    expect(slicer.yields).toBeGreaterThanOrEqual(N / 2 - 1);
    const whole = buildPrefilterIndex(compiled, types);
    expect(sliced.stats).toEqual(whole.stats);
    for (const i of [0, 1, 2, 7, N - 1]) {
      const event = { type: types[0]!, data: { issuerName: `n${i}`, statusMessage: `x m${i} y` } };
      expect(sliced.candidates(event)).toEqual(whole.candidates(event));
    }
  });
});
