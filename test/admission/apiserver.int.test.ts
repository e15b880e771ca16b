/**
 * The admission webhook behind a REAL kube-apiserver v1.20.2: a ValidatingWebhookConfiguration pointing at
 * https://127.0.0.1:<port>/validate with a test CA in `caBundle` (failurePolicy Fail, so a webhook that is
 * not called would show). Creating or updating a NotificationRouter to a filter that does not compile is
 * rejected with the compile error; `kubectl apply` prints it. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AdmissionregistrationV1Api, type V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, VERSION } from '../../src/api/index.js';
import { kubeStatus } from '../../src/kube/errors.js';
import { startAdmissionWebhook, type RunningAdmissionWebhook } from '../../src/admission/index.js';
import { ensureKubeBinaries, ensureKubeTools, errorCode, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { Kube, captureLogger, installCrds, router, type CapturedLog } from '../operator/support.js';
import { certDir, createTestCa, type TestCa } from './tls.js';

const run = promisify(execFile);
const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const NS = 'default';
const ISSUER = 'certmgr-issuer-health-notification-config';
const WEBHOOK = 'validate.notify.certmgr.io';
const VWC = 'certmgr-notify-test';
const BAD_FILTER = 'type.endsWith(';
const BAD_MESSAGE = "spec.filter: line 1, column 15: syntax error: unexpected end of expression, expected ')' to close '(' at 1:14";

describe.skipIf(skip)('admission webhook (real apiserver)', () => {
  let env: KubeEnv;
  let ca: TestCa;
  let certs: string;
  let wh: RunningAdmissionWebhook;
  let k: Kube;
  let admission: AdmissionregistrationV1Api;
  let logs: CapturedLog;
  let kubectl: string;
  let tmp: string;

  const vwc = (reviewVersions: string[]): V1ValidatingWebhookConfiguration => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: VWC },
    webhooks: [
      {
        name: WEBHOOK,
        clientConfig: { url: `${wh.url}/validate`, caBundle: Buffer.from(ca.caPem).toString('base64') },
        rules: [
          {
            apiGroups: [GROUP],
            apiVersions: [VERSION],
            operations: ['CREATE', 'UPDATE'],
            resources: ['notificationrouters', 'notificationproviders', 'monitoringconfigs', 'notificationsilences'],
            scope: '*',
          },
        ],
        failurePolicy: 'Fail',
        sideEffects: 'None',
        matchPolicy: 'Equivalent',
        admissionReviewVersions: reviewVersions,
        timeoutSeconds: 5,
      },
    ],
  });

  /** The Status message of a rejected create (undefined when it was accepted). */
  const createRouter = async (
    name: string,
    filter: string,
    dryRun = false,
  ): Promise<{ code?: number | undefined; message?: string | undefined }> => {
    try {
      await k.custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'notificationrouters',
        namespace: NS,
        body: router(NS, name, { eventTypeId: ISSUER, providerRef: { name: 'p' }, filter }),
        ...(dryRun ? { dryRun: 'All' } : {}),
      });
      return {};
    } catch (e) {
      return { code: errorCode(e), message: kubeStatus(e)?.message };
    }
  };

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
    logs = captureLogger();
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
    [env, , { kubectl }, tmp] = await Promise.all([
      startKubeEnv(),
      startWebhook(),
      ensureKubeTools(),
      mkdtemp(join(tmpdir(), 'cmn-webhook-int-')),
    ]);
    k = new Kube(env.kubeConfig());
    admission = k.kc.makeApiClient(AdmissionregistrationV1Api);
    await installCrds(k.kc);

    // stored before the webhook exists: a bad filter with a finalizer (the operator's, as if it had seen it)
    await k.apply({
      ...router(NS, 'stored-bad', { eventTypeId: ISSUER, providerRef: { name: 'p' }, filter: '1 +' }),
      metadata: { name: 'stored-bad', namespace: NS, finalizers: ['notify.certmgr.io/finalizer'] },
    });

    await admission.createValidatingWebhookConfiguration({ body: vwc(['v1', 'v1beta1']) });
    // the apiserver picks the configuration up asynchronously
    await waitFor('the webhook to be called', async () => (await createRouter('probe', BAD_FILTER, true)).code === 400, {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
  }, 10 * 60_000);

  afterAll(async () => {
    await wh?.close();
    await env?.stop();
    for (const d of [certs, ca?.dir, tmp]) if (d) await rm(d, { recursive: true, force: true });
  });

  it('rejects a NotificationRouter whose filter does not compile, with the compile error', async () => {
    const r = await createRouter('bad', BAD_FILTER);
    expect(r.code).toBe(400);
    expect(r.message).toBe(`admission webhook "${WEBHOOK}" denied the request: ${BAD_MESSAGE}`);
    expect(await k.get('notificationrouters', 'bad', NS)).toBeUndefined();
    expect(
      logs.lines.some(
        (l) => l.includes('"admission denied"') && l.includes('"name":"bad"') && l.includes('"review":"admission.k8s.io/v1"'),
      ),
    ).toBe(true);
  });

  it('accepts a good one; an update to a bad filter is rejected and the object is unchanged', async () => {
    expect(await createRouter('good', "type.endsWith('.notready')")).toEqual({});
    const stored = await k.get('notificationrouters', 'good', NS);
    expect(stored?.spec?.['filter']).toBe("type.endsWith('.notready')");

    await expect(k.replaceSpec('notificationrouters', 'good', NS, { ...stored!.spec, filter: "data.nope == 'x'" })).rejects.toSatisfy(
      (e) =>
        errorCode(e) === 400 &&
        kubeStatus(e)?.message ===
          `admission webhook "${WEBHOOK}" denied the request: spec.filter: line 1, column 6: event data of ${ISSUER} has no field 'nope'`,
    );
    expect((await k.get('notificationrouters', 'good', NS))?.spec?.['filter']).toBe("type.endsWith('.notready')");

    // a good update goes through
    const updated = await k.replaceSpec('notificationrouters', 'good', NS, { ...stored!.spec, filter: "type == 'x.notready'" });
    expect(updated.spec?.['filter']).toBe("type == 'x.notready'");
  });

  it('kubectl apply of a bad filter fails with the compile error; a warning for an ignored MonitoringConfig', async () => {
    const manifest = (filter: string) =>
      [
        `apiVersion: ${GROUP}/${VERSION}`,
        'kind: NotificationRouter',
        `metadata: { name: applied, namespace: ${NS} }`,
        'spec:',
        `  eventTypeId: ${ISSUER}`,
        '  providerRef: { name: p }',
        `  filter: ${JSON.stringify(filter)}`,
        '',
      ].join('\n');
    const bad = await kubectlApply(manifest(BAD_FILTER));
    expect(bad.ok).toBe(false);
    expect(bad.stderr).toContain(`admission webhook "${WEBHOOK}" denied the request: ${BAD_MESSAGE}`);
    const good = await kubectlApply(manifest("type.endsWith('.ready')"));
    expect(good.ok, good.stderr).toBe(true);
    expect(good.stdout).toMatch(/notificationrouter.notify.certmgr.io\/applied created/);

    const mc = await kubectlApply(
      `apiVersion: ${GROUP}/${VERSION}\nkind: MonitoringConfig\nmetadata: { name: other }\nspec: { thresholds: [10] }\n`,
    );
    expect(mc.ok, mc.stderr).toBe(true);
    expect(mc.stderr).toContain('Warning: MonitoringConfig "other" is ignored: only the one named "default" is applied');
  });

  it('kubectl apply of a NotificationSilence whose matcher does not compile fails with its position', async () => {
    const manifest = (matcher: string) =>
      [
        `apiVersion: ${GROUP}/${VERSION}`,
        'kind: NotificationSilence',
        `metadata: { name: maintenance, namespace: ${NS} }`,
        'spec:',
        `  matcher: ${JSON.stringify(matcher)}`,
        `  eventTypeId: ${ISSUER}`,
        '  endsAt: "2030-01-01T02:00:00Z"',
        '  comment: ingress upgrade',
        '',
      ].join('\n');
    const bad = await kubectlApply(manifest("data.issuerName == 'x' && data.nope"));
    expect(bad.ok).toBe(false);
    expect(bad.stderr).toContain(
      `admission webhook "${WEBHOOK}" denied the request: spec.matcher: line 1, column 32: event data of ${ISSUER} has no field 'nope'`,
    );
    const good = await kubectlApply(manifest("data.issuerName == 'x'"));
    expect(good.ok, good.stderr).toBe(true);
    expect(good.stdout).toMatch(/notificationsilence.notify.certmgr.io\/maintenance created/);
  });

  it('an object stored with a bad filter stays editable (metadata) and deletable (finalizer removal)', async () => {
    const labelled = await k.apply({
      ...router(NS, 'stored-bad', { eventTypeId: ISSUER, providerRef: { name: 'p' }, filter: '1 +' }),
      metadata: { name: 'stored-bad', namespace: NS, labels: { team: 'a' }, finalizers: ['notify.certmgr.io/finalizer'] },
    });
    expect(labelled.metadata?.labels).toEqual({ team: 'a' });
    // but its spec cannot be changed to another bad filter
    await expect(
      k.replaceSpec('notificationrouters', 'stored-bad', NS, { eventTypeId: ISSUER, providerRef: { name: 'p' }, filter: '1 + +' }),
    ).rejects.toSatisfy((e) => errorCode(e) === 400);
    await k.delete('notificationrouters', 'stored-bad', NS);
    // the operator removes its finalizer: an UPDATE with an unchanged spec
    await k.custom.patchNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'notificationrouters',
      namespace: NS,
      name: 'stored-bad',
      body: [{ op: 'remove', path: '/metadata/finalizers' }],
    });
    await k.waitGone('notificationrouters', 'stored-bad', NS, 10_000);
  });

  it('answers admission.k8s.io/v1beta1 reviews (older clusters)', async () => {
    const cur = await admission.readValidatingWebhookConfiguration({ name: VWC });
    await admission.replaceValidatingWebhookConfiguration({
      name: VWC,
      // a read object always has its resourceVersion
      body: { ...vwc(['v1beta1']), metadata: { name: VWC, resourceVersion: cur.metadata!.resourceVersion! } },
    });
    await waitFor(
      'a v1beta1 review',
      async () => {
        const r = await createRouter(`probe-${Date.now()}`, BAD_FILTER, true);
        return (
          r.code === 400 && r.message?.endsWith(BAD_MESSAGE) && logs.lines.some((l) => l.includes('"review":"admission.k8s.io/v1beta1"'))
        );
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(await createRouter('good-v1beta1', 'true')).toEqual({});
  });

  it('with failurePolicy Fail, writes are refused while the webhook is down (so the checks above really ran through it)', async () => {
    await wh.close();
    const r = await createRouter('while-down', 'true');
    expect(r.code).toBe(500);
    expect(r.message).toMatch(/failed calling webhook "validate\.notify\.certmgr\.io"/);
  });
});
