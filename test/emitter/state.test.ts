/**
 * ConfigMapState against a fake CoreV1Api (the real apiserver: state.int.test.ts, emitter.int.test.ts):
 * batching per shard, per-key resolution, failures, patch size, migration; the stored health state; cluster id.
 */
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { derivedClusterId, resolveClusterId } from '../../src/emitter/cluster.js';
import { ConfigMapState, configMapKey, type ConfigMapStateOptions } from '../../src/emitter/state.js';
import { HEALTH_ENTRY_MAX_BYTES, HEALTH_STATE_SHARDS, emitterStates, storedHealthState } from '../../src/emitter/states.js';
import { decodeHealthState, type HealthState } from '../../src/emitter/health/diff.js';

const log = pino({ level: 'silent' });
const apiError = (code: number) => Object.assign(new Error(`HTTP ${code}`), { code });

/**
 * ConfigMaps in memory with merge-patch semantics for `data` and resourceVersions; `fail(n)` makes the next n
 * patches fail; `gate()` holds patches until released; `bodies` keeps each patch's JSON size and keys.
 */
function fakeCore() {
  const maps = new Map<string, V1ConfigMap>();
  const calls: string[] = [];
  const bodies: { name: string; bytes: number; keys: string[] }[] = [];
  let failNext = 0;
  let rv = 1;
  let hold: Promise<void> | undefined;
  const core = {
    async readNamespacedConfigMap({ namespace, name }: { namespace: string; name: string }) {
      const cm = maps.get(`${namespace}/${name}`);
      if (!cm) throw apiError(404);
      return structuredClone(cm);
    },
    async patchNamespacedConfigMap({
      namespace,
      name,
      body,
    }: {
      namespace: string;
      name: string;
      body: { data: Record<string, string | null>; metadata?: { resourceVersion?: string } };
    }) {
      calls.push(`patch ${name}`);
      bodies.push({ name, bytes: Buffer.byteLength(JSON.stringify(body)), keys: Object.keys(body.data) });
      if (hold) await hold;
      if (failNext-- > 0) throw apiError(500);
      const cm = maps.get(`${namespace}/${name}`);
      if (!cm) throw apiError(404);
      const want = body.metadata?.resourceVersion;
      if (want !== undefined && want !== cm.metadata!.resourceVersion) throw apiError(409);
      for (const [k, v] of Object.entries(body.data)) {
        if (v === null) delete cm.data![k];
        else cm.data![k] = v;
      }
      cm.metadata!.resourceVersion = String(++rv);
      return cm;
    },
    async createNamespacedConfigMap({ namespace, body }: { namespace: string; body: V1ConfigMap }) {
      calls.push(`create ${body.metadata!.name}`);
      const key = `${namespace}/${body.metadata!.name}`;
      if (maps.has(key)) throw apiError(409);
      maps.set(key, structuredClone({ ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) }, data: body.data ?? {} }));
      return body;
    },
    async deleteNamespacedConfigMap({
      namespace,
      name,
      body,
    }: {
      namespace: string;
      name: string;
      body?: { preconditions?: { resourceVersion?: string } };
    }) {
      calls.push(`delete ${name}`);
      const cm = maps.get(`${namespace}/${name}`);
      if (!cm) throw apiError(404);
      const want = body?.preconditions?.resourceVersion;
      if (want !== undefined && want !== cm.metadata!.resourceVersion) throw apiError(409);
      maps.delete(`${namespace}/${name}`);
      return {};
    },
  };
  return {
    core: core as unknown as CoreV1Api,
    maps,
    calls,
    bodies,
    fail: (n: number) => (failNext = n),
    /** patches wait until the returned function is called */
    gate: () => {
      let open!: () => void;
      hold = new Promise<void>((r) => (open = r));
      return () => {
        hold = undefined;
        open();
      };
    },
    /** a ConfigMap written directly (e.g. by an older release) */
    put: (name: string, data: Record<string, string>) =>
      maps.set(`ns/${name}`, { metadata: { name, namespace: 'ns', resourceVersion: String(++rv) }, data: { ...data } }),
  };
}

interface S {
  notified: boolean;
  n: number;
}
const decode = (raw: unknown): S | undefined =>
  raw && typeof raw === 'object' && typeof (raw as S).n === 'number' ? (raw as S) : undefined;

describe('ConfigMapState', () => {
  it('writes only persisted values, one key per entry; creates the ConfigMap on first write; null removes', async () => {
    const f = fakeCore();
    const st = new ConfigMapState<S>({ core: f.core, namespace: 'ns', name: 'state', persist: (s) => s.notified, decode, log });
    await st.set('Issuer/a/x', { notified: false, n: 1 }); // memory only
    expect(f.calls).toEqual([]);
    await st.set('Issuer/a/x', { notified: true, n: 2 });
    await st.set('Issuer/a/y', { notified: true, n: 3 });
    await st.set('Issuer/a/y', { notified: true, n: 3 }); // unchanged: no write
    expect(f.calls).toEqual(['patch state', 'create state', 'patch state']);
    expect(Object.keys(f.maps.get('ns/state')!.data!)).toEqual(['Issuer_a_x', 'Issuer_a_y']);
    await st.set('Issuer/a/x', undefined);
    expect(Object.keys(f.maps.get('ns/state')!.data!)).toEqual(['Issuer_a_y']);
    expect(f.maps.get('ns/state')!.metadata!.labels).toMatchObject({ 'app.kubernetes.io/component': 'emitter' });

    const again = new ConfigMapState<S>({ core: f.core, namespace: 'ns', name: 'state', persist: (s) => s.notified, decode, log });
    await again.load();
    expect(again.keys()).toEqual(['Issuer/a/y']);
    expect(again.get('Issuer/a/y')).toEqual({ notified: true, n: 3 });
  });

  it('a failed write throws, keeps the value in memory, and is written by the next set', async () => {
    const f = fakeCore();
    const st = new ConfigMapState<S>({ core: f.core, namespace: 'ns', name: 'state', persist: () => true, decode, log });
    await st.set('k', { notified: true, n: 1 });
    f.fail(1);
    await expect(st.set('k', { notified: true, n: 2 })).rejects.toThrow(/500/);
    expect(st.get('k')).toEqual({ notified: true, n: 2 });
    await st.set('k', st.get('k'));
    expect(JSON.parse(f.maps.get('ns/state')!.data!['k']!)).toEqual({ key: 'k', value: { notified: true, n: 2 } });
  });

  it('shards by key; unreadable entries are dropped on load', async () => {
    const f = fakeCore();
    const st = new ConfigMapState<S>({ core: f.core, namespace: 'ns', name: 'exp', shards: 4, persist: () => true, decode, log });
    for (let i = 0; i < 20; i++) await st.set(`ns/secret-${i}`, { notified: true, n: i });
    expect([...f.maps.keys()].sort()).toEqual(['ns/exp-0', 'ns/exp-1', 'ns/exp-2', 'ns/exp-3']);
    f.maps.get('ns/exp-0')!.data!['garbage'] = '{not json';
    const again = new ConfigMapState<S>({ core: f.core, namespace: 'ns', name: 'exp', shards: 4, persist: () => true, decode, log });
    await again.load();
    expect(again.size).toBe(20);
  });

  it('ConfigMap keys: reversible for Kubernetes names, hashed when too long', () => {
    expect(configMapKey('Issuer/team-a/acme.v2')).toBe('Issuer_team-a_acme.v2');
    expect(configMapKey('ClusterIssuer//ca')).toBe('ClusterIssuer__ca');
    expect(configMapKey(`Certificate/ns/${'x'.repeat(253)}`)).toMatch(/^sha256\.[0-9a-f]{64}$/);
  });
});

describe('ConfigMapState: batching', () => {
  const make = (f: ReturnType<typeof fakeCore>, more: Partial<ConfigMapStateOptions<S>> = {}) =>
    new ConfigMapState<S>({ core: f.core, namespace: 'ns', name: 'h', shards: 4, persist: (s) => s.notified, decode, log, ...more });
  const stored = (f: ReturnType<typeof fakeCore>) => {
    const out: Record<string, unknown> = {};
    for (const cm of f.maps.values())
      for (const text of Object.values(cm.data ?? {})) {
        const e = JSON.parse(text) as { key: string; value: unknown };
        out[e.key] = e.value;
      }
    return out;
  };

  it('a burst of 500 set() calls is one patch per shard; every promise resolves once its key is stored', async () => {
    const f = fakeCore();
    const st = make(f);
    await Promise.all(Array.from({ length: 500 }, (_, i) => st.set(`Certificate/ns/c-${i}`, { notified: true, n: i })));
    // one patch per shard (404: the ConfigMap is created with the same entries)
    expect(f.calls.filter((c) => c.startsWith('patch')).sort()).toEqual(['patch h-0', 'patch h-1', 'patch h-2', 'patch h-3']);
    expect(f.calls.filter((c) => c.startsWith('create'))).toHaveLength(4);
    expect(Object.keys(stored(f))).toHaveLength(500);
    expect(st.persistedSize).toBe(500);
    // removals coalesce too
    await Promise.all(Array.from({ length: 250 }, (_, i) => st.set(`Certificate/ns/c-${i}`, undefined)));
    expect(f.calls.filter((c) => c.startsWith('patch'))).toHaveLength(8);
    expect(Object.keys(stored(f))).toHaveLength(250);
    const again = make(f);
    await again.load();
    expect(new Map(again.keys().map((k) => [k, again.get(k)]))).toEqual(new Map(st.keys().map((k) => [k, st.get(k)])));
  });

  it('at most maxInFlight shards write at once; the others keep collecting keys meanwhile', async () => {
    const f = fakeCore();
    const st = make(f, { shards: 16, maxInFlight: 3 });
    const release = f.gate();
    const first = Array.from({ length: 100 }, (_, i) => st.set(`k-${i}`, { notified: true, n: i }));
    await vi.waitFor(() => expect(f.bodies).toHaveLength(3));
    await new Promise((r) => setTimeout(r, 20));
    expect(f.bodies).toHaveLength(3); // the 13 other shards wait for a slot
    const more = Array.from({ length: 100 }, (_, i) => st.set(`k-${100 + i}`, { notified: true, n: i }));
    release();
    await Promise.all([...first, ...more]);
    expect(Object.keys(stored(f))).toHaveLength(200);
    // a shard that waited took both bursts in one patch: 3 early patches (+ their second round) and 13 others
    expect(f.bodies.length).toBeLessThanOrEqual(3 * 2 + 13);
  });

  it('keys set while a patch is in flight go out together in the next one, with their newest value', async () => {
    const f = fakeCore();
    const st = make(f, { shards: 1 });
    await st.set('a', { notified: true, n: 0 }); // the ConfigMap exists
    const release = f.gate();
    const first = st.set('a', { notified: true, n: 1 });
    await vi.waitFor(() => expect(f.bodies).toHaveLength(2)); // in flight
    const done: string[] = [];
    const later = [
      st.set('a', { notified: true, n: 2 }).then(() => done.push('a2')),
      st.set('b', { notified: true, n: 1 }).then(() => done.push('b')),
      st.set('a', { notified: true, n: 3 }).then(() => done.push('a3')),
    ];
    void first.then(() => done.push('a1'));
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toEqual([]); // nothing is durable while the patch is held
    release();
    await Promise.all([first, ...later]);
    expect(done[0]).toBe('a1');
    expect(done.slice(1).sort()).toEqual(['a2', 'a3', 'b']);
    expect(f.bodies.map((b) => b.keys)).toEqual([['a'], ['a'], ['a', 'b']]);
    expect(stored(f)).toEqual({ a: { notified: true, n: 3 }, b: { notified: true, n: 1 } });
  });

  it('a failed patch rejects exactly the set() calls it carried; a retry writes the value kept in memory', async () => {
    const f = fakeCore();
    const st = make(f, { shards: 1 });
    await st.set('x', { notified: true, n: 0 });
    f.fail(1);
    const results = await Promise.allSettled([st.set('a', { notified: true, n: 1 }), st.set('b', { notified: true, n: 2 })]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: 500 });
    expect(st.get('a')).toEqual({ notified: true, n: 1 }); // memory kept
    expect(stored(f)).toEqual({ x: { notified: true, n: 0 } });
    // unchanged since the last successful write: no patch, resolves at once
    const before = f.bodies.length;
    await st.set('x', { notified: true, n: 0 });
    expect(f.bodies).toHaveLength(before);
    // the caller's retry sets the same value again: written now
    await Promise.all([st.set('a', st.get('a')), st.set('b', st.get('b'))]);
    expect(stored(f)).toEqual({ x: { notified: true, n: 0 }, a: { notified: true, n: 1 }, b: { notified: true, n: 2 } });
    expect(f.bodies.at(-1)!.keys).toEqual(['a', 'b']);
  });

  it('splits a batch into patches of at most maxPatchBytes; an entry too large for any patch is refused alone', async () => {
    const f = fakeCore();
    const st = make(f, { shards: 1, maxPatchBytes: 2_000 });
    const pad = 'p'.repeat(150);
    await st.set('first', { notified: true, n: -1 });
    const sets = Array.from({ length: 60 }, (_, i) => st.set(`k-${i}`, { notified: true, n: i, pad } as S));
    const huge = st.set('huge', { notified: true, n: 0, pad: 'x'.repeat(3_000) } as S);
    await Promise.all(sets);
    await expect(huge).rejects.toThrow(/emitter state entry huge is \d+ bytes, more than a patch may carry \(2000\)/);
    const batch = f.bodies.slice(1);
    expect(batch.every((b) => b.bytes <= 2_000)).toBe(true);
    expect(batch.flatMap((b) => b.keys)).toHaveLength(60);
    // ~230 bytes per entry: 8 per patch
    expect(batch[0]!.keys.length).toBeGreaterThanOrEqual(5);
    expect(batch.length).toBe(Math.ceil(60 / batch[0]!.keys.length));
    expect(Object.keys(stored(f))).toHaveLength(61);
  });

  it('one chunk failing does not reject the keys of the other chunks', async () => {
    const f = fakeCore();
    const st = make(f, { shards: 1, maxPatchBytes: 600 });
    await st.set('first', { notified: true, n: -1 });
    f.fail(1);
    const pad = 'p'.repeat(150);
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => st.set(`k-${i}`, { notified: true, n: i, pad } as S)));
    const carried = f.bodies.slice(1).map((b) => b.keys);
    expect(carried.length).toBeGreaterThan(1);
    const rejected = results.flatMap((r, i) => (r.status === 'rejected' ? [`k-${i}`] : []));
    expect(rejected).toEqual(carried[0]);
    expect(Object.keys(stored(f)).sort()).toEqual(['first', ...carried.slice(1).flat()].sort());
  });

  it('entries in a shard that is not theirs (another shard count) are moved to their own', async () => {
    const f = fakeCore();
    const two = make(f, { shards: 2 });
    await Promise.all(Array.from({ length: 30 }, (_, i) => two.set(`k-${i}`, { notified: true, n: i })));
    const four = make(f, { shards: 4 });
    await four.load();
    expect(four.size).toBe(30);
    for (const cm of f.maps.values())
      for (const text of Object.values(cm.data ?? {}))
        expect(four.shardName((JSON.parse(text) as { key: string }).key)).toBe(cm.metadata!.name);
    expect(Object.keys(stored(f))).toHaveLength(30);
  });
});

describe('health state layout', () => {
  const cert = (over: Partial<HealthState['id']> = {}): HealthState => ({
    uid: '2b761550-87b7-4fdf-9272-f07c1997481e',
    unhealthySince: 1_780_000_000_000,
    notified: true,
    notifiedTransition: '2026-05-28T20:26:40Z',
    id: {
      kind: 'Certificate',
      namespace: 'shop',
      name: 'shop-example-com',
      uid: '2b761550-87b7-4fdf-9272-f07c1997481e',
      issuerName: 'letsencrypt-prod',
      subject: {
        commonName: 'shop.example.com',
        countries: [],
        localities: [],
        organizationalUnits: [],
        organizations: ['Example'],
        provinces: [],
      },
      SANs: { 'DNS Names': ['shop.example.com', 'www.shop.example.com'] },
      ...over,
    },
  });
  const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

  it('a typical Certificate is stored whole (~0.5 KB); Issuers always whole', () => {
    const s = cert();
    expect(storedHealthState(s)).toEqual(s);
    expect(bytes({ key: 'Certificate/shop/shop-example-com', value: s })).toBeLessThan(600);
    const issuer: HealthState = { uid: 'u', notified: true, id: { kind: 'Issuer', namespace: 'a', name: 'b', uid: 'u' } };
    expect(storedHealthState(issuer)).toBe(issuer);
  });

  it.each([
    ['5,000 DNS names', { SANs: { 'DNS Names': Array.from({ length: 5_000 }, (_, i) => `n${i}.`.padEnd(253, 'x')) } }],
    [
      'control characters everywhere',
      {
        issuerName: '\u0001'.repeat(10_000),
        subject: {
          commonName: '\u0002'.repeat(10_000),
          countries: Array(64).fill('\u0003'.repeat(256)),
          localities: [],
          organizationalUnits: [],
          organizations: [],
          provinces: [],
        },
        SANs: { 'DNS Names': Array(1_000).fill('\u0004'.repeat(253)) },
      },
    ],
    ['astral characters', { issuerName: '😀'.repeat(1_000), SANs: { 'DNS Names': Array(100).fill('😀'.repeat(200)) } }],
  ] as [string, Partial<HealthState['id']>][])('%s: stored in at most HEALTH_ENTRY_MAX_BYTES, names in order, idempotent', (_, over) => {
    const s = cert(over);
    const out = storedHealthState(s);
    expect(bytes(out)).toBeLessThanOrEqual(HEALTH_ENTRY_MAX_BYTES);
    expect(decodeHealthState(JSON.parse(JSON.stringify(out)))).toEqual(out);
    expect(storedHealthState(out)).toEqual(out);
    const names = out.id.SANs?.['DNS Names'] ?? [];
    const orig = s.id.SANs?.['DNS Names'] ?? [];
    names.forEach((n, i) => expect(orig[i]!.startsWith(n)).toBe(true));
    expect(out.id.name).toBe(s.id.name);
    expect(JSON.stringify(out)).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    expect(s.id.SANs).toEqual(cert(over).id.SANs); // the input is not changed
  });

  it('5,000 DNS names: as many whole names as fit', () => {
    const names = Array.from({ length: 5_000 }, (_, i) => `host-${i}.example.com`);
    const out = storedHealthState(cert({ SANs: { 'DNS Names': names } }));
    const kept = out.id.SANs!['DNS Names']!;
    expect(kept).toEqual(names.slice(0, kept.length));
    expect(kept.length).toBeGreaterThan(50);
    const one = storedHealthState(cert({ SANs: { 'DNS Names': names.slice(0, kept.length + 1) } }));
    expect(one.id.SANs!['DNS Names']).toHaveLength(kept.length); // the next name would not fit
  });

  it('the health store: 128 shards `<name>-health-N`, and only those are read; stored entries are capped', async () => {
    const f = fakeCore();
    const other = { key: 'Certificate/shop/other', value: cert() };
    f.put('em-health', { Certificate_shop_other: JSON.stringify(other) });
    const before = structuredClone(f.maps.get('ns/em-health'));
    const big = cert({ SANs: { 'DNS Names': Array.from({ length: 3_000 }, (_, i) => `h${i}.example.com`) } });
    const { health } = emitterStates({ core: f.core, namespace: 'ns', name: 'em', log });
    expect(health.shardNames()).toHaveLength(HEALTH_STATE_SHARDS);
    expect(health.shardNames()[127]).toBe('em-health-127');
    expect(emitterStates({ core: f.core, namespace: 'ns', name: 'em', log, healthShards: 8 }).health.shardNames()).toHaveLength(8);
    await health.load();
    expect(health.size).toBe(0);
    expect(f.calls).toEqual([]);
    expect(f.maps.get('ns/em-health')).toEqual(before);
    await health.set('Certificate/shop/shop-example-com', big);
    const cm = f.maps.get(`ns/${health.shardName('Certificate/shop/shop-example-com')}`)!;
    const text = Object.values(cm.data!)[0]!;
    expect(Buffer.byteLength(text)).toBeLessThan(HEALTH_ENTRY_MAX_BYTES + 300);
    expect(health.get('Certificate/shop/shop-example-com')).toEqual(big); // memory keeps the whole identity
  });
});

describe('cluster id', () => {
  const core = (impl: () => Promise<unknown>) => ({ readNamespace: impl }) as unknown as CoreV1Api;
  const base = { clusterName: 'prod', server: 'https://k8s.example:6443' };

  it('configured (validated), else the kube-system uid, else derived on 403', async () => {
    await expect(
      resolveClusterId(
        core(async () => ({})),
        { ...base, configured: '6F1C2B3A-1111-4C2D-9E8F-0A1B2C3D4E5F' },
      ),
    ).resolves.toEqual({
      id: '6f1c2b3a-1111-4c2d-9e8f-0a1b2c3d4e5f',
      source: 'configured',
    });
    await expect(
      resolveClusterId(
        core(async () => ({})),
        { ...base, configured: 'prod' },
      ),
    ).rejects.toThrow(/UUID/);
    const uid = '2b761550-87b7-4fdf-9272-f07c1997481e';
    await expect(
      resolveClusterId(
        core(async () => ({ metadata: { uid } })),
        base,
      ),
    ).resolves.toEqual({ id: uid, source: 'kube-system' });
    const derived = await resolveClusterId(
      core(async () => Promise.reject(apiError(403))),
      base,
    );
    expect(derived).toEqual({ id: derivedClusterId('prod@https://k8s.example:6443'), source: 'derived' });
    expect(derived.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    await expect(
      resolveClusterId(
        core(async () => Promise.reject(apiError(503))),
        base,
      ),
    ).rejects.toThrow(/503/);
  });
});

describe('storedHealthState: the runbook URL (docs/annotations.md)', () => {
  const base: HealthState = {
    uid: 'u',
    notified: true,
    unhealthySince: 1,
    id: { kind: 'ClusterIssuer', namespace: '', name: 'ca', uid: 'u', runbookUrl: 'https://wiki.example.com/rb' },
  };
  it('kept whole when it fits; dropped (never cut) when it does not', () => {
    expect(storedHealthState(base)).toEqual(base);
    const long = `https://wiki.example.com/${'x'.repeat(2020)}`;
    const stored = storedHealthState({ ...base, id: { ...base.id, runbookUrl: long } });
    expect(stored.id).not.toHaveProperty('runbookUrl');
    expect(Buffer.byteLength(JSON.stringify(stored))).toBeLessThanOrEqual(HEALTH_ENTRY_MAX_BYTES);
    const cert: HealthState = {
      ...base,
      id: {
        kind: 'Certificate',
        namespace: 'shop',
        name: 'web',
        uid: 'u',
        issuerName: 'ca',
        SANs: { 'DNS Names': ['a.example'] },
        runbookUrl: long.slice(0, 1500),
      },
    };
    expect(storedHealthState(cert).id.runbookUrl).toBe(long.slice(0, 1500));
  });
});
