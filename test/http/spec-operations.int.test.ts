/**
 * Every operation of the spec, verbatim, with graphql-request (GraphQL) and fetch (REST), against the started
 * service, on SQLite and on PostgreSQL.
 */
import { asAny } from '../support/any.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { COMPANY_A, startTestService, type StoreKind, type TestService } from '../support/service.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each<StoreKind>(['sqlite', 'postgres'])('spec operations on %s', (kind) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService(kind);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('GET then PUT the CERTIFICATE_EXPIRATION monitoring configuration', async () => {
    const get1 = await svc.rest(ops.MONITORING_CONFIG_PATH);
    expect(get1.status).toBe(200);
    const def = await get1.json().then(asAny);
    expect(def).toEqual({
      id: expect.stringMatching(UUID),
      companyId: COMPANY_A,
      configuration: {
        inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
        enabled: true,
        thresholds: [30, 14, 7],
        applicationIds: [],
        includeUnassignedCertificates: true,
        rules: [
          { ruleId: 1, threshold: 30 },
          { ruleId: 2, threshold: 14 },
          { ruleId: 3, threshold: 7 },
        ],
      },
    });
    // stable id before any PUT
    expect((await (await svc.rest(ops.MONITORING_CONFIG_PATH)).json().then(asAny)).id).toBe(def.id);

    const put = await svc.rest(ops.MONITORING_CONFIG_PATH, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        inventoryMonitoringConfiguration: {
          inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
          enabled: true,
          thresholds: [60, 21],
          applicationIds: ['app-1', 'app-2'],
          includeUnassignedCertificates: false,
        },
      }),
    });
    expect(put.status).toBe(200);
    const body = await put.json().then(asAny);
    expect(body).toEqual({
      id: def.id,
      companyId: COMPANY_A,
      configuration: {
        inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
        enabled: true,
        thresholds: [60, 21],
        applicationIds: ['app-1', 'app-2'],
        includeUnassignedCertificates: false,
        rules: [
          { ruleId: 1, threshold: 60 },
          { ruleId: 2, threshold: 21 },
        ],
      },
    });
    expect(await (await svc.rest(ops.MONITORING_CONFIG_PATH)).json().then(asAny)).toEqual(body);

    // empty thresholds are allowed ("May be empty"), and a GET body's configuration can be sent back as is
    const back = { ...body.configuration, thresholds: [], rules: [] };
    const put2 = await svc.rest(ops.MONITORING_CONFIG_PATH, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ inventoryMonitoringConfiguration: back }),
    });
    expect(put2.status).toBe(200);
    expect((await put2.json().then(asAny)).configuration.thresholds).toEqual([]);
  });

  it('runs the GraphQL operations end to end: integration, routers of both generations, deletes', async () => {
    const gql = svc.gql();
    const created = await gql.request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
      name: 'On-call',
      integrationKey: 'R0UTINGKEY0123456789abcdef012345',
    });
    const integrationId = created.createIncidentMgmtIntegration.id;
    expect(integrationId).toMatch(UUID);

    const list = await gql.request<{ integrations: { nodes: { id: string; name: string; enabled: boolean }[] } }>(
      ops.GetIntegrationsListData,
    );
    expect(list.integrations.nodes).toContainEqual({ id: integrationId, name: 'On-call', enabled: true });

    const filter =
      "type.endsWith('.notready') && (data.clusterId == '0b5c1d4e-8a7f-4c2e-9d1a-3f6b2e7c8a90' || data.clusterId == '7e3a9f21-4b6c-4d8e-a1f2-5c9b0d3e6f74')";
    const router = await gql.request<{
      createNotificationRouter: {
        id: string;
        notificationRouterIntegrationConfig: { notificationRouterIntegrationID: string; notificationRouterTemplateID: string | null };
        notificationRouterFilterConfig: { advancedFilterExpression: string };
      };
    }>(ops.CreateNotificationRouter, {
      details: { name: 'Issuer outages in prod', eventTypeId: 'certmgr-issuer-health-notification-config' },
      filterConfig: { advancedFilterExpression: filter },
      integrationConfig: { integrationId },
    });
    const routerId = router.createNotificationRouter.id;
    expect(routerId).toMatch(UUID);
    expect(router.createNotificationRouter.notificationRouterIntegrationConfig).toEqual({
      notificationRouterIntegrationID: integrationId,
      notificationRouterTemplateID: null,
    });
    expect(router.createNotificationRouter.notificationRouterFilterConfig).toEqual({ advancedFilterExpression: filter });

    const older = await gql.request<{ createNotificationRoutingConfiguration: { id: string; enabled: boolean } }>(
      ops.CreateNotificationRoutingConfiguration,
      {
        name: 'Expiry for app-1',
        eventTypeId: 'cert-expiry-ext-notification-config',
        integrationId,
        advancedFilterExpression: "'app-1' in data.applicationIds",
      },
    );
    const olderId = older.createNotificationRoutingConfiguration.id;

    const search = await gql.request<{ searchNotificationRoutingConfigurations: { nodes: unknown[] } }>(
      ops.SearchNotificationRoutingConfigurations,
    );
    expect(search.searchNotificationRoutingConfigurations.nodes).toEqual(
      expect.arrayContaining([
        {
          id: routerId,
          name: 'Issuer outages in prod',
          eventType: { id: 'certmgr-issuer-health-notification-config', displayName: 'Issuer resource health' },
          enabled: true,
          notificationRouterFilterConfig: { advancedFilterExpression: filter },
        },
        {
          id: olderId,
          name: 'Expiry for app-1',
          eventType: { id: 'cert-expiry-ext-notification-config', displayName: 'Certificate expiration' },
          enabled: true,
          notificationRouterFilterConfig: { advancedFilterExpression: "'app-1' in data.applicationIds" },
        },
      ]),
    );

    const upd = await gql.request<{ updateNotificationRouter: { id: string; enabled: boolean } }>(ops.UpdateNotificationRouter, {
      updateNotificationRouterId: routerId,
      updateNotificationRouterConfigurationInput: { enabled: false },
    });
    expect(upd.updateNotificationRouter).toEqual({ id: routerId, enabled: false });

    const upd2 = await gql.request<{ updateNotificationRoutingConfiguration: { id: string; enabled: boolean } }>(
      ops.UpdateNotificationRoutingConfiguration,
      { id: olderId, enabled: false },
    );
    expect(upd2.updateNotificationRoutingConfiguration).toEqual({ id: olderId, enabled: false });

    const del = await gql.request<{ deleteNotificationRouter: { ids: string[] } }>(ops.DeleteNotificationRouter, {
      ids: [routerId, olderId],
    });
    expect(del.deleteNotificationRouter.ids.sort()).toEqual([routerId, olderId].sort());
    const after = await gql.request<{ searchNotificationRoutingConfigurations: { nodes: { id: string }[] } }>(
      ops.SearchNotificationRoutingConfigurations,
    );
    expect(after.searchNotificationRoutingConfigurations.nodes.map((n) => n.id)).not.toContain(routerId);

    const delI = await gql.request<{ deleteIntegrations: { ids: string[] } }>(ops.DeleteIntegrations, { ids: [integrationId] });
    expect(delI.deleteIntegrations.ids).toEqual([integrationId]);
    const list2 = await gql.request<{ integrations: { nodes: { id: string }[] } }>(ops.GetIntegrationsListData);
    expect(list2.integrations.nodes.map((n) => n.id)).not.toContain(integrationId);
  });

  it('accepts every filter pattern of the spec at router creation', async () => {
    const gql = svc.gql();
    const { createIncidentMgmtIntegration: integ } = await gql.request<{ createIncidentMgmtIntegration: { id: string } }>(
      ops.CreateIncidentMgmtIntegration,
      { name: 'patterns', integrationKey: 'k-0123456789abcdef' },
    );
    const patterns: [string, string][] = [
      ['certmgr-issuer-health-notification-config', ''],
      ['certmgr-cert-resource-health-notification-config', ''],
      ['certmgr-issuer-health-notification-config', "type.endsWith('.notready')"],
      ['certmgr-cert-resource-health-notification-config', "type.endsWith('.active')"],
      ['certmgr-issuer-health-notification-config', "type.endsWith('.notready') && (data.clusterId == 'c1' || data.clusterId == 'c2')"],
      ['certmgr-issuer-health-notification-config', "type.endsWith('.notready') && (data.namespace == 'cert-manager')"],
      ['certmgr-issuer-health-notification-config', "type.endsWith('.active') && data.issuerName == 'letsencrypt-prod'"],
      ['certmgr-cert-resource-health-notification-config', "type.endsWith('.notready') && data.clusterName == 'prod-eu'"],
      ['certmgr-cert-resource-health-notification-config', "type.endsWith('.active') && data.clusterName == 'prod-eu'"],
      ['cert-expiry-ext-notification-config', ''],
      ['cert-expiry-ext-notification-config', "'app-1' in data.applicationIds"],
      ['cert-expiry-ext-notification-config', 'data.ruleId == 2'],
    ];
    for (const [eventTypeId, expr] of patterns) {
      const r = await gql.request<{ createNotificationRouter: { notificationRouterFilterConfig: { advancedFilterExpression: string } } }>(
        ops.CreateNotificationRouter,
        {
          details: { name: `p ${expr}`, eventTypeId },
          filterConfig: { advancedFilterExpression: expr },
          integrationConfig: { integrationId: integ.id },
        },
      );
      expect(r.createNotificationRouter.notificationRouterFilterConfig.advancedFilterExpression).toBe(expr);
    }
  });
});
