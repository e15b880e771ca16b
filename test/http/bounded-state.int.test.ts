/**
 * Bounded state: per-company quotas checked atomically with the create, id lists of bulk deletes
 * deduplicated, capped and checked with one query, routing caches that shrink when routers are deleted.
 * Real service on loopback, both engines.
 */
import { randomUUID } from 'node:crypto';
import { ClientError } from 'graphql-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { issuerActive } from '../fixtures/events.js';
import { KEY_A, KEY_B, startTestService, type StoreKind, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

const FAMILY = 'certmgr-issuer-health-notification-config';

type Gql = ReturnType<TestService['gql']>;

async function errorOf(p: Promise<unknown>): Promise<{ message: string; extensions: Record<string, unknown> }> {
  try {
    await p;
  } catch (e) {
    const first = (e as ClientError).response?.errors?.[0];
    if (!first) throw e;
    return first as unknown as { message: string; extensions: Record<string, unknown> };
  }
  throw new Error('expected an error');
}

const createIntegration = (g: Gql, name: string) =>
  g
    .request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
      name,
      integrationKey: 'key-0123456789abcdef',
    })
    .then((r) => r.createIncidentMgmtIntegration.id);

const createRouter = (g: Gql, integrationId: string, filter = '', name = 'r') =>
  g
    .request<{ createNotificationRouter: { id: string } }>(ops.CreateNotificationRouter, {
      details: { name, eventTypeId: FAMILY },
      filterConfig: { advancedFilterExpression: filter },
      integrationConfig: { integrationId },
    })
    .then((r) => r.createNotificationRouter.id);

const listRouters = (g: Gql) =>
  g
    .request<{ searchNotificationRoutingConfigurations: { nodes: { id: string }[] } }>(ops.SearchNotificationRoutingConfigurations)
    .then((r) => r.searchNotificationRoutingConfigurations.nodes);
const listIntegrations = (g: Gql) =>
  g.request<{ integrations: { nodes: { id: string }[] } }>(ops.GetIntegrationsListData).then((r) => r.integrations.nodes);

async function metric(svc: TestService, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${svc.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').pop()) : NaN;
}

describe.each(['sqlite', 'postgres'] as StoreKind[])('bounded state (%s)', (kind) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService(kind, [...limitsFile({ maxRoutersPerCompany: 5, maxIntegrationsPerCompany: 3 })]);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('integrations per company: one more than the quota is refused with QUOTA_EXCEEDED naming the limit and count', async () => {
    const a = svc.gql(KEY_A);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await createIntegration(a, `i${i}`));
    const err = await errorOf(createIntegration(a, 'one too many'));
    expect(err.extensions).toMatchObject({ code: 'QUOTA_EXCEEDED', quota: 'maxIntegrationsPerCompany', limit: 3, count: 3 });
    expect(err.message).toMatch(/at most 3 integrations \(maxIntegrationsPerCompany in --limits-file\) and this one has 3/);
    expect(await listIntegrations(a)).toHaveLength(3);
    // freeing one makes room again
    await a.request(ops.DeleteIntegrations, { ids: [ids[2]] });
    ids[2] = await createIntegration(a, 'again');
    expect(await listIntegrations(a)).toHaveLength(3);
  });

  it('quotas are per company and hold under concurrent creates (no overshoot)', async () => {
    const b = svc.gql(KEY_B);
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => createIntegration(b, `b${i}`)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (const r of results.filter((x) => x.status === 'rejected'))
      expect(((r as PromiseRejectedResult).reason as ClientError).response.errors?.[0]?.extensions?.code).toBe('QUOTA_EXCEEDED');
    expect(await listIntegrations(b)).toHaveLength(3);

    const integ = (await listIntegrations(b))[0]!.id;
    const routers = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => createRouter(b, integ, `data.issuerName == 'c${i}'`)));
    expect(routers.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    expect(await listRouters(b)).toHaveLength(5);
    const err = await errorOf(createRouter(b, integ));
    expect(err.extensions).toMatchObject({ code: 'QUOTA_EXCEEDED', quota: 'maxRoutersPerCompany', limit: 5, count: 5 });
    expect(err.message).toMatch(/at most 5 routers/);
    // company A is not affected by B's full quota
    const aInteg = (await listIntegrations(svc.gql(KEY_A)))[0]!.id;
    const ar = await createRouter(svc.gql(KEY_A), aInteg);
    await svc.gql(KEY_A).request(ops.DeleteNotificationRouter, { ids: [ar] });
    // clean up B's routers for the following tests
    await b.request(ops.DeleteNotificationRouter, { ids: (await listRouters(b)).map((r) => r.id) });
  });

  it('bulk deletes: more than 100 distinct ids are refused naming the cap; duplicates count once', async () => {
    const a = svc.gql(KEY_A);
    const many = Array.from({ length: 101 }, () => randomUUID());
    for (const [doc, field] of [
      [ops.DeleteNotificationRouter, 'ids'],
      [ops.DeleteIntegrations, 'ids'],
    ] as const) {
      const err = await errorOf(a.request(doc, { ids: many }));
      expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
      expect(err.message).toMatch(/at most 100 distinct ids per call, got 101/);
    }
    // 20,000 copies of one id (~780 KB, under the body limit): one distinct id, deleted once
    const integ = (await listIntegrations(a))[0]!.id;
    const r = await createRouter(a, integ);
    const res = await a.request<{ deleteNotificationRouter: { ids: string[] } }>(ops.DeleteNotificationRouter, {
      ids: Array(20_000).fill(r),
    });
    expect(res.deleteNotificationRouter.ids).toEqual([r]);
    // all or nothing still: one missing id fails the call and deletes nothing
    const r2 = await createRouter(a, integ);
    const missing = randomUUID();
    const err = await errorOf(a.request(ops.DeleteNotificationRouter, { ids: [r2, missing, r2] }));
    expect(err.extensions).toMatchObject({ code: 'NOT_FOUND', ids: [missing] });
    expect((await listRouters(a)).map((x) => x.id)).toContain(r2);
    await a.request(ops.DeleteNotificationRouter, { ids: [r2] });
  });

  it('compiled filters of deleted routers leave the cache; simulateRouting does not make it grow', async () => {
    const a = svc.gql(KEY_A);
    const integ = (await listIntegrations(a))[0]!.id;
    const entries = () => metric(svc, 'certmgr_notify_routing_cache_entries', 'cache="filters"');
    const base = await entries();
    for (let round = 0; round < 4; round++) {
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push(await createRouter(a, integ, `data.issuerName == '${round}-${i}-${'x'.repeat(1_750)}'`));
      // simulateRouting compiles every router of the company, disabled ones too
      const sim = await a.request<{ simulateRouting: { routers: unknown[] } }>(
        `query($e: EventInput!) { simulateRouting(event: $e) { routers { verdict } } }`,
        { e: issuerActive() },
      );
      expect(sim.simulateRouting.routers).toHaveLength(5);
      expect(await entries()).toBe(base + 5);
      await a.request(ops.DeleteNotificationRouter, { ids });
      expect(await entries()).toBeLessThanOrEqual(base + 5);
    }
    expect(await entries()).toBe(base);
  });
});
