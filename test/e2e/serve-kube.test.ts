/**
 * The whole product loop in one `certmgr-notify serve --kube on` process against the real kube-apiserver:
 * CRs applied with the Kubernetes API become records in the service (through its own API), and an event sent
 * to the service is delivered to the provider the CRs describe. Standalone is an agent talking to its own hub:
 * health events through POST /v1/events, TLS Secrets through POST /v1/inventory, expiry evaluated by the hub's
 * scanner over that inventory (the only expiry path). Also: `--kube on` without a cluster fails clearly.
 */
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { certIdOf, certKey } from '../../src/expiry/decide.js';
import { issuerNotReady } from '../fixtures/events.js';
import { selfSigned } from '../emitter/fixtures.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { Kube, installCrds, provider, router, secret } from '../operator/support.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, startKubeEnv, type KubeEnv } from '../support/kube.js';
import { startServiceProcess, waitFor, type ServiceProcess } from './service-process.js';
import { limitsFile } from '../support/limits.js';

const KEY = 'kube-e2e-key-0123456789';
const NS = 'cert-alerts';

describe('serve --kube on', () => {
  let env: KubeEnv;
  let svc: ServiceProcess;
  let hook: Receiver;
  beforeAll(async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv();
    await installCrds(env.kubeConfig());
    await installCertManagerCrds(env.kubeConfig());
    hook = await startReceiver();
    svc = await startServiceProcess(
      [
        '--kube',
        'on',
        '--store',
        `sqlite:${join(mkdtempSync(join(tmpdir(), 'cmn-kube-')), 'db')}`,

        '--lease-namespace',
        'default',

        '--cluster-name',
        'e2e',
        '--egress-allow',
        '127.0.0.1/32',
        // the hub's expiry scan over the inventory, every second here (default 60 s)
        ...limitsFile({
          leaseDuration: '3s',
          renewDeadline: '2s',
          retryPeriod: '500ms',
          resyncPeriod: '5s',
          healthGracePeriod: '500ms',
          expiryScanInterval: '1s',
        }),
      ],
      KEY,
      { KUBECONFIG: env.kubeconfigPath },
    );
  }, 1_800_000);
  afterAll(async () => {
    await svc?.kill('SIGTERM');
    await hook?.close();
    await env?.stop();
  });

  it('reconciles CRs into its own service and delivers events to the provider they describe', async () => {
    const kc = env.kubeConfig();
    await ensureNamespace(kc, NS);
    await applyManifest(kc, secret(NS, 'hook', { url: `${hook.url}/in` }));
    await applyManifest(kc, provider(NS, 'hook', { type: 'Webhook', webhook: { urlSecretRef: { name: 'hook', key: 'url' } } }));
    await applyManifest(
      kc,
      router(NS, 'issuers-unhealthy', {
        eventTypeId: 'certmgr-issuer-health-notification-config',
        filter: "type.endsWith('.notready')",
        providerRef: { name: 'hook' },
      }),
    );
    const k = new Kube(kc);
    const ready = await k.waitCondition('notificationrouters', 'issuers-unhealthy', NS, { status: 'True' }, 60_000);
    const routerId = (ready.status as { routerId?: string }).routerId;
    expect(routerId).toMatch(/^[0-9a-f-]{36}$/);

    const list = await svc.gql().request<{
      searchNotificationRoutingConfigurations: {
        nodes: { id: string; name: string; notificationRouterFilterConfig: { advancedFilterExpression: string } }[];
      };
    }>(ops.SearchNotificationRoutingConfigurations);
    expect(list.searchNotificationRoutingConfigurations.nodes).toContainEqual(
      expect.objectContaining({ id: routerId, notificationRouterFilterConfig: { advancedFilterExpression: "type.endsWith('.notready')" } }),
    );

    const [ev] = await svc.postEvents([issuerNotReady()]);
    expect(ev!.deliveries).toBe(1);
    const req = await waitFor('webhook delivery', () => hook.requests.find((r) => r.path === '/in'), 30_000);
    expect(JSON.parse(req.body).type).toBe('io.certmgr.notify.evt.healthstatus.certmgr-issuer.notready');
    // the operator's in-memory key never reaches the logs
    expect(svc.output()).not.toMatch(/cmn_op_[A-Za-z0-9_-]{10,}/);
  });

  it('the emitter in the same process turns an Issuer going not ready into a delivered .notready event', async () => {
    const kc = env.kubeConfig();
    await ensureNamespace(kc, 'pki');
    await applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: 'acme', namespace: 'pki' },
      spec: { acme: {} },
    } as never);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const at = new Date(Math.ceil(Date.now() / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    await custom.patchNamespacedCustomObjectStatus(
      {
        group: 'cert-manager.io',
        version: 'v1',
        plural: 'issuers',
        namespace: 'pki',
        name: 'acme',
        body: {
          status: {
            conditions: [
              {
                type: 'Ready',
                status: 'False',
                reason: 'ErrRegisterACMEAccount',
                message: 'account registration failed',
                lastTransitionTime: at,
                observedGeneration: 1,
              },
            ],
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const req = await waitFor(
      'issuer .notready at the webhook',
      () => hook.requests.find((r) => r.path === '/in' && JSON.parse(r.body).data.resource?.name === 'acme'),
      30_000,
    );
    const body = JSON.parse(req.body);
    expect(body.type).toBe('io.certmgr.notify.evt.healthstatus.certmgr-issuer.notready');
    expect(body.data.cluster).toMatchObject({ name: 'e2e' });
    expect(body.data.reason).toBe('ErrRegisterACMEAccount');
  });

  it('standalone: the inventory goes to its own POST /v1/inventory like an agent, and is accepted', async () => {
    await waitFor(
      'the hub accepted the first inventory report',
      () => svc.output().includes('accepted the first inventory report'),
      30_000,
    );
    expect(svc.output()).not.toContain('does not accept inventory reports');
    expect(svc.output()).not.toContain('the hub rejected an inventory report');
  });

  it('standalone expiry: a TLS Secret expiring in 10 days → inventory → the hub’s scan → exactly one .failed for rule 2 (14 days), delivered', async () => {
    const kc = env.kubeConfig();
    await ensureNamespace(kc, 'shop');
    await applyManifest(kc, secret(NS, 'expiry-hook', { url: `${hook.url}/expiry` }));
    await applyManifest(
      kc,
      provider(NS, 'expiry-hook', { type: 'Webhook', webhook: { urlSecretRef: { name: 'expiry-hook', key: 'url' } } }),
    );
    // no filter: every expiration reaches the receiver, so a second event (another rule, a repeat) would show
    await applyManifest(
      kc,
      router(NS, 'expirations', { eventTypeId: 'cert-expiry-ext-notification-config', providerRef: { name: 'expiry-hook' } }),
    );
    await new Kube(kc).waitCondition('notificationrouters', 'expirations', NS, { status: 'True' }, 60_000);

    const crt = selfSigned({ cn: 'web.example.com', dns: ['web.example.com'], days: 10 });
    await applyManifest(kc, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: {
        name: 'web-tls',
        namespace: 'shop',
        annotations: { 'cert-manager.io/certificate-name': 'web', 'notify.certmgr.io/application-ids': 'shop-frontend' },
      },
      data: { 'tls.crt': Buffer.from(crt.pem).toString('base64'), 'tls.key': Buffer.from(crt.keyPem).toString('base64') },
    } as never);

    const expirations = () => hook.requests.filter((r) => r.path === '/expiry');
    const req = await waitFor('the expiration at the webhook', () => expirations()[0], 60_000);
    const body = JSON.parse(req.body);
    expect(body.type).toBe('io.certmgr.notify.evt.policy.expiringcertificates.failed');
    const x509 = new X509Certificate(crt.pem);
    const issuer = x509.issuer.split('\n').filter(Boolean).join(', ');
    const id = certIdOf(certKey(issuer, crt.serial));
    // the spec's fields: name, applicationIds, notificationDate (explicit offset, fractions), threshold, ruleId
    expect(body.data.expiration).toEqual({
      // 10 days less the time to the scan: 9 whole days
      notificationName: 'Certificate expiring in 9 days',
      applicationIds: ['shop-frontend'],
      threshold: 14,
      ruleId: 2,
      notificationDate: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/),
      certificateRef: id,
      // the hub's additions (docs/expiry.md "Event fields")
      certificateName: 'web',
      namespace: 'shop',
      clusterName: 'e2e',
      notAfter: x509.validToDate.toISOString(),
      daysUntilExpiry: 9,
      dnsNames: ['web.example.com'],
    });
    // and the message: certificate name and id, serial number, issuer, application, days left, validity end
    expect(body.data.message).toBe(
      `Certificate shop/web (id ${id}, CN=web.example.com), serial number ${crt.serial}, issuer ${issuer}, application shop-frontend: ` +
        `expires in 9 days (9 days until expiration); valid until ${x509.validToDate.toISOString()}. Threshold 14 days (rule 2). ` +
        'Secret shop/web-tls, Certificate shop/web, cluster e2e.',
    );

    // two more complete scans: nothing more was accepted, nothing more delivered
    const metric = async (re: RegExp) => Number(re.exec(await (await fetch(`${svc.url}/metrics`)).text())?.[1] ?? 0);
    const scans = () => metric(/^certmgr_notify_expiry_company_scans_total\{outcome="scanned"\} (\d+)/m);
    const seen = await scans();
    await waitFor('two more expiry scans', async () => (await scans()) >= seen + 2, 30_000);
    expect(await metric(/^certmgr_notify_events_received_total\{type="evt\.policy\.expiringcertificates\.failed"\} (\d+)/m)).toBe(1);
    expect(expirations()).toHaveLength(1);
  });

  it('a bad filter applied with kubectl stays Stalled with the CEL error, and nothing is created', async () => {
    const kc = env.kubeConfig();
    const routers = async () =>
      (
        await svc
          .gql()
          .request<{ searchNotificationRoutingConfigurations: { nodes: { name: string }[] } }>(ops.SearchNotificationRoutingConfigurations)
      ).searchNotificationRoutingConfigurations.nodes.length;
    const before = await routers();
    await applyManifest(
      kc,
      router(NS, 'bad', {
        eventTypeId: 'certmgr-issuer-health-notification-config',
        filter: "data.nope == 'x'",
        providerRef: { name: 'hook' },
      }),
    );
    const cr = await new Kube(kc).waitCondition(
      'notificationrouters',
      'bad',
      NS,
      { status: 'True', type: 'Stalled', reason: 'InvalidFilter' },
      30_000,
    );
    const stalled = (cr.status as { conditions: { type: string; message: string }[] }).conditions.find((c) => c.type === 'Stalled');
    expect(stalled?.message).toMatch(/nope/);
    expect(await routers()).toBe(before);
  });
});

describe('serve --kube on without a cluster', () => {
  it('exits with a clear message', () => {
    const r = spawnSync(
      process.execPath,
      [
        join(import.meta.dirname, '../../bin/certmgr-notify.js'),
        'serve',
        '--kube',
        'on',
        '--port',
        '0',
        '--store',
        'sqlite::memory:',
        '--api-key',
        KEY,
      ],
      {
        env: { ...process.env, KUBECONFIG: '/nonexistent', HOME: mkdtempSync(join(tmpdir(), 'cmn-home-')), KUBERNETES_SERVICE_HOST: '' },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Kubernetes configuration/i);
  });
});
