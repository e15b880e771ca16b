/**
 * HTTP and GraphQL request hardening (bodies, nesting, the GraphQL cost limit, HTTP details), against the real
 * service on loopback.
 */
import { asAny } from '../support/any.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { MONITORING_CONFIG_PATH as P } from '../../src/client/operations.js';
import { issuerNotReady } from '../fixtures/events.js';
import { GRAPHQL_LIMITS } from '../../src/http/graphql/cost.js';
import { MAX_JSON_DEPTH } from '../../src/http/limits.js';
import { KEY_A, startTestService, type TestService } from '../support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite');
});
afterAll(async () => {
  await svc?.close();
});

const gqlPost = (body: string, headers: Record<string, string> = {}) =>
  fetch(`${svc.url}/graphql`, {
    method: 'POST',
    headers: { 'svc-api-key': KEY_A, 'content-type': 'application/json', ...headers },
    body,
    signal: AbortSignal.timeout(20_000),
  });

const gql = (query: string, variables?: Record<string, unknown>) => gqlPost(JSON.stringify({ query, ...(variables ? { variables } : {}) }));

describe('/graphql bodies that are JSON but not an object', () => {
  it.each(['null', '0', 'false', '""', '[]', '"{ integrations { totalCount } }"'])('answers %s with 400', async (body) => {
    const res = await gqlPost(body);
    expect(res.status).toBe(400);
    const j = await res.json().then(asAny);
    expect(j.errors[0].extensions.code).toBe('BAD_REQUEST');
    expect(j.errors[0].message).toMatch(/JSON object/);
  });
});

describe('GraphQL cost limits, checked before execution', () => {
  const reject = async (query: string, limit: string, variables?: Record<string, unknown>) => {
    const res = await gql(query, variables);
    expect(res.status).toBe(400);
    const j = await res.json().then(asAny);
    expect(j.data).toBeUndefined();
    expect(j.errors[0].extensions).toMatchObject({ code: 'QUERY_TOO_COMPLEX', limit });
    return j.errors[0];
  };

  it('rejects 100 aliases of deliveries(first: 500) (the reported 4.7 s / 10 MB request) by its cost', async () => {
    const q = `{ ${Array.from({ length: 100 }, (_, i) => `d${i}: deliveries(first: 500) { nodes { id status lastError } }`).join(' ')} }`;
    const e = await reject(q, 'cost');
    expect(e.message).toMatch(/cost/);
  });

  it('rejects many cheap aliases naming the alias limit', async () => {
    const e = await reject(`{ ${Array.from({ length: 100 }, (_, i) => `e${i}: eventTypes { id }`).join(' ')} }`, 'aliases');
    expect(e.message).toMatch(/aliases/);
  });

  it('rejects a total cost over the limit (fragments expanded)', async () => {
    const q = `query { a: deliveries(first: 500) { nodes { ...D } } b: deliveries(first: 500) { nodes { ...D } } }
      fragment D on Delivery { id status attempts lastError lastStatusCode nextAttemptAt createdAt updatedAt deliveredAt routerId routerName integrationId
        event { id type receivedAt } integration { id name enabled type emailTo emailFrom webhookSigned managedBy createdAt updatedAt } }`;
    const e = await reject(q, 'cost');
    expect(e.extensions.max).toBe(GRAPHQL_LIMITS.maxCost);
  });

  it('caps first:, from a literal or a variable', async () => {
    await reject('{ deliveries(first: 100000) { nodes { id } } }', 'first');
    await reject('query($n: Int) { deliveries(first: $n) { nodes { id } } }', 'first', { n: 100000 });
  });

  it('rejects deep nesting and fragment bombs', async () => {
    const deep = `{ __schema { types { fields { type ${'{ ofType '.repeat(8)}{ name }${' }'.repeat(8)} } } } }`;
    await reject(deep, 'depth');
    const frags = ['fragment F0 on Query { eventTypes { id } }'];
    for (let i = 1; i < 12; i++) frags.push(`fragment F${i} on Query { ...F${i - 1} ...F${i - 1} }`);
    await reject(`{ ...F11 } ${frags.join(' ')}`, 'fields');
  });

  it('rejects a document with too many tokens before parsing it all', async () => {
    await reject(`{ ${'eventTypes { id } '.repeat(2_000)} }`, 'tokens');
  });

  it('rejects deeply nested input literals', async () => {
    const v = '{a:'.repeat(40) + '1' + '}'.repeat(40);
    await reject(`{ simulateRouting(event: { type: "x", data: ${v} }) { eventType } }`, 'valueDepth');
  });

  it('still answers ordinary queries, including the largest legitimate page', async () => {
    const res = await gql(
      '{ deliveries(first: 500) { nodes { id status attempts lastError createdAt event { id type } integration { id name } } pageInfo { hasNextPage } } integrations { nodes { id name } } eventTypes { id types } }',
    );
    expect(res.status).toBe(200);
    expect((await res.json().then(asAny)).errors).toBeUndefined();
  });
});

describe('JSON bodies nested deeper than the limit', () => {
  const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);
  it('REST PUT with a value nested 5,000 deep answers 400 naming where', async () => {
    const body = `{"inventoryMonitoringConfiguration":{"inventoryMonitoringConfigurationType":"CERTIFICATE_EXPIRATION","enabled":true,"thresholds":[30],"applicationIds":${nested(5000)},"includeUnassignedCertificates":true}}`;
    const res = await svc.rest(P, { method: 'PUT', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(400);
    const e = (await res.json().then(asAny)).errors[0];
    expect(e.code).toBe('BAD_USER_INPUT');
    expect(e.field).toMatch(/^inventoryMonitoringConfiguration\.applicationIds\[0\]/);
    expect(e.message).toContain(`${MAX_JSON_DEPTH}`);
  });
  it('applies to /graphql variables and /v1/events too', async () => {
    const g = await gqlPost(
      `{"query":"query($e: EventInput!) { simulateRouting(event: $e) { eventType } }","variables":{"e":{"type":"x","data":${nested(200_000)}}}}`,
    );
    expect(g.status).toBe(400);
    expect((await g.json().then(asAny)).errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const ev = await svc.rest('/v1/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: nested(5000) });
    expect(ev.status).toBe(400);
  });
  it('a bad value at normal depth is still reported without echoing a huge value', async () => {
    const res = await svc.rest(P, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inventoryMonitoringConfiguration: {
          inventoryMonitoringConfigurationType: 'x'.repeat(100_000),
          enabled: true,
          thresholds: [30],
          applicationIds: [],
          includeUnassignedCertificates: true,
        },
      }),
    });
    expect(res.status).toBe(400);
    expect((await res.text()).length).toBeLessThan(2_000);
  });
});

describe('HTTP details', () => {
  it('routes are strict: case variants and trailing slashes are 404, and metrics label by matched route', async () => {
    for (const p of ['/HEALTHZ', '/healthz/', '/GraphQL', `${P}/`, P.replace('inventorymonitoringconfig', 'InventoryMonitoringConfig')]) {
      const r = await svc.rest(p);
      expect(r.status, p).toBe(404);
      expect((await r.json().then(asAny)).errors[0].code).toBe('NOT_FOUND');
    }
    expect((await svc.rest(P)).status).toBe(200);
    const m = await (await fetch(`${svc.url}/metrics`)).text();
    expect(m).toMatch(/route="\/outagedetection\/v1\/inventorymonitoringconfig\/:type",status="200"/);
    expect(m).toMatch(/certmgr_notify_http_requests_total\{method="GET",route="other",status="404"\} [5-9]/);
    expect(m).not.toMatch(/route="\/HEALTHZ"|route="\/healthz\/"/);
  });

  it('HEAD works where GET works', async () => {
    for (const p of [P, '/healthz', '/readyz', '/metrics']) {
      const r = await svc.rest(p, { method: 'HEAD' });
      expect(r.status, p).toBe(200);
    }
    expect((await svc.rest('/graphql', { method: 'HEAD' })).status).toBe(405);
  });

  it('an application/graphql-response+json request body gets a 415 with a message', async () => {
    const res = await gqlPost(JSON.stringify({ query: '{ eventTypes { id } }' }), { 'content-type': 'application/graphql-response+json' });
    expect(res.status).toBe(415);
    const j = await res.json().then(asAny);
    expect(j.errors[0]).toMatchObject({ extensions: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
    expect(j.errors[0].message).toMatch(/application\/json/);
  });

  it('a malformed percent-encoding in the path gives a code listed in the API reference', async () => {
    const r = await svc.rest('/outagedetection/v1/inventorymonitoringconfig/%ZZ');
    expect(r.status).toBe(400);
    const code = (await r.json().then(asAny)).errors[0].code;
    expect(code).toBe('MALFORMED_PATH');
    const { readFileSync } = await import('node:fs');
    // a row of the error-code table of docs/api.md (Prettier pads the cells)
    expect(readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8')).toMatch(new RegExp(`\\|\\s*\`${code}\`\\s*\\|`));
  });

  it('log lines never carry the component key twice (a failed delivery logs from the worker)', async () => {
    const { createIncidentMgmtIntegration: i } = await svc
      .gql()
      .request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
        name: 'pager',
        integrationKey: 'ik-0123456789abcdef',
      });
    await svc.gql().request(ops.CreateNotificationRouter, {
      details: { name: 'all issuers', eventTypeId: 'certmgr-issuer-health-notification-config' },
      filterConfig: { advancedFilterExpression: '' },
      integrationConfig: { integrationId: i.id },
    });
    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([issuerNotReady()]),
    });
    expect(res.status).toBe(202);
    await expect.poll(() => svc.logs.join('').includes('"component":"delivery-worker"'), { timeout: 20_000 }).toBe(true);
    for (const l of svc.logs.join('').trim().split('\n')) expect(l.match(/"component":/g)?.length ?? 0, l).toBeLessThanOrEqual(1);
  });
});
