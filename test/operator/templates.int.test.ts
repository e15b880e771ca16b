/**
 * NotificationTemplate against a REAL kube-apiserver v1.20.2: with the admission webhook registered,
 * `kubectl apply` of a template whose part does not compile fails with the part and its position; a good one
 * reaches the service through the operator, a NotificationRouter's templateRef maps to its templateId, and the
 * router's notifications carry the rendered text (a loopback webhook receiver). Set CERTMGR_NOTIFY_KUBE_TESTS=0
 * to skip.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, VERSION } from '../../src/api/index.js';
import { startAdmissionWebhook, type RunningAdmissionWebhook } from '../../src/admission/index.js';
import type { RunningOperator } from '../../src/operator/index.js';
import { ensureKubeBinaries, ensureKubeTools, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { startTestService, type TestService } from '../support/service.js';
import { certDir, createTestCa, type TestCa } from '../admission/tls.js';
import { issuerNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { COMPANY_A, Kube, captureLogger, installCrds, provider, router, secret, startTestOperator, storeRouters } from './support.js';

const run = promisify(execFile);
const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const NS = 'default';
const WEBHOOK = 'validate.notify.certmgr.io';

const templateYaml = (name: string, slackText: string, webhookText = 'TPL {{ event.data.issuerName }} via {{ router.name }}') =>
  [
    `apiVersion: ${GROUP}/${VERSION}`,
    'kind: NotificationTemplate',
    `metadata: { name: ${name}, namespace: ${NS} }`,
    'spec:',
    '  parts:',
    '    default: { title: "{{ title }}" }',
    `    SLACK: { text: ${JSON.stringify(slackText)} }`,
    `    WEBHOOK: { text: ${JSON.stringify(webhookText)} }`,
    '',
  ].join('\n');

describe.skipIf(skip)('NotificationTemplate (real apiserver, admission webhook, operator)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let ca: TestCa;
  let certs: string;
  let wh: RunningAdmissionWebhook;
  let k: Kube;
  let op: RunningOperator;
  let kubectl: string;
  let tmp: string;
  let hooks: Receiver;

  const kubectlApply = async (yaml: string): Promise<{ ok: boolean; stdout: string; stderr: string }> => {
    const file = join(tmp, `m-${Date.now()}-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(file, yaml);
    try {
      const { stdout, stderr } = await run(kubectl, ['--kubeconfig', env.kubeconfigPath, 'apply', '-f', file]);
      return { ok: true, stdout, stderr };
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string };
      return { ok: false, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
    }
  };

  beforeAll(async () => {
    await ensureKubeBinaries();
    const logs = captureLogger();
    hooks = await startReceiver();
    const startWebhook = async (): Promise<void> => {
      ca = await createTestCa();
      certs = await certDir(await ca.issue());
      wh = await startAdmissionWebhook({
        port: 0,
        host: '127.0.0.1',
        certFile: join(certs, 'tls.crt'),
        keyFile: join(certs, 'tls.key'),
        logger: logs.logger,
      });
    };
    [env, svc, , { kubectl }, tmp] = await Promise.all([
      startKubeEnv(),
      startTestService('sqlite'),
      startWebhook(),
      ensureKubeTools(),
      mkdtemp(join(tmpdir(), 'cmn-templates-int-')),
    ]);
    k = new Kube(env.kubeConfig());
    await installCrds(k.kc);
    await k.kc.makeApiClient(AdmissionregistrationV1Api).createValidatingWebhookConfiguration({
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'certmgr-notify-templates-test' },
        webhooks: [
          {
            name: WEBHOOK,
            clientConfig: { url: `${wh.url}/validate`, caBundle: Buffer.from(ca.caPem).toString('base64') },
            rules: [
              {
                apiGroups: [GROUP],
                apiVersions: [VERSION],
                operations: ['CREATE', 'UPDATE'],
                resources: ['notificationtemplates'],
                scope: '*',
              },
            ],
            failurePolicy: 'Fail',
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            timeoutSeconds: 5,
          },
        ],
      },
    });
    // the apiserver picks the configuration up asynchronously
    await waitFor('the webhook to be called', async () => !(await kubectlApply(templateYaml('probe', '{{ x | nope }}'))).ok, {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    op = await startTestOperator(env, svc, logs.logger);
    await op.whenRunning();
  }, 10 * 60_000);

  afterAll(async () => {
    await op?.stop();
    await wh?.close();
    await svc?.close();
    await hooks?.close();
    await env?.stop();
    for (const d of [certs, ca?.dir, tmp]) if (d) await rm(d, { recursive: true, force: true });
  });

  it('kubectl apply of a template whose part does not compile fails with the part and its position', async () => {
    const bad = await kubectlApply(templateYaml('bad', 'line one\n  {{ cluster.name | nope }}'));
    expect(bad.ok).toBe(false);
    expect(bad.stderr).toContain(
      `admission webhook "${WEBHOOK}" denied the request: spec.parts.SLACK.text: line 2, column 3: undefined filter: nope`,
    );
    const include = await kubectlApply(templateYaml('bad2', 'ok', '{% include "secrets" %}'));
    expect(include.stderr).toContain('spec.parts.WEBHOOK.text: line 1, column 1: tag "include" is not allowed');
    expect(await k.get('notificationtemplates', 'bad', NS)).toBeUndefined();
    expect(await svc.store.listTemplates(COMPANY_A)).toEqual([]);
  });

  it('a good template reaches the service; a router with templateRef uses it for its notifications', async () => {
    const good = await kubectlApply(templateYaml('ops', ':fire: {{ summary }}'));
    expect(good.ok, good.stderr).toBe(true);
    const t = await k.waitReady('notificationtemplates', 'ops', NS);
    const templateId = t.status?.['templateId'] as string;
    const stored = await svc.store.getTemplate(COMPANY_A, templateId);
    expect(stored).toMatchObject({
      name: `${NS}/ops`,
      parts: { default: { title: '{{ title }}' }, SLACK: { text: ':fire: {{ summary }}' } },
      managedBy: `k8s:NotificationTemplate/${NS}/ops`,
    });

    await k.apply(secret(NS, 'hooks', { url: `${hooks.url}/hook` }));
    await k.apply(provider(NS, 'hook', { type: 'Webhook', webhook: { urlSecretRef: { name: 'hooks', key: 'url' } } }));
    await k.waitReady('notificationproviders', 'hook', NS);
    await k.apply(
      router(NS, 'issuers', {
        eventTypeId: 'certmgr-issuer-health-notification-config',
        providerRef: { name: 'hook' },
        templateRef: { name: 'ops' },
      }),
    );
    const r = await k.waitReady('notificationrouters', 'issuers', NS);
    const rec = (await storeRouters(svc)).find((x) => x.id === r.status?.['routerId']);
    expect(rec?.templateId).toBe(templateId);

    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([issuerNotReady({ issuerName: 'le-prod' })]),
    });
    expect(res.status).toBe(202);
    const got = await waitFor('the webhook notification', () => hooks.requests.find((x) => x.path === '/hook'), {
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    expect(JSON.parse(got.body).data.summary).toBe(`TPL le-prod via ${NS}/issuers`);

    // the template's deletion is not held up by the router: the router goes on with the default messages
    await k.delete('notificationtemplates', 'ops', NS);
    await waitFor('template gone from the service', async () => (await svc.store.getTemplate(COMPANY_A, templateId)) === null, {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    expect((await storeRouters(svc)).find((x) => x.id === r.status?.['routerId'])?.templateId).toBeNull();
  });
});
