/**
 * The console's store operations (migration 15), written once over SqlDb for both engines: the events
 * listing, the per-resource health rows ingestion keeps, and the dead-letter retry. Every statement filters by
 * company_id.
 */
import { DELIVERY_COLUMNS, EVENT_COLUMNS, int, rowToDelivery, rowToEvent, str } from './rows.js';
import { type SqlDb, type SqlValue, placeholders, statementChunks } from './sqldb.js';
import type { ConsoleOps, ResourceHealthWrite } from './types.js';

const EV = EVENT_COLUMNS.map((c) => `e.${c}`).join(', ');
const DL = DELIVERY_COLUMNS.join(', ');
/** Rows per multi-row upsert (statementChunks; 8 parameters each). */
const HEALTH_CHUNK = 256;

/** A streak's deliveries, newest first (reminders share their event's order position: created_at tells them apart). */
/** The streak's deliveries, latest first in the resource's order (the event's position; one event's deliveries by id). */
const STREAK_ORDER = 'ORDER BY order_at DESC, order_seq DESC, id DESC';
/** Integrations per statement of listStreakDeliveries (statementChunks; 6 parameters each). */
const STREAK_INTEGRATIONS_PER_STATEMENT = 64;

export function createConsoleOps(db: SqlDb): ConsoleOps {
  /**
   * One upsert per chunk. A row changes only for a newer event (order position, then id: the deliveries' order).
   * `fresh` writes (the streak began in the batch, or the batch ends healthy) replace since; the others keep a
   * stored streak's since and start one only where none is open.
   */
  async function upsert(writes: readonly ResourceHealthWrite[], fresh: boolean): Promise<void> {
    const keep = (col: string) =>
      fresh ? `excluded.${col}` : `CASE WHEN resource_health.since IS NULL THEN excluded.${col} ELSE resource_health.${col} END`;
    for (const chunk of statementChunks(writes, HEALTH_CHUNK)) {
      const params: SqlValue[] = chunk.flatMap((w) => [
        w.companyId,
        w.resourceKey,
        w.eventId,
        w.orderAt,
        w.orderSeq,
        w.since?.at ?? null,
        w.since?.orderAt ?? null,
        w.since?.orderSeq ?? null,
      ]);
      await db.run(
        `INSERT INTO resource_health (company_id, resource_key, event_id, order_at, order_seq, since, since_order_at, since_order_seq)
         VALUES ${chunk.map(() => `(${placeholders(8)})`).join(', ')}
         ON CONFLICT (company_id, resource_key) DO UPDATE SET
           event_id = excluded.event_id, order_at = excluded.order_at, order_seq = excluded.order_seq,
           since = ${keep('since')}, since_order_at = ${keep('since_order_at')}, since_order_seq = ${keep('since_order_seq')}
         WHERE (excluded.order_at, excluded.order_seq, excluded.event_id) > (resource_health.order_at, resource_health.order_seq, resource_health.event_id)`,
        params,
      );
    }
  }

  return {
    async listEvents(companyId, filter, after, limit) {
      const where = ['e.company_id = ?'];
      const params: SqlValue[] = [companyId];
      if (filter.type !== undefined) {
        where.push('e.type = ?');
        params.push(filter.type);
      }
      if (after) {
        where.push('(e.received_at < ? OR (e.received_at = ? AND e.id < ?))');
        params.push(after.receivedAt, after.receivedAt, after.id);
      }
      const rows = await db.all(`SELECT ${EV} FROM events e WHERE ${where.join(' AND ')} ORDER BY e.received_at DESC, e.id DESC LIMIT ?`, [
        ...params,
        Math.max(1, Math.floor(limit)),
      ]);
      return rows.map(rowToEvent);
    },

    async putResourceHealth(writes) {
      // two statements: a row must not be updated twice in one statement (PostgreSQL refuses), and the fold gives one write per key
      await upsert(
        writes.filter((w) => w.fresh),
        true,
      );
      await upsert(
        writes.filter((w) => !w.fresh),
        false,
      );
    },

    async listUnhealthyResources(companyId, after, limit) {
      const where = ['h.company_id = ?', 'h.since IS NOT NULL'];
      const params: SqlValue[] = [companyId];
      if (after) {
        where.push('(h.since > ? OR (h.since = ? AND h.resource_key > ?))');
        params.push(after.since, after.since, after.resourceKey);
      }
      const rows = await db.all(
        `SELECT h.resource_key AS h_resource_key, h.since AS h_since, h.since_order_at AS h_since_order_at,
           h.since_order_seq AS h_since_order_seq, ${EV}
         FROM resource_health h JOIN events e ON e.company_id = h.company_id AND e.id = h.event_id
         WHERE ${where.join(' AND ')} ORDER BY h.since, h.resource_key LIMIT ?`,
        [...params, Math.max(1, Math.floor(limit))],
      );
      return rows.map((r) => ({
        resourceKey: str(r, 'h_resource_key'),
        since: int(r, 'h_since'),
        sinceOrderAt: int(r, 'h_since_order_at'),
        sinceOrderSeq: int(r, 'h_since_order_seq'),
        event: rowToEvent(r),
      }));
    },

    async listStreakDeliveries(companyId, resourceKey, from, limit) {
      // Bounded reads whatever the streak's length (an agent key can make it long): per integration of the company,
      // the newest `limit` rows of the resource's range of deliveries_order_idx, read backwards; then the newest of
      // those. The integrations are quota-bounded; a statement takes STREAK_INTEGRATIONS_PER_STATEMENT of them.
      const n = Math.max(1, Math.floor(limit));
      const integrations = (await db.all(`SELECT id FROM integrations WHERE company_id = ? ORDER BY id`, [companyId])).map((r) =>
        str(r, 'id'),
      );
      const idx = db.dialect === 'sqlite' ? ' INDEXED BY deliveries_order_idx' : '';
      const found: ReturnType<typeof rowToDelivery>[] = [];
      for (const chunk of statementChunks(integrations, STREAK_INTEGRATIONS_PER_STATEMENT)) {
        const parts = chunk.map(
          (_, k) =>
            `SELECT * FROM (SELECT ${DL} FROM deliveries${idx}
               WHERE company_id = ? AND integration_id = ? AND order_key = ? AND (order_at, order_seq) >= (?, ?)
               ORDER BY order_at DESC, order_seq DESC, id DESC LIMIT ?) AS p${k}`,
        );
        const params = chunk.flatMap((id) => [companyId, id, resourceKey, from.orderAt, from.orderSeq, n]);
        const rows = await db.all(`SELECT * FROM (${parts.join(' UNION ALL ')}) AS u ${STREAK_ORDER} LIMIT ?`, [...params, n]);
        found.push(...rows.map(rowToDelivery));
      }
      return found.sort((a, b) => b.orderAt - a.orderAt || b.orderSeq - a.orderSeq || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).slice(0, n);
    },

    async retryDeadDelivery(companyId, id, now) {
      // One statement: only a DEAD row changes (a concurrent retry or worker cannot make it PENDING twice). A retry
      // by hand is a new chance: a POISONED delivery is sent again (alone) rather than dead-lettered at once.
      const row = await db.get(
        `UPDATE deliveries SET status = 'PENDING', next_attempt_at = ?, updated_at = ?, lease_until = NULL, claimed_by = NULL,
           abandoned_claims = 0
         WHERE company_id = ? AND id = ? AND status = 'DEAD'
         RETURNING ${DL}`,
        [now, now, companyId, id],
      );
      if (row) return { retried: rowToDelivery(row) };
      const cur = await db.get(`SELECT status FROM deliveries WHERE company_id = ? AND id = ?`, [companyId, id]);
      return cur ? { status: str(cur, 'status') as never } : null;
    },
  };
}
