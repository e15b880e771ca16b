/**
 * Fuzz: CEL filters generated from the grammar of allowed functions and macros (nested comprehensions included),
 * each installed as a router of tenant A, then evaluated by simulateRouting and by POST /v1/events against events
 * whose lists (DNS names) and strings (statusMessage) grow up to the schema limit. Properties: no 5xx or masked
 * internal error, every request answered within the liveness bound with /healthz answering meanwhile, a refused
 * filter creates nothing, an accepted literal-only filter evaluates, tenant B never changes, heap
 * back to its baseline after the run (compiled filters of deleted routers are released).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventType } from '../../src/events/families.js';
import type { StoreKind } from '../support/service.js';
import {
  AGENT_TYPES,
  CERT_TYPES,
  eventSize,
  EXPIRY_TYPE,
  ISSUER_TYPES,
  MAX_DNS_NAMES,
  MAX_STATUS_MESSAGE,
  validEvent,
  type EventSize,
} from './arbitraries.js';
import { celFilter, FAMILIES, heavyFilter, literalOnlyFilter, type Family } from './cel-arbitraries.js';
import {
  call,
  check,
  settledHeap,
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

const TYPES_OF: Record<Family, readonly EventType[]> = {
  'certmgr-issuer-health-notification-config': ISSUER_TYPES,
  'certmgr-cert-resource-health-notification-config': CERT_TYPES,
  'cert-expiry-ext-notification-config': [EXPIRY_TYPE],
  'certmgr-agent-health-notification-config': AGENT_TYPES,
};

const CREATE = /* GraphQL */ `
  mutation ($n: String!, $t: String!, $f: String, $i: UUID!) {
    createNotificationRouter(
      details: { name: $n, eventTypeId: $t }
      filterConfig: { advancedFilterExpression: $f }
      integrationConfig: { integrationId: $i }
    ) {
      id
    }
  }
`;
const SIMULATE = /* GraphQL */ `
  query ($e: EventInput!) {
    simulateRouting(event: $e) {
      monitored
      routers {
        verdict
        error
        wouldNotify
        router {
          id
        }
      }
    }
  }
`;
const DELETE = /* GraphQL */ `
  mutation ($ids: [UUID!]) {
    deleteNotificationRouter(ids: $ids) {
      ids
    }
  }
`;

interface CelCase {
  family: Family;
  filter: string;
  size: EventSize;
  copies: number;
  event: { type: EventType; data: Record<string, unknown> };
}

/** One case: a filter for a family, an event of that family of some size, sent `copies` times in one batch. */
const celCase = (families: Family[], filter: (f: Family) => fc.Arbitrary<string>, size: fc.Arbitrary<EventSize>): fc.Arbitrary<CelCase> =>
  fc.record({ family: fc.constantFrom(...families), size, copies: fc.constantFrom(1, 4) }).chain(({ family, size, copies }) =>
    fc.record({
      family: fc.constant(family),
      filter: filter(family),
      size: fc.constant(size),
      copies: fc.constant(copies),
      // printed as its type and size, not its (large) content
      event: fc
        .constantFrom(...TYPES_OF[family])
        .chain((t) => validEvent(t, size))
        .map((e) => Object.assign(e, { [fc.toStringMethod]: () => `<${e.type} ${JSON.stringify(size)}>` })),
    }),
  );

/** The largest events the schema allows, for the heavy shapes. */
const largest: fc.Arbitrary<EventSize> = fc.record({
  dnsNames: fc.constantFrom(Math.floor(MAX_DNS_NAMES / 2), MAX_DNS_NAMES),
  statusMessage: fc.constantFrom(50_000, MAX_STATUS_MESSAGE),
});

let seq = 0;

/** Installs the filter as a router, simulates, posts the batch, deletes the router; checks every step. */
async function runCase(f: Fixture, integrationId: string, c: CelCase): Promise<void> {
  const before = await tenantState(f.svc, KEY_A);
  const created = await gql(f.svc, CREATE, { n: `fuzz-${seq++}`, t: c.family, f: c.filter, i: integrationId });
  expectSane(created, 'createNotificationRouter');
  const id = created.json?.data?.createNotificationRouter?.id as string | undefined;
  if (!id) {
    const codes = (created.json?.errors ?? []).map((e: { extensions?: { code?: string } }) => e.extensions?.code);
    expect(codes, `refused filter: ${created.text.slice(0, 300)}`).toContain('INVALID_FILTER_EXPRESSION');
    expect(await tenantState(f.svc, KEY_A), 'a refused filter changed the state').toEqual(before);
    return;
  }
  try {
    const sim = await gql(f.svc, SIMULATE, { e: c.event });
    expectSane(sim, 'simulateRouting');
    if (sim.status === 200 && !sim.json?.errors) {
      const mine = sim.json.data.simulateRouting.routers.find((r: { router: { id: string } }) => r.router.id === id);
      expect(mine, 'simulateRouting does not list the new router').toBeDefined();
    }
    const mid = await tenantState(f.svc, KEY_A);
    const post = await call(f.svc, '/v1/events', { method: 'POST', json: Array.from({ length: c.copies }, () => c.event) });
    expectSane(post, 'POST /v1/events');
    const after = await tenantState(f.svc, KEY_A);
    if (post.status === 202) {
      expect(after.events - mid.events, 'accepted events').toBe(
        post.json.events.filter((e: { deliveries: number }) => e.deliveries > 0).length,
      );
    } else {
      expect(after, `refused batch (${post.status}) changed the state`).toEqual(mid);
    }
  } finally {
    const del = await gql(f.svc, DELETE, { ids: [id] });
    expect(del.json?.data?.deleteNotificationRouter?.ids, `delete: ${del.text.slice(0, 300)}`).toEqual([id]);
  }
  await expectBUnchanged(f, 'CEL by A');
}

/** Heap growth allowed over the router churn: today each deleted router keeps ~92 KB (27 MiB for 300). */
const CHURN_MARGIN_BYTES = 16 * 1024 * 1024;

const fixtures: Partial<Record<StoreKind, { f: Fixture; integrationId: string }>> = {};

describe.each<StoreKind>(['sqlite', 'postgres'])('fuzz: CEL filters and growing events (%s)', (kind) => {
  beforeAll(async () => {
    let integrationId = '';
    const f = await startFixture(kind, async (svc) => {
      const r = await gql(
        svc,
        `mutation { createIncidentMgmtIntegration(input: { name: "A pager", incidentMgmtParams: { IntegrationKey: "a-key-0123456789" } }) { id } }`,
      );
      integrationId = r.json.data.createIncidentMgmtIntegration.id;
      // warm the compile and evaluation paths once, so the heap baseline includes their one-time allocations
      const c = await gql(svc, CREATE, {
        n: 'warm',
        t: FAMILIES[1],
        f: "data.SANs['DNS Names'].exists(x, x.endsWith('.com'))",
        i: integrationId,
      });
      await gql(svc, DELETE, { ids: [c.json.data.createNotificationRouter.id] });
    });
    fixtures[kind] = { f, integrationId };
  });
  afterAll(async () => {
    await fixtures[kind]?.f.svc.close();
  });

  it(
    `filters compile or are refused cleanly and evaluate in bounded time over events up to ${MAX_DNS_NAMES} DNS names`,
    { timeout: 240_000 },
    async () => {
      const { f, integrationId } = fixtures[kind]!;
      await check(fuzzParams(kind === 'sqlite' ? 7201 : 7202, kind === 'sqlite' ? 80 : 25), celCase(FAMILIES, celFilter, eventSize), (c) =>
        runCase(f, integrationId, c),
      );
    },
  );

  it(
    `the heaviest filter shapes over the largest events (${MAX_DNS_NAMES} names, ${MAX_STATUS_MESSAGE} characters) stay within the bound`,
    { timeout: 240_000 },
    async () => {
      const { f, integrationId } = fixtures[kind]!;
      // The issue's two cases always run first (fast-check `examples`), then random heavy cases.
      const fam = 'certmgr-cert-resource-health-notification-config' as const;
      const size = { dnsNames: MAX_DNS_NAMES, statusMessage: 50_000 };
      const raw = fc.sample(validEvent(CERT_TYPES[0], size), { numRuns: 1, seed: 3 })[0]!;
      const event = Object.assign(raw, { [fc.toStringMethod]: () => `<${raw.type} ${JSON.stringify(size)}>` });
      const examples: [CelCase][] = [
        [{ family: fam, filter: "data.SANs['DNS Names'].map(x, data.SANs['DNS Names'].map(y, x + y)).size() > 0", size, copies: 4, event }],
        [
          {
            family: fam,
            filter: "data.SANs['DNS Names'].exists(x, data.SANs['DNS Names'].exists(y, x + y == 'never'))",
            size,
            copies: 4,
            event,
          },
        ],
      ];
      await check(
        { ...fuzzParams(kind === 'sqlite' ? 7221 : 7222, kind === 'sqlite' ? 8 : 4), examples },
        celCase([fam], heavyFilter, largest),
        (c) => runCase(f, integrationId, c),
      );
    },
  );

  it('a literal-only filter (no type, no data) is refused at compile time or evaluates', { timeout: 120_000 }, async () => {
    const { f, integrationId } = fixtures[kind]!;
    const event = fc.sample(validEvent(ISSUER_TYPES[0]), { numRuns: 1, seed: 1 })[0]!;
    await check(fuzzParams(kind === 'sqlite' ? 7211 : 7212, kind === 'sqlite' ? 40 : 15), literalOnlyFilter, async (filter) => {
      const created = await gql(f.svc, CREATE, { n: 'literal', t: FAMILIES[0], f: filter, i: integrationId });
      expectSane(created, 'createNotificationRouter');
      const id = created.json?.data?.createNotificationRouter?.id as string | undefined;
      if (!id) return;
      try {
        const sim = await gql(f.svc, SIMULATE, { e: event });
        expectSane(sim, 'simulateRouting');
        const mine = sim.json.data.simulateRouting.routers.find((r: { router: { id: string } }) => r.router.id === id);
        expect(mine.verdict, `accepted literal-only filter cannot evaluate: ${mine.error}`).not.toBe('FILTER_ERROR');
      } finally {
        await gql(f.svc, DELETE, { ids: [id] });
      }
    });
  });

  // The cache is engine-independent: one engine keeps CI time down (registered for SQLite only, not skipped).
  if (kind === 'sqlite')
    it('routers created, simulated and deleted leave nothing behind (compiled-filter cache)', { timeout: 240_000 }, async () => {
      // Not random: a fixed churn of distinct long filters, measured against its own baseline.
      const { f, integrationId } = fixtures[kind]!;
      const churn = Number(process.env.FUZZ_FILTER_CHURN ?? 300);
      const event = fc.sample(validEvent(ISSUER_TYPES[0]), { numRuns: 1, seed: 2 })[0]!;
      const start = await settledHeap();
      for (let i = 0; i < churn; i++) {
        const filter = Array.from(
          { length: 26 },
          (_, j) => `data.issuerName.startsWith('${String(i).padStart(6, '0')}-${j}-${'q'.repeat(20)}')`,
        ).join(' || ');
        const c = await gql(f.svc, CREATE, { n: `churn-${i}`, t: FAMILIES[0], f: filter, i: integrationId });
        const id = c.json?.data?.createNotificationRouter?.id as string | undefined;
        expect(id, c.text.slice(0, 300)).toBeDefined();
        await gql(f.svc, SIMULATE, { e: event });
        await gql(f.svc, DELETE, { ids: [id] });
      }
      const end = await settledHeap();
      expect(
        end,
        `heap grew by ${((end - start) / 1048576).toFixed(1)} MiB after ${churn} router create/simulate/delete cycles`,
      ).toBeLessThanOrEqual(start + CHURN_MARGIN_BYTES);
    });

  it('heap is back to its baseline after the run', async () => {
    await expectHeapBack(fixtures[kind]!.f);
  });
});
