/**
 * Notification templates through GraphQL: create, refuse (field and position), update, delete
 * (refused while a router uses it), a router's templateId checked, simulateRouting's rendered text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { issuerNotReady } from '../fixtures/events.js';
import { startTestService, type TestService, KEY_B } from '../support/service.js';
import { gqlError } from '../support/graphql.js';
import { limitsFile } from '../support/limits.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite', [...limitsFile({ maxTemplatesPerCompany: 5 })]);
});
afterAll(async () => {
  await svc?.close();
});

const FIELDS = 'id name managedBy parts { default { title text body } SLACK { title text } TEAMS { title text } }';
const Create = `mutation ($input: CreateNotificationTemplateInput!) { createNotificationTemplate(input: $input) { ${FIELDS} } }`;
const Update = `mutation ($id: UUID!, $input: UpdateNotificationTemplateInput!) { updateNotificationTemplate(id: $id, input: $input) { ${FIELDS} } }`;
const Delete = `mutation ($ids: [UUID!]!) { deleteNotificationTemplates(ids: $ids) { ids } }`;
const List = `{ notificationTemplates { totalCount nodes { id name } } }`;
const Get = `query ($id: UUID!) { notificationTemplate(id: $id) { ${FIELDS} } }`;

type Tpl = { id: string; name: string; parts: Record<string, { title: string | null; text: string | null } | null> };

const create = (input: Record<string, unknown>, key?: string) =>
  svc.gql(key).request<{ createNotificationTemplate: Tpl }>(Create, { input });
const count = async () =>
  (await svc.gql().request<{ notificationTemplates: { totalCount: number } }>(List)).notificationTemplates.totalCount;

async function newIntegration() {
  const r = await svc.gql().request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
    name: 'i',
    integrationKey: 'PDKEY-0123456789',
  });
  return r.createIncidentMgmtIntegration.id;
}

const newRouter = (integrationId: string, templateId?: string) =>
  svc.gql().request<{ createNotificationRouter: { id: string } }>(ops.CreateNotificationRouter, {
    details: { name: 'r', eventTypeId: 'certmgr-issuer-health-notification-config' },
    filterConfig: { advancedFilterExpression: '' },
    integrationConfig: { integrationId, ...(templateId ? { templateId } : {}) },
  });

describe('notification templates (GraphQL)', () => {
  it('creates, reads, lists, updates and deletes a template', async () => {
    const { createNotificationTemplate: t } = await create({
      name: ' ops ',
      parts: { default: { title: '{{ title }}', text: 'on {{ cluster.name }}' }, SLACK: { text: ':fire: {{ summary }}' } },
    });
    expect(t).toMatchObject({
      name: 'ops',
      managedBy: null,
      parts: {
        default: { title: '{{ title }}', text: 'on {{ cluster.name }}', body: null },
        SLACK: { title: null, text: ':fire: {{ summary }}' },
        TEAMS: null,
      },
    });
    expect((await svc.gql().request<{ notificationTemplate: Tpl }>(Get, { id: t.id })).notificationTemplate.id).toBe(t.id);
    // another company does not see it
    expect((await svc.gql(KEY_B).request<{ notificationTemplate: Tpl | null }>(Get, { id: t.id })).notificationTemplate).toBeNull();

    const { updateNotificationTemplate: u } = await svc
      .gql()
      .request<{ updateNotificationTemplate: Tpl }>(Update, { id: t.id, input: { name: 'renamed', parts: { TEAMS: { title: 'T' } } } });
    expect(u).toMatchObject({ name: 'renamed', parts: { default: null, SLACK: null, TEAMS: { title: 'T', text: null } } });

    const { deleteNotificationTemplates } = await svc
      .gql()
      .request<{ deleteNotificationTemplates: { ids: string[] } }>(Delete, { ids: [t.id] });
    expect(deleteNotificationTemplates.ids).toEqual([t.id]);
    expect((await svc.gql().request<{ notificationTemplate: Tpl | null }>(Get, { id: t.id })).notificationTemplate).toBeNull();
  });

  it.each([
    [{ SLACK: { text: 'ok\n  {{ a | nope }}' } }, 'input.parts.SLACK.text', 'INVALID_TEMPLATE', 2, 3, /undefined filter: nope/],
    [{ default: { title: '{% include "x" %}' } }, 'input.parts.default.title', 'INVALID_TEMPLATE', 1, 1, /not allowed/],
    [{ EMAIL: { title: 'a\u202Eb' } }, 'input.parts.EMAIL.title', 'INVALID_TEMPLATE', 1, 2, /bidi/],
    [{ TEAMS: { body: '{}' } }, 'input.parts.TEAMS.body', 'BAD_USER_INPUT', undefined, undefined, /only the GENERIC_WEBHOOK part/],
    [{ default: {} }, 'input.parts', 'BAD_USER_INPUT', undefined, undefined, /at least one/],
    [{ default: { title: 'x'.repeat(16_385) } }, 'input.parts.default.title', 'INVALID_TEMPLATE', 1, 1, /at most 16384 characters/],
  ])('refuses %j naming %s, writing nothing', async (parts, field, code, line, column, msg) => {
    const before = await count();
    const err = await gqlError(create({ name: 'bad', parts }));
    expect(err.extensions.code).toBe(code);
    expect(err.extensions.field).toBe(field);
    expect(err.message).toMatch(msg);
    if (line !== undefined) expect([err.extensions.line, err.extensions.column]).toEqual([line, column]);
    expect(await count()).toBe(before);
  });

  it('a bad part in an update changes nothing', async () => {
    const { createNotificationTemplate: t } = await create({ name: 'keep', parts: { default: { text: 'v1' } } });
    const err = await gqlError(svc.gql().request(Update, { id: t.id, input: { name: 'x', parts: { SLACK: { text: '{% if %}' } } } }));
    expect(err.extensions.field).toBe('input.parts.SLACK.text');
    expect((await svc.gql().request<{ notificationTemplate: Tpl }>(Get, { id: t.id })).notificationTemplate).toMatchObject({
      name: 'keep',
      parts: { default: { text: 'v1' } },
    });
    await svc.gql().request(Delete, { ids: [t.id] });
  });

  it("a router's templateId must be a template of the company; a used template cannot be deleted", async () => {
    const integrationId = await newIntegration();
    const { createNotificationTemplate: mine } = await create({ name: 'mine', parts: { default: { text: 'x' } } });
    const { createNotificationTemplate: theirs } = await create({ name: 'theirs', parts: { default: { text: 'x' } } }, KEY_B);
    const err = await gqlError(newRouter(integrationId, theirs.id));
    expect(err.extensions.code).toBe('NOT_FOUND');
    expect(err.extensions.field).toBe('integrationConfig.templateId');
    const { createNotificationRouter: r } = await newRouter(integrationId, mine.id);
    const upd = await gqlError(
      svc.gql().request(ops.UpdateNotificationRouter, {
        updateNotificationRouterId: r.id,
        updateNotificationRouterConfigurationInput: { templateId: theirs.id },
      }),
    );
    expect(upd.extensions.field).toBe('updateNotificationRouterConfigurationInput.templateId');

    const conflict = await gqlError(svc.gql().request(Delete, { ids: [mine.id] }));
    expect(conflict.extensions.code).toBe('CONFLICT');
    expect(conflict.message).toContain(r.id);
    // re-pointed (cleared): now it can go
    await svc.gql().request(ops.UpdateNotificationRouter, {
      updateNotificationRouterId: r.id,
      updateNotificationRouterConfigurationInput: { templateId: null },
    });
    expect(
      (await svc.gql().request<{ deleteNotificationTemplates: { ids: string[] } }>(Delete, { ids: [mine.id] })).deleteNotificationTemplates
        .ids,
    ).toEqual([mine.id]);
    await svc.gql(KEY_B).request(Delete, { ids: [theirs.id] });
  });

  it('simulateRouting returns the rendered text of a matched router', async () => {
    const integrationId = await newIntegration();
    const { createNotificationTemplate: t } = await create({
      name: 'sim',
      parts: {
        default: { title: 'T {{ router.name }}' },
        INCIDENT_MGMT: { text: '{{ event.data.issuerName }} on {{ cluster.name }} ({{ integration.type }})' },
      },
    });
    await newRouter(integrationId, t.id);
    const ev = issuerNotReady({ issuerName: 'le-prod' });
    const r = await svc
      .gql()
      .request<{ simulateRouting: { routers: { verdict: string; rendered: Record<string, unknown> | null }[] } }>(
        `query ($e: EventInput!) { simulateRouting(event: $e) { routers { verdict rendered { title text body error } } } }`,
        { e: ev },
      );
    const withTemplate = r.simulateRouting.routers.filter((x) => x.rendered);
    expect(withTemplate).toEqual([
      {
        verdict: 'MATCHED',
        rendered: { title: 'T r', text: `le-prod on ${String(ev.data.clusterName)} (INCIDENT_MGMT)`, body: null, error: null },
      },
    ]);
  });

  describe('previewNotificationTemplate', () => {
    const Preview = `query ($parts: NotificationTemplatePartsInput!, $event: EventInput!, $type: IntegrationType!) {
      previewNotificationTemplate(parts: $parts, event: $event, integrationType: $type) { title text body error } }`;
    const preview = (parts: unknown, type: string, event: unknown = issuerNotReady({ issuerName: 'le-prod' })) =>
      svc.gql().request<{ previewNotificationTemplate: Record<string, string | null> }>(Preview, { parts, event, type });

    it('renders the type part, field by field over default, as a delivery would; stores nothing', async () => {
      const before = await count();
      const parts = {
        default: { title: 'T {{ router.name }} {{ integration.type }}', text: 'default text' },
        SLACK: { text: '{{ event.data.issuerName }} on {{ cluster.name }}' },
      };
      const ev = issuerNotReady({ issuerName: 'le-prod' });
      expect((await preview(parts, 'SLACK', ev)).previewNotificationTemplate).toEqual({
        title: 'T preview SLACK',
        text: `le-prod on ${String(ev.data.clusterName)}`,
        body: null,
        error: null,
      });
      expect((await preview(parts, 'TEAMS', ev)).previewNotificationTemplate).toMatchObject({
        title: 'T preview TEAMS',
        text: 'default text',
      });
      expect(await count()).toBe(before);
    });

    it('a part that renders no JSON body is an error in the answer (the default message would be sent), not a refusal', async () => {
      const r = (await preview({ GENERIC_WEBHOOK: { body: 'not {{ "json" }}' } }, 'GENERIC_WEBHOOK')).previewNotificationTemplate;
      expect(r.body).toBeNull();
      expect(r.error).toMatch(/JSON/);
    });

    it('refuses parts as createNotificationTemplate does, and an event as simulateRouting does, naming the field', async () => {
      const bad = await gqlError(preview({ SLACK: { text: 'ok {% if %}' } }, 'SLACK'));
      expect(bad.extensions.code).toBe('INVALID_TEMPLATE');
      expect(bad.message).toMatch(/^parts\.SLACK\.text: line 1, column \d+/);
      const big = await gqlError(preview({ default: { text: 'x'.repeat(16_385) } }, 'SLACK'));
      expect(big.message).toMatch(/parts\.default\.text/);
      const ev = await gqlError(
        preview({ default: { text: 'x' } }, 'SLACK', { type: 'evt.healthstatus.certmgr-issuer.notready', data: {} }),
      );
      expect(ev.extensions.code).toBe('BAD_USER_INPUT');
      expect(ev.message).toMatch(/event\.data/);
    });
  });

  it('quota: maxTemplatesPerCompany', async () => {
    const have = await count();
    for (let i = have; i < 5; i++) await create({ name: `q${i}`, parts: { default: { text: 'x' } } });
    const err = await gqlError(create({ name: 'one too many', parts: { default: { text: 'x' } } }));
    expect(err.extensions.code).toBe('QUOTA_EXCEEDED');
    expect(err.message).toContain('maxTemplatesPerCompany in --limits-file');
  });
});
