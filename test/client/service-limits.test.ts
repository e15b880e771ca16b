/**
 * The operator's service client against the REAL service (loopback, SQLite) with the service's limits: a quota
 * of one router and one integration, and the production egress policy (loopback refused). Each refusal must
 * become a terminal (Stalled) condition naming the limit or the spec field — not a retry loop.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Reason } from '../../src/api/meta.js';
import type { SecretUse } from '../../src/operator/desired.js';
import { throwServiceFailure } from '../../src/operator/errors.js';
import { TerminalError } from '../../src/runtime/controller.js';
import { ServiceApiError } from '../../src/client/errors.js';
import { GraphQLServiceApi } from '../../src/client/service-api.js';
import { KEY_A, startTestService, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

const ISSUER = 'certmgr-issuer-health-notification-config';
const HOOK_URL = 'http://127.0.0.1:9/hooks/tok-0123456789abcdef';
const USES: SecretUse[] = [{ role: 'url', ref: { name: 'hook', key: 'url' }, field: 'spec.webhook.urlSecretRef' }];

/** What the reconciler would make of the failed call: the TerminalError (or the other error) it throws. */
async function conditionOf(call: Promise<unknown>, context: 'provider' | 'router'): Promise<TerminalError | Error> {
  const e = await call.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ServiceApiError);
  try {
    throwServiceFailure(e, context, USES);
  } catch (x) {
    return x as Error;
  }
  throw new Error('throwServiceFailure returned');
}

describe('operator ↔ service limits (real service)', () => {
  let svc: TestService;
  let api: GraphQLServiceApi;

  beforeAll(async () => {
    svc = await startTestService('sqlite', [...limitsFile({ maxRoutersPerCompany: 1, maxIntegrationsPerCompany: 1 })], {
      loopbackAllowed: false,
    });
    api = new GraphQLServiceApi({ url: svc.url, apiKey: KEY_A });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('a webhook URL the egress policy refuses → Stalled InvalidSecret naming the spec field and Secret, never the URL', async () => {
    const c = await conditionOf(
      api.createIntegration({
        type: 'WEBHOOK',
        name: 'ns/hook',
        enabled: true,
        managedBy: 'k8s:NotificationProvider/ns/hook',
        params: { webhookParams: { url: HOOK_URL } },
      }),
      'provider',
    );
    expect(c).toBeInstanceOf(TerminalError);
    expect((c as TerminalError).reason).toBe(Reason.InvalidSecret);
    expect(c.message).toMatch(
      /^spec\.webhook\.urlSecretRef \(Secret hook, key url\): the service refused the value: it points to a loopback address, which the egress policy refuses/,
    );
    expect(c.message).not.toContain('tok-0123456789abcdef');
    expect(c.message).not.toContain('127.0.0.1');
  });

  it('one integration and one router more than the quota → Stalled QuotaExceeded with the limit and count', async () => {
    const integ = await api.createIntegration({
      type: 'EMAIL',
      name: 'ns/mail',
      enabled: true,
      managedBy: 'k8s:NotificationProvider/ns/mail',
      params: { emailParams: { to: ['ops@example.com'] } },
    });
    const moreIntegrations = await conditionOf(
      api.createIntegration({
        type: 'EMAIL',
        name: 'ns/mail2',
        enabled: true,
        managedBy: 'k8s:NotificationProvider/ns/mail2',
        params: { emailParams: { to: ['ops@example.com'] } },
      }),
      'provider',
    );
    expect(moreIntegrations).toBeInstanceOf(TerminalError);
    expect((moreIntegrations as TerminalError).reason).toBe(Reason.QuotaExceeded);
    expect(moreIntegrations.message).toMatch(/at most 1 integrations \(maxIntegrationsPerCompany in --limits-file\) and this one has 1/);

    const router = {
      eventTypeId: ISSUER,
      filter: 'true',
      integrationId: integ.id,
      enabled: true,
      policy: { groupBy: [], groupWait: '30s', groupInterval: '5m', repeatInterval: null },
    };
    await api.createRouter({ ...router, name: 'ns/r1', managedBy: 'k8s:NotificationRouter/ns/r1' });
    const moreRouters = await conditionOf(
      api.createRouter({ ...router, name: 'ns/r2', managedBy: 'k8s:NotificationRouter/ns/r2' }),
      'router',
    );
    expect(moreRouters).toBeInstanceOf(TerminalError);
    expect((moreRouters as TerminalError).reason).toBe(Reason.QuotaExceeded);
    expect(moreRouters.message).toMatch(
      /^create router: quota exceeded: a company may have at most 1 routers \(maxRoutersPerCompany in --limits-file\) and this one has 1/,
    );

    // room again (a router deleted): the next attempt — the resync's — succeeds
    const first = (await api.listRouters()).find((r) => r.name === 'ns/r1')!;
    await api.deleteRouter(first.id);
    await expect(api.createRouter({ ...router, name: 'ns/r2', managedBy: 'k8s:NotificationRouter/ns/r2' })).resolves.toMatchObject({
      id: expect.any(String),
    });
  });
});
