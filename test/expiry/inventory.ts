/**
 * A stand-in for the inventory ingestion (another branch writes it): writes migration 6's rows (clusters,
 * inventory_certificates) directly through the store's own SQL connection, on either engine.
 */
import type { SqlDb, SqlValue } from '../../src/store/sqldb.js';
import { placeholders } from '../../src/store/sqldb.js';
import type { Store } from '../../src/store/types.js';

export interface InventoryRow {
  clusterId: string;
  namespace: string;
  secretName: string;
  certificateName?: string | null;
  serial: string | null;
  notAfter: number | null;
  issuer?: string | null;
  commonName?: string | null;
  applicationIds?: string[];
  /** per-resource policy (migration 14) */
  ignored?: boolean;
  expiryThresholds?: number[] | null;
  runbookUrl?: string | null;
}

/** The store's connection outside any transaction (the engines' protected `autoDb`). */
function rawDb(store: Store): SqlDb {
  return (store as unknown as { autoDb(): SqlDb }).autoDb();
}

export async function insertCluster(store: Store, companyId: string, id: string, name: string, now = 0): Promise<void> {
  await rawDb(store).run(
    `INSERT INTO clusters (company_id, id, name, agent_version, epoch, last_seq, snapshot_complete, first_seen_at, last_seen_at, certificate_count)
     VALUES (?, ?, ?, 'test', 'e1', 1, ?, ?, ?, 0)
     ON CONFLICT (company_id, id) DO UPDATE SET name = excluded.name`,
    [companyId, id, name, true, now, now],
  );
}

const COLUMNS = [
  'company_id',
  'cluster_id',
  'namespace',
  'secret_name',
  'certificate_name',
  'serial',
  'not_after',
  'issuer',
  'common_name',
  'dns_names',
  'application_ids',
  'labels',
  'epoch',
  'updated_at',
  'ignored',
  'expiry_thresholds',
  'expiry_threshold_max',
  'runbook_url',
];

/** Inserts or replaces rows (multi-row INSERTs of 500). */
export async function upsertInventory(store: Store, companyId: string, rows: readonly InventoryRow[], now = 0): Promise<void> {
  const db = rawDb(store);
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    const params: SqlValue[] = chunk.flatMap((r) => [
      companyId,
      r.clusterId,
      r.namespace,
      r.secretName,
      r.certificateName ?? null,
      r.serial,
      r.notAfter,
      r.issuer === undefined ? 'CN=Test CA, O=Example' : r.issuer,
      r.commonName ?? null,
      '[]',
      JSON.stringify(r.applicationIds ?? []),
      '{}',
      'e1',
      now,
      r.ignored ?? false,
      r.expiryThresholds ? JSON.stringify(r.expiryThresholds) : null,
      r.expiryThresholds ? Math.max(...r.expiryThresholds) : null,
      r.runbookUrl ?? null,
    ]);
    await db.run(
      `INSERT INTO inventory_certificates (${COLUMNS.join(', ')})
       VALUES ${chunk.map(() => `(${placeholders(COLUMNS.length)})`).join(', ')}
       ON CONFLICT (company_id, cluster_id, namespace, secret_name) DO UPDATE SET
         certificate_name = excluded.certificate_name, serial = excluded.serial, not_after = excluded.not_after,
         issuer = excluded.issuer, common_name = excluded.common_name, application_ids = excluded.application_ids,
         ignored = excluded.ignored, expiry_thresholds = excluded.expiry_thresholds,
         expiry_threshold_max = excluded.expiry_threshold_max, runbook_url = excluded.runbook_url`,
      params,
    );
  }
}
