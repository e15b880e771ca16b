/**
 * The delivery queue's plans on PostgreSQL (docs/performance.md, Delivery, fifth pass): the claim reads the claim
 * index in order and stops after its limit instead of probing and sorting every due row, and the batched outcome
 * finds its rows by id instead of reading every open row. Both wrong plans were O(queue) per statement. Plan
 * shapes (EXPLAIN), not times.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueueOps } from '../../src/store/outbox-queue.js';
import { openStore } from '../../src/store/index.js';
import { type SqlDb, type SqlValue, toPgPlaceholders } from '../../src/store/sqldb.js';
import type { Store } from '../../src/store/types.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { eventRecord, integration, newDelivery } from './contract.js';

const url = testDatabaseUrl();
const schema = randomSchema('t_plans');
const COMPANY = randomUUID();
const BACKLOG = 3000;

let store: Store;
/** The statements the explaining SqlDb ran, per `explain` key: text (PostgreSQL placeholders) and parameters. */
const captured: Record<string, { text: string; values: unknown[] }[]> = {};
let client: pg.Client;

/**
 * A SqlDb on `client` that runs the queue's statements, and first EXPLAINs (custom plan, with the statement's
 * parameters) each one whose text contains `explain`'s key; the plans are collected under that key.
 */
function explainingDb(explain: Record<string, string[]>): SqlDb {
  const run = async (sql: string, params: readonly SqlValue[] = []) => {
    const text = toPgPlaceholders(sql);
    const values = params.map((v) => v ?? null);
    for (const [key, plans] of Object.entries(explain))
      if (sql.includes(key)) {
        (captured[key] ??= []).push({ text, values });
        const r = await client.query<{ 'QUERY PLAN': string }>({ text: `EXPLAIN ${text}`, values });
        plans.push(r.rows.map((row) => row['QUERY PLAN']).join('\n'));
      }
    return client.query({ text, values });
  };
  return {
    dialect: 'postgres',
    all: async (sql, params) => (await run(sql, params)).rows,
    get: async (sql, params) => (await run(sql, params)).rows[0],
    run: async (sql, params) => (await run(sql, params)).rowCount ?? 0,
  };
}

/** The index an Index Scan of the UPDATE's target (`deliveries`, not aliased) reads, per plan line. */
const targetScans = (plan: string) => [...plan.matchAll(/Scan using (\w+) on deliveries {2}\(/g)].map((m) => m[1]);

beforeAll(async () => {
  store = await openStore(url, { schema });
  await store.migrate();
  const integ = await store.createIntegration(integration(COMPANY));
  // a backlog of heads (one delivery per key), analyzed while every row is PENDING: no IN_FLIGHT row in the statistics
  const events = Array.from({ length: BACKLOG }, () => eventRecord(COMPANY));
  await store.transaction(async (tx) => {
    await tx.insertEvents(events);
    await tx.insertDeliveries(
      events.map((e, i) => newDelivery(e, { integrationId: integ.id, orderKey: `key-${i}`, orderAt: e.receivedAt, orderSeq: i })),
    );
  });
  client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`SET search_path TO "${schema}"`);
  await client.query('ANALYZE deliveries');
  await client.query('ANALYZE events');
});

afterAll(async () => {
  await client?.end();
  await store?.close();
  await dropSchema(url, schema);
});

describe('delivery queue plans on PostgreSQL', () => {
  it('a claim over a backlog of heads reads the claim index in order (no sort of the due rows); outcomes find their rows by id', async () => {
    const explain: Record<string, string[]> = { 'claimed AS': [], 'done AS': [] };
    const ops = createQueueOps(explainingDb(explain), { parking: { due: false, since: 0 } });
    const now = Date.now() + 1000;
    const first = await ops.claimDeliveries(now, 16, 60_000, 'plans');
    const second = await ops.claimDeliveries(now, 16, 60_000, 'plans');
    expect(first).toHaveLength(16);
    expect(second).toHaveLength(16);

    const claimPlan = explain['claimed AS']![0]!;
    expect(claimPlan).toMatch(/Index Scan using deliveries_claim_idx on deliveries d {2}\(/);
    expect(claimPlan).not.toMatch(/Sort Key: d\.next_attempt_at/);
    // The store prepares the claim (postgres.ts PreparedNames), so after five runs PostgreSQL may keep its generic
    // plan, made without the parameters' values: that plan too must read the claim index in order (with the
    // LIMIT as a parameter it expected 10% of the due rows and hashed them against the whole table).
    const { text, values } = captured['claimed AS']![0]!;
    await client.query(`PREPARE generic_claim AS ${text}`);
    await client.query('SET plan_cache_mode = force_generic_plan');
    try {
      // EXECUTE takes its arguments as literals (EXPLAIN cannot bind parameters)
      const args = values.map((v) => (v === null ? 'NULL' : client.escapeLiteral(String(v)))).join(', ');
      const r = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE generic_claim(${args})`);
      const generic = r.rows.map((row) => row['QUERY PLAN']).join('\n');
      expect(generic).toMatch(/Index Scan using deliveries_claim_idx on deliveries d {2}\(/);
      expect(generic).not.toMatch(/Sort Key: d\.next_attempt_at/);
    } finally {
      await client.query('RESET plan_cache_mode');
      await client.query('DEALLOCATE generic_claim');
    }

    // 32 rows IN_FLIGHT now, none in the statistics: the fenced outcome must still look each row up by its id
    const applied = await ops.recordOutcomes(
      first.slice(0, 8).map((d) => ({ id: d.id, attemptNo: d.attempts, kind: 'delivered' as const, statusCode: 200 })),
      now,
    );
    expect(applied).toEqual(Array(8).fill(true));
    const outcomePlan = explain['done AS']![0]!;
    expect(targetScans(outcomePlan)).toContain('deliveries_pkey');
    expect(targetScans(outcomePlan).filter((i) => i !== 'deliveries_pkey')).toEqual([]);
    expect(outcomePlan).not.toMatch(/(Seq|Bitmap Heap) Scan on deliveries {2}\(/);
  });
});
