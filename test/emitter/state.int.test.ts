/**
 * The emitter's health state store against a REAL kube-apiserver v1.20.2 + etcd: thousands of episodes
 * recorded at once are durable, read back equal by a new instance, spread over ConfigMaps far below 1 MiB, in
 * a bounded number of PATCH requests; an existing install's unsharded ConfigMap is moved into the shards.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_PATCH_BYTES } from '../../src/emitter/state.js';
import { HEALTH_STATE_SHARDS, emitterStates } from '../../src/emitter/states.js';
import { ensureKubeBinaries, ensureNamespace, startKubeEnv, type KubeEnv } from '../support/kube.js';
import { notReadyCertificate } from './health-states.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const log = pino({ level: 'silent' });
const MiB = 1024 * 1024;
const N = 2_500;

describe.skipIf(skip)('emitter health state: sharded and batched (real apiserver)', () => {
  let env: KubeEnv;
  let core: CoreV1Api;
  /** PATCH requests by the store under test (the real client, counted) */
  let patches = 0;
  let counted: CoreV1Api;

  beforeAll(async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv();
    core = env.kubeConfig().makeApiClient(CoreV1Api);
    counted = new Proxy(core, {
      get(target, prop, receiver) {
        if (prop === 'patchNamespacedConfigMap') patches++;
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    await ensureNamespace(env.kubeConfig(), 'fresh');
  }, 10 * 60_000);

  afterAll(async () => {
    await env?.stop();
  });

  /** data bytes per ConfigMap of the namespace */
  async function sizes(namespace: string): Promise<Map<string, { bytes: number; keys: number }>> {
    const list = await core.listNamespacedConfigMap({ namespace });
    return new Map(
      list.items.map((cm) => [
        cm.metadata!.name!,
        {
          bytes: Object.entries(cm.data ?? {}).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0),
          keys: Object.keys(cm.data ?? {}).length,
        },
      ]),
    );
  }

  it(`${N} episodes set at once: all durable, equal after a reload, every ConfigMap < 1 MiB, one patch per shard`, async () => {
    const { health } = emitterStates({ core: counted, namespace: 'fresh', name: 'em', log });
    await health.load();
    // a tenth of the Certificates have 1,000 DNS names (stored capped)
    const episodes = Array.from({ length: N }, (_, i) => notReadyCertificate(i, i % 10 === 0 ? 1_000 : 2));
    patches = 0;
    await Promise.all(episodes.map((e) => health.set(e.key, e.state)));
    expect(health.persistedSize).toBe(N);
    const cms = await sizes('fresh');
    // the design's bound: a burst is one batch per shard, split only above 256 KiB (no shard holds that much)
    expect(Math.max(...[...cms.values()].map((c) => c.bytes))).toBeLessThan(DEFAULT_MAX_PATCH_BYTES);
    expect(patches).toBeLessThanOrEqual(HEALTH_STATE_SHARDS);

    expect([...cms.keys()].every((n) => /^em-health-[0-9]+$/.test(n))).toBe(true);
    expect([...cms.values()].reduce((n, c) => n + c.keys, 0)).toBe(N);
    for (const c of cms.values()) expect(c.bytes).toBeLessThan(MiB / 4);

    const again = emitterStates({ core, namespace: 'fresh', name: 'em', log }).health;
    await again.load();
    expect(again.size).toBe(N);
    for (const e of episodes.filter((_, i) => i % 10 !== 0)) expect(again.get(e.key)).toEqual(e.state);
    for (const e of episodes.filter((_, i) => i % 10 === 0)) {
      const names = again.get(e.key)!.id.SANs!['DNS Names']!;
      expect(names).toEqual(e.state.id.SANs!['DNS Names']!.slice(0, names.length));
    }

    // every episode resolves at once: removed in one batch per shard
    patches = 0;
    await Promise.all(episodes.map((e) => again.set(e.key, undefined)));
    expect(patches).toBeLessThanOrEqual(HEALTH_STATE_SHARDS);
    expect([...(await sizes('fresh')).values()].reduce((n, c) => n + c.keys, 0)).toBe(0);
  });
});
