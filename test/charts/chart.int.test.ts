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
import { loadServeConfig } from '../../src/config.js';
import { parseKeyFile } from '../../src/store/secret-box.js';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
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
  const helmEnv = {
    ...process.env,
    HELM_CACHE_HOME: join(tmpdir(), 'cmn-helm', 'cache'),
    HELM_CONFIG_HOME: join(tmpdir(), 'cmn-helm', 'config'),
    HELM_DATA_HOME: join(tmpdir(), 'cmn-helm', 'data'),
  };

  beforeAll(async () => {
    ({ helm, kubectl } = await ensureKubeTools());
  }, 10 * 60_000);

  afterAll(async () => {
    await env?.stop();
  });

  /** One apiserver for the dry-run tests of this file, started by the first that needs it. */
  const kubeEnv = async (): Promise<KubeEnv> => {
    if (!env) {
      await ensureKubeBinaries();
      env = await startKubeEnv();
    }
    return env;
  };

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
        'Secret/rel-certmgr-notify-secret-keys',
        'Service/rel-certmgr-notify',
        'ServiceAccount/rel-certmgr-notify',
      ].sort(),
    );
    const rules = (
      ms.find((m) => m.kind === 'ClusterRole') as unknown as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] }
    ).rules;
    const can = (group: string, resource: string, verb: string) =>
      rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
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
      spec: {
        replicas: number;
        strategy?: { type: string };
        template: { spec: { serviceAccountName: string; containers: { env: { name: string; value?: string }[] }[] } };
      };
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

  it('names the process by its pod (downward API): one identity for delivery claims and the Lease, so a restarted pod leads at once', async () => {
    const ms = await template();
    type Env = { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } };
    const dep = ms.find((m) => m.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: { env: Env[] }[] } } } };
    const env = dep.spec.template.spec.containers[0]!.env;
    expect(env.find((e) => e.name === 'CERTMGR_NOTIFY_INSTANCE_ID')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
    // the deprecated alias is not set too (two sources of one name)
    expect(env.some((e) => e.name === 'CERTMGR_NOTIFY_POD_NAME')).toBe(false);
  });

  it('creates the secret key Secret (a key the service parses) and mounts it as --secret-key-file; or uses an existing one', async () => {
    const ms = await template();
    const secret = ms.find((m) => m.kind === 'Secret' && m.metadata.name === 'rel-certmgr-notify-secret-keys') as unknown as {
      data: Record<string, string>;
      metadata: { annotations: Record<string, string> };
    };
    expect(secret.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
    const text = Buffer.from(secret.data['secret-keys']!, 'base64').toString('utf8');
    expect(text).toMatch(/^k\d{14}:[A-Za-z0-9+/]{43}=\n$/);
    expect(parseKeyFile(text, 'chart')).toHaveLength(1);
    type Pod = {
      containers: { env: { name: string; value?: string }[]; volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[];
      volumes: { name: string; secret?: { secretName: string } }[];
    };
    const pod = (ms.find((m) => m.kind === 'Deployment') as unknown as { spec: { template: { spec: Pod } } }).spec.template.spec;
    const c = pod.containers[0]!;
    expect(c.env.find((e) => e.name === 'CERTMGR_NOTIFY_SECRET_KEY_FILE')?.value).toBe('/etc/certmgr-notify/secret-keys/secret-keys');
    expect(c.volumeMounts).toContainEqual({ name: 'secret-keys', mountPath: '/etc/certmgr-notify/secret-keys', readOnly: true });
    expect(pod.volumes.find((v) => v.name === 'secret-keys')?.secret?.secretName).toBe('rel-certmgr-notify-secret-keys');

    const own = await template('--set', 'secretKey.existingSecret=my-keys', '--set', 'secretKey.existingSecretKey=keys');
    expect(own.some((m) => m.kind === 'Secret' && m.metadata.name === 'rel-certmgr-notify-secret-keys')).toBe(false);
    const pod2 = (own.find((m) => m.kind === 'Deployment') as unknown as { spec: { template: { spec: Pod } } }).spec.template.spec;
    expect(pod2.volumes.find((v) => v.name === 'secret-keys')?.secret?.secretName).toBe('my-keys');
    expect(pod2.containers[0]!.env.find((e) => e.name === 'CERTMGR_NOTIFY_SECRET_KEY_FILE')?.value).toBe(
      '/etc/certmgr-notify/secret-keys/keys',
    );
  });

  it('mounts a scoped API keys file from a Secret as --api-keys-file; none by default', async () => {
    type Pod = {
      containers: { env: { name: string; value?: string }[]; volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[];
      volumes: { name: string; secret?: { secretName: string; items?: { key: string; path: string }[] } }[];
    };
    const podOf = (ms: Manifest[]) =>
      (ms.find((m) => m.kind === 'Deployment') as unknown as { spec: { template: { spec: Pod } } }).spec.template.spec;
    const none = podOf(await template());
    expect(none.containers[0]!.env.some((e) => e.name === 'CERTMGR_NOTIFY_API_KEYS_FILE')).toBe(false);
    expect(none.volumes.some((v) => v.name === 'api-keys')).toBe(false);
    const pod = podOf(await template('--set', 'apiKeysFile.existingSecret=hub-keys'));
    const c = pod.containers[0]!;
    expect(c.env.find((e) => e.name === 'CERTMGR_NOTIFY_API_KEYS_FILE')?.value).toBe('/etc/certmgr-notify/api-keys/keys.yaml');
    // the admin key stays
    expect(c.env.some((e) => e.name === 'CERTMGR_NOTIFY_API_KEY')).toBe(true);
    expect(c.volumeMounts).toContainEqual({ name: 'api-keys', mountPath: '/etc/certmgr-notify/api-keys', readOnly: true });
    expect(pod.volumes.find((v) => v.name === 'api-keys')?.secret).toMatchObject({
      secretName: 'hub-keys',
      items: [{ key: 'keys.yaml', path: 'keys.yaml' }],
    });
    await expect(template('--set', 'apiKeysFile.scope=agent')).rejects.toThrow(/additional properties 'scope' not allowed/);
  });

  it('takes the SMTP URL (it may carry a password) from a Secret', async () => {
    type Env = { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } };
    const envOf = async (...args: string[]) =>
      (
        (await template(...args)).find((m) => m.kind === 'Deployment') as unknown as {
          spec: { template: { spec: { containers: { env: Env[] }[] } } };
        }
      ).spec.template.spec.containers[0]!.env;
    expect((await envOf()).some((e) => e.name === 'CERTMGR_NOTIFY_SMTP_URL')).toBe(false);
    const env = await envOf('--set', 'smtp.existingSecret=mail', '--set', 'smtp.from=notify@example.com');
    expect(env.find((e) => e.name === 'CERTMGR_NOTIFY_SMTP_URL')).toEqual({
      name: 'CERTMGR_NOTIFY_SMTP_URL',
      valueFrom: { secretKeyRef: { name: 'mail', key: 'url' } },
    });
    expect(env.find((e) => e.name === 'CERTMGR_NOTIFY_SMTP_FROM')?.value).toBe('notify@example.com');
    await expect(template('--set', 'smtp.url=http://x')).rejects.toThrow(/smtp/);
  });

  it('refuses several replicas on SQLite; PostgreSQL allows them', async () => {
    await expect(template('--set', 'replicaCount=2')).rejects.toThrow(/needs a PostgreSQL store/);
    const ms = await template('--set', 'replicaCount=3', '--set', 'store.url=postgres://notify@db:5432/notify');
    const dep = ms.find((m) => m.kind === 'Deployment') as unknown as { spec: { replicas: number; strategy?: unknown } };
    expect(dep.spec.replicas).toBe(3);
    expect(dep.spec.strategy).toBeUndefined();
  });

  describe('remote mode (operator.serviceUrl)', () => {
    type Env = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: unknown } };
    const envOf = (ms: Manifest[]): Env[] =>
      (ms.find((m) => m.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: { env: Env[] }[] } } } }).spec
        .template.spec.containers[0]!.env;
    /** The container's environment as the kubelet would give it: references resolved to stand-in values. */
    const resolved = (env: Env[]): NodeJS.ProcessEnv =>
      Object.fromEntries(env.map((e) => [e.name, e.value ?? (e.valueFrom?.secretKeyRef ? 'cmn_remote-key-0123456789abcdef' : 'pod-0')]));

    it('wires the remote service key from apiKey.existingSecret, and the rendered env passes the config parser', async () => {
      const ms = await template('--set', 'operator.serviceUrl=https://hub.example.com', '--set', 'apiKey.existingSecret=hub-key');
      const env = envOf(ms);
      expect(env.find((e) => e.name === 'CERTMGR_NOTIFY_SERVICE_API_KEY')).toEqual({
        name: 'CERTMGR_NOTIFY_SERVICE_API_KEY',
        valueFrom: { secretKeyRef: { name: 'hub-key', key: 'api-key' } },
      });
      // the pod used to exit with code 2 (ConfigError: --service-url needs --service-api-key…)
      const cfg = loadServeConfig([], resolved(env));
      expect(cfg.serviceUrl).toBe('https://hub.example.com');
      expect(cfg.serviceApiKey).toBe('cmn_remote-key-0123456789abcdef');
      // the default (local) mode parses too
      expect(loadServeConfig([], resolved(envOf(await template()))).serviceUrl).toBeUndefined();
    });

    it('refuses to render without a Secret holding the remote key', async () => {
      await expect(template('--set', 'operator.serviceUrl=https://hub.example.com')).rejects.toThrow(
        /operator.serviceUrl \(remote mode\) needs apiKey.existingSecret/,
      );
    });
  });

  it('values are schema-checked', async () => {
    await expect(template('--set', 'kube=maybe')).rejects.toThrow(/kube/);
    await expect(template('--set', 'store.url=mysql://x')).rejects.toThrow(/store/);
  });

  it('the rendered manifests are accepted by a real apiserver (kubectl apply --dry-run=server)', async () => {
    const env = await kubeEnv();
    const dir = mkdtempSync(join(tmpdir(), 'cmn-chart-'));
    const file = join(dir, 'all.yaml');
    const { stdout } = await run(helm, ['template', 'rel', CHART, '--namespace', 'default', '--include-crds'], {
      env: helmEnv,
      maxBuffer: 32 << 20,
    });
    writeFileSync(file, stdout);
    const out = await run(kubectl, ['--kubeconfig', env.kubeconfigPath, 'apply', '--dry-run=server', '-f', file], { env: process.env });
    expect(out.stdout).toMatch(/deployment.apps\/rel-certmgr-notify created \(server dry run\)/);
    expect(out.stdout).toMatch(
      /customresourcedefinition.apiextensions.k8s.io\/notificationrouters.notify.certmgr.io created \(server dry run\)/,
    );
  }, 120_000);

  describe('admission webhook (webhook.enabled=true)', () => {
    it('helm lint --strict passes', async () => {
      const { stdout } = await run(helm, ['lint', '--strict', CHART, '--set', 'webhook.enabled=true'], { env: helmEnv });
      expect(stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    });

    it('renders the cert-manager CA chain, the serving Certificate, the configuration with inject-ca-from, and wires the pod and Service', async () => {
      const ms = await template('--set', 'webhook.enabled=true');
      const find = (kind: string, name: string) => {
        const m = ms.find((x) => x.kind === kind && x.metadata.name === name);
        if (!m) throw new Error(`${kind}/${name} not rendered; got ${ms.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- rendered YAML, checked field by field below
        return m as Manifest & Record<string, any>;
      };
      const selfSigned = find('Issuer', 'rel-certmgr-notify-webhook-selfsigned');
      expect(selfSigned['spec']).toEqual({ selfSigned: {} });
      const caCert = find('Certificate', 'rel-certmgr-notify-webhook-ca');
      expect(caCert['spec']).toMatchObject({
        isCA: true,
        secretName: 'rel-certmgr-notify-webhook-ca',
        issuerRef: { kind: 'Issuer', name: selfSigned.metadata.name },
      });
      const caIssuer = find('Issuer', 'rel-certmgr-notify-webhook-ca');
      expect(caIssuer['spec']).toEqual({ ca: { secretName: caCert['spec'].secretName } });
      const serving = find('Certificate', 'rel-certmgr-notify-webhook');
      expect(serving.metadata.namespace).toBe('notify');
      expect(serving['spec']).toMatchObject({
        secretName: 'rel-certmgr-notify-webhook-tls',
        issuerRef: { kind: 'Issuer', name: caIssuer.metadata.name },
        usages: expect.arrayContaining(['server auth']),
        privateKey: { rotationPolicy: 'Always' },
      });
      expect(serving['spec'].dnsNames).toEqual(
        expect.arrayContaining(['rel-certmgr-notify.notify.svc', 'rel-certmgr-notify.notify.svc.cluster.local']),
      );

      const vwc = find('ValidatingWebhookConfiguration', 'rel-certmgr-notify');
      expect((vwc.metadata as Record<string, unknown>)['annotations']).toEqual({
        'cert-manager.io/inject-ca-from': `notify/${serving.metadata.name}`,
      });
      const hook = vwc['webhooks'][0];
      expect(vwc['webhooks']).toHaveLength(1);
      expect(hook).toMatchObject({
        name: 'validate.notify.certmgr.io',
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1', 'v1beta1'],
        timeoutSeconds: 5,
        clientConfig: { service: { name: 'rel-certmgr-notify', namespace: 'notify', path: '/validate', port: 443 } },
        rules: [
          {
            apiGroups: ['notify.certmgr.io'],
            apiVersions: ['v1alpha1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['notificationrouters', 'notificationproviders', 'monitoringconfigs'],
          },
        ],
      });
      expect(hook.clientConfig.caBundle).toBeUndefined(); // cainjector fills it

      const svc = find('Service', 'rel-certmgr-notify');
      expect(svc['spec'].ports).toContainEqual({ name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' });
      const dep = find('Deployment', 'rel-certmgr-notify');
      const pod = dep['spec'].template.spec;
      const c = pod.containers[0];
      expect(c.ports).toContainEqual({ name: 'webhook', containerPort: 9443, protocol: 'TCP' });
      const envs = Object.fromEntries(c.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
      expect(envs).toMatchObject({
        CERTMGR_NOTIFY_WEBHOOK_PORT: '9443',
        CERTMGR_NOTIFY_WEBHOOK_CERT_DIR: '/etc/certmgr-notify/webhook-certs',
      });
      expect(c.volumeMounts).toContainEqual({ name: 'webhook-certs', mountPath: '/etc/certmgr-notify/webhook-certs', readOnly: true });
      expect(pod.volumes).toContainEqual({ name: 'webhook-certs', secret: { secretName: serving['spec'].secretName } });
    });

    it('is off by default; failurePolicy, port and timeout are values; typos and bad values are refused', async () => {
      const off = await template();
      expect(off.some((m) => m.kind === 'ValidatingWebhookConfiguration' || m.kind === 'Certificate' || m.kind === 'Issuer')).toBe(false);
      const offEnv = JSON.stringify(off.find((m) => m.kind === 'Deployment'));
      expect(offEnv).not.toContain('WEBHOOK');

      const ms = await template(
        '--set',
        'webhook.enabled=true',
        '--set',
        'webhook.failurePolicy=Fail',
        '--set',
        'webhook.port=10250',
        '--set',
        'webhook.timeoutSeconds=10',
      );
      const hook = (
        ms.find((m) => m.kind === 'ValidatingWebhookConfiguration') as unknown as {
          webhooks: { failurePolicy: string; timeoutSeconds: number }[];
        }
      ).webhooks[0]!;
      expect(hook).toMatchObject({ failurePolicy: 'Fail', timeoutSeconds: 10 });
      expect(JSON.stringify(ms.find((m) => m.kind === 'Deployment'))).toContain('"containerPort":10250');

      await expect(template('--set', 'webhook.enabled=true', '--set', 'webhook.failurePolicy=Maybe')).rejects.toThrow(/failurePolicy/);
      await expect(template('--set', 'webhook.enable=true')).rejects.toThrow(/enable/);
      await expect(template('--set', 'webhook.enabled=true', '--set', 'webhook.port=8080')).rejects.toThrow(/port/);
      await expect(template('--set', 'webhook.enabled=true', '--set', 'webhook.timeoutSeconds=31')).rejects.toThrow(/timeoutSeconds/);
    });

    it('the rendered manifests are accepted by a real apiserver with cert-manager CRDs (kubectl apply --dry-run=server)', async () => {
      const env = await kubeEnv();
      await installCertManagerCrds(env.kubeConfig());
      const dir = mkdtempSync(join(tmpdir(), 'cmn-chart-webhook-'));
      const file = join(dir, 'all.yaml');
      const { stdout } = await run(
        helm,
        ['template', 'rel', CHART, '--namespace', 'default', '--include-crds', '--set', 'webhook.enabled=true'],
        {
          env: helmEnv,
          maxBuffer: 32 << 20,
        },
      );
      writeFileSync(file, stdout);
      const out = await run(kubectl, ['--kubeconfig', env.kubeconfigPath, 'apply', '--dry-run=server', '-f', file], { env: process.env });
      for (const created of [
        'validatingwebhookconfiguration.admissionregistration.k8s.io/rel-certmgr-notify',
        'certificate.cert-manager.io/rel-certmgr-notify-webhook',
        'certificate.cert-manager.io/rel-certmgr-notify-webhook-ca',
        'issuer.cert-manager.io/rel-certmgr-notify-webhook-ca',
        'issuer.cert-manager.io/rel-certmgr-notify-webhook-selfsigned',
        'service/rel-certmgr-notify',
        'deployment.apps/rel-certmgr-notify',
      ]) {
        expect(out.stdout).toContain(`${created} created (server dry run)`);
      }
    }, 120_000);
  });
});
