/** Company A's key can neither read nor change nor delete company B's records. */
import { asAny } from '../support/any.js';
import { ClientError } from 'graphql-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { COMPANY_B, KEY_A, KEY_B, startTestService, type TestService } from '../support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite');
});
afterAll(async () => {
  await svc?.close();
});

const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return (e as ClientError).response.errors?.[0]?.extensions?.code;
  }
  throw new Error('expected an error');
};

describe('tenancy', () => {
  it('isolates integrations, routers and the monitoring configuration', async () => {
    const b = svc.gql(KEY_B);
    const a = svc.gql(KEY_A);
    const { createIncidentMgmtIntegration: bi } = await b.request<{ createIncidentMgmtIntegration: { id: string } }>(
      ops.CreateIncidentMgmtIntegration,
      {
        name: 'B pager',
        integrationKey: 'b-key-0123456789',
      },
    );
    const { createNotificationRouter: br } = await b.request<{ createNotificationRouter: { id: string } }>(ops.CreateNotificationRouter, {
      details: { name: 'B router', eventTypeId: 'certmgr-issuer-health-notification-config' },
      filterConfig: { advancedFilterExpression: '' },
      integrationConfig: { integrationId: bi.id },
    });

    // read
    const aInts = await a.request<{ integrations: { nodes: { id: string }[] } }>(ops.GetIntegrationsListData);
    expect(aInts.integrations.nodes.map((n) => n.id)).not.toContain(bi.id);
    const aRouters = await a.request<{ searchNotificationRoutingConfigurations: { nodes: { id: string }[] } }>(
      ops.SearchNotificationRoutingConfigurations,
    );
    expect(aRouters.searchNotificationRoutingConfigurations.nodes.map((n) => n.id)).not.toContain(br.id);
    expect(await a.request(`query($id: UUID!) { integration(id: $id) { id } }`, { id: bi.id })).toEqual({ integration: null });

    // change
    expect(
      await codeOf(
        a.request(ops.UpdateNotificationRouter, {
          updateNotificationRouterId: br.id,
          updateNotificationRouterConfigurationInput: { enabled: false },
        }),
      ),
    ).toBe('NOT_FOUND');
    expect(
      await codeOf(a.request(`mutation($id: UUID!) { updateIntegration(id: $id, input: { enabled: false }) { id } }`, { id: bi.id })),
    ).toBe('NOT_FOUND');
    // A cannot point its router at B's integration
    expect(
      await codeOf(
        a.request(ops.CreateNotificationRouter, {
          details: { name: 'steal', eventTypeId: 'certmgr-issuer-health-notification-config' },
          filterConfig: { advancedFilterExpression: '' },
          integrationConfig: { integrationId: bi.id },
        }),
      ),
    ).toBe('NOT_FOUND');

    // delete
    expect(await codeOf(a.request(ops.DeleteNotificationRouter, { ids: [br.id] }))).toBe('NOT_FOUND');
    expect(await codeOf(a.request(ops.DeleteIntegrations, { ids: [bi.id] }))).toBe('NOT_FOUND');

    // B's records are untouched
    const r = await svc.store.getRouter(COMPANY_B, br.id);
    expect(r?.enabled).toBe(true);
    expect(await svc.store.getIntegration(COMPANY_B, bi.id)).toMatchObject({ enabled: true, name: 'B pager' });

    // monitoring configuration is per company
    const put = await svc.rest(ops.MONITORING_CONFIG_PATH, {
      key: KEY_B,
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        inventoryMonitoringConfiguration: {
          inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
          enabled: false,
          thresholds: [5],
          applicationIds: [],
          includeUnassignedCertificates: false,
        },
      }),
    });
    expect(put.status).toBe(200);
    const aCfg = await (await svc.rest(ops.MONITORING_CONFIG_PATH, { key: KEY_A })).json().then(asAny);
    const bCfg = await (await svc.rest(ops.MONITORING_CONFIG_PATH, { key: KEY_B })).json().then(asAny);
    expect(aCfg.configuration.enabled).toBe(true);
    expect(bCfg.configuration.enabled).toBe(false);
    expect(aCfg.id).not.toBe(bCfg.id);
    expect(bCfg.companyId).toBe(COMPANY_B);
  });
});
