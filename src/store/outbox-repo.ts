/**
 * The outbox's writes and reads, written once over SqlDb and shared by both engines: accepted events and their
 * deliveries (the delivery workers' side is outbox-queue.ts). Every statement that reads a company's records
 * filters by company_id.
 */
import { DELIVERY_COLUMNS, EVENT_COLUMNS, eventToRow, newDeliveryToRow, rowToDelivery, rowToEvent } from './rows.js';
import { type SqlDb, type SqlValue, placeholders, statementChunks } from './sqldb.js';
import type { DeliveryFilter, OutboxOps } from './types.js';

const EV = EVENT_COLUMNS.join(', ');
const DL = DELIVERY_COLUMNS.join(', ');

/** listDeliveries: default and maximum page size. */
const DELIVERY_PAGE_DEFAULT = 100;
const DELIVERY_PAGE_MAX = 1000;
/** Rows per multi-row INSERT (statementChunks; 18 parameters each, well under both engines' parameter limits). */
const INSERT_CHUNK = 256;

/**
 * Whether one index range serves listDeliveries with this filter (migrations 2 and 16, each in listing order):
 * an eventId (an event's deliveries are few: one per matching router, plus reminders), or at most one of
 * integrationId and status. integrationId with status reads one of the two ranges and drops rows one by one:
 * the GraphQL cost model prices it.
 */
export function deliveryFilterIndexed(filter: Pick<DeliveryFilter, 'integrationId' | 'status' | 'eventId'>): boolean {
  return filter.eventId !== undefined || filter.integrationId === undefined || filter.status === undefined;
}

/** The ingestion path's outbox writes and the listing reads (OutboxOps). */
export function createOutboxOps(db: SqlDb): OutboxOps {
  return {
    async insertEvent(rec) {
      await db.run(`INSERT INTO events (${EV}) VALUES (${placeholders(EVENT_COLUMNS.length)})`, eventToRow(rec));
    },

    async insertEvents(recs) {
      for (const chunk of statementChunks(recs, INSERT_CHUNK)) {
        const row = `(${placeholders(EVENT_COLUMNS.length)})`;
        await db.run(`INSERT INTO events (${EV}) VALUES ${chunk.map(() => row).join(', ')}`, chunk.flatMap(eventToRow));
      }
    },

    async insertDeliveries(recs) {
      for (const chunk of statementChunks(recs, INSERT_CHUNK)) {
        const row = `(${placeholders(DELIVERY_COLUMNS.length)})`;
        await db.run(`INSERT INTO deliveries (${DL}) VALUES ${chunk.map(() => row).join(', ')}`, chunk.flatMap(newDeliveryToRow));
      }
    },

    async getEvent(companyId, id) {
      const row = await db.get(`SELECT ${EV} FROM events WHERE company_id = ? AND id = ?`, [companyId, id]);
      return row ? rowToEvent(row) : null;
    },

    async listDeliveries(companyId, filter) {
      const where = ['company_id = ?'];
      const params: SqlValue[] = [companyId];
      if (filter.integrationId !== undefined) {
        where.push('integration_id = ?');
        params.push(filter.integrationId);
      }
      if (filter.status !== undefined) {
        where.push('status = ?');
        params.push(filter.status);
      }
      if (filter.eventId !== undefined) {
        where.push('event_id = ?');
        params.push(filter.eventId);
      }
      if (filter.before) {
        // the first term bounds the index range (a seek to the cursor); the rest is the exact position
        where.push('created_at <= ? AND (created_at < ? OR (created_at = ? AND id < ?))');
        params.push(filter.before.createdAt, filter.before.createdAt, filter.before.createdAt, filter.before.id);
      }
      const rows = await db.all(`SELECT ${DL} FROM deliveries WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`, [
        ...params,
        pageSize(filter.limit),
      ]);
      return rows.map(rowToDelivery);
    },
  };
}

function pageSize(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DELIVERY_PAGE_DEFAULT;
  return Math.min(DELIVERY_PAGE_MAX, Math.max(1, Math.floor(limit)));
}
