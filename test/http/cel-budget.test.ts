/**
 * through the started service: the filters and events of the abuse test are
 * refused, a router stored with a filter over the cost limit never evaluates (visibly), and routing a large
 * batch leaves the event loop to /healthz and to other tenants' requests between slices.
 */
import { randomUUID } from 'node:crypto';
import { ClientError } from 'graphql-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { certificateResourceNotReady, issuerNotReady } from '../fixtures/events.js';
import { asAny } from '../support/any.js';
import { COMPANY_A, KEY_B, startTestService, type TestService } from '../support/service.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';
import { limitsFile } from '../support/limits.js';

const CERT = 'certmgr-cert-resource-health-notification-config';
const NAMES = "data.SANs['DNS Names']";
const MAP_OF_MAP = `${NAMES}.map(x, ${NAMES}.map(y, x + y)).size() > 0`;

let svc: TestService;
let integrationId: string;
beforeAll(async () => {
  svc = await startTestService('sqlite', [...limitsFile({ deliveryWorkers: 0 })]);
  const r = await svc.gql().request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
    name: 'pager',
    integrationKey: 'ik-0123456789abcdef',
  });
  integrationId = r.createIncidentMgmtIntegration.id;
});
afterAll(async () => {
  await svc?.close();
});

const post = (body: unknown) =>
  svc.rest('/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

function createRouter(name: string, expr: string, eventTypeId = CERT) {
  return svc.gql().request<{ createNotificationRouter: { id: string } }>(ops.CreateNotificationRouter, {
    details: { name, eventTypeId },
    filterConfig: { advancedFilterExpression: expr },
    integrationConfig: { integrationId },
  });
}

async function routersHitBy(eventId: string): Promise<string[]> {
  const r = await svc
    .gql()
    .request<{ deliveries: { nodes: { routerName: string }[] } }>(
      `query($e: UUID!) { deliveries(filter: { eventId: $e }) { nodes { routerName } } }`,
      { e: eventId },
    );
  return r.deliveries.nodes.map((n) => n.routerName).sort();
}

function dnsNames(n: number, suffix = 'example.com'): string[] {
  return Array.from({ length: n }, (_, i) => `h${i}.${suffix}`);
}

describe('the abuse test filters and events', () => {
  it.each([
    ['the map-of-map filter', MAP_OF_MAP],
    ['a two-level exists over the names', `${NAMES}.exists(x, ${NAMES}.exists(y, x == y + 'z'))`],
    ['exists with size() of the status message', `${NAMES}.exists(x, size(data.statusMessage) == 0)`],
  ])('createNotificationRouter refuses %s with the estimated cost, the limit and a position', async (_n, expr) => {
    const err = await createRouter('heavy', expr).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClientError);
    const e = (err as ClientError).response.errors?.[0] as unknown as { message: string; extensions: Record<string, unknown> };
    expect(e.extensions.code).toBe('INVALID_FILTER_EXPRESSION');
    expect(e.message).toMatch(/estimated cost [\d,]+ exceeds the limit of 1,000,000/);
    expect(e.extensions).toMatchObject({ line: 1, column: 24 });
  });

  it('refuses the 4,000-name event and the 400 KB status message, naming the field', async () => {
    const many = await post(certificateResourceNotReady({ SANs: { 'DNS Names': dnsNames(4000) } }));
    expect(many.status).toBe(400);
    expect((await many.json().then(asAny)).errors.map((e: { field: string }) => e.field)).toContain("data.SANs['DNS Names']");
    const long = await post(issuerNotReady({ statusMessage: 'x'.repeat(400_000) }));
    expect(long.status).toBe(400);
    expect((await long.json().then(asAny)).errors.map((e: { field: string }) => e.field)).toEqual(['data.statusMessage']);
  });

  it('a router stored with a filter over the limit never evaluates: FILTER_ERROR in simulateRouting, no delivery, the others still route', async () => {
    const now = Date.now();
    await svc.store.createRouter({
      id: randomUUID(),
      companyId: COMPANY_A,
      name: 'stored-heavy',
      eventTypeId: CERT,
      enabled: true,
      filter: MAP_OF_MAP,
      integrationId,
      templateId: null,
      generation: 'ROUTER',
      ...ROUTER_POLICY_DEFAULTS,
      managedBy: null,
      createdAt: now,
      updatedAt: now,
    });
    await createRouter('light', `${NAMES}.exists(n, n.endsWith('.stored.test'))`);
    const event = certificateResourceNotReady({ SANs: { 'DNS Names': dnsNames(3, 'stored.test') } });
    const sim = await svc
      .gql()
      .request<{ simulateRouting: { routers: { verdict: string; error: string | null; router: { name: string } }[] } }>(
        `query($e: EventInput!) { simulateRouting(event: $e) { routers { verdict error router { name } } } }`,
        { e: event },
      );
    const heavy = sim.simulateRouting.routers.find((r) => r.router.name === 'stored-heavy');
    expect(heavy?.verdict).toBe('FILTER_ERROR');
    expect(heavy?.error).toMatch(/^1:24: estimated cost [\d,]+ exceeds the limit of 1,000,000/);
    const res = await post(event);
    expect(res.status).toBe(202);
    const body = await res.json().then(asAny);
    expect(await routersHitBy(body.events[0].id)).toEqual(['light']);
  });
});

describe('fairness: a 1,000-event batch is routed in slices', () => {
  const ROUTERS = 31;
  it('/healthz and another tenant are answered while the batch is being routed', async () => {
    // Comprehension filters (not indexable): every router evaluates for every event. Enough routers that routing
    // outlasts a few round trips on a fast idle machine too: most are stored directly (fast), the last one
    // through the API, which invalidates the routing snapshot.
    const now = Date.now();
    for (let i = 0; i < ROUTERS - 1; i++) {
      await svc.store.createRouter({
        id: randomUUID(),
        companyId: COMPANY_A,
        name: `fair-${i}`,
        eventTypeId: CERT,
        enabled: true,
        filter: `${NAMES}.exists(n, n.endsWith('.fair-${i % 10}.test'))`,
        integrationId,
        templateId: null,
        generation: 'ROUTER',
        ...ROUTER_POLICY_DEFAULTS,
        managedBy: null,
        createdAt: now,
        updatedAt: now,
      });
    }
    await createRouter(`fair-${ROUTERS - 1}`, `${NAMES}.exists(n, n.endsWith('.fair-none.test'))`);
    const events = Array.from({ length: 1000 }, (_, i) =>
      certificateResourceNotReady({ SANs: { 'DNS Names': dnsNames(20, `fair-${i % 10}.test`) } }),
    );
    expect(JSON.stringify(events).length).toBeLessThan(1024 * 1024);

    const from = svc.logs.length;
    const has = (msg: string) => svc.logs.findIndex((l, i) => i >= from && l.includes(`"msg":"${msg}"`));
    const batch = post(events);
    // The test shares the service's event loop: it only gets here between routing slices (or after routing).
    while (has('routing events') < 0) await new Promise((r) => setTimeout(r, 1));
    const [health, other] = await Promise.all([
      svc.rest('/healthz', { key: null }),
      svc.gql(KEY_B).request<{ deliveries: { nodes: unknown[] } }>(`{ deliveries { nodes { id } } }`),
    ]);
    svc.logs.push('{"msg":"test: healthz and tenant B answered"}');
    expect(health.status).toBe(200);
    expect(other.deliveries.nodes).toEqual([]);

    const res = await batch;
    expect(res.status).toBe(202);
    const body = await res.json().then(asAny);
    expect(body.events).toHaveLength(1000);
    // each event's names match the filters of the routers fair-k with k ≡ event index (mod 10)
    expect(body.events.every((e: { deliveries: number }) => e.deliveries === (ROUTERS - 1) / 10)).toBe(true);
    // Ordering, not timing: the other requests were answered after routing began and before it ended.
    expect(has('routing events')).toBeLessThan(has('test: healthz and tenant B answered'));
    expect(has('test: healthz and tenant B answered')).toBeLessThan(has('routed events'));
  });
});
