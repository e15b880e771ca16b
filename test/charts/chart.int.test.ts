/**
 * The Helm chart: `helm lint --strict`, `helm template` (kinds, RBAC, env, guards), and the rendered
 * manifests accepted by a REAL apiserver (`kubectl apply --dry-run=server`). helm/kubectl come from
 * scripts/k8s-tools.sh (cached outside the repo).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHART, LazyKubeEnv, documents, helmEnv, helmNotes, helmTemplate, run } from './helm.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadAgentConfig, loadServeConfig } from '../../src/config.js';
import { LIMITS } from '../../src/limits.js';
import { parseKeyFile } from '../../src/store/secret-box.js';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { ensureKubeTools, type KubeEnv } from '../support/kube.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';

/** The emitter's on-demand root-cause reads (docs/emitter.md "Root cause"). */
const ROOT_CAUSE_RULES = [
  { apiGroups: ['cert-manager.io'], resources: ['certificaterequests'], verbs: ['get', 'list'] },
  { apiGroups: ['acme.cert-manager.io'], resources: ['orders', 'challenges'], verbs: ['get', 'list'] },
];

/** Served truth (docs/serving.md): the Ingresses and Gateways that serve TLS Secrets; pods listed for the reload hint. */
const SERVING_RULES = [
  { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['gateway.networking.k8s.io'], resources: ['gateways'], verbs: ['list', 'watch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
];

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
  [k: string]: unknown;
}

describe.skipIf(skip)('Helm chart charts/certmgr-notify', () => {
  let helm: string;
  let kubectl: string;
  const kube = new LazyKubeEnv();

  beforeAll(async () => {
    ({ helm, kubectl } = await ensureKubeTools());
  }, 10 * 60_000);

  afterAll(async () => {
    await kube.stop();
  });

  /** One apiserver for the dry-run tests of this file, started by the first that needs it. */
  const kubeEnv = (): Promise<KubeEnv> => kube.get();

  const template = async (...args: string[]): Promise<Manifest[]> => documents<Manifest>(await helmTemplate(helm, 'notify', args));

  it('helm lint --strict passes', async () => {
    const { stdout } = await run(helm, ['lint', '--strict', CHART], { env: helmEnv });
    expect(stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders CRDs, Deployment, ServiceAccount, RBAC, Service, the API key Secret and the data PVC (SQLite)', async () => {
    const ms = await template('--include-crds');
    const kinds = ms.map((m) => `${m.kind}/${m.metadata.name}`).sort();
    expect(kinds).toEqual(
      [
        'ClusterRole/rel-certmgr-notify',
        'ClusterRoleBinding/rel-certmgr-notify',
        'ConfigMap/rel-certmgr-notify-limits',
        'CustomResourceDefinition/monitoringconfigs.notify.certmgr.io',
        'CustomResourceDefinition/notificationproviders.notify.certmgr.io',
        'CustomResourceDefinition/notificationrouters.notify.certmgr.io',
        'CustomResourceDefinition/notificationtemplates.notify.certmgr.io',
        'CustomResourceDefinition/notificationsilences.notify.certmgr.io',
        'Deployment/rel-certmgr-notify',
        'PersistentVolumeClaim/rel-certmgr-notify-data',
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
    for (const r of [
      'notificationproviders',
      'notificationrouters',
      'monitoringconfigs',
      'notificationtemplates',
      'notificationsilences',
    ]) {
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
    expect(env.some((e) => e.name === 'CERTMGR_NOTIFY_SMTP_SENDER_DOMAINS')).toBe(false);
    const domains = await envOf('--set', 'smtp.senderDomains={example.com,*.example.org}');
    expect(domains.find((e) => e.name === 'CERTMGR_NOTIFY_SMTP_SENDER_DOMAINS')?.value).toBe('example.com,*.example.org');
    await expect(template('--set', 'smtp.url=http://x')).rejects.toThrow(/smtp/);
    await expect(template('--set', 'smtp.senderDomains={a@example.com}')).rejects.toThrow(/senderDomains/);
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
      Object.fromEntries(
        env
          // the limits file is a mounted ConfigMap (read here in the mode tests below)
          .filter((e) => e.name !== 'CERTMGR_NOTIFY_LIMITS_FILE')
          .map((e) => [e.name, e.value ?? (e.valueFrom?.secretKeyRef ? 'cmn_remote-key-0123456789abcdef' : 'pod-0')]),
      );

    it('wires the remote service key from apiKey.existingSecret, and the rendered env passes the config parser', async () => {
      const ms = await template('--set', 'operator.serviceUrl=https://hub.example.com', '--set', 'apiKey.existingSecret=hub-key');
      const env = envOf(ms);
      expect(env.find((e) => e.name === 'CERTMGR_NOTIFY_SERVICE_API_KEY')).toEqual({
        name: 'CERTMGR_NOTIFY_SERVICE_API_KEY',
        valueFrom: { secretKeyRef: { name: 'hub-key', key: 'api-key' } },
      });
      // the key from the Secret: without it the pod exits with code 2 (--service-url needs --service-api-key)
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

  it('the schema of the limits value names exactly the keys of the limits file, durations as strings', () => {
    const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as {
      definitions: { limits: { additionalProperties: boolean; properties: Record<string, { type?: string }> } };
    };
    const { properties, additionalProperties } = schema.definitions.limits;
    expect(additionalProperties).toBe(false);
    expect(Object.keys(properties).sort()).toEqual(LIMITS.map((l) => l.key).sort());
    for (const l of LIMITS) expect(properties[l.key]!.type, l.key).toBe(l.kind === 'count' ? 'integer' : undefined);
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
            resources: [
              'notificationrouters',
              'notificationproviders',
              'monitoringconfigs',
              'notificationtemplates',
              'notificationsilences',
            ],
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
        CERTMGR_NOTIFY_WEBHOOK_CERT_DIR: '/etc/certmgr-notify/webhook-certs',
      });
      expect(c.volumeMounts).toContainEqual({ name: 'webhook-certs', mountPath: '/etc/certmgr-notify/webhook-certs', readOnly: true });
      expect(pod.volumes).toContainEqual({ name: 'webhook-certs', secret: { secretName: serving['spec'].secretName } });
    });

    it('is off by default; failurePolicy and timeout are values; typos and bad values are refused', async () => {
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
        'webhook.timeoutSeconds=10',
      );
      const hook = (
        ms.find((m) => m.kind === 'ValidatingWebhookConfiguration') as unknown as {
          webhooks: { failurePolicy: string; timeoutSeconds: number }[];
        }
      ).webhooks[0]!;
      expect(hook).toMatchObject({ failurePolicy: 'Fail', timeoutSeconds: 10 });
      expect(JSON.stringify(ms.find((m) => m.kind === 'Deployment'))).toContain('"containerPort":9443');

      await expect(template('--set', 'webhook.enabled=true', '--set', 'webhook.failurePolicy=Maybe')).rejects.toThrow(/failurePolicy/);
      await expect(template('--set', 'webhook.enable=true')).rejects.toThrow(/enable/);
      // the port is the binary's (9443): not a value
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

  describe('modes: standalone | hub | agent', () => {
    type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
    type Env = {
      name: string;
      value?: string;
      valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
    };
    type Container = {
      args: string[];
      env: Env[];
      ports: { name: string; containerPort: number }[];
      volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
    };
    type Pod = {
      containers: Container[];
      volumes: {
        name: string;
        emptyDir?: object;
        persistentVolumeClaim?: { claimName: string };
        secret?: { secretName: string; items?: { key: string; path: string }[] };
      }[];
    };
    const AGENT = [
      '--set',
      'mode=agent',
      '--set',
      'clusterName=cluster-a',
      '--set',
      'agent.hubUrl=https://hub.example.com',
      '--set',
      'agent.apiKey.existingSecret=hub-key',
    ];
    const PG = ['--set', 'store.url=postgres://notify@db:5432/notify'];
    const kindsOf = (ms: Manifest[]) => ms.map((m) => `${m.kind}/${m.metadata.name}`).sort();
    const one = <T>(ms: Manifest[], kind: string, name?: string): T => {
      const found = ms.filter((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
      if (found.length !== 1) throw new Error(`${kind}/${name ?? '*'}: ${found.length} rendered; got ${kindsOf(ms).join(', ')}`);
      return found[0] as T;
    };
    const podOf = (ms: Manifest[]) => one<{ spec: { template: { spec: Pod } } }>(ms, 'Deployment').spec.template.spec;
    const envMap = (ms: Manifest[]) => Object.fromEntries(podOf(ms).containers[0]!.env.map((e) => [e.name, e.value ?? '(ref)']));
    const rulesOf = (ms: Manifest[], kind: 'ClusterRole' | 'Role', name?: string) => one<{ rules: Rule[] }>(ms, kind, name).rules;
    /**
     * The container's environment as the kubelet gives it: Secret references resolved to a stand-in key, field
     * references to a pod name, and paths of mounted files to the same files written here (`files`: path → text).
     */
    /** The rendered limits file (the ConfigMap mounted at the path of CERTMGR_NOTIFY_LIMITS_FILE), as `files` of resolved. */
    const limitsOf = (ms: Manifest[]): Record<string, string> => {
      const path = envMap(ms)['CERTMGR_NOTIFY_LIMITS_FILE']!;
      return { [path]: one<{ data: Record<string, string> }>(ms, 'ConfigMap', 'rel-certmgr-notify-limits').data['limits.yaml']! };
    };
    const resolved = (env: Env[], files: Record<string, string> = {}): NodeJS.ProcessEnv => {
      const dir = mkdtempSync(join(tmpdir(), 'cmn-chart-files-'));
      const at = new Map(
        Object.entries(files).map(([path, text], i) => {
          const local = join(dir, `f${i}`);
          writeFileSync(local, text);
          return [path, local];
        }),
      );
      return Object.fromEntries(
        env.map((e) => [
          e.name,
          e.value !== undefined ? (at.get(e.value) ?? e.value) : e.valueFrom?.secretKeyRef ? 'cmn_admin-key-0123456789abcdef' : 'pod-0',
        ]),
      );
    };

    it('helm lint --strict passes in every mode', async () => {
      for (const args of [
        [],
        ['--set', 'mode=hub'],
        ['--set', 'mode=hub', '--set', 'replicaCount=2', ...PG],
        AGENT,
        [...AGENT, '--set', 'agent.operator=true'],
        ...['hub-values.yaml', 'agent-cluster-a-values.yaml', 'agent-cluster-b-values.yaml'].map((f) => [
          '-f',
          join(REPO_ROOT, 'examples', 'two-clusters', f),
        ]),
      ]) {
        const { stdout } = await run(helm, ['lint', '--strict', CHART, ...args], { env: helmEnv });
        expect(stdout, args.join(' ')).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
      }
    });

    it('standalone on SQLite keeps its store on a PVC by default (a restart keeps the outbox); an emptyDir on request, none with PostgreSQL', async () => {
      const ms = await template();
      const pvc = one<{ spec: { accessModes: string[]; resources: { requests: { storage: string } } } }>(ms, 'PersistentVolumeClaim');
      expect(pvc.spec).toMatchObject({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } });
      expect(podOf(ms).volumes.find((v) => v.name === 'data')).toEqual({
        name: 'data',
        persistentVolumeClaim: { claimName: 'rel-certmgr-notify-data' },
      });
      const off = await template('--set', 'persistence.enabled=false');
      expect(off.some((m) => m.kind === 'PersistentVolumeClaim')).toBe(false);
      expect(podOf(off).volumes.find((v) => v.name === 'data')).toEqual({ name: 'data', emptyDir: {} });
      const pg = await template(...PG);
      expect(pg.some((m) => m.kind === 'PersistentVolumeClaim')).toBe(false);
      expect(podOf(pg).volumes.find((v) => v.name === 'data')?.emptyDir).toEqual({});
      expect((await template('--set', 'store.url=sqlite::memory:')).some((m) => m.kind === 'PersistentVolumeClaim')).toBe(false);
      // a store URL from a Secret (PostgreSQL) rolls its replicas; a PVC (one writer on a RWO volume) recreates
      const strategy = async (...args: string[]) =>
        one<{ spec: { strategy?: { type: string } } }>(await template(...args), 'Deployment').spec.strategy;
      expect(await strategy('--set', 'store.existingSecret=db')).toBeUndefined();
      expect(await strategy('--set', 'store.existingSecret=db', '--set', 'persistence.enabled=true')).toEqual({ type: 'Recreate' });
      expect(await strategy()).toEqual({ type: 'Recreate' });
      // an existing claim is used, not created
      const own = await template('--set', 'persistence.existingClaim=my-data');
      expect(own.some((m) => m.kind === 'PersistentVolumeClaim')).toBe(false);
      expect(podOf(own).volumes.find((v) => v.name === 'data')?.persistentVolumeClaim).toEqual({ claimName: 'my-data' });
    });

    it('standalone: clusterName, clusterId, grace periods and limits reach the process (through the config parser); unset, none is rendered', async () => {
      const plainMs = await template();
      const plain = envMap(plainMs);
      for (const k of Object.keys(plain)) expect(k).not.toMatch(/CLUSTER_|GRACE|EMITTER/);
      expect(limitsOf(plainMs)).toEqual({ '/etc/certmgr-notify/limits/limits.yaml': '{}\n' });
      const ms = await template(
        '--set',
        'clusterName=prod-eu-1',
        '--set',
        'clusterId=0f4a4b8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b',
        '--set',
        'health.gracePeriod=1m',
        '--set',
        'health.unknownGracePeriod=0s',
        '--set',
        'health.issuingGracePeriod=30m',
        '--set',
        'health.renewalOverdueGrace=2h',
        '--set',
        'limits.deliveryTimeout=5s',
        '--set',
        'limits.maxRoutersPerCompany=50',
        '--set',
        'limits.leaseDuration=20s',
      );
      const c = podOf(ms).containers[0]!;
      expect(c.args).toEqual(['serve']);
      // a changed limits file rolls the pods
      expect(
        one<{ spec: { template: { metadata: { annotations: Record<string, string> } } } }>(ms, 'Deployment').spec.template.metadata
          .annotations['checksum/limits'],
      ).not.toBe(
        one<{ spec: { template: { metadata: { annotations: Record<string, string> } } } }>(plainMs, 'Deployment').spec.template.metadata
          .annotations['checksum/limits'],
      );
      const cfg = loadServeConfig(c.args.slice(1), resolved(c.env, limitsOf(ms)));
      expect(cfg).toMatchObject({ deliveryTimeoutMs: 5_000, maxRoutersPerCompany: 50 });
      expect(cfg.kubeOptions.leaseDurationMs).toBe(20_000);
      expect(cfg.kube).toBe('on');
      expect(cfg.kubeOptions).toMatchObject({
        clusterName: 'prod-eu-1',
        clusterId: '0f4a4b8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b',
        emitter: true,
        healthGracePeriodMs: 60_000,
        healthUnknownGracePeriodMs: 0,
        healthIssuingGracePeriodMs: 1_800_000,
        healthRenewalOverdueGraceMs: 7_200_000,
      });
      await expect(template('--set', 'clusterId=not-a-uuid')).rejects.toThrow(/clusterId/);
      await expect(template('--set', 'health.renewalOverdueGrace=3600')).rejects.toThrow(/renewalOverdueGrace/);
      await expect(template('--set', 'health.gracePeriod=5')).rejects.toThrow(/gracePeriod/);
      await expect(template('--set', 'limits.deliveryTimeout=5000')).rejects.toThrow(/deliveryTimeout/);
      await expect(template('--set', 'limits.maxRouters=1')).rejects.toThrow(/maxRouters/);
      await expect(template('--set', 'health.graceMs=1')).rejects.toThrow(/graceMs/);
      await expect(template('--set', 'mode=cluster')).rejects.toThrow(/mode/);
    });

    describe('hub', () => {
      it('several replicas refuse SQLite and render with PostgreSQL: no PVC, no Recreate; the env passes the config parser', async () => {
        await expect(template('--set', 'mode=hub', '--set', 'replicaCount=2')).rejects.toThrow(/needs a PostgreSQL store/);
        const ms = await template('--set', 'mode=hub', '--set', 'replicaCount=2', ...PG, '--set', 'clusterName=hub');
        const dep = one<{ spec: { replicas: number; strategy?: unknown } }>(ms, 'Deployment');
        expect(dep.spec.replicas).toBe(2);
        expect(dep.spec.strategy).toBeUndefined();
        expect(ms.some((m) => m.kind === 'PersistentVolumeClaim')).toBe(false);
        expect(kindsOf(ms)).toContain('Service/rel-certmgr-notify');
        const c = podOf(ms).containers[0]!;
        const cfg = loadServeConfig(c.args.slice(1), resolved(c.env, limitsOf(ms)));
        expect(cfg.store).toBe('postgres://notify@db:5432/notify');
        expect(cfg.kube).toBe('on'); // the operator, for this cluster's CRDs
        expect(cfg.kubeOptions.emitter).toBe(false); // a hub's cluster may run no cert-manager
        expect(cfg.kubeOptions.clusterName).toBe('hub');
        // a single SQLite hub keeps its store on a PVC, as standalone does
        expect((await template('--set', 'mode=hub')).some((m) => m.kind === 'PersistentVolumeClaim')).toBe(true);
      });

      it('the operator without the emitter needs no cert-manager rules; without the operator no Kubernetes access at all; the emitter only with the operator', async () => {
        const op = await template('--set', 'mode=hub');
        const rules = rulesOf(op, 'ClusterRole');
        expect(rules.some((r) => r.apiGroups.includes('notify.certmgr.io'))).toBe(true);
        expect(rules.some((r) => r.apiGroups.includes('cert-manager.io'))).toBe(false);
        expect(rules.some((r) => r.resources.includes('namespaces'))).toBe(false);
        expect(rulesOf(op, 'Role').map((r) => r.resources)).toEqual([['leases']]);

        const em = await template('--set', 'mode=hub', '--set', 'hub.emitter=true');
        expect(rulesOf(em, 'ClusterRole').some((r) => r.apiGroups.includes('cert-manager.io'))).toBe(true);
        expect(envMap(em)['CERTMGR_NOTIFY_EMITTER']).toBe('true');

        const none = await template('--set', 'mode=hub', '--set', 'hub.operator=false');
        expect(none.filter((m) => /Role/.test(m.kind))).toEqual([]);
        const c = podOf(none).containers[0]!;
        expect(loadServeConfig(c.args.slice(1), resolved(c.env, limitsOf(none))).kube).toBe('off');

        await expect(template('--set', 'mode=hub', '--set', 'hub.operator=false', '--set', 'hub.emitter=true')).rejects.toThrow(
          /hub.emitter needs hub.operator/,
        );
        await expect(
          template('--set', 'mode=hub', '--set', 'operator.serviceUrl=https://x.example.com', '--set', 'apiKey.existingSecret=k'),
        ).rejects.toThrow(/operator.serviceUrl \(remote mode\) is for mode standalone/);
        await expect(template('--set', 'mode=hub', '--set', 'hub.operatr=true')).rejects.toThrow(/operatr/);
      });
    });

    describe('agent', () => {
      it('renders the agent and nothing of the service: no PVC, no Secret, no store, no API Service (a metrics Service only)', async () => {
        const ms = await template(...AGENT);
        expect(kindsOf(ms)).toEqual(
          [
            'ClusterRole/rel-certmgr-notify',
            'ClusterRoleBinding/rel-certmgr-notify',
            'Deployment/rel-certmgr-notify',
            'Role/rel-certmgr-notify-agent',
            'RoleBinding/rel-certmgr-notify-agent',
            'Service/rel-certmgr-notify-metrics',
            'ServiceAccount/rel-certmgr-notify',
          ].sort(),
        );
        const svc = one<{ spec: { ports: { name: string; targetPort: string }[] } }>(ms, 'Service');
        expect(svc.spec.ports).toEqual([{ name: 'metrics', port: 8080, targetPort: 'http', protocol: 'TCP' }]);
        const pod = podOf(ms);
        const c = pod.containers[0]!;
        expect(c.args).toEqual(['agent']);
        const env = envMap(ms);
        expect(env).toMatchObject({
          CERTMGR_NOTIFY_HUB_URL: 'https://hub.example.com',
          CERTMGR_NOTIFY_API_KEY_FILE: '/etc/certmgr-notify/hub-api-key/api-key',
          CERTMGR_NOTIFY_CLUSTER_NAME: 'cluster-a',
          CERTMGR_NOTIFY_PORT: '8080',
          CERTMGR_NOTIFY_STATE_NAMESPACE: '(ref)',
          CERTMGR_NOTIFY_INSTANCE_ID: '(ref)',
        });
        for (const k of Object.keys(env))
          expect(k).not.toMatch(/STORE|SECRET_KEY|API_KEY$|API_KEYS_FILE|SERVICE_URL|KUBE$|LEADER|WEBHOOK|OPERATOR/);
        // the key only as a file: no Secret reference in the environment
        expect(c.env.some((e) => e.valueFrom?.secretKeyRef)).toBe(false);
        expect(c.volumeMounts).toEqual([
          { name: 'tmp', mountPath: '/tmp' },
          { name: 'hub-api-key', mountPath: '/etc/certmgr-notify/hub-api-key', readOnly: true },
        ]);
        expect(pod.volumes.map((v) => v.name).sort()).toEqual(['hub-api-key', 'tmp']);
        expect(pod.volumes.find((v) => v.name === 'hub-api-key')?.secret).toMatchObject({
          secretName: 'hub-key',
          items: [{ key: 'api-key', path: 'api-key' }],
        });
        expect(c.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
        // the rendered args and environment pass the agent's own parser (else the pod exits 2 with a ConfigError)
        expect(loadAgentConfig(c.args.slice(1), resolved(c.env))).toMatchObject({
          hubUrl: 'https://hub.example.com',
          apiKeyFile: '/etc/certmgr-notify/hub-api-key/api-key',
          clusterName: 'cluster-a',
          clusterId: undefined,
          port: 8080,
          stateNamespace: 'pod-0',
          instanceId: 'pod-0',
          operator: false,
        });

        const moreMs = await template(
          ...AGENT,
          '--set',
          'agent.apiKey.existingSecretKey=key',
          '--set',
          'agent.maxPendingEvents=5000',
          '--set',
          'health.gracePeriod=1s',
          '--set',
          'agent.watchNamespace=apps',
          '--set',
          'agent.metricsService.enabled=false',
        );
        const more = envMap(moreMs);
        expect(more).toMatchObject({
          CERTMGR_NOTIFY_API_KEY_FILE: '/etc/certmgr-notify/hub-api-key/key',
          CERTMGR_NOTIFY_MAX_PENDING_EVENTS: '5000',
          CERTMGR_NOTIFY_HEALTH_GRACE_PERIOD: '1s',
          CERTMGR_NOTIFY_WATCH_NAMESPACE: 'apps',
        });
        const moreC = podOf(moreMs).containers[0]!;
        expect(loadAgentConfig(moreC.args.slice(1), resolved(moreC.env))).toMatchObject({
          hubUrl: 'https://hub.example.com',
          apiKeyFile: '/etc/certmgr-notify/hub-api-key/key',
          clusterName: 'cluster-a',
          maxPendingEvents: 5000,
          healthGracePeriodMs: 1000,
          watchNamespace: 'apps',
        });
        expect((await template(...AGENT, '--set', 'agent.metricsService.enabled=false')).some((m) => m.kind === 'Service')).toBe(false);
      });

      it('runs on least privilege: exactly these rules; no write on Secrets, no wildcard, nothing on notify.certmgr.io', async () => {
        const ms = await template(...AGENT);
        expect(rulesOf(ms, 'ClusterRole')).toEqual([
          { apiGroups: ['cert-manager.io'], resources: ['issuers', 'clusterissuers', 'certificates'], verbs: ['get', 'list', 'watch'] },
          ...ROOT_CAUSE_RULES,
          { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] },
          ...SERVING_RULES,
          { apiGroups: [''], resources: ['namespaces'], resourceNames: ['kube-system'], verbs: ['get'] },
        ]);
        expect(rulesOf(ms, 'Role')).toEqual([
          { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
        ]);
        expect(one<{ metadata: { namespace: string } }>(ms, 'Role').metadata.namespace).toBe('notify');
        const binding = one<{ roleRef: { kind: string; name: string }; subjects: unknown[] }>(ms, 'ClusterRoleBinding');
        expect(binding.roleRef).toMatchObject({ kind: 'ClusterRole', name: 'rel-certmgr-notify' });
        expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'rel-certmgr-notify', namespace: 'notify' }]);
        // a set clusterId needs no namespace read
        const withId = await template(...AGENT, '--set', 'clusterId=0f4a4b8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b');
        expect(rulesOf(withId, 'ClusterRole').some((r) => r.resources.includes('namespaces'))).toBe(false);
        expect(envMap(withId)['CERTMGR_NOTIFY_CLUSTER_ID']).toBe('0f4a4b8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b');

        // whatever the options: no wildcard and no write on Secrets anywhere
        for (const args of [
          [],
          ['--set', 'agent.operator=true'],
          ['--set', 'agent.watchNamespace=apps'],
          ['--set', 'agent.operator=true', '--set', 'agent.watchNamespace=apps'],
        ]) {
          const all = (await template(...AGENT, ...args))
            .filter((m) => m.kind === 'ClusterRole' || m.kind === 'Role')
            .flatMap((m) => (m as unknown as { rules: Rule[] }).rules);
          for (const r of all) {
            expect([...r.apiGroups, ...r.resources, ...r.verbs], args.join(' ')).not.toContain('*');
            if (r.resources.includes('secrets'))
              expect(
                r.verbs.filter((v) => !['get', 'list', 'watch'].includes(v)),
                args.join(' '),
              ).toEqual([]);
          }
        }
      });

      it('agent.operator adds the rules on our CRDs (and Events on them); agent.watchNamespace moves namespaced reads into a Role there', async () => {
        const op = await template(...AGENT, '--set', 'agent.operator=true');
        expect(envMap(op)['CERTMGR_NOTIFY_OPERATOR']).toBe('true');
        const rules = rulesOf(op, 'ClusterRole');
        const can = (group: string, resource: string, verb: string) =>
          rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
        for (const r of [
          'monitoringconfigs',
          'notificationproviders',
          'notificationrouters',
          'notificationtemplates',
          'notificationsilences',
        ]) {
          expect(can('notify.certmgr.io', r, 'watch')).toBe(true);
          expect(can('notify.certmgr.io', `${r}/status`, 'patch')).toBe(true);
          expect(can('notify.certmgr.io', `${r}/finalizers`, 'update')).toBe(true);
        }
        expect(can('', 'secrets', 'get')).toBe(true); // providers' secretRefs
        expect(can('', 'events', 'create')).toBe(true);

        const ns = await template(...AGENT, '--set', 'agent.watchNamespace=apps');
        expect(rulesOf(ns, 'ClusterRole')).toEqual([
          { apiGroups: ['cert-manager.io'], resources: ['clusterissuers'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: [''], resources: ['namespaces'], resourceNames: ['kube-system'], verbs: ['get'] },
        ]);
        const watch = one<{ metadata: { namespace: string }; rules: Rule[] }>(ns, 'Role', 'rel-certmgr-notify-watch');
        expect(watch.metadata.namespace).toBe('apps');
        expect(watch.rules).toEqual([
          { apiGroups: ['cert-manager.io'], resources: ['issuers', 'certificates'], verbs: ['get', 'list', 'watch'] },
          ...ROOT_CAUSE_RULES,
          { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] },
          ...SERVING_RULES,
        ]);
        expect(one<{ metadata: { namespace: string } }>(ns, 'RoleBinding', 'rel-certmgr-notify-watch').metadata.namespace).toBe('apps');
      });

      it('root causes: get and list (never watch) on certificaterequests, orders and challenges, cluster-wide or in watchNamespace', async () => {
        expect(rulesOf(await template(...AGENT), 'ClusterRole')).toEqual(expect.arrayContaining(ROOT_CAUSE_RULES));
        const ns = await template(...AGENT, '--set', 'agent.watchNamespace=apps');
        expect(rulesOf(ns, 'ClusterRole').some((r) => r.resources.includes('challenges'))).toBe(false);
        expect(rulesOf(ns, 'Role', 'rel-certmgr-notify-watch')).toEqual(expect.arrayContaining(ROOT_CAUSE_RULES));
        expect(rulesOf(await template(), 'ClusterRole')).toEqual(expect.arrayContaining(ROOT_CAUSE_RULES)); // standalone
      });

      it('served truth: read Ingresses and Gateways, list pods, wherever the emitter runs (never a write, never a pod watch)', async () => {
        expect(rulesOf(await template(...AGENT), 'ClusterRole')).toEqual(expect.arrayContaining(SERVING_RULES));
        expect(rulesOf(await template(), 'ClusterRole')).toEqual(expect.arrayContaining(SERVING_RULES)); // standalone
        expect(rulesOf(await template('--set', 'mode=hub', '--set', 'hub.emitter=true'), 'ClusterRole')).toEqual(
          expect.arrayContaining(SERVING_RULES),
        );
        const hub = rulesOf(await template('--set', 'mode=hub'), 'ClusterRole');
        expect(hub.some((r) => r.resources.includes('ingresses') || r.resources.includes('pods'))).toBe(false);
        const ns = await template(...AGENT, '--set', 'agent.watchNamespace=apps');
        expect(rulesOf(ns, 'ClusterRole').some((r) => r.resources.includes('ingresses') || r.resources.includes('pods'))).toBe(false);
      });

      it('refuses to render without clusterName, hubUrl or the key Secret, and with what an agent does not serve', async () => {
        const without = (name: string) => {
          const i = AGENT.findIndex((a) => a.startsWith(`${name}=`));
          return AGENT.filter((_, j) => j !== i && j !== i - 1);
        };
        // the schema refuses them (helm lint too, below), naming the value
        await expect(template(...without('clusterName'))).rejects.toThrow(/at '\/clusterName': minLength/);
        await expect(template(...without('agent.hubUrl'))).rejects.toThrow(/at '\/agent\/hubUrl': minLength/);
        await expect(template(...without('agent.apiKey.existingSecret'))).rejects.toThrow(
          /at '\/agent\/apiKey\/existingSecret': minLength/,
        );
        await expect(template(...AGENT, '--set', 'webhook.enabled=true')).rejects.toThrow(/agent serves no admission webhook/);
        await expect(template(...AGENT, '--set', 'persistence.enabled=true')).rejects.toThrow(/an agent keeps no store/);
        await expect(template(...AGENT, '--set', 'operator.serviceUrl=https://x.example.com')).rejects.toThrow(/posts to agent.hubUrl/);
        await expect(template(...AGENT, '--set', 'agent.hubUrl=hub.example.com')).rejects.toThrow(/hubUrl/);
        await expect(template(...AGENT, '--set', 'agent.hubURL=https://x')).rejects.toThrow(/hubURL/);
      });
    });

    it('helm lint fails in agent mode without clusterName, agent.hubUrl or agent.apiKey.existingSecret, naming each', async () => {
      const lint = run(helm, ['lint', '--strict', CHART, '--set', 'mode=agent'], { env: helmEnv });
      const err = (await lint.then(
        () => undefined,
        (e: unknown) => e,
      )) as (Error & { stdout: string; stderr: string }) | undefined;
      expect(err, 'helm lint passed').toBeDefined();
      expect(err!.stderr).toMatch(/1 chart\(s\) linted, 1 chart\(s\) failed/);
      for (const path of ['/clusterName', '/agent/hubUrl', '/agent/apiKey/existingSecret']) expect(err!.stdout).toContain(`at '${path}'`);
    });

    it('egressAllow and publicUrl reach the hub through the config parser; unset, neither is rendered', async () => {
      const plain = envMap(await template());
      expect(Object.keys(plain)).not.toContain('CERTMGR_NOTIFY_EGRESS_ALLOW');
      expect(Object.keys(plain)).not.toContain('CERTMGR_NOTIFY_PUBLIC_URL');
      const ms = await template('--set', 'egressAllow={10.20.0.0/16,*.corp.example}', '--set', 'publicUrl=https://notify.example.com/');
      expect(envMap(ms)['CERTMGR_NOTIFY_EGRESS_ALLOW']).toBe('10.20.0.0/16,*.corp.example');
      const c = podOf(ms).containers[0]!;
      const cfg = loadServeConfig(c.args.slice(1), resolved(c.env, limitsOf(ms)));
      expect(cfg.egressAllow).toEqual({ cidrs: ['10.20.0.0/16'], hosts: ['*.corp.example'] });
      expect(cfg.publicUrl).toBe('https://notify.example.com');
      // a hub's egressAllow is its own (an agent sends nothing to tenant URLs)
      expect(envMap(await template(...AGENT, '--set', 'egressAllow={10.0.0.0/8}'))).not.toHaveProperty('CERTMGR_NOTIFY_EGRESS_ALLOW');
      await expect(template('--set', 'egressAllow={a b}')).rejects.toThrow(/at '\/egressAllow\/0'/);
      await expect(template('--set', 'publicUrl=https://u:p@notify.example.com')).rejects.toThrow(/at '\/publicUrl'/);
      await expect(template('--set', 'publicUrl=notify.example.com')).rejects.toThrow(/at '\/publicUrl'/);
    });

    it('the install notes give the console URL and the egress policy in every mode', async () => {
      const standalone = await helmNotes(helm, 'notify', []);
      expect(standalone).toContain('Console:  http://localhost:8080/ui/ through the port-forward above');
      expect(standalone).toMatch(
        /never reach loopback, private,\s+link-local or cloud-metadata addresses; list internal receivers in egressAllow/,
      );
      expect(standalone).toContain('No NetworkPolicy');

      const hub = await helmNotes(helm, 'notify', [
        '--set',
        'mode=hub',
        '--set',
        'publicUrl=https://notify.example.com',
        '--set',
        'egressAllow={10.20.0.0/16,*.corp.example}',
        '--set',
        'networkPolicy.enabled=true',
      ]);
      expect(hub).toContain('Console:  https://notify.example.com/ui/, or http://localhost:8080/ui/');
      expect(hub).toContain('except 10.20.0.0/16, *.corp.example (egressAllow)');
      expect(hub).toMatch(
        /NetworkPolicy on: egress only to DNS, the Kubernetes API, networkPolicy.egress.integrations \(ports\s+443, 25, 465, 587\)/,
      );

      const agent = await helmNotes(helm, 'notify', [...AGENT, '--set', 'networkPolicy.enabled=true']);
      expect(agent).toContain("Console:  the hub's, https://hub.example.com/ui/");
      expect(agent).toContain('NetworkPolicy on: egress only to DNS, the Kubernetes API, the hub');
    });

    it('every mode is accepted by a real apiserver (kubectl apply --dry-run=server)', async () => {
      const env = await kubeEnv();
      const kc = ['--kubeconfig', env.kubeconfigPath];
      await run(kubectl, [...kc, 'create', 'namespace', 'apps']).catch((e: Error) => {
        if (!/AlreadyExists/.test(e.message)) throw e;
      });
      const dir = mkdtempSync(join(tmpdir(), 'cmn-chart-modes-'));
      const cases: [string, string[], string[]][] = [
        [
          'hub',
          ['--set', 'mode=hub', '--set', 'replicaCount=2', ...PG, '--set', 'apiKeysFile.existingSecret=hub-keys'],
          ['deployment.apps/rel-certmgr-notify', 'service/rel-certmgr-notify', 'clusterrole.rbac.authorization.k8s.io/rel-certmgr-notify'],
        ],
        [
          'hub-no-operator',
          ['--set', 'mode=hub', '--set', 'hub.operator=false'],
          ['deployment.apps/rel-certmgr-notify', 'persistentvolumeclaim/rel-certmgr-notify-data'],
        ],
        [
          'agent',
          AGENT,
          [
            'deployment.apps/rel-certmgr-notify',
            'service/rel-certmgr-notify-metrics',
            'role.rbac.authorization.k8s.io/rel-certmgr-notify-agent',
            'clusterrole.rbac.authorization.k8s.io/rel-certmgr-notify',
          ],
        ],
        [
          'agent-operator-ns',
          [...AGENT, '--set', 'agent.operator=true', '--set', 'agent.watchNamespace=apps'],
          [
            'deployment.apps/rel-certmgr-notify',
            'role.rbac.authorization.k8s.io/rel-certmgr-notify-watch',
            'rolebinding.rbac.authorization.k8s.io/rel-certmgr-notify-watch',
          ],
        ],
      ];
      const EX = join(REPO_ROOT, 'examples', 'two-clusters');
      for (const f of ['hub-values.yaml', 'agent-cluster-a-values.yaml', 'agent-cluster-b-values.yaml'])
        cases.push([
          `example ${f}`,
          ['-f', join(EX, f)],
          ['deployment.apps/rel-certmgr-notify', 'clusterrole.rbac.authorization.k8s.io/rel-certmgr-notify'],
        ]);
      // this apiserver is Kubernetes 1.20 (no policy/v1): templates/pdb.yaml picks v1beta1 from the capabilities
      const apiVersions = ['--api-versions', 'policy/v1beta1/PodDisruptionBudget'];
      for (const [name, args, created] of cases) {
        const { stdout } = await run(
          helm,
          ['template', 'rel', CHART, '--namespace', 'default', '--include-crds', ...apiVersions, ...args],
          {
            env: helmEnv,
            maxBuffer: 32 << 20,
          },
        );
        const file = join(dir, `${name}.yaml`);
        writeFileSync(file, stdout);
        const out = await run(kubectl, [...kc, 'apply', '--dry-run=server', '-f', file], { env: process.env });
        for (const c of created)
          expect(out.stdout, name).toMatch(new RegExp(`${c.replace(/[./]/g, '\\$&')} (created|configured|unchanged) \\(server dry run\\)`));
      }
    }, 180_000);

    describe('examples/two-clusters', () => {
      const EX = join(REPO_ROOT, 'examples', 'two-clusters');

      it('the hub values render (PostgreSQL, 2 replicas, the keys file) and its keys file Secret parses with the service own loader', async () => {
        const ms = await template('-f', join(EX, 'hub-values.yaml'));
        const dep = one<{ spec: { replicas: number; strategy?: unknown } }>(ms, 'Deployment');
        expect(dep.spec.replicas).toBe(2);
        // the store URL is in a Secret: no SQLite volume to hand over, so no Recreate (rolling updates)
        expect(dep.spec.strategy).toBeUndefined();
        expect(ms.some((m) => m.kind === 'PersistentVolumeClaim')).toBe(false);
        const secrets = parseAllDocuments(readFileSync(join(EX, 'hub-secrets.yaml'), 'utf8')).map(
          (d) => d.toJS() as { kind: string; metadata: { name: string }; stringData: Record<string, string> },
        );
        const keysSecret = secrets.find((s) => s.metadata.name === 'certmgr-notify-keys')!;
        const c = podOf(ms).containers[0]!;
        const keysPath = envMap(ms)['CERTMGR_NOTIFY_API_KEYS_FILE']!;
        const cfg = loadServeConfig(c.args.slice(1), {
          ...resolved(c.env, { [keysPath]: keysSecret.stringData['keys.yaml']!, ...limitsOf(ms) }),
          // the store URL comes from the example's Secret
          CERTMGR_NOTIFY_STORE: secrets.find((s) => s.metadata.name === 'certmgr-notify-store')!.stringData['url'],
        });
        expect(cfg.store).toMatch(/^postgres:\/\//);
        expect(cfg.apiKeys.map((k) => k.scope ?? 'admin').sort()).toEqual(['admin', 'admin', 'agent', 'agent']);
      });

      it('the agent values of both clusters render, each with its own cluster name and key Secret', async () => {
        for (const [file, cluster] of [
          ['agent-cluster-a-values.yaml', 'cluster-a'],
          ['agent-cluster-b-values.yaml', 'cluster-b'],
        ] as const) {
          const ms = await template('-f', join(EX, file));
          const env = envMap(ms);
          expect(env['CERTMGR_NOTIFY_CLUSTER_NAME'], file).toBe(cluster);
          expect(env['CERTMGR_NOTIFY_HUB_URL'], file).toMatch(/^https:\/\//);
          expect(podOf(ms).containers[0]!.args).toEqual(['agent']);
          expect(ms.some((m) => m.kind === 'PersistentVolumeClaim' || m.kind === 'Secret')).toBe(false);
        }
      });
    });
  });
});
