/**
 * through the real service on both engines: hostile text and loose formats
 * are refused at validation with 400 / BAD_USER_INPUT naming the field, alike on SQLite and PostgreSQL
 * (a NUL included, which PostgreSQL cannot store), and nothing is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { MONITORING_CONFIG_PATH } from '../../src/client/operations.js';
import { certificateResourceNotReady, expiringCertificate, issuerActive, issuerNotReady } from '../fixtures/events.js';
import { asAny } from '../support/any.js';
import { startTestService, type StoreKind, type TestService } from '../support/service.js';
import { gqlError } from '../support/graphql.js';
import { limitsFile } from '../support/limits.js';

/** Hostile text values; each must be refused in every name-like field. */
const HOSTILE: [string, string, RegExp][] = [
  ['NUL', 'ops\u0000pager', /U\+0000 NUL at character 4/],
  ['a C0 control', 'ops\u0007', /U\+0007/],
  ['a C1 control', 'ops\u0085', /U\+0085/],
  ['RIGHT-TO-LEFT OVERRIDE', 'invoice\u202Efdp.exe', /U\+202E RIGHT-TO-LEFT OVERRIDE/],
  ['LEFT-TO-RIGHT EMBEDDING', 'a\u202Ab', /U\+202A/],
  ['FIRST STRONG ISOLATE', 'a\u2068b', /U\+2068/],
  ['ZERO WIDTH SPACE', 'pa\u200Bger', /U\+200B ZERO WIDTH SPACE/],
  ['ZERO WIDTH JOINER', 'pa\u200Dger', /U\+200D/],
  ['WORD JOINER', 'pa\u2060ger', /U\+2060/],
  ['a BOM', '\uFEFFpager', /U\+FEFF/],
  ['a lone surrogate', 'pager\uD83D', /lone surrogate/],
];

describe.each<StoreKind>(['sqlite', 'postgres'])('hostile text and formats (%s)', (kind) => {
  let svc: TestService;
  let integrationId: string;

  beforeAll(async () => {
    svc = await startTestService(kind, [...limitsFile({ deliveryWorkers: 0 })]);
    integrationId = await createIntegration('pager');
  });
  afterAll(async () => {
    await svc?.close();
  });

  async function createIntegration(name: string, integrationKey = 'ik-0123456789abcdef'): Promise<string> {
    const r = await svc
      .gql()
      .request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, { name, integrationKey });
    return r.createIncidentMgmtIntegration.id;
  }
  const createRouter = (name: string, expr = '', integration = integrationId) =>
    svc.gql().request<{ createNotificationRouter: { id: string } }>(ops.CreateNotificationRouter, {
      details: { name, eventTypeId: 'certmgr-issuer-health-notification-config' },
      filterConfig: { advancedFilterExpression: expr },
      integrationConfig: { integrationId: integration },
    });
  const integrationNames = async () =>
    (await svc.gql().request<{ integrations: { nodes: { name: string }[] } }>(ops.GetIntegrationsListData)).integrations.nodes.map(
      (n) => n.name,
    );
  const routerNames = async () =>
    (
      await svc
        .gql()
        .request<{ searchNotificationRoutingConfigurations: { nodes: { name: string }[] } }>(ops.SearchNotificationRoutingConfigurations)
    ).searchNotificationRoutingConfigurations.nodes.map((n) => n.name);

  describe('GraphQL names', () => {
    it.each(HOSTILE)('integration name with %s: BAD_USER_INPUT on input.name, nothing created', async (_what, name, msg) => {
      const before = await integrationNames();
      const err = await gqlError(createIntegration(name));
      expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.name' });
      expect(err.message).toMatch(msg);
      expect(await integrationNames()).toEqual(before);
    });

    it.each(HOSTILE)('router name with %s: BAD_USER_INPUT on details.name, nothing created', async (_what, name, msg) => {
      const before = await routerNames();
      const err = await gqlError(createRouter(name));
      expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'details.name' });
      expect(err.message).toMatch(msg);
      expect(await routerNames()).toEqual(before);
    });

    it('router rename with a NUL is refused and the old name stays', async () => {
      const { createNotificationRouter: r } = await createRouter('keeps-its-name');
      const err = await gqlError(
        svc.gql().request(ops.UpdateNotificationRouter, {
          updateNotificationRouterId: r.id,
          updateNotificationRouterConfigurationInput: { name: 'renamed\u0000', enabled: false },
        }),
      );
      expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'updateNotificationRouterConfigurationInput.name' });
      expect(await routerNames()).toContain('keeps-its-name');
    });

    it('a NUL or a bidi override inside a filter string literal is refused with a position', async () => {
      const before = await routerNames();
      for (const [expr, column] of [
        ["data.issuerName == 'le\u0000'", 23],
        ["data.issuerName == 'admin\u202E'", 26],
        ["true &&\n  data.issuerName == '\u200F\u0000'", 24], // line and column of the NUL, after an allowed RLM
      ] as const) {
        const err = await gqlError(createRouter('filter-with-nul', expr));
        expect(err.extensions).toMatchObject({
          code: 'INVALID_FILTER_EXPRESSION',
          field: 'filterConfig.advancedFilterExpression',
          line: expr.includes('\n') ? 2 : 1,
          column,
        });
      }
      expect(await routerNames()).toEqual(before);
    });

    it('a NUL in the integration key is refused without echoing the key', async () => {
      const err = await gqlError(createIntegration('key-with-nul', 'ik-supersecret\u0000tail'));
      expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.incidentMgmtParams.IntegrationKey' });
      expect(err.message).not.toContain('supersecret');
      expect(await integrationNames()).not.toContain('key-with-nul');
    });

    it('names are limited to 255 characters (code points), not UTF-16 units', async () => {
      const ok = '😀'.repeat(255); // 510 UTF-16 units: refused before
      await createIntegration(ok);
      expect(await integrationNames()).toContain(ok);
      const err = await gqlError(createIntegration('😀'.repeat(256)));
      expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.name' });
      expect(err.message).toMatch(/at most 255 characters, got 256/);
    });

    it('right-to-left scripts, accents and emoji stay allowed', async () => {
      for (const name of ['עברית', 'Zürich ✓', '日本 🚀']) {
        await createIntegration(name);
        await createRouter(name);
      }
      expect(await routerNames()).toEqual(expect.arrayContaining(['עברית', 'Zürich ✓', '日本 🚀']));
    });
  });

  describe('UUID arguments', () => {
    it.each([
      ['urn:uuid: prefix', `urn:uuid:${'3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31'}`, /canonical/],
      ['braces', '{3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31}', /canonical/],
      ['the nil UUID', '00000000-0000-0000-0000-000000000000', /nil UUID/],
    ])('%s is BAD_USER_INPUT', async (_what, id, msg) => {
      const err = await gqlError(svc.gql().request(ops.DeleteIntegrations, { ids: [id] }));
      expect(err.extensions.code).toBe('BAD_USER_INPUT');
      expect(err.message).toMatch(msg);
      const err2 = await gqlError(createRouter('uuid-check', '', id));
      expect(err2.extensions.code).toBe('BAD_USER_INPUT');
    });
  });

  describe('REST monitoring configuration applicationIds', () => {
    const put = (applicationIds: unknown[]) =>
      svc.rest(MONITORING_CONFIG_PATH, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          inventoryMonitoringConfiguration: {
            inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
            enabled: true,
            thresholds: [30],
            applicationIds,
            includeUnassignedCertificates: true,
          },
        }),
      });

    it.each(HOSTILE)('an application id with %s: 400 naming the element, nothing changed', async (_what, id, msg) => {
      const before = await (await svc.rest(MONITORING_CONFIG_PATH)).json();
      const res = await put(['payments', id]);
      expect(res.status).toBe(400);
      const body = asAny(await res.json());
      const err = body.errors.find((e: { field: string }) => e.field === 'inventoryMonitoringConfiguration.applicationIds[1]');
      expect(err).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect(err.message).toMatch(msg);
      expect(await (await svc.rest(MONITORING_CONFIG_PATH)).json()).toEqual(before);
    });

    it.each(['1e308', '-0', '7.5', '-7'])('threshold %s is refused with 400', async (t) => {
      const res = await svc.rest(MONITORING_CONFIG_PATH, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: `{"inventoryMonitoringConfiguration":{"inventoryMonitoringConfigurationType":"CERTIFICATE_EXPIRATION","enabled":true,"thresholds":[${t}],"applicationIds":[],"includeUnassignedCertificates":true}}`,
      });
      expect(res.status).toBe(400);
      expect(asAny(await res.json()).errors).toEqual([
        expect.objectContaining({ field: 'inventoryMonitoringConfiguration.thresholds[0]' }),
      ]);
    });

    it('application ids are limited to 256 characters (code points)', async () => {
      expect((await put(['😀'.repeat(256)])).status).toBe(200);
      const res = await put(['😀'.repeat(257)]);
      expect(res.status).toBe(400);
      expect(JSON.stringify(await res.json())).toMatch(/at most 256 characters, got 257/);
    });
  });

  describe('POST /v1/events', () => {
    const post = (body: unknown) =>
      svc.rest('/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const raw = (json: string) => svc.rest('/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: json });

    it.each<[string, () => Promise<Response>, string, RegExp]>([
      ['NUL in clusterName', () => post(issuerNotReady({ clusterName: 'prod\u0000' })), 'data.clusterName', /NUL/],
      [
        'bidi override in an application id',
        () => post(expiringCertificate({ applicationIds: ['pay\u202Ements'] })),
        'data.applicationIds[0]',
        /RIGHT-TO-LEFT OVERRIDE/,
      ],
      [
        'zero-width space in a DNS name',
        () => post(certificateResourceNotReady({ SANs: { 'DNS Names': ['a\u200B.example.com'] } })),
        "data.SANs['DNS Names'][0]",
        /ZERO WIDTH SPACE/,
      ],
      ['NUL in statusMessage', () => post(issuerNotReady({ statusMessage: 'x\u0000' })), 'data.statusMessage', /NUL/],
      [
        'urn:uuid: clusterId',
        () => post(issuerNotReady({ clusterId: 'urn:uuid:3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31' })),
        'data.clusterId',
        /canonical/,
      ],
      ['nil resourceId', () => post(issuerNotReady({ resourceId: '00000000-0000-0000-0000-000000000000' })), 'data.resourceId', /nil UUID/],
      ['year 0000', () => post(issuerNotReady({ statusTransition: '0000-03-14T09:26:53Z' })), 'data.statusTransition', /year 0000/],
      [
        'a space separator',
        () => post(issuerNotReady({ statusTransition: '2025-03-14 09:26:53Z' })),
        'data.statusTransition',
        /upper-case T/,
      ],
      ['no Z', () => post(issuerNotReady({ statusTransition: '2025-03-14T09:26:53' })), 'data.statusTransition', /Z/],
      ['Feb 30', () => post(issuerNotReady({ statusTransition: '2025-02-30T09:26:53Z' })), 'data.statusTransition', /calendar date/],
      [
        'a 21-digit duration',
        () => post(issuerActive({ unhealthyDuration: '123456789012345678901h0m0s' })),
        'data.unhealthyDuration',
        /6 digits/,
      ],
      ['1h60m60s', () => post(issuerActive({ unhealthyDuration: '1h60m60s' })), 'data.unhealthyDuration', /0-59/],
      [
        'ruleId 1e308',
        () =>
          raw(
            '{"type":"evt.policy.expiringcertificates.failed","data":{"name":"n","applicationIds":[],"message":"m","notificationDate":"2025-03-18T08:00:00Z","threshold":14,"ruleId":1e308}}',
          ),
        'data.ruleId',
        /<= 2147483647/,
      ],
    ])('%s: 400 naming the field', async (_what, send, field, msg) => {
      const res = await send();
      expect(res.status).toBe(400);
      const body = asAny(await res.json());
      const err = body.errors.find((e: { field: string }) => e.field === field);
      expect(err, JSON.stringify(body)).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect(err.message).toMatch(msg);
    });

    it('a batch with one hostile event is refused whole, naming its index', async () => {
      const res = await post([issuerNotReady(), issuerNotReady({ issuerName: 'x\u0000' })]);
      expect(res.status).toBe(400);
      const body = asAny(await res.json());
      expect(body.errors).toEqual([expect.objectContaining({ field: '[1].data.issuerName' })]);
    });

    it('the spec-shaped samples are still accepted', async () => {
      const res = await post([issuerNotReady(), issuerActive(), certificateResourceNotReady(), expiringCertificate()]);
      expect(res.status).toBe(202);
    });
  });
});
