/** ConfigMapState against a fake CoreV1Api (the real apiserver is in emitter.int.test.ts); cluster id. */
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { derivedClusterId, resolveClusterId } from '../../src/emitter/cluster.js';
import { ConfigMapState, configMapKey } from '../../src/emitter/state.js';

const log = pino({ level: 'silent' });
const apiError = (code: number) => Object.assign(new Error(`HTTP ${code}`), { code });

/** ConfigMaps in memory with merge-patch semantics for `data`; `failNext` makes the next write fail. */
function fakeCore() {
  const maps = new Map<string, V1ConfigMap>();
  const calls: string[] = [];
  let failNext = 0;
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
      body: { data: Record<string, string | null> };
    }) {
      calls.push(`patch ${name}`);
      if (failNext-- > 0) throw apiError(500);
      const cm = maps.get(`${namespace}/${name}`);
      if (!cm) throw apiError(404);
      for (const [k, v] of Object.entries(body.data)) {
        if (v === null) delete cm.data![k];
        else cm.data![k] = v;
      }
      return cm;
    },
    async createNamespacedConfigMap({ namespace, body }: { namespace: string; body: V1ConfigMap }) {
      calls.push(`create ${body.metadata!.name}`);
      const key = `${namespace}/${body.metadata!.name}`;
      if (maps.has(key)) throw apiError(409);
      maps.set(key, structuredClone({ ...body, data: body.data ?? {} }));
      return body;
    },
  };
  return { core: core as unknown as CoreV1Api, maps, calls, fail: (n: number) => (failNext = n) };
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
