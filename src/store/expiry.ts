/**
 * The expiry evaluation's store operations (src/expiry/), written once over SqlDb for both engines:
 * the inventory read by notAfter (migration 6's (company_id, not_after) index) and the marks (migration 7).
 */
import { isExpiryThreshold, type ExpiryThreshold } from '../model/expiry-thresholds.js';
import { bool, stringList } from './rows.js';
import { type SqlDb, type SqlRow, placeholders, statementChunks } from './sqldb.js';
import type { ExpiryInventoryRow, ExpiryMarksRecord, ExpiryOps } from './types.js';

const DAY_MS = 86_400_000;
/** Upper bound of one inventory page, whatever the caller asks. */
const MAX_PAGE = 10_000;
/** Rows per multi-row INSERT (statementChunks; 7 parameters each). */
const INSERT_CHUNK = 256;
/** Keys per IN list (statementChunks). */
const IN_CHUNK = 256;

const MARK_COLUMNS = ['company_id', 'cert_key', 'issuer', 'serial', 'not_after', 'marks', 'updated_at'] as const;

function str(row: SqlRow, name: string): string {
  const v = row[name];
  if (typeof v !== 'string') throw new Error(`store: column "${name}" is not text`);
  return v;
}

function strOrNull(row: SqlRow, name: string): string | null {
  const v = row[name];
  return v === null || v === undefined ? null : str(row, name);
}

function int(row: SqlRow, name: string): number {
  const v = row[name];
  const n = typeof v === 'number' ? v : typeof v === 'bigint' || typeof v === 'string' ? Number(v) : NaN;
  if (!Number.isSafeInteger(n)) throw new Error(`store: column "${name}" is not an integer`);
  return n;
}

/**
 * expiry_thresholds: days and shares (`"33%"`); the hub validated them on the way in; anything else stored counts
 * as none (the company's).
 */
function thresholdList(text: unknown): ExpiryThreshold[] | null {
  if (typeof text !== 'string') return null;
  try {
    const v: unknown = JSON.parse(text);
    if (!Array.isArray(v)) return null;
    const own = v.filter(isExpiryThreshold);
    return own.length ? own : null;
  } catch {
    return null;
  }
}

function rowToInventory(row: SqlRow): ExpiryInventoryRow {
  return {
    clusterId: str(row, 'cluster_id'),
    clusterName: strOrNull(row, 'cluster_name'),
    namespace: str(row, 'namespace'),
    secretName: str(row, 'secret_name'),
    certificateName: strOrNull(row, 'certificate_name'),
    serial: str(row, 'serial'),
    issuer: strOrNull(row, 'issuer'),
    commonName: strOrNull(row, 'common_name'),
    notBefore: row['not_before'] === null || row['not_before'] === undefined ? null : int(row, 'not_before'),
    notAfter: int(row, 'not_after'),
    applicationIds: stringList(row['application_ids']),
    dnsNames: stringList(row['dns_names']),
    ignored: bool(row, 'ignored'),
    expiryThresholds: thresholdList(row['expiry_thresholds']),
    runbookUrl: strOrNull(row, 'runbook_url'),
  };
}

function rowToMarks(row: SqlRow): ExpiryMarksRecord {
  const text = str(row, 'marks');
  return {
    companyId: str(row, 'company_id'),
    certKey: str(row, 'cert_key'),
    issuer: str(row, 'issuer'),
    serial: str(row, 'serial'),
    notAfter: int(row, 'not_after'),
    marks: JSON.parse(text) as unknown,
    updatedAt: int(row, 'updated_at'),
  };
}

export function createExpiryOps(db: SqlDb): ExpiryOps {
  return {
    async tryLockExpiry(companyId) {
      if (db.dialect !== 'postgres') return true;
      const row = await db.get('SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0)) AS locked', [
        `certmgr-notify expiry ${companyId}`,
      ]);
      return row?.['locked'] === true;
    },

    async listExpiryInventory(companyId, notAfterMax, after, limit, own) {
      const n = Math.max(1, Math.min(MAX_PAGE, Math.floor(limit)));
      // rows with their own thresholds are in range by those, the others by the company's
      const range = own
        ? `i.not_after <= ? AND (CASE WHEN i.expiry_threshold_max IS NULL THEN i.not_after <= ?
                                     ELSE i.not_after <= ? + i.expiry_threshold_max * ${DAY_MS} END)`
        : 'i.not_after <= ?';
      const rangeParams = own ? [Math.max(own.notAfterMax, notAfterMax), notAfterMax, own.now] : [notAfterMax];
      // `not_after >= ?` bounds the index range from the cursor on (the row comparison alone would be a filter
      // over the company's whole range on PostgreSQL); the row comparison then skips the rows already read.
      const keyset = after ? 'AND i.not_after >= ? AND (i.not_after, i.cluster_id, i.namespace, i.secret_name) > (?, ?, ?, ?)' : '';
      const rows = await db.all(
        `SELECT i.cluster_id, c.name AS cluster_name, i.namespace, i.secret_name, i.certificate_name, i.serial, i.issuer,
                i.common_name, i.not_before, i.not_after, i.application_ids, i.dns_names, i.ignored, i.expiry_thresholds, i.runbook_url
           FROM inventory_certificates i
           LEFT JOIN clusters c ON c.company_id = i.company_id AND c.id = i.cluster_id
          WHERE i.company_id = ? AND ${range} AND i.serial IS NOT NULL ${keyset}
          ORDER BY i.not_after, i.cluster_id, i.namespace, i.secret_name
          LIMIT ?`,
        [
          companyId,
          ...rangeParams,
          ...(after ? [after.notAfter, after.notAfter, after.clusterId, after.namespace, after.secretName] : []),
          n,
        ],
      );
      return rows.map(rowToInventory);
    },

    async maxOwnExpiryThreshold(companyId) {
      // the partial index of migration 14 holds only rows with their own thresholds
      const row = await db.get(
        `SELECT max(expiry_threshold_max) AS m FROM inventory_certificates WHERE company_id = ? AND expiry_threshold_max IS NOT NULL`,
        [companyId],
      );
      const m = row?.['m'];
      return m === null || m === undefined ? null : Number(m);
    },

    async claimExpiryScan(companyId, now, notSince) {
      const row = await db.get(
        `INSERT INTO expiry_scans (company_id, started_at) VALUES (?, ?)
         ON CONFLICT (company_id) DO UPDATE SET started_at = excluded.started_at WHERE expiry_scans.started_at <= ?
         RETURNING company_id`,
        [companyId, now, notSince],
      );
      return row !== undefined;
    },

    async listInventoryCompanies(after, limit) {
      const n = Math.max(1, Math.min(MAX_PAGE, Math.floor(limit)));
      const rows = await db.all(
        `SELECT DISTINCT company_id FROM clusters ${after !== null ? 'WHERE company_id > ?' : ''} ORDER BY company_id LIMIT ?`,
        after !== null ? [after, n] : [n],
      );
      return rows.map((r) => str(r, 'company_id'));
    },

    async getExpiryMarks(companyId, certKeys) {
      const keys = [...new Set(certKeys)];
      const out: ExpiryMarksRecord[] = [];
      for (const chunk of statementChunks(keys, IN_CHUNK)) {
        const rows = await db.all(
          `SELECT ${MARK_COLUMNS.join(', ')} FROM expiry_marks WHERE company_id = ? AND cert_key IN (${placeholders(chunk.length)})`,
          [companyId, ...chunk],
        );
        out.push(...rows.map(rowToMarks));
      }
      return out;
    },

    async putExpiryMarks(recs) {
      for (const chunk of statementChunks(recs, INSERT_CHUNK)) {
        const row = `(${placeholders(MARK_COLUMNS.length)})`;
        await db.run(
          `INSERT INTO expiry_marks (${MARK_COLUMNS.join(', ')}) VALUES ${chunk.map(() => row).join(', ')}
           ON CONFLICT (company_id, cert_key) DO UPDATE SET
             issuer = excluded.issuer, serial = excluded.serial, not_after = excluded.not_after,
             marks = excluded.marks, updated_at = excluded.updated_at`,
          chunk.flatMap((r) => [r.companyId, r.certKey, r.issuer, r.serial, r.notAfter, JSON.stringify(r.marks), r.updatedAt]),
        );
      }
    },

    async deleteStaleExpiryMarks(companyId, notAfterBefore, limit) {
      const n = Math.max(1, Math.min(MAX_PAGE, Math.floor(limit)));
      // the inventory's (company_id, issuer, serial) index answers "is it still served anywhere?"
      return db.run(
        `DELETE FROM expiry_marks WHERE company_id = ? AND cert_key IN (
           SELECT m.cert_key FROM expiry_marks m
            WHERE m.company_id = ? AND m.not_after < ?
              AND NOT EXISTS (
                SELECT 1 FROM inventory_certificates i
                 WHERE i.company_id = m.company_id AND i.serial = m.serial
                   AND (i.issuer = m.issuer OR (m.issuer = '' AND i.issuer IS NULL)))
            LIMIT ?)`,
        [companyId, companyId, notAfterBefore, n],
      );
    },
  };
}
