/**
 * Silences in the routing snapshot: the company's silences not yet ended are read with the routers,
 * their matchers compiled per family through the filters cache, and a change shows once the snapshot is rebuilt
 * (invalidate on this replica, the fingerprint on the others). A real SQLite store.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silenceCandidates, type RoutingSnapshot } from '../../src/routing/match.js';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import { compileSilence, silenceFor } from '../../src/silences/decide.js';
import { openStore } from '../../src/store/index.js';
import type { SilenceRecord, Store } from '../../src/store/types.js';
import { issuerActive, issuerNotReady } from '../fixtures/events.js';

const C = 'company-snapshot-silences';
let store: Store;
let now = 1_800_000_000_000;
beforeEach(async () => {
  store = await openStore('sqlite::memory:');
  await store.migrate();
});
afterEach(async () => {
  await store.close();
});

const silence = (id: string, over: Partial<SilenceRecord> = {}): SilenceRecord => ({
  id,
  companyId: C,
  matcher: 'data.issuerName == "letsencrypt-prod"',
  eventTypeId: null,
  eventTypeIds: [],
  startsAt: now - 1000,
  endsAt: now + 3_600_000,
  comment: 'c',
  createdBy: 'u',
  managedBy: null,
  createdAt: now,
  updatedAt: now,
  expiredAt: null,
  ...over,
});

describe('routing snapshot silences', () => {
  it('holds the live silences compiled for the families they apply to; ended ones are left out', async () => {
    await store.createSilence(silence('00000000-0000-4000-8000-000000000001'));
    await store.createSilence(silence('00000000-0000-4000-8000-000000000002', { startsAt: now - 7200_000, endsAt: now - 3600_000 }));
    await store.createSilence(silence('00000000-0000-4000-8000-000000000003', { matcher: 'data.nope == 1' }));
    const snaps = new RoutingSnapshots(store, { now: () => now });
    const snap = await snaps.get(C);
    const byId = new Map((snap.silences ?? []).map((s) => [s.record.id, s]));
    expect([...byId.keys()].sort()).toEqual(['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000003']);
    const one = byId.get('00000000-0000-4000-8000-000000000001')!;
    expect([...one.matchers.keys()]).toContain('certmgr-issuer-health-notification-config');
    expect(one.matchers.has('certmgr-agent-health-notification-config')).toBe(false);
    // stored before the dialect changed (here: never valid): applies to nothing, does not break the snapshot
    expect(byId.get('00000000-0000-4000-8000-000000000003')!.compileError).toMatch(/^1:6: /);
    expect(silenceFor(issuerNotReady(), snap.silences!, now).silence?.id).toBe('00000000-0000-4000-8000-000000000001');
    // compiled matchers share the routers' filters cache (per company, bounded)
    expect(snaps.companyStats(C).filters).toBeGreaterThan(0);
  });

  it('a new or expired silence shows after invalidate, and through the fingerprint on another replica', async () => {
    const here = new RoutingSnapshots(store, { now: () => now });
    const other = new RoutingSnapshots(store, { now: () => now, ttlMs: 0 });
    expect((await here.get(C)).silences).toEqual([]);
    expect((await other.get(C)).silences).toEqual([]);
    const s = await store.createSilence(silence('00000000-0000-4000-8000-00000000000a'));
    here.invalidate(C);
    expect((await here.get(C)).silences?.map((x) => x.record.id)).toEqual([s.id]);
    now += 1;
    expect((await other.get(C)).silences?.map((x) => x.record.id)).toEqual([s.id]);
    await store.expireSilence(C, s.id, now);
    now += 1;
    expect((await other.get(C)).silences).toEqual([]);
  });
});

describe('silence candidates (prefilter index)', () => {
  it('silenceFor over the candidates equals silenceFor over every silence, and evaluates few', () => {
    const values = ['letsencrypt-prod', 'letsencrypt-staging', 'vault', 'x'];
    const clusters = ['prod-eu-west-1', 'staging-us-east-2'];
    const matchers = [
      (i: number) => `data.issuerName == "${values[i % 4]}"`,
      (i: number) => `data.clusterName == "${clusters[i % 2]}" && type.endsWith(".notready")`,
      (i: number) => `data.issuerName in ["${values[i % 4]}", "${values[(i + 1) % 4]}"]`,
      () => 'true',
      (i: number) => `data.namespace.startsWith("${['cert', 'ing', 'x'][i % 3]}")`,
      () => 'int(data.statusMessage) == 1',
    ];
    const records = Array.from({ length: 120 }, (_, i) =>
      silence(`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, {
        matcher: matchers[i % matchers.length]!(i),
        endsAt: now + (i % 7) * 60_000 + 60_000,
        startsAt: i % 11 === 0 ? now + 1000 : now - 1000,
      }),
    );
    const compiled = records.map((r) => compileSilence(r));
    const snap: RoutingSnapshot = {
      companyId: C,
      byFamily: new Map(),
      integrations: new Map(),
      monitoring: { enabled: true, applicationIds: [], includeUnassignedCertificates: true },
      silences: compiled,
    };
    let evaluated = 0;
    let events = 0;
    for (const issuerName of [...values, 'other'])
      for (const clusterName of clusters)
        for (const namespace of ['cert-manager', 'ingress', 'zzz'])
          for (const e of [issuerNotReady({ issuerName, clusterName, namespace }), issuerActive({ issuerName, clusterName, namespace })]) {
            const candidates = silenceCandidates(snap, e);
            expect(silenceFor(e, candidates, now)).toEqual(silenceFor(e, compiled, now));
            evaluated += candidates.length;
            events++;
          }
    expect(evaluated / events).toBeLessThan(compiled.length * 0.75); // equality/in/prefix matchers that cannot match are left out
  });
});
