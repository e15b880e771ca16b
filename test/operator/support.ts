/**
 * Harness for the operator's integration tests: a real kube-apiserver (one per test file), the real service
 * in-process, our generated CRDs, and startOperator() with short timings. Logs of the operator are captured
 * so tests can assert that no secret value ever reaches them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { CoreV1Api, CustomObjectsApi, KubeConfig, loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import { API_VERSION, GROUP, KINDS, VERSION, crdName, type Condition } from '../../src/api/index.js';
import { crdFileName } from '../../src/api/crd.js';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';
import { startOperator, type OperatorOptions, type RunningOperator } from '../../src/operator/index.js';
import { applyManifest, ensureNamespace, errorCode, waitFor, waitForCrdsEstablished, type KubeEnv } from '../support/kube.js';
import { COMPANY_A, KEY_A, type TestService } from '../support/service.js';

export { COMPANY_A, KEY_A };

export async function installCrds(kc: KubeConfig): Promise<void> {
  for (const k of KINDS) {
    for (const doc of loadAllYaml(readFileSync(join(REPO_ROOT, 'crds', crdFileName(k)), 'utf8')))
      await applyManifest(kc, doc as KubernetesObject);
  }
  await waitForCrdsEstablished(
    kc,
    KINDS.map((k) => crdName(k)),
  );
}

/** A KubeConfig for `env`'s credentials that talks to `server` (e.g. a TCP proxy in front of the apiserver). */
export function kubeConfigVia(env: KubeEnv, server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'via', server, skipTLSVerify: true }],
    users: [{ name: 'admin', token: env.token }],
    contexts: [{ name: 'via', cluster: 'via', user: 'admin', namespace: 'default' }],
    currentContext: 'via',
  });
  return kc;
}

export interface CapturedLog {
  logger: Logger;
  lines: string[];
}

export function captureLogger(level = 'debug'): CapturedLog {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      if (process.env['CERTMGR_NOTIFY_TEST_LOGS']) process.stderr.write(chunk);
      cb();
    },
  });
  return { logger: pino({ level }, sink), lines };
}

/** Fast timings for tests (production defaults are minutes/seconds). */
export function testOperatorOptions(env: KubeEnv, svc: TestService, log: Logger, over: Partial<OperatorOptions> = {}): OperatorOptions {
  return {
    logger: log,
    kubeConfig: env.kubeConfig(),
    service: { url: svc.url, apiKey: KEY_A },
    resyncMs: 1_500,
    concurrency: 4,
    backoff: { baseMs: 50, maxMs: 2_000 },
    informerBackoff: { baseMs: 200, maxMs: 1_000 },
    leaderElection: { leaseNamespace: 'default', leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 300 },
    waits: { providerRetryMs: 1_000, secretRetryMs: 1_000, deletionRetryMs: 300, staleRetryMs: 300 },
    ...over,
  };
}

export async function startTestOperator(
  env: KubeEnv,
  svc: TestService,
  log: Logger,
  over: Partial<OperatorOptions> = {},
): Promise<RunningOperator> {
  const op = await startOperator(testOperatorOptions(env, svc, log, over));
  return op;
}

// ---------------------------------------------------------------------------------------------------------
// objects

export type Plural =
  'notificationproviders' | 'notificationrouters' | 'monitoringconfigs' | 'notificationtemplates' | 'notificationsilences';

export interface CR extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: { conditions?: Condition[]; observedGeneration?: number } & Record<string, unknown>;
}

export function provider(ns: string, name: string, spec: Record<string, unknown>): CR {
  return { apiVersion: API_VERSION, kind: 'NotificationProvider', metadata: { name, namespace: ns }, spec };
}
export function router(ns: string, name: string, spec: Record<string, unknown>): CR {
  return { apiVersion: API_VERSION, kind: 'NotificationRouter', metadata: { name, namespace: ns }, spec };
}
export function monitoringConfig(name: string, spec: Record<string, unknown>): CR {
  return { apiVersion: API_VERSION, kind: 'MonitoringConfig', metadata: { name }, spec };
}
export function secret(ns: string, name: string, stringData: Record<string, string>): KubernetesObject & { data: Record<string, string> } {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(stringData)) data[k] = Buffer.from(v).toString('base64');
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns }, data } as never;
}

export class Kube {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  constructor(readonly kc: KubeConfig) {
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  apply<T extends KubernetesObject>(o: T): Promise<T> {
    return applyManifest(this.kc, o);
  }

  /** Replace the spec (PUT): v1.20's beta server-side apply leaves nulls behind when a nested block is dropped. */
  async replaceSpec(plural: Plural, name: string, ns: string | undefined, spec: Record<string, unknown>): Promise<CR> {
    const cur = await this.get(plural, name, ns);
    if (!cur) throw new Error(`${plural} ${ns ?? ''}/${name} not found`);
    const body = { ...cur, spec };
    return (
      ns
        ? await this.custom.replaceNamespacedCustomObject({ group: GROUP, version: VERSION, plural, namespace: ns, name, body })
        : await this.custom.replaceClusterCustomObject({ group: GROUP, version: VERSION, plural, name, body })
    ) as CR;
  }

  ns(name: string): Promise<void> {
    return ensureNamespace(this.kc, name);
  }

  async get(plural: Plural, name: string, ns?: string): Promise<CR | undefined> {
    try {
      return (
        ns
          ? await this.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural, namespace: ns, name })
          : await this.custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural, name })
      ) as CR;
    } catch (e) {
      if (errorCode(e) === 404) return undefined;
      throw e;
    }
  }

  async delete(plural: Plural, name: string, ns?: string): Promise<void> {
    try {
      if (ns) await this.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural, namespace: ns, name });
      else await this.custom.deleteClusterCustomObject({ group: GROUP, version: VERSION, plural, name });
    } catch (e) {
      if (errorCode(e) !== 404) throw e;
    }
  }

  async deleteSecret(ns: string, name: string): Promise<void> {
    try {
      await this.core.deleteNamespacedSecret({ namespace: ns, name });
    } catch (e) {
      if (errorCode(e) !== 404) throw e;
    }
  }

  /** Wait until the Ready condition has `status` (and `reason`) for the current generation. */
  async waitCondition(
    plural: Plural,
    name: string,
    ns: string | undefined,
    want: { status: 'True' | 'False'; reason?: string; type?: string },
    timeoutMs = 20_000,
  ): Promise<CR> {
    const type = want.type ?? 'Ready';
    return waitFor(
      `${plural} ${ns ?? ''}/${name} ${type}=${want.status}${want.reason ? ` (${want.reason})` : ''}`,
      async () => {
        const o = await this.get(plural, name, ns);
        const c = o?.status?.conditions?.find((x) => x.type === type);
        if (!o || !c) return undefined;
        if (c.status !== want.status || (want.reason && c.reason !== want.reason)) return undefined;
        if (c.observedGeneration !== undefined && c.observedGeneration !== o.metadata?.generation) return undefined;
        return o;
      },
      { timeoutMs, intervalMs: 100 },
    );
  }

  waitReady(plural: Plural, name: string, ns?: string, timeoutMs?: number): Promise<CR> {
    return this.waitCondition(plural, name, ns, { status: 'True' }, timeoutMs);
  }

  waitGone(plural: Plural, name: string, ns?: string, timeoutMs = 20_000): Promise<true> {
    return waitFor(`${plural} ${ns ?? ''}/${name} deleted`, async () => (await this.get(plural, name, ns)) === undefined || undefined, {
      timeoutMs,
    });
  }

  async events(
    ns: string,
    name: string,
  ): Promise<{ reason?: string | undefined; message?: string | undefined; type?: string | undefined }[]> {
    const list = await this.core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` });
    return list.items.map((e) => ({ reason: e.reason, message: e.message, type: e.type }));
  }
}

export const managedBy = (kind: string, ns: string, name: string): string => `k8s:${kind}/${ns}/${name}`;

/** The service's view, straight from its store (secrets included: the API never returns them). */
export async function storeIntegrations(svc: TestService) {
  return svc.store.listIntegrations(COMPANY_A);
}
export async function storeRouters(svc: TestService) {
  return svc.store.listRouters(COMPANY_A);
}
