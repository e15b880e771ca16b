/**
 * The tenant list filters' plans on SQLite (migration 16, docs/security.md): each filter's page is the first
 * rows of its own index range, in listing order (no temporary B-tree for the ORDER BY, no scan). Plan shapes
 * (EXPLAIN QUERY PLAN), not times.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { planCases, seedForPlans } from './list-plans.js';

const dir = mkdtempSync(join(tmpdir(), 'certmgr-list-plans-'));
const path = join(dir, 'plans.db');
const COMPANY = randomUUID();
let cases: ReturnType<typeof planCases>;
let raw: DatabaseSync;

beforeAll(async () => {
  const store = await openSqliteStore(path);
  await store.migrate();
  const seed = await seedForPlans(store, COMPANY);
  await store.close();
  raw = new DatabaseSync(path);
  for (const sql of seed.statusSql) raw.exec(sql);
  raw.exec('ANALYZE');
  cases = planCases(COMPANY, seed);
});

afterAll(() => {
  raw?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('list filter plans on SQLite', () => {
  it.each(planCases(COMPANY, { clusterId: '', eventId: '' }).map((c) => c.name))('%s: its index, in order', async (name) => {
    const c = cases.find((x) => x.name === name)!;
    const statements = await c.statements('sqlite');
    expect(statements.length).toBeGreaterThan(0);
    for (const { sql } of statements) {
      const plan = (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail);
      const text = `${sql}\n${plan.join('\n')}`;
      // the first table read is the filter's index range; the rest are lookups by key (and the scan of a
      // subquery's page of keys, a co-routine of at most the page's rows)
      const subqueries = plan.flatMap((d) => /^(?:CO-ROUTINE|MATERIALIZE) (\w+)$/.exec(d)?.[1] ?? []);
      const reads = plan.filter((d) => !/^(CO-ROUTINE|MATERIALIZE) /.test(d));
      expect(reads[0], text).toMatch(new RegExp(`^SEARCH \\w+ USING (COVERING )?INDEX ${c.index} \\(company_id=\\? AND `));
      expect(
        reads.filter((d) => /^SCAN /.test(d) && !subqueries.includes(d.split(' ')[1]!)),
        text,
      ).toEqual([]);
      expect(
        plan.filter((d) => /TEMP B-TREE/.test(d)),
        text,
      ).toEqual([]);
    }
  });
});
