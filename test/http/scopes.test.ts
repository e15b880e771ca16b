/**
 * API key scopes through the started service (keys from an --api-keys-file): an agent key posts events and
 * nothing else, a read key queries and changes nothing, an admin key (and a key without scope) does everything.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { issuerNotReady } from '../fixtures/events.js';
import { asAny } from '../support/any.js';
import { COMPANY_A, KEY_A, startTestService, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

const AGENT = 'agent-key-company-a-0123456789';
const READ = 'read-key-company-a-01234567890';
const ADMIN = 'admin-key-company-a-0123456789';

let svc: TestService;
let integrationId: string;
beforeAll(async () => {
  const f = join(mkdtempSync(join(tmpdir(), 'cmn-scopes-')), 'keys.yaml');
  writeFileSync(
    f,
    [
      'keys:',
      `  - { key: ${AGENT}, companyId: ${COMPANY_A}, scope: agent }`,
      `  - { key: ${READ}, companyId: ${COMPANY_A}, scope: read }`,
      `  - { key: ${ADMIN}, companyId: ${COMPANY_A}, scope: admin }`,
      '',
    ].join('\n'),
  );
  svc = await startTestService('sqlite', ['--api-keys-file', f, ...limitsFile({ deliveryWorkers: 0 })]);
  const r = await svc.gql(ADMIN).request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
    name: 'pager',
    integrationKey: 'ik-0123456789abcdef',
  });
  integrationId = r.createIncidentMgmtIntegration.id;
});
afterAll(async () => {
  await svc?.close();
});

const gqlRaw = (key: string, query: string, variables: Record<string, unknown> = {}, operationName?: string) =>
  svc.rest('/graphql', {
    key,
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ query, variables, ...(operationName ? { operationName } : {}) }),
  });
const routerVars = () => ({
  details: { name: `r-${Math.random()}`, eventTypeId: 'certmgr-issuer-health-notification-config' },
  filterConfig: { advancedFilterExpression: '' },
  integrationConfig: { integrationId },
});
const postEvents = (key: string) =>
  svc.rest('/v1/events', {
    key,
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify([issuerNotReady()]),
  });
const putMonitoring = (key: string) =>
  svc.rest(ops.MONITORING_CONFIG_PATH, {
    key,
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      inventoryMonitoringConfiguration: {
        inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
        enabled: true,
        thresholds: [30, 7],
        applicationIds: [],
        includeUnassignedCertificates: true,
      },
    }),
  });

async function forbidden(res: Response, need: string, has: string): Promise<void> {
  expect(res.status).toBe(403);
  const text = await res.text();
  expect(text).not.toContain(AGENT);
  expect(text).not.toContain(READ);
  const body = asAny(JSON.parse(text));
  expect(body.errors[0].code).toBe('FORBIDDEN');
  expect(body.errors[0].message).toContain(`scope ${need}`);
  expect(body.errors[0].message).toContain(`this key has scope '${has}'`);
}

async function routerCount(): Promise<number> {
  const r = await svc
    .gql(ADMIN)
    .request<{ searchNotificationRoutingConfigurations: { nodes: unknown[] } }>(ops.SearchNotificationRoutingConfigurations);
  return r.searchNotificationRoutingConfigurations.nodes.length;
}

describe('agent key', () => {
  it('cannot list integrations (403 FORBIDDEN, GraphQL shape)', async () => {
    const res = await gqlRaw(AGENT, ops.GetIntegrationsListData, {}, 'GetIntegrationsListData');
    await forbidden(res, `'admin' or 'read'`, 'agent');
    const body = asAny(await gqlRaw(AGENT, '{ integrations { nodes { id } } }').then((r) => r.json()));
    expect(body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect(body.data).toBeUndefined();
  });
  it('cannot create routers, and nothing is created', async () => {
    const before = await routerCount();
    await forbidden(await gqlRaw(AGENT, ops.CreateNotificationRouter, routerVars(), 'CreateNotificationRouter'), `'admin'`, 'agent');
    expect(await routerCount()).toBe(before);
  });
  it('cannot read or change the monitoring configuration over REST', async () => {
    await forbidden(await svc.rest(ops.MONITORING_CONFIG_PATH, { key: AGENT }), `'admin' or 'read'`, 'agent');
    await forbidden(await putMonitoring(AGENT), `'admin'`, 'agent');
  });
  it('can post events', async () => {
    expect((await postEvents(AGENT)).status).toBe(202);
  });
});

describe('read key', () => {
  it('can query (GraphQL and REST GET)', async () => {
    const r = await svc.gql(READ).request<{ integrations: { nodes: { id: string }[] } }>(ops.GetIntegrationsListData);
    expect(r.integrations.nodes.map((n) => n.id)).toContain(integrationId);
    expect((await svc.rest(ops.MONITORING_CONFIG_PATH, { key: READ })).status).toBe(200);
  });
  it('cannot mutate (GraphQL, REST PUT) nor post events', async () => {
    const before = await routerCount();
    await forbidden(await gqlRaw(READ, ops.CreateNotificationRouter, routerVars(), 'CreateNotificationRouter'), `'admin'`, 'read');
    // a document holding a query and a mutation, run by the mutation's name
    await forbidden(
      await gqlRaw(
        READ,
        `query Q { integrations { nodes { id } } } ${ops.DeleteIntegrations}`,
        { ids: [integrationId] },
        'DeleteIntegrations',
      ),
      `'admin'`,
      'read',
    );
    expect(await routerCount()).toBe(before);
    await forbidden(await putMonitoring(READ), `'admin'`, 'read');
    await forbidden(await postEvents(READ), `'admin' or 'agent'`, 'read');
  });
});

it('FORBIDDEN is a row of the error-code table (docs/api.md)', async () => {
  const { readFileSync } = await import('node:fs');
  expect(readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8')).toMatch(/\|\s*403\s*\|\s*`FORBIDDEN`\s*\|/);
});

describe('admin keys', () => {
  it.each([
    ['scope: admin', ADMIN],
    ['no scope (--api-key style)', KEY_A],
  ])('%s: queries, mutations, REST and events as before', async (_name, key) => {
    const before = await routerCount();
    const r = await svc.gql(key).request<{ createNotificationRouter: { id: string } }>(ops.CreateNotificationRouter, routerVars());
    expect(r.createNotificationRouter.id).toBeTruthy();
    expect(await routerCount()).toBe(before + 1);
    expect((await putMonitoring(key)).status).toBeLessThan(300);
    expect((await svc.rest(ops.MONITORING_CONFIG_PATH, { key })).status).toBe(200);
    expect((await postEvents(key)).status).toBe(202);
  });
});
