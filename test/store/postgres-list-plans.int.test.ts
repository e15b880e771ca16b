/**
 * The tenant list filters' plans on PostgreSQL (migration 16, docs/security.md): each filter's page is read from
 * its own index range in listing order (no Sort below the page's LIMIT, no scan of the company's rows). The page's second statement (rows without a notAfter, `IS NULL`) is left out: PostgreSQL
 * sorts those few rows, whichever index it reads. Plan shapes (EXPLAIN, custom plans with the statements'
 * parameters), not times.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { toPgPlaceholders } from '../../src/store/sqldb.js';
import type { Store } from '../../src/store/types.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { planCases, seedForPlans } from './list-plans.js';

const url = testDatabaseUrl();
const schema = randomSchema('t_list_plans');
const COMPANY = randomUUID();
let store: Store;
let client: pg.Client;
let cases: ReturnType<typeof planCases>;

beforeAll(async () => {
  store = await openStore(url, { schema });
  await store.migrate();
  const seed = await seedForPlans(store, COMPANY);
  client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`SET search_path TO "${schema}"`);
  for (const sql of seed.statusSql) await client.query(sql);
  await client.query('ANALYZE');
  cases = planCases(COMPANY, seed);
});

afterAll(async () => {
  await client?.end();
  await store?.close();
  await dropSchema(url, schema);
});

describe('list filter plans on PostgreSQL', () => {
  it.each(planCases(COMPANY, { clusterId: '', eventId: '' }).map((c) => c.name))('%s: its index, in order', async (name) => {
    const c = cases.find((x) => x.name === name)!;
    const [first] = await c.statements('postgres');
    const r = await client.query<{ 'QUERY PLAN': string }>({
      text: `EXPLAIN ${toPgPlaceholders(first!.sql)}`,
      values: first!.params.map((v) => v ?? null),
    });
    const plan = r.rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).toMatch(new RegExp(`Index (Only )?Scan( Backward)? using ${c.index} on `));
    expect(plan).not.toMatch(/Seq Scan on (inventory_certificates|inventory_certificate_applications|deliveries) |Bitmap Heap Scan/);
    // no sort below the page's LIMIT (the applicationId page sorts its page of rows, above its keys' LIMIT)
    expect(plan.slice(plan.lastIndexOf('Limit'))).not.toMatch(/\bSort\b/);
  });
});
