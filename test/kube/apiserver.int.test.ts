/**
 * Smoke test of the real kube-apiserver v1.20.2 + etcd test environment.
 * First run builds the binaries (~7 min, cached outside the repo);
 * set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CustomObjectsApi, makeInformer, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import {
  applyManifest,
  collectWatch,
  compactEtcd,
  ensureKubeBinaries,
  ensureNamespace,
  errorCode,
  errorReason,
  startKubeEnv,
  waitFor,
  type KubeEnv,
} from '../support/kube.js';
import {
  CERT_MANAGER_API_VERSION,
  CERT_MANAGER_GROUP,
  CERT_MANAGER_VERSION,
  installCertManagerCrds,
} from '../fixtures/cert-manager-crds.js';

interface Certificate extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] } & Record<string, unknown>;
}

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const ns = 'smoke';
const group = CERT_MANAGER_GROUP;
const version = CERT_MANAGER_VERSION;

function certificate(name: string): Certificate {
  return {
    apiVersion: CERT_MANAGER_API_VERSION,
    kind: 'Certificate',
    metadata: { name, namespace: ns },
    spec: { secretName: `${name}-tls`, dnsNames: [`${name}.example.com`], issuerRef: { name: 'ca', kind: 'Issuer' } },
  };
}

describe.skipIf(skip)('real kube-apiserver v1.20.2 + etcd', () => {
  let env: KubeEnv;

  beforeAll(async () => {
    await ensureKubeBinaries(); // cold: builds once (~7 min)
    env = await startKubeEnv();
    console.info(`[kube] env up in ${env.startupMs} ms at ${env.server} (dir ${env.dir})`);
    const kc = env.kubeConfig();
    await installCertManagerCrds(kc);
    await ensureNamespace(kc, ns);
  }, 30 * 60_000);

  afterAll(async () => {
    await env?.stop();
  });

  it('writes Certificate status via /status and an informer sees it', async () => {
    const kc = env.kubeConfig();
    const api = kc.makeApiClient(CustomObjectsApi);

    const created = await applyManifest(kc, certificate('web'));
    expect(created.metadata?.uid).toBeTruthy();
    expect(created.metadata?.generation).toBe(1);

    const informer = makeInformer<Certificate>(
      kc,
      `/apis/${group}/${version}/certificates`,
      () => api.listClusterCustomObject({ group, version, plural: 'certificates' }) as Promise<KubernetesListObject<Certificate>>,
    );
    const updates: Certificate[] = [];
    const errors: unknown[] = [];
    informer.on('update', (o) => updates.push(o));
    informer.on('error', (e) => errors.push(e));
    await informer.start();
    try {
      await waitFor('informer cache has web', () => informer.get('web', ns));

      // status in a main-resource write is ignored
      const current = (await api.getNamespacedCustomObject({
        group,
        version,
        namespace: ns,
        plural: 'certificates',
        name: 'web',
      })) as Certificate;
      const ready = {
        conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired' }],
        notAfter: '2030-01-01T00:00:00Z',
      };
      const replaced = (await api.replaceNamespacedCustomObject({
        group,
        version,
        namespace: ns,
        plural: 'certificates',
        name: 'web',
        body: { ...current, status: ready },
      })) as Certificate;
      expect(replaced.status).toBeUndefined();

      // /status write
      const withStatus = (await api.replaceNamespacedCustomObjectStatus({
        group,
        version,
        namespace: ns,
        plural: 'certificates',
        name: 'web',
        body: { ...replaced, status: ready },
      })) as Certificate;
      expect(withStatus.status?.conditions?.[0]?.status).toBe('True');
      expect(withStatus.metadata?.generation).toBe(1); // status writes don't bump generation

      const seen = await waitFor('informer update with Ready=True', () =>
        updates.find((u) => u.metadata?.name === 'web' && u.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
      );
      expect(seen.metadata?.resourceVersion).toBe(withStatus.metadata?.resourceVersion);
      expect(informer.get('web', ns)?.status?.['notAfter']).toBe('2030-01-01T00:00:00Z');

      // stale resourceVersion -> 409 Conflict
      const stale = api.replaceNamespacedCustomObjectStatus({
        group,
        version,
        namespace: ns,
        plural: 'certificates',
        name: 'web',
        body: { ...replaced, status: { conditions: [] } },
      });
      const err = await stale.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(errorCode(err)).toBe(409);
      expect(errorReason(err)).toBe('Conflict');
      expect(errors).toEqual([]);
    } finally {
      await informer.stop().catch(() => {});
    }
  });

  it('etcd compaction makes a watch from an old resourceVersion fail with 410 Expired', async () => {
    const kc = env.kubeConfig();
    const api = kc.makeApiClient(CustomObjectsApi);
    const first = await applyManifest(kc, certificate('old-rv'));
    const oldRv = first.metadata!.resourceVersion!;
    for (let i = 0; i < 3; i++) {
      await api.patchNamespacedCustomObject({
        group,
        version,
        namespace: ns,
        plural: 'certificates',
        name: 'old-rv',
        body: [{ op: 'add', path: '/spec/renewBefore', value: `${i + 1}h` }],
      });
    }
    const path = `/apis/${group}/${version}/namespaces/${ns}/certificates`;

    // before compaction the old RV replays the later events
    const before = await collectWatch(kc, path, { resourceVersion: oldRv }, (ev) => ev.length >= 3);
    expect(before.events.map((e) => e.type)).toEqual(['MODIFIED', 'MODIFIED', 'MODIFIED']);

    const rev = await compactEtcd(env);
    expect(rev).toBeGreaterThan(Number(oldRv));

    const after = await collectWatch(kc, path, { resourceVersion: oldRv }, (ev) => ev.some((e) => e.type === 'ERROR'));
    const expired =
      after.httpStatus === 410 ||
      after.events.some((e) => e.type === 'ERROR' && (e.object['code'] as number) === 410 && e.object['reason'] === 'Expired');
    expect(expired, JSON.stringify(after)).toBe(true);

    // a watch from the current RV still works
    const live = collectWatch(kc, path, { resourceVersion: String(rev) }, (ev) => ev.some((e) => e.type === 'MODIFIED'));
    await new Promise((r) => setTimeout(r, 300));
    await api.patchNamespacedCustomObject({
      group,
      version,
      namespace: ns,
      plural: 'certificates',
      name: 'old-rv',
      body: [{ op: 'add', path: '/spec/renewBefore', value: '9h' }],
    });
    expect((await live).events.map((e) => e.type)).toContain('MODIFIED');
  });
});
