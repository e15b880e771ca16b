/**
 * The chain's weakest link (docs/expiry.md "CA expiring before its certificates"), store side, once over SqlDb for
 * both engines: the inventory rows whose chain expires before their leaf, the self-signed certificates (roots)
 * that certificates they signed outlive, those certificates, and the marks of the CAs reported (migration 20).
 * Every read is an index range of the rows concerned, bounded by its `limit`.
 */
import { bool, int, intOrNull, str, stringList, strOrNull } from './rows.js';
import { type SqlDb, type SqlRow, placeholders, statementChunks } from './sqldb.js';
import type { WeakLinkMark, WeakLinkOps, WeakLinkRow } from './types.js';

/** Upper bound of one read, whatever the caller asks. */
const MAX_ROWS = 10_000;
/** Keys per IN list, rows per multi-row INSERT (statementChunks). */
const IN_CHUNK = 256;

const COLUMNS = (a: string) =>
  `${a}.cluster_id, c.name AS cluster_name, ${a}.namespace, ${a}.secret_name, ${a}.certificate_name, ${a}.serial, ${a}.issuer,
   ${a}.subject, ${a}.common_name, ${a}.not_after, ${a}.chain_not_after, ${a}.application_ids, ${a}.ignored, ${a}.runbook_url`;
const CLUSTER = (a: string) => `LEFT JOIN clusters c ON c.company_id = ${a}.company_id AND c.id = ${a}.cluster_id`;
/** a certificate that is not its own issuer (a root's later copy is the root, not a certificate it signed) */
const NOT_SELF_SIGNED = (a: string) => `(${a}.subject IS NULL OR ${a}.subject <> ${a}.issuer)`;

function toRow(row: SqlRow): WeakLinkRow {
  return {
    clusterId: str(row, 'cluster_id'),
    clusterName: strOrNull(row, 'cluster_name'),
    namespace: str(row, 'namespace'),
    secretName: str(row, 'secret_name'),
    certificateName: strOrNull(row, 'certificate_name'),
    serial: str(row, 'serial'),
    issuer: strOrNull(row, 'issuer'),
    subject: strOrNull(row, 'subject'),
    commonName: strOrNull(row, 'common_name'),
    notAfter: int(row, 'not_after'),
    chainNotAfter: intOrNull(row, 'chain_not_after'),
    applicationIds: stringList(row['application_ids']),
    ignored: bool(row, 'ignored'),
    runbookUrl: strOrNull(row, 'runbook_url'),
  };
}

const bounded = (limit: number): number => Math.max(1, Math.min(MAX_ROWS, Math.floor(limit)));

export function createWeakLinkOps(db: SqlDb): WeakLinkOps {
  return {
    async listWeakChainRows(companyId, now, limit) {
      // the predicate is the partial index's, word for word, so both planners read only that index; `+` keeps
      // SQLite from ranging over the (company_id, not_after) index instead
      const rows = await db.all(
        `SELECT ${COLUMNS('i')}
           FROM inventory_certificates i ${CLUSTER('i')}
          WHERE i.company_id = ? AND chain_not_after < not_after AND +i.not_after > ? AND i.serial IS NOT NULL
          ORDER BY i.issuer, i.chain_not_after, i.not_after DESC, i.cluster_id, i.namespace, i.secret_name
          LIMIT ?`,
        [companyId, now, bounded(limit)],
      );
      return rows.map(toRow);
    },

    async listOutlivedRoots(companyId, now, limit) {
      // the roots and the later copies of each (NOT EXISTS) are ranges of the self-signed partial index (the
      // `subject >= ''` range makes SQLite prefer it); the certificates outliving it, of (issuer, not_after)
      const rows = await db.all(
        `SELECT ${COLUMNS('r')}
           FROM inventory_certificates r ${CLUSTER('r')}
          WHERE r.company_id = ? AND subject = issuer AND r.subject >= '' AND r.serial IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM inventory_certificates s
                             WHERE s.company_id = r.company_id AND s.subject = r.subject AND subject = issuer
                               AND s.not_after > r.not_after)
            AND EXISTS (SELECT 1 FROM inventory_certificates l
                         WHERE l.company_id = r.company_id AND l.issuer = r.subject AND l.not_after > r.not_after
                           AND l.not_after > ? AND ${NOT_SELF_SIGNED('l')})
          ORDER BY r.subject, r.cluster_id, r.namespace, r.secret_name
          LIMIT ?`,
        [companyId, now, bounded(limit)],
      );
      return rows.map(toRow);
    },

    async listCertificatesOutliving(companyId, issuer, notAfterAfter, limit) {
      const rows = await db.all(
        `SELECT ${COLUMNS('l')}
           FROM inventory_certificates l ${CLUSTER('l')}
          WHERE l.company_id = ? AND l.issuer = ? AND l.not_after > ? AND l.serial IS NOT NULL AND ${NOT_SELF_SIGNED('l')}
          ORDER BY l.not_after DESC, l.cluster_id, l.namespace, l.secret_name
          LIMIT ?`,
        [companyId, issuer, notAfterAfter, bounded(limit)],
      );
      return rows.map(toRow);
    },

    async getWeakLinkMarks(companyId, caKeys) {
      const keys = [...new Set(caKeys)];
      const out: WeakLinkMark[] = [];
      for (const chunk of statementChunks(keys, IN_CHUNK)) {
        const rows = await db.all(
          `SELECT company_id, ca_key, not_after, leaf_count, reported_at FROM weak_link_marks
            WHERE company_id = ? AND ca_key IN (${placeholders(chunk.length)})`,
          [companyId, ...chunk],
        );
        for (const r of rows)
          out.push({
            companyId: str(r, 'company_id'),
            caKey: str(r, 'ca_key'),
            notAfter: int(r, 'not_after'),
            leafCount: int(r, 'leaf_count'),
            reportedAt: int(r, 'reported_at'),
          });
      }
      return out;
    },

    async putWeakLinkMarks(recs) {
      for (const chunk of statementChunks(recs, IN_CHUNK)) {
        await db.run(
          `INSERT INTO weak_link_marks (company_id, ca_key, not_after, leaf_count, reported_at)
           VALUES ${chunk.map(() => `(${placeholders(5)})`).join(', ')}
           ON CONFLICT (company_id, ca_key) DO UPDATE SET
             not_after = excluded.not_after, leaf_count = excluded.leaf_count, reported_at = excluded.reported_at`,
          chunk.flatMap((r) => [r.companyId, r.caKey, r.notAfter, r.leafCount, r.reportedAt]),
        );
      }
    },

    async deleteStaleWeakLinkMarks(companyId, notAfterBefore, limit) {
      return db.run(
        `DELETE FROM weak_link_marks WHERE company_id = ? AND ca_key IN (
           SELECT ca_key FROM weak_link_marks WHERE company_id = ? AND not_after < ? LIMIT ?)`,
        [companyId, companyId, notAfterBefore, bounded(limit)],
      );
    },
  };
}
