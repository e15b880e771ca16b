/**
 * Fuzz: POST /graphql with API-shaped documents (aliases, big `first:`, long id lists), structural attacks,
 * garbage documents, variables of right and wrong types, and JSON bodies that are not requests, against the real
 * service on SQLite and PostgreSQL. Properties: every request answered within the liveness bound (with /healthz
 * answering meanwhile), no 5xx or masked internal error, bounded answers, a refused request changes nothing,
 * tenant B never changes, no receiver body is ever reflected, heap back to its baseline.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreKind, TestService } from '../support/service.js';
import { GRAPHQL_CLASSES, serializeGraphqlBody, type IdPool } from './graphql-arbitraries.js';
import {
  call,
  check,
  expectBUnchanged,
  expectHeapBack,
  expectSane,
  fuzzParams,
  gql,
  graphqlRejected,
  KEY_A,
  KEY_B,
  startFixture,
  tenantState,
  type Fixture,
} from './harness.js';

/** What an internal service would leak if its answer were reflected. */
const CANARY = 'CANARY-9f1c2e7a-internal-secret';

let receiver: Server;
let receiverUrl = '';

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(`${CANARY} `.repeat(64)));
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await new Promise<void>((r) => receiver.close(() => r()));
});

async function seedTenantA(svc: TestService): Promise<IdPool & { aIncident: string }> {
  const inc = await gql(
    svc,
    `mutation { createIncidentMgmtIntegration(input: { name: "A pager", incidentMgmtParams: { IntegrationKey: "a-key-0123456789" } }) { id } }`,
  );
  const aIncident = inc.json?.data?.createIncidentMgmtIntegration?.id as string;
  if (!aIncident) throw new Error(`seed: ${inc.text}`);
  // A webhook to the canary receiver: after the egress policy it may be refused at creation or at send time.
  const wh = await gql(svc, `mutation($u: String!) { createWebhookIntegration(input: { name: "A hook", url: $u }) { id } }`, {
    u: receiverUrl,
  });
  const aHook = (wh.json?.data?.createWebhookIntegration?.id as string | undefined) ?? aIncident;
  const r = await gql(
    svc,
    `mutation($i: UUID!) { createNotificationRouter(details: { name: "A all issuers", eventTypeId: "certmgr-issuer-health-notification-config" }, filterConfig: { advancedFilterExpression: "" }, integrationConfig: { integrationId: $i }) { id } }`,
    { i: aIncident },
  );
  const aRouter = r.json?.data?.createNotificationRouter?.id as string;
  if (!aRouter) throw new Error(`seed: ${r.text}`);
  // 500 deliveries (one page), so that `deliveries(first: 500)` under many aliases has something to amplify
  const ev = Array.from({ length: 500 }, (_, i) => ({
    type: 'evt.healthstatus.certmgr-issuer.notready',
    data: {
      clusterId: '3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31',
      clusterName: 'prod',
      issuerName: `issuer-${i}`,
      namespace: 'cert-manager',
      resourceId: '9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
      statusMessage: 'Failed to register ACME account: 400 urn:ietf:params:acme:error:invalidEmail',
      statusReason: 'ErrRegisterACMEAccount',
      statusTransition: '2025-03-14T09:26:53Z',
    },
  }));
  const post = await call(svc, '/v1/events', { method: 'POST', json: ev });
  if (post.status !== 202) throw new Error(`seed events: ${post.text.slice(0, 300)}`);
  return { aIntegration: aHook, aIncident, aRouter, bIntegration: '', bRouter: '' };
}

const fixtures: Partial<Record<StoreKind, { f: Fixture; pool: IdPool }>> = {};

describe.each<StoreKind>(['sqlite', 'postgres'])('fuzz: GraphQL (%s)', (kind) => {
  beforeAll(async () => {
    let pool: IdPool | undefined;
    const f = await startFixture(kind, async (svc) => {
      pool = await seedTenantA(svc);
      for (let i = 0; i < 10; i++) await gql(svc, '{ integrations { totalCount } }');
    });
    const b = await gql(
      f.svc,
      '{ integrations { nodes { id } } searchNotificationRoutingConfigurations { nodes { id } } }',
      undefined,
      KEY_B,
    );
    pool!.bIntegration = b.json.data.integrations.nodes[0].id;
    pool!.bRouter = b.json.data.searchNotificationRoutingConfigurations.nodes[0].id;
    fixtures[kind] = { f, pool: pool! };
  });
  afterAll(async () => {
    await fixtures[kind]?.f.svc.close();
  });

  const RUNS: Record<string, number> = { API: 60, structural: 24, garbage: 30, variables: 50, JSON: 20 };
  Object.entries(GRAPHQL_CLASSES).forEach(([what, arb], i) => {
    const runs = RUNS[what.split(' ')[0]!] ?? 30;
    it(
      `${what}: answered without 5xx, in time and bounded; a refused one changes nothing; B never changes`,
      { timeout: 180_000 },
      async () => {
        const { f, pool } = fixtures[kind]!;
        await check(
          fuzzParams(7100 + 10 * i + (kind === 'sqlite' ? 1 : 2), kind === 'sqlite' ? runs : Math.ceil(runs / 3)),
          arb,
          async (b) => {
            const before = await tenantState(f.svc, KEY_A);
            const r = await call(f.svc, '/graphql', { method: 'POST', raw: serializeGraphqlBody(b, pool) });
            expectSane(r, 'POST /graphql');
            expect(r.text, 'a receiver body was reflected to the caller').not.toContain(CANARY);
            if (graphqlRejected(r, b.kind === 'request' ? b.query : undefined)) {
              expect(
                await tenantState(f.svc, KEY_A),
                `refused request (${r.status}) changed the tenant's state: ${r.text.slice(0, 300)}`,
              ).toEqual(before);
            }
            await expectBUnchanged(f, 'GraphQL by A');
          },
        );
      },
    );
  });

  it('names with NUL, bidi overrides or zero-width characters are refused alike on both engines', { timeout: 120_000 }, async () => {
    const { f } = fixtures[kind]!;
    const hostileName = fc
      .tuple(
        fc.stringMatching(/^[a-z]{0,6}$/),
        fc.constantFrom('\u0000', '\u202e', '\u202d', '\u2066', '\u200b', '\u200d', '\ufeff'),
        fc.stringMatching(/^[a-z]{0,6}$/),
      )
      .map(([a, c, b]) => a + c + b);
    await check(fuzzParams(kind === 'sqlite' ? 7151 : 7152, kind === 'sqlite' ? 20 : 10), hostileName, async (name) => {
      const before = await tenantState(f.svc, KEY_A);
      const r = await gql(
        f.svc,
        'mutation($n: String!) { createIncidentMgmtIntegration(input: { name: $n, incidentMgmtParams: { IntegrationKey: "k-0123456789abcdef" } }) { id } }',
        { n: name },
      );
      expectSane(r, 'createIncidentMgmtIntegration');
      expect(r.json?.errors?.[0]?.extensions?.code, `accepted name ${JSON.stringify(name)}: ${r.text.slice(0, 200)}`).toBe(
        'BAD_USER_INPUT',
      );
      expect(await tenantState(f.svc, KEY_A)).toEqual(before);
    });
  });

  it('heap is back to its baseline after the run', async () => {
    await expectHeapBack(fixtures[kind]!.f);
  });
});
