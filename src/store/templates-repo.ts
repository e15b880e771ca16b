/**
 * Notification templates (migration 10, docs/templates.md), written once over SqlDb for both
 * engines. The parts are the template's JSON (TEXT on both engines); they were compiled by the service
 * before being written.
 */
import { ROUTER_COLUMNS, int, json, rowToRouter, str, strOrNull } from './rows.js';
import { type SqlDb, type SqlRow, type SqlValue, padToPowerOfTwo, placeholders, statementChunks } from './sqldb.js';
import type { TemplateOps, TemplateParts, TemplateRecord } from './types.js';

const COLUMNS = ['id', 'company_id', 'name', 'parts', 'managed_by', 'created_at', 'updated_at'] as const;
const TC = COLUMNS.join(', ');
const RT = ROUTER_COLUMNS.map((c) => `r.${c}`).join(', ');
/** Ids per IN list (statementChunks). */
const ID_CHUNK = 256;

function toRow(r: TemplateRecord): SqlValue[] {
  return [r.id, r.companyId, r.name, JSON.stringify(r.parts), r.managedBy, r.createdAt, r.updatedAt];
}

function fromRow(row: SqlRow, prefix = ''): TemplateRecord {
  const c = (n: string) => `${prefix}${n}`;
  return {
    id: str(row, c('id')),
    companyId: str(row, c('company_id')),
    name: str(row, c('name')),
    parts: json<TemplateParts>(row, c('parts')),
    managedBy: strOrNull(row, c('managed_by')),
    createdAt: int(row, c('created_at')),
    updatedAt: int(row, c('updated_at')),
  };
}

export function createTemplateOps(db: SqlDb): TemplateOps {
  return {
    async listTemplates(companyId) {
      const rows = await db.all(`SELECT ${TC} FROM templates WHERE company_id = ? ORDER BY created_at, id`, [companyId]);
      return rows.map((r) => fromRow(r));
    },

    async getTemplate(companyId, id) {
      const row = await db.get(`SELECT ${TC} FROM templates WHERE company_id = ? AND id = ?`, [companyId, id]);
      return row ? fromRow(row) : null;
    },

    async createTemplate(rec) {
      const row = await db.get(`INSERT INTO templates (${TC}) VALUES (${placeholders(COLUMNS.length)}) RETURNING ${TC}`, toRow(rec));
      return fromRow(row!);
    },

    async updateTemplate(companyId, id, patch, now) {
      const sets: string[] = [];
      const params: SqlValue[] = [];
      const set = (column: string, v: SqlValue) => {
        sets.push(`${column} = ?`);
        params.push(v);
      };
      if (patch.name !== undefined) set('name', patch.name);
      if (patch.parts !== undefined) set('parts', JSON.stringify(patch.parts));
      if (patch.managedBy !== undefined) set('managed_by', patch.managedBy);
      sets.push('updated_at = ?');
      params.push(now);
      const row = await db.get(`UPDATE templates SET ${sets.join(', ')} WHERE company_id = ? AND id = ? RETURNING ${TC}`, [
        ...params,
        companyId,
        id,
      ]);
      return row ? fromRow(row) : null;
    },

    async deleteTemplates(companyId, ids) {
      const wanted = [...new Set(ids)];
      if (wanted.length === 0) return [];
      const rows: SqlRow[] = [];
      for (const chunk of statementChunks(wanted, ID_CHUNK))
        rows.push(
          ...(await db.all(`DELETE FROM templates WHERE company_id = ? AND id IN (${placeholders(chunk.length)}) RETURNING id`, [
            companyId,
            ...chunk,
          ])),
        );
      const deleted = new Set(rows.map((r) => r['id']));
      return wanted.filter((id) => deleted.has(id));
    },

    async listRoutersByTemplate(companyId, templateIds) {
      if (templateIds.length === 0) return [];
      // one statement (its ORDER BY spans every id), its list padded to a bounded set of texts
      const ids = padToPowerOfTwo([...new Set(templateIds)]);
      const rows = await db.all(
        `SELECT ${RT} FROM routers r WHERE r.company_id = ? AND r.template_id IN (${placeholders(ids.length)})
         ORDER BY r.created_at, r.id`,
        [companyId, ...ids],
      );
      return rows.map(rowToRouter);
    },

    async getRouterTemplate(companyId, routerId) {
      const cols = COLUMNS.map((c) => `t.${c} AS t_${c}`).join(', ');
      const row = await db.get(
        `SELECT ${cols} FROM routers r JOIN templates t ON t.company_id = r.company_id AND t.id = r.template_id
         WHERE r.company_id = ? AND r.id = ?`,
        [companyId, routerId],
      );
      return row ? fromRow(row, 't_') : null;
    },
  };
}
