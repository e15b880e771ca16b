/**
 * The repositories, written once over SqlDb and shared by both engines.
 * Every statement that reads or changes a company's records filters by company_id.
 */
import { randomUUID } from 'node:crypto';
import {
  INTEGRATION_COLUMNS,
  INTEGRATION_PATCH_COLUMNS,
  MONITORING_CONFIG_COLUMNS,
  type PatchColumns,
  ROUTER_COLUMNS,
  ROUTER_PATCH_COLUMNS,
  integrationToRow,
  monitoringConfigToRow,
  routerToRow,
  rowToIntegration,
  rowToMonitoringConfig,
  rowToRouter,
} from './rows.js';
import { type SqlDb, type SqlValue, placeholders } from './sqldb.js';
import type { IntegrationRecord, MonitoringConfigRecord, RouterRecord, StoreOps } from './types.js';

const MC = MONITORING_CONFIG_COLUMNS.join(', ');
const INT = INTEGRATION_COLUMNS.join(', ');
const RT = ROUTER_COLUMNS.join(', ');

function patchSet<P extends object>(
  cols: PatchColumns<P>,
  patch: P,
  now: number,
): { set: string; params: SqlValue[] } {
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

function unique(ids: string[]): string[] {
  return [...new Set(ids)];
}

export function createOps(db: SqlDb): StoreOps {
  async function deleteByIds(table: string, companyId: string, ids: string[]): Promise<string[]> {
    const wanted = unique(ids);
    if (wanted.length === 0) return [];
    const rows = await db.all(
      `DELETE FROM ${table} WHERE company_id = ? AND id IN (${placeholders(wanted.length)}) RETURNING id`,
      [companyId, ...wanted],
    );
    const deleted = new Set(rows.map((r) => r['id']));
    return wanted.filter((id) => deleted.has(id));
  }

  return {
    async getMonitoringConfig(companyId) {
      const row = await db.get(`SELECT ${MC} FROM monitoring_configs WHERE company_id = ?`, [companyId]);
      return row ? rowToMonitoringConfig(row) : null;
    },

    async putMonitoringConfig(rec: MonitoringConfigRecord) {
      // Keyed by company: an existing row keeps its id, everything else is replaced.
      const row = await db.get(
        `INSERT INTO monitoring_configs (${MC}) VALUES (${placeholders(MONITORING_CONFIG_COLUMNS.length)})
         ON CONFLICT (company_id) DO UPDATE SET
           enabled = excluded.enabled,
           thresholds = excluded.thresholds,
           application_ids = excluded.application_ids,
           include_unassigned_certificates = excluded.include_unassigned_certificates,
           updated_at = excluded.updated_at
         RETURNING ${MC}`,
        monitoringConfigToRow({ ...rec, id: rec.id || randomUUID() }),
      );
      return rowToMonitoringConfig(row!);
    },

    async listIntegrations(companyId) {
      const rows = await db.all(
        `SELECT ${INT} FROM integrations WHERE company_id = ? ORDER BY created_at, id`,
        [companyId],
      );
      return rows.map(rowToIntegration);
    },

    async getIntegration(companyId, id) {
      const row = await db.get(`SELECT ${INT} FROM integrations WHERE company_id = ? AND id = ?`, [companyId, id]);
      return row ? rowToIntegration(row) : null;
    },

    async createIntegration(rec: IntegrationRecord) {
      const row = await db.get(
        `INSERT INTO integrations (${INT}) VALUES (${placeholders(INTEGRATION_COLUMNS.length)}) RETURNING ${INT}`,
        integrationToRow({ ...rec, id: rec.id || randomUUID() }),
      );
      return rowToIntegration(row!);
    },

    async updateIntegration(companyId, id, patch, now) {
      const { set, params } = patchSet(INTEGRATION_PATCH_COLUMNS, patch, now);
      const row = await db.get(`UPDATE integrations SET ${set} WHERE company_id = ? AND id = ? RETURNING ${INT}`, [
        ...params,
        companyId,
        id,
      ]);
      return row ? rowToIntegration(row) : null;
    },

    deleteIntegrations(companyId, ids) {
      return deleteByIds('integrations', companyId, ids);
    },

    async listRouters(companyId) {
      const rows = await db.all(`SELECT ${RT} FROM routers WHERE company_id = ? ORDER BY created_at, id`, [companyId]);
      return rows.map(rowToRouter);
    },

    async listRoutersByIntegration(companyId, integrationIds) {
      const ids = unique(integrationIds);
      if (ids.length === 0) return [];
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
      const row = await db.get(`UPDATE routers SET ${set} WHERE company_id = ? AND id = ? RETURNING ${RT}`, [
        ...params,
        companyId,
        id,
      ]);
      return row ? rowToRouter(row) : null;
    },

    deleteRouters(companyId, ids) {
      return deleteByIds('routers', companyId, ids);
    },
  };
}
