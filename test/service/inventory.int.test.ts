/**
 * applyInventoryReport on PostgreSQL: how a new cluster's first report meets the company's clusters quota.
 * bench/inventory-scale.ts found every company's first snapshots applied one at a time: the quota's per-company
 * lock was taken before the rows were written and held until commit, so N new clusters of one company wrote
 * their rows serially whatever the pool size. The lock must cover only the count and the commit.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CertificateFacts, InventoryReport } from '../../src/model/inventory.js';
import { serviceContext } from '../../src/service/context.js';
import { ServiceError } from '../../src/model/errors.js';
import { applyInventoryReport } from '../../src/service/inventory.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';

const fact = (secretName: string): CertificateFacts => ({
  namespace: 'web',
  secretName,
  serial: '0A1B',
  notBefore: '2026-01-01T00:00:00Z',
  notAfter: '2027-01-01T00:00:00Z',
  subject: `CN=${secretName}.example.com`,
  dnsNames: [`${secretName}.example.com`],
  issuer: 'CN=Example CA',
  applicationIds: [],
  labels: {},
  chainNotAfter: null,
});

const firstSnapshot = (n: number): InventoryReport => ({
  protocol: 1,
  cluster: { id: randomUUID(), name: `c-${n}` },
  agentVersion: 'test',
  epoch: randomUUID(),
  seq: 1,
  kind: 'snapshot',
  final: true,
  upserts: [fact('a'), fact('b'), fact('c')],
  deletes: [],
});

async function until<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('applyInventoryReport: a new cluster and the clusters quota (postgres)', () => {
  const url = testDatabaseUrl();
  const schema = randomSchema('t_inv_apply');
  let store: Store;
  let holder: pg.Client;
  beforeAll(async () => {
    store = await openStore(url, { schema });
    await store.migrate();
    holder = new pg.Client({ connectionString: url });
    await holder.connect();
    await holder.query(`SET search_path TO "${schema}"`);
  });
  afterAll(async () => {
    await holder?.end();
    await store?.close();
    await dropSchema(url, schema);
  });

  it("writes its rows before it waits for the company's quota lock (first reports of one company are not applied one at a time)", async () => {
    const company = randomUUID();
    // another new cluster's transaction of the same company, holding the quota lock
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`certmgr-notify quota clusters ${company}`]);
    const r = firstSnapshot(1);
    const applying = applyInventoryReport(serviceContext(store, company), r);
    try {
      const pid = await until('the report to wait for an advisory lock', async () => {
        const q = await holder.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND pid <> pg_backend_pid()`,
        );
        return q.rows[0]?.pid;
      });
      // while it waits, its transaction has already written the report's rows (RowExclusiveLock on the table)
      const written = await holder.query<{ rel: string }>(
        `SELECT relation::regclass::text AS rel FROM pg_locks WHERE pid = $1 AND granted AND mode = 'RowExclusiveLock' AND locktype = 'relation'`,
        [pid],
      );
      expect(written.rows.map((x) => x.rel)).toContain('inventory_certificates');
    } finally {
      await holder.query('COMMIT');
    }
    expect(await applying).toEqual({ ack: { status: 'applied', clusterId: r.cluster.id, epoch: r.epoch, seq: 1 } });
  });

  it('stays exact under concurrency: of 8 new clusters at once with room for 5, 5 are applied and 3 refused with nothing written', async () => {
    const company = randomUUID();
    const ctx = serviceContext(store, company, { quotas: { maxClustersPerCompany: 5 } });
    const reports = Array.from({ length: 8 }, (_, i) => firstSnapshot(i));
    const out = await Promise.allSettled(reports.map((r) => applyInventoryReport(ctx, r)));
    const applied = out.filter((o) => o.status === 'fulfilled');
    const refused = out.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    expect(applied.length).toBe(5);
    expect(refused.length).toBe(3);
    for (const e of refused) expect(e).toMatchObject({ code: 'QUOTA_EXCEEDED' } satisfies Partial<ServiceError>);
    const counts = await holder.query<{ clusters: string; rows: string }>(
      `SELECT (SELECT count(*) FROM clusters WHERE company_id = $1) AS clusters, (SELECT count(*) FROM inventory_certificates WHERE company_id = $1) AS rows`,
      [company],
    );
    expect(counts.rows[0]).toEqual({ clusters: '5', rows: '15' });
  });

  it('the certificates quota stays exact under concurrency: 8 clusters adding 3 each with room for 15 → 5 applied, 15 rows', async () => {
    const company = randomUUID();
    const ctx = serviceContext(store, company, { quotas: { maxCertificatesPerCompany: 15 } });
    const out = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => applyInventoryReport(ctx, firstSnapshot(i))));
    const refused = out.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    expect(out.filter((o) => o.status === 'fulfilled').length).toBe(5);
    for (const e of refused) expect(e).toMatchObject({ code: 'QUOTA_EXCEEDED' } satisfies Partial<ServiceError>);
    const rows = await holder.query<{ n: string }>(`SELECT count(*) AS n FROM inventory_certificates WHERE company_id = $1`, [company]);
    expect(rows.rows[0]?.n).toBe('15');
  });
});
