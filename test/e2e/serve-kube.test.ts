/**
 * The whole product loop in one `certmgr-notify serve --kube on` process against the real kube-apiserver:
 * CRs applied with the Kubernetes API become records in the service (through its own API), and an event sent
 * to the service is delivered to the provider the CRs describe. Also: `--kube on` without a cluster fails clearly.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { issuerNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { Kube, installCrds, provider, router, secret } from '../operator/support.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, startKubeEnv, type KubeEnv } from '../support/kube.js';
import { startServiceProcess, waitFor, type ServiceProcess } from './service-process.js';

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
        '--lease-duration',
        '3000',
        '--renew-deadline',
        '2000',
        '--retry-period',
        '500',
        '--lease-namespace',
        'default',
        '--resync-period',
        '5000',
        '--health-grace-period',
        '500',
        '--cluster-name',
        'e2e',
        '--egress-allow',
        '127.0.0.1/32',
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

  it('standalone: the inventory goes to its own POST /v1/inventory like an agent; a service without it (404) is logged once and blocks nothing', async () => {
    const unsupported = 'does not accept inventory reports';
    const accepted = 'accepted the first inventory report';
    await waitFor(
      'the reporter asked its own service',
      () => svc.output().includes(unsupported) || svc.output().includes(accepted),
      30_000,
    );
    // until the hub side of the inventory merges this service answers 404; after, it accepts
    if (!svc.output().includes(accepted)) expect(svc.output().split(unsupported).length - 1).toBe(1);
  });

  it('a bad filter applied with kubectl stays Stalled with the CEL error, and nothing is created', async () => {
    const kc = env.kubeConfig();
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
    const list = await svc
      .gql()
      .request<{ searchNotificationRoutingConfigurations: { nodes: { name: string }[] } }>(ops.SearchNotificationRoutingConfigurations);
    expect(list.searchNotificationRoutingConfigurations.nodes).toHaveLength(1);
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
