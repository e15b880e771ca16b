/**
 * The operator's Secret cache against a REAL kube-apiserver: it holds names and versions of non-TLS Secrets
 * only (never a value, never a TLS Secret), the LIST and WATCH it makes carry no Secret data at all, and a
 * change to a provider's Secret still re-applies the provider at once (not only at the next resync).
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, SECRETS, collectionPath, metadataWatch } from '../../src/kube/client.js';
import type { RunningOperator } from '../../src/operator/index.js';
import { PROVIDER_SECRETS_FIELD_SELECTOR, providerSecretsInformer } from '../../src/operator/secrets.js';
import { ensureKubeBinaries, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { startTestService, type TestService } from '../support/service.js';
import { Kube, captureLogger, installCrds, provider, secret, startTestOperator, storeIntegrations } from './support.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const TLS_KEY = '-----BEGIN PRIVATE KEY-----\nTLS-KEY-MARKER-3f9a1c\n-----END PRIVATE KEY-----\n';
const OPAQUE_VALUE = 'OPAQUE-VALUE-MARKER-77d2e0';
const b64 = (s: string): string => Buffer.from(s).toString('base64');

function tlsSecret(ns: string, name: string, key: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, namespace: ns },
    data: { 'tls.crt': b64('not a certificate'), 'tls.key': b64(key) },
  } as KubernetesObject;
}

describe.skipIf(skip)('operator Secret cache: names only (real apiserver)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let k: Kube;
  let op: RunningOperator | undefined;
  const log = pino({ level: 'silent' });

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc] = await Promise.all([startKubeEnv(), startTestService('sqlite')]);
    k = new Kube(env.kubeConfig());
    await installCrds(k.kc);
  }, 10 * 60_000);

  afterAll(async () => {
    await op?.stop();
    await svc?.close();
    await env?.stop();
  });

  it('the LIST and the WATCH carry metadata only: no data of any Secret reaches the process', async () => {
    const ns = 'wire';
    await k.ns(ns);
    await k.apply(secret(ns, 'opaque', { v: OPAQUE_VALUE }));
    const kube = new KubeClient(k.kc);
    const list = await kube.listSecretsMetadata(ns, { limit: 500 });
    expect(list.items.map((s) => s.metadata?.name)).toContain('opaque');
    expect(JSON.stringify(list)).not.toContain(b64(OPAQUE_VALUE));
    expect(list.items.every((s) => !('data' in s))).toBe(true);

    const seen: unknown[] = [];
    const ac = await metadataWatch(k.kc).watch(
      collectionPath(SECRETS, ns),
      { resourceVersion: list.metadata?.resourceVersion },
      (_phase, obj) => seen.push(obj),
      () => {},
    );
    try {
      await k.apply(secret(ns, 'opaque', { v: `${OPAQUE_VALUE}-2` }));
      await k.apply(tlsSecret(ns, 'tls', TLS_KEY));
      await waitFor('both watch events', () => seen.length >= 2);
    } finally {
      ac.abort();
    }
    expect((seen as KubernetesObject[]).map((o) => o.metadata?.name)).toEqual(['opaque', 'tls']);
    expect(JSON.stringify(seen)).not.toContain(b64(OPAQUE_VALUE));
    expect(JSON.stringify(seen)).not.toContain(b64(TLS_KEY));
    expect(seen.every((o) => !('data' in (o as object)))).toBe(true);
  });

  it('the cache holds no TLS Secret and no value, through the list and the watch', async () => {
    const ns = 'cache';
    await k.ns(ns);
    await k.apply(tlsSecret(ns, 'tls-before', TLS_KEY));
    await k.apply(secret(ns, 'opaque-before', { v: OPAQUE_VALUE }));
    const inf = providerSecretsInformer({ kube: new KubeClient(k.kc), namespace: ns, log });
    await inf.start();
    try {
      await inf.synced;
      expect(inf.list().map((s) => s.metadata.name)).toEqual(['opaque-before']);
      await k.apply(tlsSecret(ns, 'tls-after', TLS_KEY));
      await k.apply(secret(ns, 'opaque-after', { v: OPAQUE_VALUE }));
      await waitFor('the watched Secret in the cache', () => inf.get('opaque-after', ns));
      const cached = inf.list();
      expect(cached.map((s) => s.metadata.name).sort()).toEqual(['opaque-after', 'opaque-before']);
      // four metadata fields, nothing else
      for (const s of cached) {
        expect(Object.keys(s.metadata).sort()).toEqual(['name', 'namespace', 'resourceVersion', 'uid']);
        expect(Object.keys(s).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
      }
      expect(JSON.stringify(cached)).not.toContain(b64(OPAQUE_VALUE));
      expect(JSON.stringify(cached)).not.toContain(b64(TLS_KEY));
      expect(PROVIDER_SECRETS_FIELD_SELECTOR).toBe('type!=kubernetes.io/tls');
    } finally {
      await inf.stop();
    }
  });

  it('a provider Secret change re-applies the provider through the watch (resync 10 min)', async () => {
    const ns = 'rotate-watch';
    await k.ns(ns);
    await k.apply(secret(ns, 'p-key', { integrationKey: 'ik-first-0123456789' }));
    op = await startTestOperator(env, svc, captureLogger().logger, { resyncMs: 10 * 60_000 });
    await op.whenRunning();
    await k.apply(
      provider(ns, 'p', {
        type: 'IncidentManagement',
        incidentManagement: { integrationKeySecretRef: { name: 'p-key', key: 'integrationKey' } },
      }),
    );
    const p = await k.waitReady('notificationproviders', 'p', ns);
    const id = p.status?.['integrationId'] as string;
    expect((await storeIntegrations(svc)).find((x) => x.id === id)?.secrets['integrationKey']).toBe('ik-first-0123456789');
    await k.apply(secret(ns, 'p-key', { integrationKey: 'ik-rotated-9876543210' }));
    await waitFor(
      'rotated key in the service',
      async () => (await storeIntegrations(svc)).find((x) => x.id === id)?.secrets['integrationKey'] === 'ik-rotated-9876543210',
      { timeoutMs: 20_000 },
    );
    // the reconcile read the Secret's version with its value: the status names the new one
    const secretRv = (await k.core.readNamespacedSecret({ namespace: ns, name: 'p-key' })).metadata?.resourceVersion ?? '';
    await waitFor('status records the new Secret version', async () =>
      String((await k.get('notificationproviders', 'p', ns))?.status?.['appliedSecretVersion'] ?? '').endsWith(`:${secretRv}`),
    );
  });
});
