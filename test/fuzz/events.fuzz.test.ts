/**
 * Fuzz: POST /v1/events with batches of valid and mutated events (dropped, retyped and extra fields, wrong types,
 * malformed formats, non-objects), up to the batch limit, against the real service on SQLite
 * and PostgreSQL. Tenant A has one catch-all router per family (so every accepted event makes a delivery and the
 * API's deliveries show it) and routers whose filters always fail at evaluation (warn-log volume).
 * Properties: no 5xx, answered within the liveness bound with /healthz answering meanwhile, an accepted batch adds
 * exactly its events, a refused batch adds nothing (never a partial write), a batch holding an event that must be
 * refused is refused, at most MAX_WARN_LINES_PER_REQUEST warn lines per request, tenant B never changes, heap back.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_DATA_SCHEMAS } from '../../src/events/schemas.js';
import { MAX_EVENTS_PER_REQUEST } from '../../src/ingest/parse.js';
import type { StoreKind, TestService } from '../support/service.js';
import { anyValidEvent, mutate, mutation, type Mutation } from './arbitraries.js';
import {
  call,
  check,
  expectBUnchanged,
  expectHeapBack,
  expectSane,
  fuzzParams,
  gql,
  KEY_A,
  startFixture,
  tenantState,
  type Fixture,
} from './harness.js';

const FAMILIES = [
  'certmgr-issuer-health-notification-config',
  'certmgr-cert-resource-health-notification-config',
  'cert-expiry-ext-notification-config',
];
/** Filters that compile and fail at evaluation for some events of their family (a field some types lack). */
const FAILING: [string, string][] = [
  ['certmgr-issuer-health-notification-config', "data.unhealthyDuration == '1h0m0s'"],
  ['certmgr-cert-resource-health-notification-config', "data.resourceId == ''"],
  ['certmgr-cert-resource-health-notification-config', "data.SANs['DNS Names'][0] == ''"],
];

async function seedRouters(svc: TestService): Promise<void> {
  const r = await gql(
    svc,
    `mutation { createIncidentMgmtIntegration(input: { name: "A pager", incidentMgmtParams: { IntegrationKey: "a-key-0123456789" } }) { id } }`,
  );
  const i = r.json.data.createIncidentMgmtIntegration.id as string;
  const create = `mutation($n: String!, $t: String!, $f: String, $i: UUID!) { createNotificationRouter(details: { name: $n, eventTypeId: $t }, filterConfig: { advancedFilterExpression: $f }, integrationConfig: { integrationId: $i }) { id } }`;
  for (const t of FAMILIES) {
    const c = await gql(svc, create, { n: `all ${t}`, t, f: '', i });
    if (!c.json?.data?.createNotificationRouter) throw new Error(`seed: ${c.text}`);
  }
  for (const [t, f] of FAILING) {
    const c = await gql(svc, create, { n: `failing ${f}`, t, f, i });
    if (!c.json?.data?.createNotificationRouter) throw new Error(`seed: ${c.text}`);
  }
}

/** A batch: n valid events, some mutated (index → mutation), sent as an array (or a single object when n = 1). */
interface Batch {
  events: { type: string; data: Record<string, unknown> }[];
  mutations: [number, Mutation][];
  asArray: boolean;
}

const batch: fc.Arbitrary<Batch> = fc
  .record({
    n: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.constantFrom(100, MAX_EVENTS_PER_REQUEST, MAX_EVENTS_PER_REQUEST + 1)),
    template: fc.array(anyValidEvent, { minLength: 1, maxLength: 5 }),
    mutations: fc.array(fc.tuple(fc.nat(), mutation), { maxLength: 3 }),
    asArray: fc.boolean(),
  })
  .map(({ n, template, mutations, asArray }) => {
    const b: Batch = {
      // big batches repeat a few generated events (generating 1,000 distinct ones is slow and shrinks badly)
      events: Array.from({ length: n }, (_, i) => template[i % template.length]!),
      mutations: mutations.map(([i, m]): [number, Mutation] => [i % n, m]),
      asArray: asArray || n > 1,
    };
    // printed compactly: size, the distinct events once, and the mutations
    return Object.assign(b, {
      [fc.toStringMethod]: () =>
        `<batch of ${n}${b.asArray ? '' : ' (single object)'}: ${fc.stringify(template.slice(0, n))} mutations ${fc.stringify(b.mutations)}>`,
    });
  });

function build(b: Batch): { body: unknown; mustReject: boolean } {
  const events: unknown[] = [...b.events];
  let mustReject = b.events.length > MAX_EVENTS_PER_REQUEST;
  for (const [i, m] of b.mutations) {
    const r = mutate(b.events[i] as Parameters<typeof mutate>[0], m);
    events[i] = r.event;
    mustReject ||= r.mustReject;
  }
  return { body: b.asArray ? events : events[0], mustReject };
}

const fixtures: Partial<Record<StoreKind, Fixture>> = {};

describe.each<StoreKind>(['sqlite', 'postgres'])('fuzz: event batches (%s)', (kind) => {
  beforeAll(async () => {
    fixtures[kind] = await startFixture(kind, async (svc) => {
      await seedRouters(svc);
      for (let i = 0; i < 5; i++) await call(svc, '/v1/events', { method: 'POST', json: [{ type: 'x' }] });
    });
  });
  afterAll(async () => {
    await fixtures[kind]?.svc.close();
  });

  it(
    'accepted batches add exactly their events, refused ones nothing; no 5xx, in time, bounded warn logging',
    { timeout: 240_000 },
    async () => {
      const f = fixtures[kind]!;
      await check(fuzzParams(kind === 'sqlite' ? 7301 : 7302, kind === 'sqlite' ? 60 : 20), batch, async (b) => {
        const { body } = build(b);
        const before = await tenantState(f.svc, KEY_A);
        const r = await call(f.svc, '/v1/events', { method: 'POST', json: body });
        expectSane(r, 'POST /v1/events');
        const after = await tenantState(f.svc, KEY_A);
        if (r.status === 202) {
          const n = Array.isArray(body) ? body.length : 1;
          expect(r.json.events).toHaveLength(n);
          expect(after.events - before.events, 'events added by an accepted batch').toBe(n);
          expect({ ...after, events: 0, deliveries: 0 }).toEqual({ ...before, events: 0, deliveries: 0 });
        } else {
          expect(r.status, r.text.slice(0, 300)).toBeGreaterThanOrEqual(400);
          expect(after, `refused batch (${r.status}) changed the state`).toEqual(before);
        }
        await expectBUnchanged(f, 'events by A');
      });
    },
  );

  it(
    'a batch holding a malformed event (malformed formats, missing field, non-object) is refused whole',
    { timeout: 120_000 },
    async () => {
      const f = fixtures[kind]!;
      const malformed = batch.filter((b) => build(b).mustReject);
      await check(fuzzParams(kind === 'sqlite' ? 7311 : 7312, kind === 'sqlite' ? 40 : 15), malformed, async (b) => {
        const before = await tenantState(f.svc, KEY_A);
        const r = await call(f.svc, '/v1/events', { method: 'POST', json: build(b).body });
        expectSane(r, 'POST /v1/events');
        expect(r.status, `accepted a batch that holds a malformed event: ${r.text.slice(0, 200)}`).toBe(400);
        expect(await tenantState(f.svc, KEY_A), 'a refused batch changed the state').toEqual(before);
      });
    },
  );

  it('heap is back to its baseline after the run', async () => {
    await expectHeapBack(fixtures[kind]!);
  });
});

/** Every list and every free string of an event has a schema limit (the growing-event fuzz relies on them). */
it('the event schemas bound every list (maxItems) and every string that no format bounds (maxLength)', () => {
  const unbounded: string[] = [];
  const walk = (node: Record<string, unknown>, path: string) => {
    if (node.type === 'array') {
      if (typeof node.maxItems !== 'number') unbounded.push(`${path} (maxItems)`);
      walk(node.items as Record<string, unknown>, `${path}[]`);
    } else if (node.type === 'object') {
      for (const [k, v] of Object.entries((node.properties ?? {}) as Record<string, Record<string, unknown>>)) walk(v, `${path}.${k}`);
    } else if (node.type === 'string' && typeof node.maxLength !== 'number' && node.format === undefined && node.enum === undefined) {
      unbounded.push(`${path} (maxLength)`);
    }
  };
  for (const [t, schema] of Object.entries(EVENT_DATA_SCHEMAS)) walk(schema as Record<string, unknown>, t);
  expect(unbounded).toEqual([]);
});
