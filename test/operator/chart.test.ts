/**
 * The Helm chart: `helm lint --strict`, `helm template` (kinds, RBAC, env, guards), and the rendered
 * manifests accepted by a REAL apiserver (`kubectl apply --dry-run=server`). helm/kubectl come from
 * scripts/k8s-tools.sh (cached outside the repo).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';
import { ensureKubeBinaries, ensureKubeTools, startKubeEnv, type KubeEnv } from '../support/kube.js';

const run = promisify(execFile);
const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const CHART = join(REPO_ROOT, 'charts', 'certmgr-notify');

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
  [k: string]: unknown;
}

describe.skipIf(skip)('Helm chart charts/certmgr-notify', () => {
  let helm: string;
  let kubectl: string;
  let env: KubeEnv | undefined;
  const helmEnv = { ...process.env, HELM_CACHE_HOME: join(tmpdir(), 'cmn-helm', 'cache'), HELM_CONFIG_HOME: join(tmpdir(), 'cmn-helm', 'config'), HELM_DATA_HOME: join(tmpdir(), 'cmn-helm', 'data') };

  beforeAll(async () => {
    ({ helm, kubectl } = await ensureKubeTools());
  }, 10 * 60_000);

  afterAll(async () => {
    await env?.stop();
  });

  const template = async (...args: string[]): Promise<Manifest[]> => {
    const { stdout } = await run(helm, ['template', 'rel', CHART, '--namespace', 'notify', ...args], { env: helmEnv, maxBuffer: 32 << 20 });
    return parseAllDocuments(stdout)
      .map((d) => d.toJS() as Manifest | null)
      .filter((m): m is Manifest => Boolean(m));
  };

  it('helm lint --strict passes', async () => {
    const { stdout } = await run(helm, ['lint', '--strict', CHART], { env: helmEnv });
    expect(stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders CRDs, Deployment, ServiceAccount, RBAC, Service and the API key Secret', async () => {
    const ms = await template('--include-crds');
    const kinds = ms.map((m) => `${m.kind}/${m.metadata.name}`).sort();
    expect(kinds).toEqual(
      [
        'ClusterRole/rel-certmgr-notify',
        'ClusterRoleBinding/rel-certmgr-notify',
        'CustomResourceDefinition/monitoringconfigs.notify.certmgr.io',
        'CustomResourceDefinition/notificationproviders.notify.certmgr.io',
        'CustomResourceDefinition/notificationrouters.notify.certmgr.io',
        'Deployment/rel-certmgr-notify',
        'Role/rel-certmgr-notify-leader-election',
        'RoleBinding/rel-certmgr-notify-leader-election',
        'Secret/rel-certmgr-notify-api-key',
        'Service/rel-certmgr-notify',
        'ServiceAccount/rel-certmgr-notify',
      ].sort(),
    );
    const rules = (ms.find((m) => m.kind === 'ClusterRole') as unknown as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] }).rules;
    const can = (group: string, resource: string, verb: string) => rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
    for (const r of ['notificationproviders', 'notificationrouters', 'monitoringconfigs']) {
      expect(can('notify.certmgr.io', r, 'watch')).toBe(true);
      expect(can('notify.certmgr.io', `${r}/status`, 'patch')).toBe(true);
      expect(can('notify.certmgr.io', `${r}/finalizers`, 'update')).toBe(true);
    }
    for (const v of ['get', 'list', 'watch']) expect(can('', 'secrets', v)).toBe(true);
    expect(can('', 'secrets', 'update')).toBe(false);
    expect(can('', 'events', 'create')).toBe(true);
    for (const r of ['issuers', 'clusterissuers', 'certificates']) expect(can('cert-manager.io', r, 'list')).toBe(true);
    const role = ms.find((m) => m.kind === 'Role') as unknown as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] };
    expect(role.rules[0]).toMatchObject({ apiGroups: ['coordination.k8s.io'], resources: ['leases'] });

    const dep = ms.find((m) => m.kind === 'Deployment') as unknown as {
      spec: { replicas: number; strategy?: { type: string }; template: { spec: { serviceAccountName: string; containers: { env: { name: string; value?: string }[] }[] } } };
    };
    expect(dep.spec.replicas).toBe(1);
    expect(dep.spec.strategy?.type).toBe('Recreate');
    expect(dep.spec.template.spec.serviceAccountName).toBe('rel-certmgr-notify');
    const env = Object.fromEntries(dep.spec.template.spec.containers[0]!.env.map((e) => [e.name, e.value ?? '(ref)']));
    expect(env).toMatchObject({
      CERTMGR_NOTIFY_STORE: 'sqlite:/data/certmgr-notify.db',
      CERTMGR_NOTIFY_API_KEY: '(ref)',
      CERTMGR_NOTIFY_KUBE: 'on',
      CERTMGR_NOTIFY_LEADER_ELECT: 'true',
      CERTMGR_NOTIFY_LEASE_NAMESPACE: '(ref)',
    });
  });

  it('refuses several replicas on SQLite; PostgreSQL allows them', async () => {
    await expect(template('--set', 'replicaCount=2')).rejects.toThrow(/needs a PostgreSQL store/);
    const ms = await template('--set', 'replicaCount=3', '--set', 'store.url=postgres://notify@db:5432/notify');
    const dep = ms.find((m) => m.kind === 'Deployment') as unknown as { spec: { replicas: number; strategy?: unknown } };
    expect(dep.spec.replicas).toBe(3);
    expect(dep.spec.strategy).toBeUndefined();
  });

  it('values are schema-checked', async () => {
    await expect(template('--set', 'kube=maybe')).rejects.toThrow(/kube/);
    await expect(template('--set', 'store.url=mysql://x')).rejects.toThrow(/store/);
  });

  it('the rendered manifests are accepted by a real apiserver (kubectl apply --dry-run=server)', async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv();
    const dir = mkdtempSync(join(tmpdir(), 'cmn-chart-'));
    const file = join(dir, 'all.yaml');
    const { stdout } = await run(helm, ['template', 'rel', CHART, '--namespace', 'default', '--include-crds'], { env: helmEnv, maxBuffer: 32 << 20 });
    writeFileSync(file, stdout);
    const out = await run(kubectl, ['--kubeconfig', env.kubeconfigPath, 'apply', '--dry-run=server', '-f', file], { env: process.env });
    expect(out.stdout).toMatch(/deployment.apps\/rel-certmgr-notify created \(server dry run\)/);
    expect(out.stdout).toMatch(/customresourcedefinition.apiextensions.k8s.io\/notificationrouters.notify.certmgr.io created \(server dry run\)/);
  }, 120_000);
});
