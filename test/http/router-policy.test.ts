/** A router's grouping and reminders through GraphQL: stored, returned normalized, validated with the field named. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { startTestService, type TestService } from '../support/service.js';
import { gqlError } from '../support/graphql.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite');
});
afterAll(async () => {
  await svc?.close();
});

const POLICY = 'notificationRouterPolicyConfig { groupBy groupWait groupInterval repeatInterval }';
const GetRouter = `query ($id: UUID!) { notificationRouter(id: $id) { id ${POLICY} } }`;
type Policy = { groupBy: string[]; groupWait: string; groupInterval: string; repeatInterval: string | null };

async function newIntegration() {
  const r = await svc.gql().request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
    name: 'i',
    integrationKey: 'PDKEY-0123456789',
  });
  return r.createIncidentMgmtIntegration.id;
}

const create = (integrationId: string, policyConfig?: Record<string, unknown>) =>
  svc.gql().request<{ createNotificationRouter: { id: string } }>(ops.CreateNotificationRouter, {
    details: { name: 'r', eventTypeId: 'certmgr-issuer-health-notification-config' },
    filterConfig: { advancedFilterExpression: '' },
    integrationConfig: { integrationId },
    ...(policyConfig ? { policyConfig } : {}),
  });

const policyOf = async (id: string) =>
  (await svc.gql().request<{ notificationRouter: { notificationRouterPolicyConfig: Policy } }>(GetRouter, { id })).notificationRouter
    .notificationRouterPolicyConfig;

const countRouters = async () =>
  (await svc.gql().request<{ searchNotificationRoutingConfigurations: { nodes: unknown[] } }>(ops.SearchNotificationRoutingConfigurations))
    .searchNotificationRoutingConfigurations.nodes.length;

describe('router policy', () => {
  it('defaults to no grouping and no reminders', async () => {
    const { createNotificationRouter: r } = await create(await newIntegration());
    expect(await policyOf(r.id)).toEqual({ groupBy: [], groupWait: '30s', groupInterval: '5m', repeatInterval: null });
  });

  it('stores grouping and reminders, normalized, and updates or clears them', async () => {
    const { createNotificationRouter: r } = await create(await newIntegration(), {
      groupBy: ['data.clusterId', 'data.issuerName'],
      groupWait: '90s',
      groupInterval: '60m',
      repeatInterval: '1d',
    });
    expect(await policyOf(r.id)).toEqual({
      groupBy: ['data.clusterId', 'data.issuerName'],
      groupWait: '1m30s',
      groupInterval: '1h',
      repeatInterval: '1d',
    });
    await svc.gql().request(ops.UpdateNotificationRouter, {
      updateNotificationRouterId: r.id,
      updateNotificationRouterConfigurationInput: { groupBy: [], repeatInterval: '' },
    });
    expect(await policyOf(r.id)).toEqual({ groupBy: [], groupWait: '1m30s', groupInterval: '1h', repeatInterval: null });
  });

  it('refuses a bad policy naming the field, creating nothing', async () => {
    const id = await newIntegration();
    const before = await countRouters();
    const err = await gqlError(create(id, { groupBy: ['data.issuerName', 'data.nope'] }));
    expect(err.extensions.code).toBe('BAD_USER_INPUT');
    expect(err.extensions.field).toBe('policyConfig.groupBy[1]');
    expect(err.message).toMatch(/data\.nope/);
    const err2 = await gqlError(create(id, { repeatInterval: '10s' }));
    expect(err2.extensions.field).toBe('policyConfig.repeatInterval');
    expect(await countRouters()).toBe(before);
  });

  it('refuses a bad update naming the field, changing nothing', async () => {
    const { createNotificationRouter: r } = await create(await newIntegration(), { groupBy: ['data.issuerName'] });
    const err = await gqlError(
      svc.gql().request(ops.UpdateNotificationRouter, {
        updateNotificationRouterId: r.id,
        updateNotificationRouterConfigurationInput: { groupWait: 'later' },
      }),
    );
    expect(err.extensions.field).toBe('updateNotificationRouterConfigurationInput.groupWait');
    expect((await policyOf(r.id)).groupWait).toBe('30s');
  });
});
