/**
 * Fuzz: every list filter a tenant can combine is served by an index or priced (docs/security.md, "Store work per
 * request"). Generated filter sets of `certificates` and `deliveries` (each field present or not, with or without a
 * cursor) are turned into the store's real statements and explained on a seeded SQLite store. Properties: when the
 * store calls a filter set indexed (inventoryFilterIndexed, deliveryFilterIndexed), its plan reads that range in
 * listing order (a SEARCH of an index by company_id and more, no SCAN of a table, no temporary B-tree); when it does
 * not, the GraphQL cost model prices the list with GRAPHQL_LIMITS.scanCost, so two of them are refused.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRAPHQL_LIMITS, measureRequest, parseLimited } from '../../src/http/graphql/cost.js';
import { buildApiSchema } from '../../src/http/graphql/schema.js';
import { servingStatusName } from '../../src/service/inventory.js';
import { createInventoryOps, inventoryFilterIndexed } from '../../src/store/inventory-repo.js';
import { deliveryFilterIndexed } from '../../src/store/outbox-repo.js';
import { createOps } from '../../src/store/repo.js';
import type { SqlDb, SqlValue } from '../../src/store/sqldb.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { DeliveryFilter, InventoryCursor, InventoryFilter } from '../../src/store/types.js';
import { seedForPlans } from '../store/list-plans.js';
import { check, fuzzParams } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'certmgr-store-cost-'));
const path = join(dir, 'cost.db');
const COMPANY = randomUUID();
const schema = buildApiSchema();
let raw: DatabaseSync;
let rare: { clusterId: string; eventId: string };

beforeAll(async () => {
  const store = await openSqliteStore(path);
  await store.migrate();
  const seed = await seedForPlans(store, COMPANY);
  await store.close();
  rare = seed;
  raw = new DatabaseSync(path);
  for (const sql of seed.statusSql) raw.exec(sql);
  raw.exec('ANALYZE');
});

afterAll(() => {
  raw?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The statements a page of the list runs (no rows: only the first statement's plan matters for the range). */
async function statements(run: (db: SqlDb) => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const rec = (sql: string, _params?: readonly SqlValue[]) => void seen.push(sql);
  await run({
    dialect: 'sqlite',
    all: async (sql, params) => (rec(sql, params), []),
    get: async (sql, params) => (rec(sql, params), undefined),
    run: async (sql, params) => (rec(sql, params), 0),
  });
  return seen;
}

function expectIndexedPlan(sql: string): void {
  const plan = (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail);
  const text = `${sql}\n${plan.join('\n')}`;
  const subqueries = plan.flatMap((d) => /^(?:CO-ROUTINE|MATERIALIZE) (\w+)$/.exec(d)?.[1] ?? []);
  const reads = plan.filter((d) => !/^(CO-ROUTINE|MATERIALIZE) /.test(d));
  expect(reads[0], text).toMatch(/^SEARCH \w+ USING (COVERING )?INDEX \w+ \(company_id=\? AND /);
  expect(
    reads.filter((d) => /^SCAN /.test(d) && !subqueries.includes(d.split(' ')[1]!)),
    text,
  ).toEqual([]);
  expect(
    plan.filter((d) => /TEMP B-TREE/.test(d)),
    text,
  ).toEqual([]);
}

/** The cost the model gives one list with these filter fields (GraphQL variables resolved, as in a request). */
function costOf(field: 'certificates' | 'deliveries', filter: Record<string, unknown>): number {
  const query = `query($f: ${field === 'certificates' ? 'CertificateFilter' : 'DeliveryFilterInput'}) { ${field}(first: 10, filter: $f) { nodes { __typename } } }`;
  const parsed = parseLimited(query);
  if (!('doc' in parsed)) throw new Error('the test query does not parse');
  const m = measureRequest(schema, parsed.doc, null, { f: filter });
  if (!('report' in m)) throw new Error(m.violation.message);
  return m.report.cost;
}

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

describe('fuzz: every list filter is served by an index or priced', () => {
  it('certificates: an indexed filter set reads its index range in order; any other is priced', async () => {
    const cursor: InventoryCursor = { notAfter: 1_800_000_000_000 + 3 * 60_000, clusterId: '', namespace: 'ns-3', secretName: 's-3' };
    const arb = fc.record({
      clusterId: maybe(fc.constant('rare')),
      namespace: maybe(fc.constantFrom('ns-7', 'ns-0')),
      applicationId: maybe(fc.constantFrom('app-7', 'all')),
      health: maybe(fc.constantFrom('READY' as const, 'NOT_READY' as const, 'UNKNOWN' as const)),
      expiringWithinDays: maybe(fc.integer({ min: 1, max: 3650 })),
      servingStatus: maybe(fc.constantFrom('stale' as const, 'ok' as const, 'notProbed' as const)),
      servingProblem: maybe(fc.boolean()),
      after: fc.boolean(),
    });
    await check(fuzzParams(2621, 200), arb, async (g) => {
      const filter: InventoryFilter = {
        ...(g.clusterId ? { clusterId: rare.clusterId } : {}),
        ...(g.namespace ? { namespace: g.namespace } : {}),
        ...(g.applicationId ? { applicationId: g.applicationId } : {}),
        ...(g.health ? { health: g.health } : {}),
        ...(g.expiringWithinDays ? { notAfterAtMost: 1_800_000_000_000 + g.expiringWithinDays * 86_400_000 } : {}),
        ...(g.servingStatus ? { servingStatus: g.servingStatus } : {}),
        ...(g.servingProblem !== undefined ? { servingProblem: g.servingProblem } : {}),
      };
      const gqlFilter = {
        ...(g.clusterId ? { clusterId: rare.clusterId } : {}),
        ...(g.namespace ? { namespace: g.namespace } : {}),
        ...(g.applicationId ? { applicationId: g.applicationId } : {}),
        ...(g.health ? { health: g.health } : {}),
        ...(g.expiringWithinDays ? { expiringWithinDays: g.expiringWithinDays } : {}),
        ...(g.servingStatus ? { servingStatus: servingStatusName(g.servingStatus) } : {}),
        ...(g.servingProblem !== undefined ? { servingProblem: g.servingProblem } : {}),
      };
      if (inventoryFilterIndexed(filter)) {
        const sqls = await statements((db) =>
          createInventoryOps(db).listInventory(COMPANY, filter, g.after ? { ...cursor, clusterId: rare.clusterId } : null, 11),
        );
        expectIndexedPlan(sqls[0]!);
        expect(costOf('certificates', gqlFilter)).toBeLessThan(GRAPHQL_LIMITS.scanCost);
      } else {
        expect(costOf('certificates', gqlFilter)).toBeGreaterThanOrEqual(GRAPHQL_LIMITS.scanCost);
        expect(2 * costOf('certificates', gqlFilter)).toBeGreaterThan(GRAPHQL_LIMITS.maxCost);
      }
    });
  });

  it('deliveries: an indexed filter set reads its index range in order; any other is priced', async () => {
    const arb = fc.record({
      integrationId: maybe(fc.constant(true)),
      status: maybe(fc.constantFrom('PENDING' as const, 'DEAD' as const, 'SILENCED' as const, 'DELIVERED' as const)),
      eventId: maybe(fc.constant(true)),
    });
    await check(fuzzParams(2622, 60), arb, async (g) => {
      const integrationId = randomUUID();
      const filter: DeliveryFilter = {
        ...(g.integrationId ? { integrationId } : {}),
        ...(g.status ? { status: g.status } : {}),
        ...(g.eventId ? { eventId: rare.eventId } : {}),
      };
      const gqlFilter = {
        ...(g.integrationId ? { integrationId } : {}),
        ...(g.status ? { status: g.status } : {}),
        ...(g.eventId ? { eventId: rare.eventId } : {}),
      };
      if (deliveryFilterIndexed(filter)) {
        const sqls = await statements((db) => createOps(db).listDeliveries(COMPANY, { ...filter, limit: 11 }));
        expectIndexedPlan(sqls[0]!);
        expect(costOf('deliveries', gqlFilter)).toBeLessThan(GRAPHQL_LIMITS.scanCost);
      } else {
        expect(costOf('deliveries', gqlFilter)).toBeGreaterThanOrEqual(GRAPHQL_LIMITS.scanCost);
      }
    });
  });
});
