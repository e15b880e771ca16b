/**
 * Inventory queries (docs/inventory.md), written once over SqlDb for both engines. Every statement
 * that reads or changes a company's rows filters by company_id. Bulk writes are multi-row statements: a report
 * of 1,000 certificates is a handful of statements, not 1,000.
 */
import { ownThresholdMaxDays, type ExpiryThreshold } from '../model/expiry-thresholds.js';
import { worstServingStatus } from '../inventory/serving.js';
import { INVENTORY_HEALTH_SQL, SERVING_NO_PROBLEM_SQL, SERVING_PROBLEM_SQL } from './migrations.js';
import { bool, int, intOrNull, json, str, strOrNull } from './rows.js';
import { type SqlDb, type SqlRow, type SqlValue, padToPowerOfTwo, placeholders, statementChunks } from './sqldb.js';
import type {
  ClusterRecord,
  InventoryCertificateRecord,
  InventoryCursor,
  InventoryFilter,
  InventoryOps,
  ListedCertificate,
  ServingEndpointRecord,
} from './types.js';

const CLUSTER_COLUMNS = [
  'company_id',
  'id',
  'name',
  'agent_version',
  'epoch',
  'last_seq',
  'snapshot_complete',
  'first_seen_at',
  'last_seen_at',
  'certificate_count',
  'silent_since',
] as const;
const CL = CLUSTER_COLUMNS.join(', ');

/** The columns of an inventory row, in insert order (also the bare-INSERT baseline of bench/inventory-scale.ts). */
export const CERT_COLUMNS = [
  'company_id',
  'cluster_id',
  'namespace',
  'secret_name',
  'certificate_name',
  'certificate_uid',
  'serial',
  'not_before',
  'not_after',
  'subject',
  'common_name',
  'dns_names',
  'issuer',
  'issuer_ref',
  'ready_status',
  'ready_reason',
  'application_ids',
  'labels',
  'chain_not_after',
  'epoch',
  'updated_at',
  'ignored',
  'expiry_thresholds',
  'expiry_threshold_max',
  'runbook_url',
  'serving',
  'serving_status',
] as const;
const KEY_COLUMNS = new Set(['company_id', 'cluster_id', 'namespace', 'secret_name']);
/** Rows per multi-row statement (statementChunks): 27 parameters each, well under both engines' parameter limits. */
const CHUNK = 256;

function clusterToRow(r: ClusterRecord): SqlValue[] {
  return [
    r.companyId,
    r.id,
    r.name,
    r.agentVersion,
    r.epoch,
    r.lastSeq,
    r.snapshotComplete,
    r.firstSeenAt,
    r.lastSeenAt,
    r.certificateCount,
    r.silentSince,
  ];
}

function rowToCluster(row: SqlRow): ClusterRecord {
  return {
    companyId: str(row, 'company_id'),
    id: str(row, 'id'),
    name: str(row, 'name'),
    agentVersion: str(row, 'agent_version'),
    epoch: str(row, 'epoch'),
    lastSeq: int(row, 'last_seq'),
    snapshotComplete: bool(row, 'snapshot_complete'),
    firstSeenAt: int(row, 'first_seen_at'),
    lastSeenAt: int(row, 'last_seen_at'),
    certificateCount: int(row, 'certificate_count'),
    silentSince: intOrNull(row, 'silent_since'),
  };
}

const enc = (v: unknown): string => JSON.stringify(v);

function certToRow(r: InventoryCertificateRecord): SqlValue[] {
  return [
    r.companyId,
    r.clusterId,
    r.namespace,
    r.secretName,
    r.certificateName,
    r.certificateUid,
    r.serial,
    r.notBefore,
    r.notAfter,
    r.subject,
    r.commonName,
    enc(r.dnsNames),
    r.issuer,
    r.issuerRef === null ? null : enc(r.issuerRef),
    r.readyStatus,
    r.readyReason,
    enc(r.applicationIds),
    enc(r.labels),
    r.chainNotAfter,
    r.epoch,
    r.updatedAt,
    r.ignored,
    r.expiryThresholds === null ? null : enc(r.expiryThresholds),
    ownThresholdMaxDays(r.expiryThresholds, r.notBefore, r.notAfter),
    r.runbookUrl,
    r.serving == null ? null : enc(r.serving),
    worstServingStatus(r.serving),
  ];
}

function rowToCert(row: SqlRow): ListedCertificate {
  return {
    companyId: str(row, 'company_id'),
    clusterId: str(row, 'cluster_id'),
    clusterName: strOrNull(row, 'cluster_name'),
    namespace: str(row, 'namespace'),
    secretName: str(row, 'secret_name'),
    certificateName: strOrNull(row, 'certificate_name'),
    certificateUid: strOrNull(row, 'certificate_uid'),
    serial: strOrNull(row, 'serial'),
    notBefore: intOrNull(row, 'not_before'),
    notAfter: intOrNull(row, 'not_after'),
    subject: strOrNull(row, 'subject'),
    commonName: strOrNull(row, 'common_name'),
    dnsNames: json<string[]>(row, 'dns_names'),
    issuer: strOrNull(row, 'issuer'),
    issuerRef: row['issuer_ref'] === null ? null : json<InventoryCertificateRecord['issuerRef']>(row, 'issuer_ref'),
    readyStatus: strOrNull(row, 'ready_status') as InventoryCertificateRecord['readyStatus'],
    readyReason: strOrNull(row, 'ready_reason'),
    applicationIds: json<string[]>(row, 'application_ids'),
    labels: json<Record<string, string>>(row, 'labels'),
    chainNotAfter: intOrNull(row, 'chain_not_after'),
    ignored: bool(row, 'ignored'),
    expiryThresholds: row['expiry_thresholds'] === null ? null : json<ExpiryThreshold[]>(row, 'expiry_thresholds'),
    runbookUrl: strOrNull(row, 'runbook_url'),
    serving: row['serving'] === null || row['serving'] === undefined ? null : json<ServingEndpointRecord[]>(row, 'serving'),
    epoch: str(row, 'epoch'),
    updatedAt: int(row, 'updated_at'),
  };
}

/** `(namespace, secret_name) IN (VALUES (?, ?), …)` and its parameters. */
function locationsIn(locs: readonly { namespace: string; secretName: string }[]): { sql: string; params: SqlValue[] } {
  return {
    sql: `(namespace, secret_name) IN (VALUES ${locs.map(() => '(?, ?)').join(', ')})`,
    params: locs.flatMap((l) => [l.namespace, l.secretName]),
  };
}

function chunks<T>(xs: readonly T[]): T[][] {
  return statementChunks(xs, CHUNK);
}

const I = CERT_COLUMNS.map((c) => `i.${c}`).join(', ');

/**
 * Whether one index range serves the listing with this filter (migrations 16, 22): at most one of clusterId,
 * namespace, applicationId, health, servingStatus and servingProblem (each has its index in listing order), with or without notAfterAtMost
 * (a range of the same index). Otherwise the first index's range is read and the other filters dropped row by
 * row: up to the company's whole inventory for one page. The GraphQL cost model prices those.
 */
export function inventoryFilterIndexed(filter: InventoryFilter): boolean {
  return (
    [filter.clusterId, filter.namespace, filter.applicationId, filter.health, filter.servingStatus, filter.servingProblem].filter(
      (v) => v !== undefined,
    ).length <= 1
  );
}

export function createInventoryOps(db: SqlDb): InventoryOps {
  /**
   * The WHERE terms of a listing. `o` is the table the page is read from in (not_after, key) order: `a` (the
   * applications table) with an applicationId filter, else `i`.
   */
  function filterSql(filter: InventoryFilter, o: 'a' | 'i'): { where: string[]; params: SqlValue[] } {
    const where: string[] = [];
    const params: SqlValue[] = [];
    if (filter.applicationId !== undefined) {
      where.push('a.application_id = ?');
      params.push(filter.applicationId);
    }
    if (filter.clusterId !== undefined) {
      where.push(`${o}.cluster_id = ?`);
      params.push(filter.clusterId);
    }
    if (filter.namespace !== undefined) {
      where.push(`${o}.namespace = ?`);
      params.push(filter.namespace);
    }
    if (filter.notAfterAtMost !== undefined) {
      where.push(`${o}.not_after <= ?`);
      params.push(filter.notAfterAtMost);
    }
    // a term on the row itself: with an applicationId filter, on the row of the applications table's key
    const onRow = (term: (alias: string) => string) =>
      o === 'i'
        ? term('i.')
        : `EXISTS (SELECT 1 FROM inventory_certificates h WHERE h.company_id = a.company_id AND h.cluster_id = a.cluster_id
             AND h.namespace = a.namespace AND h.secret_name = a.secret_name AND ${term('h.')})`;
    if (filter.health !== undefined) {
      where.push(onRow((h) => `${INVENTORY_HEALTH_SQL(h)} = ?`));
      params.push(filter.health);
    }
    if (filter.servingStatus !== undefined) {
      where.push(onRow((h) => `${h}serving_status = ?`));
      params.push(filter.servingStatus);
    }
    // the partial indexes' own terms (constants, not parameters: SQLite uses a partial index only then)
    if (filter.servingProblem !== undefined) where.push(onRow(filter.servingProblem ? SERVING_PROBLEM_SQL : SERVING_NO_PROBLEM_SQL));
    return { where, params };
  }

  return {
    async lockCluster(companyId, clusterId) {
      if (db.dialect === 'postgres')
        await db.get('SELECT pg_advisory_xact_lock(hashtextextended(?, 0)) AS locked', [
          `certmgr-notify inventory ${companyId} ${clusterId}`,
        ]);
      const row = await db.get(`SELECT ${CL} FROM clusters WHERE company_id = ? AND id = ?`, [companyId, clusterId]);
      return row ? rowToCluster(row) : null;
    },

    async deleteClusters(companyId, ids) {
      const rows: SqlRow[] = [];
      for (const chunk of chunks(ids)) {
        const inn = placeholders(chunk.length);
        rows.push(...(await db.all(`SELECT ${CL} FROM clusters WHERE company_id = ? AND id IN (${inn})`, [companyId, ...chunk])));
        await db.run(`DELETE FROM inventory_certificates WHERE company_id = ? AND cluster_id IN (${inn})`, [companyId, ...chunk]);
        await db.run(`DELETE FROM clusters WHERE company_id = ? AND id IN (${inn})`, [companyId, ...chunk]);
      }
      return rows.map(rowToCluster);
    },

    async putCluster(rec) {
      await db.run(
        `INSERT INTO clusters (${CL}) VALUES (${placeholders(CLUSTER_COLUMNS.length)})
         ON CONFLICT (company_id, id) DO UPDATE SET
           name = excluded.name, agent_version = excluded.agent_version, epoch = excluded.epoch,
           last_seq = excluded.last_seq, snapshot_complete = excluded.snapshot_complete,
           last_seen_at = excluded.last_seen_at, certificate_count = excluded.certificate_count,
           silent_since = excluded.silent_since`,
        clusterToRow(rec),
      );
    },

    async listClusters(companyId, opts) {
      const rows = await db.all(
        `SELECT ${CL} FROM clusters WHERE company_id = ?${opts.after !== undefined ? ' AND id > ?' : ''} ORDER BY id LIMIT ?`,
        [companyId, ...(opts.after !== undefined ? [opts.after] : []), opts.limit],
      );
      return rows.map(rowToCluster);
    },

    async certificateCountExcept(companyId, clusterId) {
      // The company's certificates quota lock, held until the commit: reports of two clusters counting at once
      // would each see the other's old count and both pass (up to a report each over the quota). A statement of
      // its own, so the count's snapshot starts after the lock (READ COMMITTED).
      if (db.dialect === 'postgres')
        await db.get('SELECT pg_advisory_xact_lock(hashtextextended(?, 0)) AS locked', [`certmgr-notify quota certificates ${companyId}`]);
      const row = await db.get(`SELECT coalesce(sum(certificate_count), 0) AS n FROM clusters WHERE company_id = ? AND id <> ?`, [
        companyId,
        clusterId,
      ]);
      return Number(row?.['n'] ?? 0);
    },

    async upsertInventory(companyId, clusterId, epoch, recs) {
      let added = 0;
      const updates = CERT_COLUMNS.filter((c) => !KEY_COLUMNS.has(c))
        .map((c) => `${c} = excluded.${c}`)
        .join(', ');
      for (const chunk of chunks(recs)) {
        const inn = locationsIn(chunk);
        const existing = await db.get(
          `SELECT count(*) AS n FROM inventory_certificates WHERE company_id = ? AND cluster_id = ? AND ${inn.sql}`,
          [companyId, clusterId, ...inn.params],
        );
        added += chunk.length - Number(existing?.['n'] ?? 0);
        const row = `(${placeholders(CERT_COLUMNS.length)})`;
        await db.run(
          `INSERT INTO inventory_certificates (${CERT_COLUMNS.join(', ')}) VALUES ${chunk.map(() => row).join(', ')}
           ON CONFLICT (company_id, cluster_id, namespace, secret_name) DO UPDATE SET ${updates}`,
          chunk.flatMap((r) => certToRow({ ...r, companyId, clusterId, epoch })),
        );
      }
      return added;
    },

    async deleteInventory(companyId, clusterId, locations) {
      let n = 0;
      for (const chunk of chunks(locations)) {
        const inn = locationsIn(chunk);
        n += await db.run(`DELETE FROM inventory_certificates WHERE company_id = ? AND cluster_id = ? AND ${inn.sql}`, [
          companyId,
          clusterId,
          ...inn.params,
        ]);
      }
      return n;
    },

    deleteInventoryOutsideEpoch(companyId, clusterId, epoch) {
      return db.run(`DELETE FROM inventory_certificates WHERE company_id = ? AND cluster_id = ? AND epoch <> ?`, [
        companyId,
        clusterId,
        epoch,
      ]);
    },

    async listInventory(companyId, filter, after, limit) {
      const o = filter.applicationId !== undefined ? 'a' : 'i';
      const f = filterSql(filter, o);
      // the key's columns a filter fixes are left out of the order and the position, so the position is a seek
      // into the filter's index (whose columns after the filter's are the rest of the key)
      const keyCols = (['cluster_id', 'namespace', 'secret_name'] as const).filter(
        (c) => !(c === 'cluster_id' && filter.clusterId !== undefined) && !(c === 'namespace' && filter.namespace !== undefined),
      );
      const key = keyCols.map((c) => `${o}.${c}`).join(', ');
      const keyOf = (c: InventoryCursor) =>
        keyCols.map((k) => (k === 'cluster_id' ? c.clusterId : k === 'namespace' ? c.namespace : c.secretName));
      const page = (cond: string, order: string, pos: SqlValue[], n: number) => {
        const where = `${o}.company_id = ?${f.where.map((w) => ` AND ${w}`).join('')} AND ${cond}`;
        const cluster = `LEFT JOIN clusters c ON c.company_id = i.company_id AND c.id = i.cluster_id`;
        if (o === 'i')
          return db.all(
            `SELECT ${I}, c.name AS cluster_name FROM inventory_certificates i ${cluster} WHERE ${where} ORDER BY ${order} LIMIT ?`,
            [companyId, ...f.params, ...pos, n],
          );
        // the page's keys first (the applications index, in order, LIMIT), then their rows by primary key: as one
        // join, PostgreSQL misjudges the three-column join's size and hashes the company's whole inventory
        return db.all(
          `SELECT ${I}, c.name AS cluster_name FROM (
             SELECT a.company_id, a.cluster_id, a.namespace, a.secret_name, a.not_after FROM inventory_certificate_applications a
             WHERE ${where} ORDER BY ${order} LIMIT ?
           ) a JOIN inventory_certificates i ON i.company_id = a.company_id AND i.cluster_id = a.cluster_id
             AND i.namespace = a.namespace AND i.secret_name = a.secret_name
           ${cluster} ORDER BY ${order}`,
          [companyId, ...f.params, ...pos, n],
        );
      };
      const out: ListedCertificate[] = [];
      // Two phases, each in index order: rows with a notAfter by (not_after, key), then those without by key.
      if (after === null || after.notAfter !== null) {
        const pos = after ? ` AND (${o}.not_after, ${key}) > (${placeholders(keyCols.length + 1)})` : '';
        const rows = await page(
          `${o}.not_after IS NOT NULL${pos}`,
          `${o}.not_after, ${key}`,
          after ? [after.notAfter, ...keyOf(after)] : [],
          limit,
        );
        out.push(...rows.map(rowToCert));
      }
      if (out.length < limit && filter.notAfterAtMost === undefined) {
        const pos = after && after.notAfter === null ? ` AND (${key}) > (${placeholders(keyCols.length)})` : '';
        const rows = await page(`${o}.not_after IS NULL${pos}`, key, after && pos ? keyOf(after) : [], limit - out.length);
        out.push(...rows.map(rowToCert));
      }
      return out;
    },

    async listCertificatePlaces(companyId, certs, perCertificate) {
      const distinct = [...new Map(certs.map((c) => [`${c.issuer}\u0000${c.serial}`, c])).values()];
      if (distinct.length === 0) return [];
      // one statement (its ORDER BY spans every certificate), its list padded to a bounded set of texts
      const keys = padToPowerOfTwo(distinct);
      // at most `perCertificate` places EACH: one certificate copied into thousands of namespaces must not take
      // the places of the others on the page (a LIMIT over the whole result did)
      const rows = await db.all(
        `SELECT issuer, serial, cluster_id, cluster_name, namespace, secret_name FROM (
           SELECT i.issuer, i.serial, i.cluster_id, c.name AS cluster_name, i.namespace, i.secret_name,
                  ROW_NUMBER() OVER (PARTITION BY i.issuer, i.serial ORDER BY i.cluster_id, i.namespace, i.secret_name) AS n
           FROM inventory_certificates i LEFT JOIN clusters c ON c.company_id = i.company_id AND c.id = i.cluster_id
           WHERE i.company_id = ? AND (i.issuer, i.serial) IN (VALUES ${keys.map(() => '(?, ?)').join(', ')})
         ) p WHERE n <= ? ORDER BY issuer, serial, cluster_id, namespace, secret_name`,
        [companyId, ...keys.flatMap((k) => [k.issuer, k.serial]), perCertificate],
      );
      return rows.map((row) => ({
        issuer: str(row, 'issuer'),
        serial: str(row, 'serial'),
        clusterId: str(row, 'cluster_id'),
        clusterName: strOrNull(row, 'cluster_name'),
        namespace: str(row, 'namespace'),
        secretName: str(row, 'secret_name'),
      }));
    },

    async clusterCounts(silentBefore) {
      const row = await db.get(
        `SELECT coalesce(sum(CASE WHEN last_seen_at < ? THEN 1 ELSE 0 END), 0) AS silent, count(*) AS total FROM clusters`,
        [silentBefore],
      );
      const silent = Number(row?.['silent'] ?? 0);
      return { silent, reporting: Number(row?.['total'] ?? 0) - silent };
    },

    async inventoryNotAfterCounts(bounds) {
      // bounds are numbers the caller computed (never user text); placeholders all the same
      const cols = bounds.map((_, i) => `coalesce(sum(CASE WHEN not_after <= ? THEN 1 ELSE 0 END), 0) AS b${i}`);
      const row = await db.get(`SELECT ${[...cols, 'count(not_after) AS total'].join(', ')} FROM inventory_certificates`, [...bounds]);
      return { atOrBefore: bounds.map((_, i) => Number(row?.[`b${i}`] ?? 0)), total: Number(row?.['total'] ?? 0) };
    },

    async clustersToMarkSilent(silentBefore, limit) {
      // the partial index clusters_not_silenced_idx (migration 8) holds exactly these rows, by last_seen_at
      const rows = await db.all(
        `SELECT ${CL} FROM clusters WHERE silent_since IS NULL AND last_seen_at < ? ORDER BY last_seen_at LIMIT ?`,
        [silentBefore, limit],
      );
      return rows.map(rowToCluster);
    },

    async markClusterSilent(companyId, clusterId, lastSeenAt, silentSince) {
      const n = await db.run(
        `UPDATE clusters SET silent_since = ? WHERE company_id = ? AND id = ? AND silent_since IS NULL AND last_seen_at = ?`,
        [silentSince, companyId, clusterId, lastSeenAt],
      );
      return n === 1;
    },
  };
}
