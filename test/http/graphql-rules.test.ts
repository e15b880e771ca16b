/** GraphQL rules beyond the happy path: codes, positions, generations, references, write-only secrets, atomicity. */
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

const SECRET_KEY = 'PDKEY-super-secret-0123456789';

async function newIntegration(name = 'i') {
  const r = await svc.gql().request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
    name,
    integrationKey: SECRET_KEY,
  });
  return r.createIncidentMgmtIntegration.id;
}

async function routerCount() {
  const r = await svc
    .gql()
    .request<{ searchNotificationRoutingConfigurations: { nodes: unknown[] } }>(ops.SearchNotificationRoutingConfigurations);
  return r.searchNotificationRoutingConfigurations.nodes.length;
}

const createRouter = (integrationId: string, expr: string, eventTypeId = 'certmgr-issuer-health-notification-config') =>
  svc.gql().request<{ createNotificationRouter: { id: string } }>(ops.CreateNotificationRouter, {
    details: { name: 'r', eventTypeId },
    filterConfig: { advancedFilterExpression: expr },
    integrationConfig: { integrationId },
  });

describe('filters', () => {
  it.each([
    ["type.endsWith('.notready'", /\d+:\d+/],
    ["data.nope == 'x'", /nope/],
    ["data.subject.commonName == 'x'", /commonName|subject/],
    ['foo == 1', /foo/],
    ['1 + 1', /bool/],
    ['x'.repeat(2001), /2,?000/],
  ])('rejects %s with INVALID_FILTER_EXPRESSION and a position, creating nothing', async (expr, msg) => {
    const id = await newIntegration();
    const before = await routerCount();
    const err = await gqlError(createRouter(id, expr));
    expect(err.extensions.code).toBe('INVALID_FILTER_EXPRESSION');
    expect(err.message).toMatch(msg);
    expect(typeof err.extensions.line).toBe('number');
    expect(typeof err.extensions.column).toBe('number');
    expect(await routerCount()).toBe(before);
  });

  it('validates the filter on update too, and against the new event type when it changes', async () => {
    const id = await newIntegration();
    const { createNotificationRouter: r } = await createRouter(id, "data.issuerName == 'x'");
    const e1 = await gqlError(
      svc.gql().request(ops.UpdateNotificationRouter, {
        updateNotificationRouterId: r.id,
        updateNotificationRouterConfigurationInput: { advancedFilterExpression: 'data.nope' },
      }),
    );
    expect(e1.extensions.code).toBe('INVALID_FILTER_EXPRESSION');
    // issuerName does not exist in the expiration family
    const e2 = await gqlError(
      svc.gql().request(ops.UpdateNotificationRouter, {
        updateNotificationRouterId: r.id,
        updateNotificationRouterConfigurationInput: { eventTypeId: 'cert-expiry-ext-notification-config' },
      }),
    );
    expect(e2.extensions.code).toBe('INVALID_FILTER_EXPRESSION');
    const got = await svc.store.getRouter('11111111-1111-4111-8111-111111111111', r.id);
    expect(got).toMatchObject({ filter: "data.issuerName == 'x'", eventTypeId: 'certmgr-issuer-health-notification-config' });
  });
});

describe('generations', () => {
  it('refuses the other generation update form, naming the right mutation, and changes nothing', async () => {
    const id = await newIntegration();
    const { createNotificationRouter: r } = await createRouter(id, '');
    const e = await gqlError(svc.gql().request(ops.UpdateNotificationRoutingConfiguration, { id: r.id, enabled: false }));
    expect(e.extensions.code).toBe('BAD_USER_INPUT');
    expect(e.message).toContain('updateNotificationRouter');
    const old = await svc
      .gql()
      .request<{ createNotificationRoutingConfiguration: { id: string } }>(ops.CreateNotificationRoutingConfiguration, {
        name: 'old',
        eventTypeId: 'cert-expiry-ext-notification-config',
        integrationId: id,
      });
    const e2 = await gqlError(
      svc.gql().request(ops.UpdateNotificationRouter, {
        updateNotificationRouterId: old.createNotificationRoutingConfiguration.id,
        updateNotificationRouterConfigurationInput: { enabled: false },
      }),
    );
    expect(e2.message).toContain('updateNotificationRoutingConfiguration');
    const rs = await svc.store.listRouters('11111111-1111-4111-8111-111111111111');
    expect(rs.find((x) => x.id === r.id)?.enabled).toBe(true);
    expect(rs.find((x) => x.id === old.createNotificationRoutingConfiguration.id)?.enabled).toBe(true);
  });

  it('updateNotificationRouter may change name, event type, filter and integration', async () => {
    const a = await newIntegration('a');
    const b = await newIntegration('b');
    const { createNotificationRouter: r } = await createRouter(a, '');
    await svc.gql().request(ops.UpdateNotificationRouter, {
      updateNotificationRouterId: r.id,
      updateNotificationRouterConfigurationInput: {
        name: 'renamed',
        eventTypeId: 'cert-expiry-ext-notification-config',
        advancedFilterExpression: 'data.ruleId == 1',
        integrationId: b,
      },
    });
    const got = await svc.store.getRouter('11111111-1111-4111-8111-111111111111', r.id);
    expect(got).toMatchObject({
      name: 'renamed',
      eventTypeId: 'cert-expiry-ext-notification-config',
      filter: 'data.ruleId == 1',
      integrationId: b,
    });
  });
});

describe('references', () => {
  it('rejects a router to an unknown integration, and a bad event type id', async () => {
    const before = await routerCount();
    const e = await gqlError(createRouter('99999999-9999-4999-8999-999999999999', ''));
    expect(e.extensions.code).toBe('NOT_FOUND');
    const id = await newIntegration();
    const e2 = await gqlError(createRouter(id, '', 'certmgr-unknown'));
    expect(e2.extensions.code).toBe('BAD_USER_INPUT');
    expect(e2.message).toContain('cert-expiry-ext-notification-config');
    expect(await routerCount()).toBe(before);
  });

  it('refuses to delete an integration still used, listing the routers, and deletes nothing', async () => {
    const used = await newIntegration('used');
    const free = await newIntegration('free');
    const { createNotificationRouter: r } = await createRouter(used, '');
    const e = await gqlError(svc.gql().request(ops.DeleteIntegrations, { ids: [free, used] }));
    expect(e.extensions.code).toBe('CONFLICT');
    expect(e.message).toContain(r.id);
    expect(e.extensions.routers).toEqual([expect.objectContaining({ id: r.id })]);
    const list = await svc.gql().request<{ integrations: { nodes: { id: string }[] } }>(ops.GetIntegrationsListData);
    expect(list.integrations.nodes.map((n) => n.id)).toEqual(expect.arrayContaining([used, free]));
  });

  it('UUID is a scalar that rejects non-UUIDs', async () => {
    const e = await gqlError(svc.gql().request(ops.DeleteIntegrations, { ids: ['not-a-uuid'] }));
    expect(e.extensions.code).toBe('BAD_USER_INPUT');
    expect(e.message).toMatch(/UUID/);
    const e2 = await gqlError(svc.gql().request(`mutation { deleteIntegrations(ids: ["nope"]) { ids } }`));
    expect(e2.extensions.code).toBe('BAD_USER_INPUT');
  });
});

describe('secrets are write-only', () => {
  it('no query returns the integration key, webhook URL or signing secret', async () => {
    await newIntegration('pd');
    await svc.gql().request(`mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`, {
      i: { name: 'wh', url: 'https://hooks.example.com/T0KEN-abc123', signingSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
    });
    const intro = await svc
      .gql()
      .request<{ __type: { fields: { name: string }[] } }>(`{ __type(name: "Integration") { fields { name } } }`);
    const names = intro.__type.fields.map((f) => f.name.toLowerCase());
    for (const bad of ['integrationkey', 'url', 'signingsecret', 'webhookurl', 'secrets']) expect(names).not.toContain(bad);
    const all = await svc
      .gql()
      .request(`{ integrations { nodes { id name enabled type emailTo emailFrom webhookSigned managedBy createdAt updatedAt } } }`);
    const text = JSON.stringify(all);
    expect(text).not.toContain(SECRET_KEY);
    expect(text).not.toContain('T0KEN-abc123');
    expect(text).not.toContain('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(text).toContain('"webhookSigned":true');
    const logs = svc.logs.join('');
    expect(logs).not.toContain(SECRET_KEY);
    expect(logs).not.toContain('T0KEN-abc123');
    expect(logs).not.toContain('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
  });

  it('creates email, Slack and Teams integrations and updates one', async () => {
    const gql = svc.gql();
    const email = await gql.request<{ createEmailIntegration: { id: string; emailTo: string[] } }>(
      `mutation { createEmailIntegration(input: { name: "mail", emailParams: { to: ["ops@example.com"] } }) { id emailTo } }`,
    );
    expect(email.createEmailIntegration.emailTo).toEqual(['ops@example.com']);
    const slack = await gql.request<{ createSlackIntegration: { type: string } }>(
      `mutation { createSlackIntegration(input: { name: "s", slackParams: { webhookUrl: "https://hooks.slack.example/services/T/B/X" } }) { type } }`,
    );
    expect(slack.createSlackIntegration.type).toBe('SLACK');
    const teams = await gql.request<{ createTeamsIntegration: { id: string } }>(
      `mutation { createTeamsIntegration(input: { name: "t", teamsParams: { webhookUrl: "https://example.webhook.office.com/x" } }) { id } }`,
    );
    const upd = await gql.request<{ updateIntegration: { name: string; enabled: boolean } }>(
      `mutation($id: UUID!) { updateIntegration(id: $id, input: { name: "teams-2", enabled: false }) { name enabled } }`,
      { id: teams.createTeamsIntegration.id },
    );
    expect(upd.updateIntegration).toEqual({ name: 'teams-2', enabled: false });
    const e = await gqlError(
      gql.request(
        `mutation($id: UUID!) { updateIntegration(id: $id, input: { slackParams: { webhookUrl: "https://x.example/y" } }) { id } }`,
        {
          id: teams.createTeamsIntegration.id,
        },
      ),
    );
    expect(e.extensions.code).toBe('BAD_USER_INPUT');
    expect(e.message).toContain('teamsParams');
    const bad = await gqlError(
      gql.request(`mutation { createEmailIntegration(input: { name: "m", emailParams: { to: ["nope"] } }) { id } }`),
    );
    expect(bad.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.emailParams.to[0]' });
  });

  it('lists the event types', async () => {
    const r = await svc.gql().request<{ eventTypes: { id: string; displayName: string }[] }>(`{ eventTypes { id displayName } }`);
    expect(r.eventTypes.map((e) => e.id)).toEqual([
      'certmgr-issuer-health-notification-config',
      'certmgr-cert-resource-health-notification-config',
      'cert-expiry-ext-notification-config',
      // the hub's own family, after the spec's (docs/inventory.md "Silent clusters as events")
      'certmgr-agent-health-notification-config',
    ]);
  });

  it('401 UNAUTHENTICATED without a key', async () => {
    const e = await gqlError(svc.gql('wrong-key-0000000000').request(ops.GetIntegrationsListData));
    expect(e.extensions.code).toBe('UNAUTHENTICATED');
  });
});
