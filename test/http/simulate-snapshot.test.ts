/**
 * simulateRouting uses the company's shared routing snapshot: it does not invalidate it on every call (which
 * would reload every router from the store and recompile the filters). It still shows the stored state: a
 * change made behind this process's back (another replica) shows at once, found by the fingerprint.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { issuerNotReady } from '../fixtures/events.js';
import { COMPANY_A, startTestService, type TestService } from '../support/service.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';
import { limitsFile } from '../support/limits.js';

const ISSUER = 'certmgr-issuer-health-notification-config';
const SIM = `query($e: EventInput!) { simulateRouting(event: $e) { routers { verdict router { name } } } }`;
type Sim = { simulateRouting: { routers: { verdict: string; router: { name: string } }[] } };

let svc: TestService;
let listRouterCalls = 0;
beforeAll(async () => {
  svc = await startTestService('sqlite', [...limitsFile({ deliveryWorkers: 0 })]);
  // the runtime shares this store object: count the loads of a company's routers (a snapshot rebuild)
  const real = svc.store.listRouters.bind(svc.store);
  svc.store.listRouters = (companyId: string) => {
    listRouterCalls++;
    return real(companyId);
  };
});
afterAll(async () => {
  await svc?.close();
});

async function evictionsDeleted(): Promise<number> {
  const text = await (await svc.rest('/metrics', { key: null })).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('certmgr_notify_routing_cache_evictions_total{cache="snapshots",reason="deleted"}'));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('simulateRouting and the routing snapshot', () => {
  it('repeated calls reuse the snapshot: no reload, no invalidation', async () => {
    const i = await svc.gql().request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
      name: 'pager',
      integrationKey: 'ik-0123456789abcdef',
    });
    await svc.gql().request(ops.CreateNotificationRouter, {
      details: { name: 'r1', eventTypeId: ISSUER },
      filterConfig: { advancedFilterExpression: "data.issuerName == 'vault'" },
      integrationConfig: { integrationId: i.createIncidentMgmtIntegration.id },
    });
    const first = await svc.gql().request<Sim>(SIM, { e: issuerNotReady({ issuerName: 'vault' }) });
    expect(first.simulateRouting.routers).toEqual([{ verdict: 'MATCHED', router: { name: 'r1' } }]);
    const loads = listRouterCalls;
    const evicted = await evictionsDeleted();
    for (let n = 0; n < 5; n++) {
      const r = await svc.gql().request<Sim>(SIM, { e: issuerNotReady({ issuerName: n % 2 ? 'vault' : 'other' }) });
      expect(r.simulateRouting.routers[0]!.verdict).toBe(n % 2 ? 'MATCHED' : 'FILTER_FALSE');
    }
    expect(listRouterCalls).toBe(loads);
    expect(await evictionsDeleted()).toBe(evicted);
  });

  it('still shows a change made behind the service (another replica) at once', async () => {
    const routers = await svc.store.listRouters(COMPANY_A);
    const now = Date.now() + 1000;
    await svc.store.createRouter({
      id: randomUUID(),
      companyId: COMPANY_A,
      name: 'r2-other-replica',
      eventTypeId: ISSUER,
      enabled: true,
      filter: '',
      integrationId: routers[0]!.integrationId,
      templateId: null,
      generation: 'ROUTER',
      ...ROUTER_POLICY_DEFAULTS,
      managedBy: null,
      createdAt: now,
      updatedAt: now,
    });
    const r = await svc.gql().request<Sim>(SIM, { e: issuerNotReady({ issuerName: 'x' }) });
    expect(r.simulateRouting.routers.map((x) => x.router.name).sort()).toEqual(['r1', 'r2-other-replica']);
  });
});
