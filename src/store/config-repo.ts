/**
 * A company's configuration, written once over SqlDb and shared by both engines: the monitoring configuration,
 * integrations (their secrets sealed at rest) and routers, and the quota checks over a company's records.
 * Every statement filters by company_id.
 */
import { randomUUID } from 'node:crypto';
import {
  INTEGRATION_COLUMNS,
  INTEGRATION_PATCH_COLUMNS,
  MONITORING_CONFIG_COLUMNS,
  type PatchColumns,
  ROUTER_COLUMNS,
  ROUTER_PATCH_COLUMNS,
  decodeSecrets,
  encodeSecrets,
  integrationToRow,
  monitoringConfigToRow,
  routerToRow,
  rowToIntegration,
  rowToMonitoringConfig,
  rowToRouter,
} from './rows.js';
import { type SecretBox } from './secret-box.js';
import { type SqlDb, type SqlRow, type SqlValue, padToPowerOfTwo, placeholders, statementChunks } from './sqldb.js';
import type { ConfigOps, IntegrationRecord, MonitoringConfigRecord, QuotaKind, QuotaOps, ReencryptReport, RouterRecord } from './types.js';

const MC = MONITORING_CONFIG_COLUMNS.join(', ');
const INT = INTEGRATION_COLUMNS.join(', ');
const RT = ROUTER_COLUMNS.join(', ');
/** Ids per IN list (statementChunks). */
const ID_CHUNK = 256;

function patchSet<P extends object>(cols: PatchColumns<P>, patch: P, now: number): { set: string; params: SqlValue[] } {
  const sets: string[] = [];
  const params: SqlValue[] = [];
  // Iterate the allowed columns, not the patch, so stray keys (companyId, id, …) are ignored.
  for (const key of Object.keys(cols) as (keyof P & keyof PatchColumns<P>)[]) {
    const v = patch[key];
    if (v === undefined) continue;
    const [column, encode] = cols[key] as readonly [string, (v: unknown) => SqlValue];
    sets.push(`${column} = ?`);
    params.push(encode(v));
  }
  sets.push('updated_at = ?');
  params.push(now);
  return { set: sets.join(', '), params };
}

/** Tables behind QuotaKind (a closed set: never interpolate anything else). */
const QUOTA_TABLES: Record<QuotaKind, string> = {
  routers: 'routers',
  integrations: 'integrations',
  clusters: 'clusters',
  templates: 'templates',
  silences: 'silences',
};

function unique(ids: string[]): string[] {
  return [...new Set(ids)];
}

/** `box()`: the key ring sealing integration secrets (undefined: plaintext). */
export function createConfigOps(db: SqlDb, box: () => SecretBox | undefined = () => undefined): ConfigOps {
  const toIntegration = (row: Parameters<typeof rowToIntegration>[0]) => rowToIntegration(row, box());
  async function deleteByIds(table: string, companyId: string, ids: string[]): Promise<string[]> {
    const wanted = unique(ids);
    if (wanted.length === 0) return [];
    const rows: SqlRow[] = [];
    for (const chunk of statementChunks(wanted, ID_CHUNK))
      rows.push(
        ...(await db.all(`DELETE FROM ${table} WHERE company_id = ? AND id IN (${placeholders(chunk.length)}) RETURNING id`, [
          companyId,
          ...chunk,
        ])),
      );
    const deleted = new Set(rows.map((r) => r['id']));
    return wanted.filter((id) => deleted.has(id));
  }

  /**
   * Keyed by company: an existing row keeps its id, everything else is replaced. With `expect`: only while the
   * stored manager is still the one the caller decided on (compare-and-set, null-safe on both engines).
   */
  async function upsertMonitoringConfig(rec: MonitoringConfigRecord, expect?: { manager: string | null }) {
    const row = await db.get(
      `INSERT INTO monitoring_configs (${MC}) VALUES (${placeholders(MONITORING_CONFIG_COLUMNS.length)})
       ON CONFLICT (company_id) DO UPDATE SET
         enabled = excluded.enabled,
         thresholds = excluded.thresholds,
         application_ids = excluded.application_ids,
         include_unassigned_certificates = excluded.include_unassigned_certificates,
         updated_at = excluded.updated_at,
         manager = excluded.manager
       ${expect ? 'WHERE monitoring_configs.manager IS NOT DISTINCT FROM ?' : ''}
       RETURNING ${MC}`,
      [...monitoringConfigToRow({ ...rec, id: rec.id || randomUUID() }), ...(expect ? [expect.manager] : [])],
    );
    return row ? rowToMonitoringConfig(row) : null;
  }

  return {
    async getMonitoringConfig(companyId) {
      const row = await db.get(`SELECT ${MC} FROM monitoring_configs WHERE company_id = ?`, [companyId]);
      return row ? rowToMonitoringConfig(row) : null;
    },

    async putMonitoringConfig(rec: MonitoringConfigRecord) {
      return (await upsertMonitoringConfig(rec))!;
    },

    putMonitoringConfigIf(rec: MonitoringConfigRecord, expectManager: string | null) {
      return upsertMonitoringConfig(rec, { manager: expectManager });
    },

    async listIntegrations(companyId) {
      const rows = await db.all(`SELECT ${INT} FROM integrations WHERE company_id = ? ORDER BY created_at, id`, [companyId]);
      return rows.map(toIntegration);
    },

    async getIntegration(companyId, id) {
      const row = await db.get(`SELECT ${INT} FROM integrations WHERE company_id = ? AND id = ?`, [companyId, id]);
      return row ? toIntegration(row) : null;
    },

    async createIntegration(rec: IntegrationRecord) {
      const row = await db.get(
        `INSERT INTO integrations (${INT}) VALUES (${placeholders(INTEGRATION_COLUMNS.length)}) RETURNING ${INT}`,
        integrationToRow({ ...rec, id: rec.id || randomUUID() }, box()),
      );
      return toIntegration(row!);
    },

    async updateIntegration(companyId, id, patch, now) {
      const { secrets, ...columns } = patch;
      const { set, params } = patchSet(INTEGRATION_PATCH_COLUMNS, columns, now);
      // secrets are sealed here: the ciphertext is bound to (company, id)
      const sealed = secrets === undefined ? [] : [encodeSecrets(secrets, { companyId, id }, box())];
      const row = await db.get(
        `UPDATE integrations SET ${sealed.length ? 'secrets = ?, ' : ''}${set} WHERE company_id = ? AND id = ? RETURNING ${INT}`,
        [...sealed, ...params, companyId, id],
      );
      return row ? toIntegration(row) : null;
    },

    deleteIntegrations(companyId, ids) {
      return deleteByIds('integrations', companyId, ids);
    },

    async routingFingerprint(companyId) {
      const row = await db.get(
        `SELECT (SELECT count(*) FROM routers WHERE company_id = ?) AS rc,
                (SELECT coalesce(sum(updated_at), 0) FROM routers WHERE company_id = ?) AS rs,
                (SELECT count(*) FROM integrations WHERE company_id = ?) AS ic,
                (SELECT coalesce(sum(updated_at), 0) FROM integrations WHERE company_id = ?) AS isum,
                (SELECT coalesce(max(updated_at), 0) FROM monitoring_configs WHERE company_id = ?) AS mu,
                (SELECT count(*) FROM silences WHERE company_id = ?) AS sc,
                (SELECT coalesce(sum(updated_at), 0) FROM silences WHERE company_id = ?) AS ss`,
        [companyId, companyId, companyId, companyId, companyId, companyId, companyId],
      );
      return [row?.rc, row?.rs, row?.ic, row?.isum, row?.mu, row?.sc, row?.ss].map(String).join(':');
    },

    async listRouters(companyId) {
      const rows = await db.all(`SELECT ${RT} FROM routers WHERE company_id = ? ORDER BY created_at, id`, [companyId]);
      return rows.map(rowToRouter);
    },

    async listRoutersByIntegration(companyId, integrationIds) {
      if (integrationIds.length === 0) return [];
      // one statement (its ORDER BY spans every id), its list padded to a bounded set of texts
      const ids = padToPowerOfTwo(unique(integrationIds));
      const rows = await db.all(
        `SELECT ${RT} FROM routers WHERE company_id = ? AND integration_id IN (${placeholders(ids.length)})
         ORDER BY created_at, id`,
        [companyId, ...ids],
      );
      return rows.map(rowToRouter);
    },

    async getRouter(companyId, id) {
      const row = await db.get(`SELECT ${RT} FROM routers WHERE company_id = ? AND id = ?`, [companyId, id]);
      return row ? rowToRouter(row) : null;
    },

    async createRouter(rec: RouterRecord) {
      const row = await db.get(
        `INSERT INTO routers (${RT}) VALUES (${placeholders(ROUTER_COLUMNS.length)}) RETURNING ${RT}`,
        routerToRow({ ...rec, id: rec.id || randomUUID() }),
      );
      return rowToRouter(row!);
    },

    async updateRouter(companyId, id, patch, now) {
      const { set, params } = patchSet(ROUTER_PATCH_COLUMNS, patch, now);
      const row = await db.get(`UPDATE routers SET ${set} WHERE company_id = ? AND id = ? RETURNING ${RT}`, [...params, companyId, id]);
      return row ? rowToRouter(row) : null;
    },

    async deleteRouters(companyId, ids) {
      const deleted = await deleteByIds('routers', companyId, ids);
      // their reminders end with them (docs/reminders.md); not left to count against the caps until due
      for (const chunk of statementChunks(deleted, ID_CHUNK))
        await db.run(`DELETE FROM reminders WHERE company_id = ? AND router_id IN (${placeholders(chunk.length)})`, [companyId, ...chunk]);
      return deleted;
    },
  };
}

/** Existence and quota counts over a company's records of a kind (QUOTA_TABLES). */
export function createQuotaOps(db: SqlDb): QuotaOps {
  return {
    async existingIds(kind, companyId, ids) {
      const wanted = unique(ids);
      if (wanted.length === 0) return [];
      const rows: SqlRow[] = [];
      for (const chunk of statementChunks(wanted, ID_CHUNK))
        rows.push(
          ...(await db.all(`SELECT id FROM ${QUOTA_TABLES[kind]} WHERE company_id = ? AND id IN (${placeholders(chunk.length)})`, [
            companyId,
            ...chunk,
          ])),
        );
      const found = new Set(rows.map((r) => r['id']));
      return wanted.filter((id) => found.has(id));
    },

    async countForQuota(kind, companyId) {
      if (db.dialect === 'postgres') {
        // A separate statement: a statement's snapshot is taken when it starts, so a count in the same
        // statement as the lock could miss the row the previous lock holder just committed.
        await db.get('SELECT pg_advisory_xact_lock(hashtextextended(?, 0)) AS locked', [`certmgr-notify quota ${kind} ${companyId}`]);
      }
      const row = await db.get(`SELECT count(*) AS n FROM ${QUOTA_TABLES[kind]} WHERE company_id = ?`, [companyId]);
      return Number(row?.['n'] ?? 0);
    },
  };
}

/** Rows per batch (one transaction each) of the re-encryption pass. */
const REENCRYPT_BATCH = 200;

/**
 * One batch of the re-encryption pass: the integrations after `after` (by id), up to REENCRYPT_BATCH. Re-seals
 * the secrets that are plaintext (written before encryption) or sealed with a key other than the primary one
 * (after a rotation). Each row is replaced only if it still holds the value that was read (compare-and-set),
 * so a concurrent write by another replica always wins; updated_at is left alone (nothing the user sees
 * changed). Every row is decrypted, so the pass is also the check that the key file is right; rows that
 * cannot be decrypted are counted in `report` and left as they are. Returns the next cursor, or null at the end.
 */
export async function reencryptSecretsBatch(db: SqlDb, box: SecretBox, after: string, report: ReencryptReport): Promise<string | null> {
  const rows = await db.all(`SELECT id, company_id, secrets FROM integrations WHERE id > ? ORDER BY id LIMIT ?`, [after, REENCRYPT_BATCH]);
  for (const row of rows) {
    const id = String(row['id']);
    const companyId = String(row['company_id']);
    const stored = String(row['secrets']);
    report.checked++;
    try {
      const plain = decodeSecrets(stored, { companyId, id }, box);
      if (box.isCurrent(stored)) continue;
      const next = encodeSecrets(plain, { companyId, id }, box);
      report.reencrypted += await db.run(`UPDATE integrations SET secrets = ? WHERE id = ? AND company_id = ? AND secrets = ?`, [
        next,
        id,
        companyId,
        stored,
      ]);
    } catch (e) {
      report.failed++;
      if (report.errors.length < 10) report.errors.push((e as Error).message);
    }
  }
  return rows.length < REENCRYPT_BATCH ? null : String(rows[rows.length - 1]!['id']);
}
