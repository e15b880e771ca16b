/**
 * Shared by the PostgreSQL benches (expiry-scan.ts, inventory-scale.ts): the server, the bare baselines they
 * print next to the hub's figures (a multi-row INSERT, the due-range SELECT) and the plan of the expiry scan's
 * page query.
 */
import pg from 'pg';
import { startPostgres } from '../../test/support/postgres.js';

export const mb = (n: number): string => `${(n / 1048576).toFixed(0)} MB`;
export const secs = (ms: number): string => (ms < 1000 ? `${ms.toFixed(1)} ms` : `${(ms / 1000).toFixed(2)} s`);

/** PostgreSQL from `DATABASE_URL`, else a throwaway server (scripts/pg.sh); `stop` stops only a server it started. */
export async function benchPostgres(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, stop: async () => {} };
  const server = await startPostgres();
  return { url: server.url, stop: () => server.stop() };
}

/** One multi-row `INSERT INTO table (columns) VALUES (…), (…)` of `rows` (each row's values in column order). */
export async function multiRowInsert(
  db: pg.ClientBase | pg.Pool,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly unknown[])[],
): Promise<void> {
  const params: unknown[] = [];
  const values = rows.map((r) => {
    const base = params.length;
    params.push(...r);
    return `(${columns.map((_, c) => `$${base + c + 1}`).join(', ')})`;
  });
  await db.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values.join(', ')}`, params);
}

/**
 * The bare read the expiry scan is compared with: every row of the company due by `horizon`, one SELECT.
 * Returns its row count and time.
 */
export async function bareDueSelect(db: pg.ClientBase, companyId: string, horizon: number): Promise<{ rows: number; ms: number }> {
  const t = performance.now();
  const r = await db.query(
    'SELECT cluster_id, namespace, secret_name, serial, issuer, not_after, application_ids FROM inventory_certificates WHERE company_id = $1 AND not_after <= $2',
    [companyId, horizon],
  );
  return { rows: r.rowCount ?? 0, ms: performance.now() - t };
}

/**
 * The plan node that serves the scan's first page (the query of src/store/expiry.ts listExpiryInventory, as
 * the store sends it): an index scan line, or undefined when PostgreSQL would read the table.
 */
export async function scanPagePlan(db: pg.ClientBase, companyId: string, horizon: number, page: number): Promise<string | undefined> {
  const plan = await db.query(
    `EXPLAIN SELECT i.cluster_id FROM inventory_certificates i LEFT JOIN clusters c ON c.company_id = i.company_id AND c.id = i.cluster_id
      WHERE i.company_id = $1 AND i.not_after <= $2 AND i.serial IS NOT NULL ORDER BY i.not_after, i.cluster_id, i.namespace, i.secret_name LIMIT $3`,
    [companyId, horizon, page],
  );
  return plan.rows
    .map((r: Record<string, string>) => r['QUERY PLAN'])
    .find((l) => /Index/.test(l ?? ''))
    ?.trim();
}
