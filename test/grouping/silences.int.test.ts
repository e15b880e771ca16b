/**
 * Grouping with a silence (docs/silences.md, step 4): during a silence a grouped router's new failures are recorded
 * SILENCED and join no group, while the recoveries of members whose group notification went out still reach the
 * group, so its incident resolves ("all recovered") instead of staying open for ever. Real service on SQLite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { parseSnapshot } from '../../src/grouping/snapshot.js';
import { certificateResourceActive, certificateResourceNotReady, CLUSTER_PROD } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { startTestService, type TestService, COMPANY_A } from '../support/service.js';
import { waitFor } from '../delivery/support.js';

const base = Date.parse('2026-03-01T10:00:00Z');
const cert = (state: 'notready' | 'active', i: number) => {
  const o = {
    clusterId: CLUSTER_PROD.id,
    clusterName: CLUSTER_PROD.name,
    issuerName: 'le-prod',
    namespace: 'shop',
    certificateName: `cert-${i}`,
    statusTransition: new Date(base + (state === 'active' ? 3_600_000 : 0) + i).toISOString(),
  };
  return state === 'notready' ? certificateResourceNotReady(o) : certificateResourceActive(o);
};

describe('a grouped router during a silence', () => {
  let hook: Receiver;
  let svc: TestService;
  beforeAll(async () => {
    hook = await startReceiver();
    svc = await startTestService('sqlite');
  });
  afterAll(async () => {
    await svc?.close();
    await hook?.close();
  });
  const post = async (events: unknown[]) => {
    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(events),
    });
    expect(res.status).toBe(202);
  };
  const deliveries = () => svc.store.listDeliveries(COMPANY_A, { limit: 1000 });

  it('silences new failures, lets the recoveries resolve the group', async () => {
    const { createWebhookIntegration: w } = await svc
      .gql()
      .request<{ createWebhookIntegration: { id: string } }>(
        `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
        { i: { name: 'hook', url: `${hook.url}/hook` } },
      );
    await svc.gql().request(ops.CreateNotificationRouter, {
      details: { name: 'grouped', eventTypeId: 'certmgr-cert-resource-health-notification-config' },
      filterConfig: { advancedFilterExpression: '' },
      integrationConfig: { integrationId: w.id },
      policyConfig: { groupBy: ['data.issuerName'], groupWait: '1s', groupInterval: '1s' },
    });

    await post([0, 1, 2].map((i) => cert('notready', i)));
    const first = await waitFor('the group notification', async () => {
      const ds = (await deliveries()).filter((d) => d.groupKey !== undefined && d.status === 'DELIVERED');
      return ds.length === 1 ? ds[0] : undefined;
    });
    expect(parseSnapshot(first.groupSnapshot!)!.group).toMatchObject({ firingCount: 3, allResolved: false });

    await svc.gql().request(`mutation($i: CreateSilenceInput!) { createSilence(input: $i) { id } }`, {
      i: { matcher: 'true', endsAt: new Date(Date.now() + 3_600_000).toISOString(), comment: 'maintenance' },
    });
    // a new failure during the silence: recorded SILENCED, in no group
    await post([cert('notready', 3)]);
    const silenced = await waitFor('the silenced failure', async () => (await deliveries()).find((d) => d.status === 'SILENCED'));
    expect(silenced.groupKey).toBeUndefined();
    // the three members recover during the silence: the group resolves
    await post([0, 1, 2].map((i) => cert('active', i)));
    const resolved = await waitFor('the "all recovered" notification', async () => {
      const ds = (await deliveries()).filter((d) => d.groupKey !== undefined && d.status === 'DELIVERED' && d.id !== first.id);
      return ds.length === 1 ? ds[0] : undefined;
    });
    expect(parseSnapshot(resolved.groupSnapshot!)!.group).toMatchObject({ allResolved: true, firingCount: 0, resolvedCount: 3 });
    expect(hook.requests).toHaveLength(2);
  });
});
