/**
 * Silences (docs/silences.md), written once over SqlDb for both engines (migration 11), and the one
 * read the ingestion's recovery exception needs from deliveries.
 */
import { isEventTypeId, type EventTypeId } from '../events/families.js';
import type { DeliveryStatus, SilenceListFilter, SilenceOps, SilencePatch, SilenceRecord } from './types.js';
import { int, intOrNull, str, strOrNull } from './rows.js';
import { type SqlDb, type SqlRow, type SqlValue, placeholders } from './sqldb.js';

const SILENCE_COLUMNS = [
  'id',
  'company_id',
  'matcher',
  'event_type_id',
  'event_type_ids',
  'starts_at',
  'ends_at',
  'comment',
  'created_by',
  'managed_by',
  'created_at',
  'updated_at',
  'expired_at',
] as const;
const COLS = SILENCE_COLUMNS.join(', ');
const MAX_PAGE = 1000;

/** The SQL of "ended at ?" (effective end, src/silences/decide.ts): one parameter, now. */
const ENDED = `(ends_at <= ? OR (expired_at IS NOT NULL AND expired_at <= ?))`;
const STATE_WHERE: Record<NonNullable<SilenceListFilter['state']>, { sql: string; params: (now: number) => SqlValue[] }> = {
  EXPIRED: { sql: ENDED, params: (n) => [n, n] },
  ACTIVE: { sql: `NOT ${ENDED} AND starts_at <= ?`, params: (n) => [n, n, n] },
  PENDING: { sql: `NOT ${ENDED} AND starts_at > ?`, params: (n) => [n, n, n] },
};

function toRow(r: SilenceRecord): SqlValue[] {
  return [
    r.id,
    r.companyId,
    r.matcher,
    r.eventTypeId,
    JSON.stringify(r.eventTypeIds),
    r.startsAt,
    r.endsAt,
    r.comment,
    r.createdBy,
    r.managedBy,
    r.createdAt,
    r.updatedAt,
    r.expiredAt,
  ];
}

function fromRow(row: SqlRow): SilenceRecord {
  return {
    id: str(row, 'id'),
    companyId: str(row, 'company_id'),
    matcher: str(row, 'matcher'),
    eventTypeId: strOrNull(row, 'event_type_id') as EventTypeId | null,
    eventTypeIds: familyList(row['event_type_ids']),
    startsAt: int(row, 'starts_at'),
    endsAt: int(row, 'ends_at'),
    comment: str(row, 'comment'),
    createdBy: str(row, 'created_by'),
    managedBy: strOrNull(row, 'managed_by'),
    createdAt: int(row, 'created_at'),
    updatedAt: int(row, 'updated_at'),
    expiredAt: intOrNull(row, 'expired_at'),
  };
}

/** A stored JSON list of event type ids; anything this version does not know is left out. */
function familyList(text: unknown): EventTypeId[] {
  try {
    const v: unknown = typeof text === 'string' ? JSON.parse(text) : [];
    return Array.isArray(v) ? v.filter(isEventTypeId) : [];
  } catch {
    return [];
  }
}

const PATCH: Record<keyof SilencePatch, string> = {
  matcher: 'matcher',
  eventTypeId: 'event_type_id',
  eventTypeIds: 'event_type_ids',
  startsAt: 'starts_at',
  endsAt: 'ends_at',
  comment: 'comment',
  createdBy: 'created_by',
  managedBy: 'managed_by',
};

const limitOf = (n: number) => Math.min(MAX_PAGE, Math.max(1, Math.floor(Number.isFinite(n) ? n : MAX_PAGE)));

export function createSilenceOps(db: SqlDb): SilenceOps {
  return {
    async createSilence(rec) {
      const row = await db.get(
        `INSERT INTO silences (${COLS}) VALUES (${placeholders(SILENCE_COLUMNS.length)}) RETURNING ${COLS}`,
        toRow(rec),
      );
      if (!row) throw new Error('store: INSERT … RETURNING returned no row');
      return fromRow(row);
    },

    async getSilence(companyId, id) {
      const row = await db.get(`SELECT ${COLS} FROM silences WHERE company_id = ? AND id = ?`, [companyId, id]);
      return row ? fromRow(row) : null;
    },

    async updateSilence(companyId, id, patch, now) {
      const sets: string[] = [];
      const params: SqlValue[] = [];
      // the allowed columns, not the patch's keys: stray keys are ignored
      for (const key of Object.keys(PATCH) as (keyof SilencePatch)[]) {
        const v = patch[key];
        if (v === undefined) continue;
        sets.push(`${PATCH[key]} = ?`);
        params.push(Array.isArray(v) ? JSON.stringify(v) : v);
      }
      sets.push('updated_at = ?');
      params.push(now);
      const row = await db.get(`UPDATE silences SET ${sets.join(', ')} WHERE company_id = ? AND id = ? RETURNING ${COLS}`, [
        ...params,
        companyId,
        id,
      ]);
      return row ? fromRow(row) : null;
    },

    async expireSilence(companyId, id, now) {
      const row = await db.get(
        `UPDATE silences SET expired_at = ?, updated_at = ? WHERE company_id = ? AND id = ? AND NOT ${ENDED} RETURNING ${COLS}`,
        [now, now, companyId, id, now, now],
      );
      if (row) return fromRow(row);
      return this.getSilence(companyId, id);
    },

    async listSilences(companyId, f) {
      const where = ['company_id = ?'];
      const params: SqlValue[] = [companyId];
      if (f.state) {
        where.push(STATE_WHERE[f.state].sql);
        params.push(...STATE_WHERE[f.state].params(f.now));
      }
      if (f.after) {
        where.push('(created_at > ? OR (created_at = ? AND id > ?))');
        params.push(f.after.createdAt, f.after.createdAt, f.after.id);
      }
      const rows = await db.all(`SELECT ${COLS} FROM silences WHERE ${where.join(' AND ')} ORDER BY created_at, id LIMIT ?`, [
        ...params,
        limitOf(f.limit),
      ]);
      return rows.map(fromRow);
    },

    async listLiveSilences(companyId, now, limit) {
      const rows = await db.all(
        `SELECT ${COLS} FROM silences WHERE company_id = ? AND ends_at > ? AND (expired_at IS NULL OR expired_at > ?)
         ORDER BY created_at, id LIMIT ?`,
        [companyId, now, now, Math.max(1, Math.floor(limit))],
      );
      return rows.map(fromRow);
    },

    async deleteOldestEndedSilences(companyId, now, n) {
      const k = Math.floor(n);
      if (!(k >= 1)) return 0;
      return db.run(
        `DELETE FROM silences WHERE id IN (
           SELECT id FROM silences WHERE company_id = ? AND ${ENDED}
           ORDER BY CASE WHEN expired_at IS NOT NULL AND expired_at < ends_at THEN expired_at ELSE ends_at END, id LIMIT ?)`,
        [companyId, now, now, k],
      );
    },

    async previousDelivery(companyId, integrationId, orderKey, before) {
      const row = await db.get(
        `SELECT status, order_at, order_seq, id FROM deliveries
         WHERE company_id = ? AND integration_id = ? AND order_key = ?
           AND (order_at, order_seq, id) < (?, ?, ?)
         ORDER BY order_at DESC, order_seq DESC, id DESC LIMIT 1`,
        [companyId, integrationId, orderKey, before.orderAt, before.orderSeq, before.id],
      );
      return row
        ? {
            status: str(row, 'status') as DeliveryStatus,
            orderAt: int(row, 'order_at'),
            orderSeq: int(row, 'order_seq'),
            id: str(row, 'id'),
          }
        : null;
    },
  };
}
