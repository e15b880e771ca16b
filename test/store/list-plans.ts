/**
 * The tenant list filters' statements (listInventory, listDeliveries) and the index each must read in listing
 * order (migration 16): the cases the plan tests of both engines explain. A filter read through another index
 * drops rows one by one: up to the company's whole inventory or delivery history for one page.
 */
import type { ServingStatus } from '../../src/model/serving.js';
import { createInventoryOps } from '../../src/store/inventory-repo.js';
import { createOps } from '../../src/store/repo.js';
import type { Dialect, SqlDb, SqlValue } from '../../src/store/sqldb.js';
import type { ClusterRecord, DeliveryFilter, InventoryCursor, InventoryFilter, Store } from '../../src/store/types.js';
import { eventRecord, newDelivery } from './contract.js';
import { cluster, inventoryCert, servingEndpoint } from './contract-inventory.js';

export interface PlanCase {
  name: string;
  /** The index the page's first statement reads, and its column after company_id (as the engine names it). */
  index: string;
  statements(dialect: Dialect): Promise<{ sql: string; params: SqlValue[] }[]>;
}

/** A SqlDb that records each statement and answers nothing (no rows). */
function capturing(dialect: Dialect) {
  const seen: { sql: string; params: SqlValue[] }[] = [];
  const rec = (sql: string, params: readonly SqlValue[] = []) => void seen.push({ sql, params: [...params] });
  const db: SqlDb = {
    dialect,
    all: async (sql, params) => (rec(sql, params), []),
    get: async (sql, params) => (rec(sql, params), undefined),
    run: async (sql, params) => (rec(sql, params), 0),
  };
  return { db, seen };
}

const inventory =
  (companyId: string, filter: InventoryFilter, after: InventoryCursor | null = null) =>
  async (dialect: Dialect) => {
    const c = capturing(dialect);
    await createInventoryOps(c.db).listInventory(companyId, filter, after, 11);
    return c.seen;
  };

const deliveries = (companyId: string, filter: DeliveryFilter) => async (dialect: Dialect) => {
  const c = capturing(dialect);
  await createOps(c.db).listDeliveries(companyId, { ...filter, limit: 11 });
  return c.seen;
};

/** Values the seeded data makes rare (see the plan tests' seeds), so a plan reading another index shows it. */
export function planCases(companyId: string, rare: { clusterId: string; eventId: string }): PlanCase[] {
  // early in the seeded rows' notAfter range: most rows lie after it
  const cursor: InventoryCursor = {
    notAfter: 1_800_000_000_000 + 3 * 60_000,
    clusterId: rare.clusterId,
    namespace: 'ns-3',
    secretName: 's-3',
  };
  return [
    {
      name: 'certificates by applicationId',
      index: 'inventory_certificate_applications_list_idx',
      statements: inventory(companyId, { applicationId: 'app-7' }),
    },
    {
      name: 'certificates by applicationId, expiring, after a cursor',
      index: 'inventory_certificate_applications_list_idx',
      statements: inventory(companyId, { applicationId: 'app-7', notAfterAtMost: 2_000_000_000_000 }, cursor),
    },
    {
      name: 'certificates by clusterId',
      index: 'inventory_certificates_cluster_idx',
      statements: inventory(companyId, { clusterId: rare.clusterId }),
    },
    {
      name: 'certificates by clusterId, after a cursor',
      index: 'inventory_certificates_cluster_idx',
      statements: inventory(companyId, { clusterId: rare.clusterId }, cursor),
    },
    {
      name: 'certificates by namespace',
      index: 'inventory_certificates_namespace_idx',
      statements: inventory(companyId, { namespace: 'ns-7' }),
    },
    {
      name: 'certificates by health',
      index: 'inventory_certificates_health_idx',
      statements: inventory(companyId, { health: 'NOT_READY' }),
    },
    {
      name: 'certificates by servingStatus',
      index: 'inventory_certificates_serving_idx',
      statements: inventory(companyId, { servingStatus: 'stale' }),
    },
    {
      name: 'certificates by servingStatus, after a cursor',
      index: 'inventory_certificates_serving_idx',
      statements: inventory(companyId, { servingStatus: 'stale' }, cursor),
    },
    {
      name: 'certificates with a serving problem',
      index: 'inventory_certificates_serving_problem_idx',
      statements: inventory(companyId, { servingProblem: true }),
    },
    {
      name: 'certificates with a serving problem, expiring, after a cursor',
      index: 'inventory_certificates_serving_problem_idx',
      statements: inventory(companyId, { servingProblem: true, notAfterAtMost: 2_000_000_000_000 }, cursor),
    },
    {
      name: 'certificates with endpoints and no serving problem',
      index: 'inventory_certificates_serving_no_problem_idx',
      statements: inventory(companyId, { servingProblem: false }),
    },
    { name: 'deliveries by status', index: 'deliveries_company_status_idx', statements: deliveries(companyId, { status: 'SILENCED' }) },
    {
      name: 'deliveries by status, after a cursor',
      index: 'deliveries_company_status_idx',
      statements: deliveries(companyId, { status: 'SILENCED', before: { createdAt: 1_800_000_000_900, id: 'z' } }),
    },
    { name: 'deliveries by eventId', index: 'deliveries_company_event_idx', statements: deliveries(companyId, { eventId: rare.eventId }) },
  ];
}

/** The seeded rows' serving problems, by the row's number modulo 100. */
const PROBLEMS_AT: Partial<Record<number, ServingStatus>> = { 7: 'stale', 17: 'mismatch', 27: 'expired', 37: 'unreachable' };

/**
 * One company's rows for the plans: 4,000 inventory rows over 20 clusters, 20 namespaces and 40 applications,
 * 1% NOT_READY, 9% with endpoints (1% each stale, mismatch, expired, unreachable), and a cluster of 5 rows; 2,000 deliveries of 1,000 events. `statusSql`: the statements the
 * Store API has no call for (delivery statuses), for the test's own connection.
 */
export async function seedForPlans(store: Store, companyId: string): Promise<{ clusterId: string; eventId: string; statusSql: string[] }> {
  const clusters = Array.from({ length: 20 }, () => cluster(companyId));
  const rare = cluster(companyId);
  const t = 1_800_000_000_000;
  const certs = (c: ClusterRecord, n: number, from: number) =>
    Array.from({ length: n }, (_, k) => {
      const i = from + k;
      return inventoryCert(companyId, c.id, `s-${i}`, {
        namespace: `ns-${i % 20}`,
        notAfter: i % 50 === 0 ? null : t + i * 60_000,
        readyStatus: i % 100 === 0 ? 'False' : 'True',
        applicationIds: [`app-${i % 40}`, 'all'],
        // most Secrets have no endpoint; 9% are served: 1% each stale, mismatch, expired and unreachable
        serving: PROBLEMS_AT[i % 100] ? [servingEndpoint(PROBLEMS_AT[i % 100]!)] : i % 20 === 3 ? [servingEndpoint('ok')] : null,
      });
    });
  for (const [k, c] of clusters.entries()) {
    await store.putCluster(c);
    await store.upsertInventory(companyId, c.id, c.epoch, certs(c, 200, k * 200));
  }
  await store.putCluster(rare);
  await store.upsertInventory(companyId, rare.id, rare.epoch, certs(rare, 5, 0));
  const events = Array.from({ length: 1000 }, (_, i) => eventRecord(companyId, { receivedAt: t + i }));
  await store.transaction(async (tx) => {
    await tx.insertEvents(events);
    await tx.insertDeliveries(events.flatMap((e) => [newDelivery(e), newDelivery(e)]));
  });
  return {
    clusterId: rare.id,
    eventId: events[500]!.id,
    statusSql: [
      `UPDATE deliveries SET status = 'DELIVERED' WHERE company_id = '${companyId}'`,
      `UPDATE deliveries SET status = 'SILENCED' WHERE company_id = '${companyId}' AND event_id IN ('${events[3]!.id}', '${events[900]!.id}')`,
    ],
  };
}
