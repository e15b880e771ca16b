/**
 * The reminders' store operations (docs/reminders.md, migration 13), written once over SqlDb for both
 * engines. Rows move only towards newer event positions (putRemindersIfNewer), so the final state of a key does
 * not depend on the order concurrent transactions commit in; the scanner claims due rows with FOR UPDATE SKIP
 * LOCKED on PostgreSQL (SQLite has one writer).
 */
import type { EventTypeId } from '../events/families.js';
import { ROUTER_COLUMNS, bool, int, rowToRouter, str } from './rows.js';
import { type SqlDb, type SqlRow, type SqlValue, placeholders, statementChunks } from './sqldb.js';
import type { ReminderOps, ReminderRecord, ReminderTarget } from './types.js';

const COLUMNS = [
  'company_id',
  'router_id',
  'order_key',
  'is_open',
  'event_id',
  'event_type_id',
  'integration_id',
  'order_at',
  'order_seq',
  'next_due_at',
  'count',
  'updated_at',
] as const;
const COLS = COLUMNS.join(', ');
/** Rows per multi-row statement (statementChunks; 12 parameters each at most). */
const CHUNK = 256;
/** Upper bound of one claim, whatever the caller asks. */
const MAX_CLAIM = 5_000;
/** Upper bound of the due window dueReminderCompanies looks at. */
const MAX_DUE_WINDOW = 4 * MAX_CLAIM;

function rowToReminder(row: SqlRow): ReminderRecord {
  return {
    companyId: str(row, 'company_id'),
    routerId: str(row, 'router_id'),
    orderKey: str(row, 'order_key'),
    open: bool(row, 'is_open'),
    eventId: str(row, 'event_id'),
    eventTypeId: str(row, 'event_type_id') as EventTypeId,
    integrationId: str(row, 'integration_id'),
    orderAt: int(row, 'order_at'),
    orderSeq: int(row, 'order_seq'),
    nextDueAt: int(row, 'next_due_at'),
    count: int(row, 'count'),
    updatedAt: int(row, 'updated_at'),
  };
}

function chunks<T>(list: readonly T[]): T[][] {
  return statementChunks(list, CHUNK);
}

/** `(VALUES (?, ?), (?, ?))` for n tuples of width w. */
function tuples(n: number, w: number): string {
  const one = `(${placeholders(w)})`;
  return `(VALUES ${Array.from({ length: n }, () => one).join(', ')})`;
}

export function createReminderOps(db: SqlDb): ReminderOps {
  const pg = db.dialect === 'postgres';
  // the partial index's own predicate, spelled per dialect so SQLite uses it
  const OPEN = pg ? 'is_open' : 'is_open = 1';
  return {
    async getReminders(companyId, keys) {
      const out: ReminderRecord[] = [];
      const distinct = [...new Map(keys.map((k) => [`${k.routerId}\n${k.orderKey}`, k])).values()];
      for (const chunk of chunks(distinct)) {
        const rows = await db.all(
          `SELECT ${COLS} FROM reminders WHERE company_id = ? AND (router_id, order_key) IN ${tuples(chunk.length, 2)}`,
          [companyId, ...chunk.flatMap((k) => [k.routerId, k.orderKey])],
        );
        out.push(...rows.map(rowToReminder));
      }
      return out;
    },

    async putRemindersIfNewer(recs) {
      let changed = 0;
      for (const chunk of chunks(recs)) {
        const row = `(${placeholders(COLUMNS.length)})`;
        // SET expressions read the row as it was: count restarts unless an open row stays open
        changed += await db.run(
          `INSERT INTO reminders (${COLS}) VALUES ${chunk.map(() => row).join(', ')}
           ON CONFLICT (company_id, router_id, order_key) DO UPDATE SET
             count = CASE WHEN reminders.is_open AND excluded.is_open THEN reminders.count ELSE 0 END,
             is_open = excluded.is_open, event_id = excluded.event_id, event_type_id = excluded.event_type_id,
             integration_id = excluded.integration_id, order_at = excluded.order_at, order_seq = excluded.order_seq,
             next_due_at = excluded.next_due_at, updated_at = excluded.updated_at
           WHERE (reminders.order_at, reminders.order_seq) < (excluded.order_at, excluded.order_seq)`,
          chunk.flatMap((r): SqlValue[] => [
            r.companyId,
            r.routerId,
            r.orderKey,
            r.open,
            r.eventId,
            r.eventTypeId,
            r.integrationId,
            r.orderAt,
            r.orderSeq,
            r.nextDueAt,
            0,
            r.updatedAt,
          ]),
        );
      }
      return changed;
    },

    async countOpenReminders(companyId, routerIds) {
      if (pg) {
        // a separate statement: the count must see what the previous holder of the lock committed
        await db.get('SELECT pg_advisory_xact_lock(hashtextextended(?, 0)) AS locked', [`certmgr-notify reminders ${companyId}`]);
      }
      const rows = await db.all(`SELECT router_id, count(*) AS n FROM reminders WHERE company_id = ? AND ${OPEN} GROUP BY router_id`, [
        companyId,
      ]);
      const wanted = new Set(routerIds);
      const byRouter = new Map<string, number>();
      let company = 0;
      for (const r of rows) {
        const n = int(r, 'n');
        company += n;
        if (wanted.has(str(r, 'router_id'))) byRouter.set(str(r, 'router_id'), n);
      }
      return { company, byRouter };
    },

    async claimDueReminders(now, limit, holdUntil) {
      const n = Math.max(0, Math.min(MAX_CLAIM, Math.floor(limit)));
      if (n === 0) return [];
      const rows = await db.all(
        `UPDATE reminders SET next_due_at = ?
         WHERE (company_id, router_id, order_key) IN (
           SELECT company_id, router_id, order_key FROM reminders WHERE next_due_at <= ?
           ORDER BY next_due_at LIMIT ?${pg ? ' FOR UPDATE SKIP LOCKED' : ''})
         RETURNING ${COLS}`,
        [holdUntil, now, n],
      );
      return rows.map(rowToReminder);
    },

    async dueReminderCompanies(now, limit) {
      const n = Math.max(0, Math.min(MAX_DUE_WINDOW, Math.floor(limit)));
      if (n === 0) return [];
      // the due window reads reminders_due_idx; the silence check one (company_id, ends_at) range per company
      const rows = await db.all(
        `SELECT d.company_id,
                CASE WHEN EXISTS (SELECT 1 FROM silences s WHERE s.company_id = d.company_id AND s.ends_at > ?
                  AND s.starts_at <= ? AND (s.expired_at IS NULL OR s.expired_at > ?)) THEN 1 ELSE 0 END AS active
         FROM (SELECT DISTINCT company_id FROM
                 (SELECT company_id FROM reminders WHERE next_due_at <= ? ORDER BY next_due_at LIMIT ?) AS w) AS d
         ORDER BY d.company_id`,
        [now, now, now, now, n],
      );
      return rows.map((r) => ({ companyId: str(r, 'company_id'), activeSilence: int(r, 'active') === 1 }));
    },

    async reminderTargets(pairs) {
      const out = new Map<string, ReminderTarget>();
      const distinct = [...new Map(pairs.map((p) => [`${p.companyId}/${p.routerId}`, p])).values()];
      for (const p of distinct) out.set(`${p.companyId}/${p.routerId}`, { router: null, integration: null });
      for (const chunk of chunks(distinct)) {
        const routers = (
          await db.all(
            `SELECT ${ROUTER_COLUMNS.join(', ')} FROM routers WHERE (company_id, id) IN ${tuples(chunk.length, 2)}`,
            chunk.flatMap((p) => [p.companyId, p.routerId]),
          )
        ).map(rowToRouter);
        const integrations = new Map<string, boolean>();
        const wanted = [...new Map(routers.map((r) => [`${r.companyId}/${r.integrationId}`, r])).values()];
        // the enabled flag only: the secrets are not read here
        for (const part of chunks(wanted)) {
          const rows = await db.all(
            `SELECT company_id, id, enabled FROM integrations WHERE (company_id, id) IN ${tuples(part.length, 2)}`,
            part.flatMap((r) => [r.companyId, r.integrationId]),
          );
          for (const r of rows) integrations.set(`${str(r, 'company_id')}/${str(r, 'id')}`, bool(r, 'enabled'));
        }
        for (const r of routers) {
          const enabled = integrations.get(`${r.companyId}/${r.integrationId}`);
          out.set(`${r.companyId}/${r.id}`, { router: r, integration: enabled === undefined ? null : { enabled } });
        }
      }
      return out;
    },

    async rescheduleReminders(updates, now) {
      // one statement per chunk (UPDATE … FROM VALUES, both engines); the casts type PostgreSQL's parameters
      const one = '(?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT))';
      for (const chunk of chunks(updates)) {
        await db.run(
          `UPDATE reminders SET next_due_at = v.column4, count = reminders.count + v.column5, updated_at = ?
           FROM (VALUES ${chunk.map(() => one).join(', ')}) AS v
           WHERE reminders.company_id = v.column1 AND reminders.router_id = v.column2 AND reminders.order_key = v.column3`,
          [now, ...chunk.flatMap((u) => [u.companyId, u.routerId, u.orderKey, u.nextDueAt, u.sent ? 1 : 0])],
        );
      }
    },

    async deleteReminders(keys) {
      let n = 0;
      for (const chunk of chunks(keys)) {
        n += await db.run(
          `DELETE FROM reminders WHERE (company_id, router_id, order_key) IN ${tuples(chunk.length, 3)}`,
          chunk.flatMap((k) => [k.companyId, k.routerId, k.orderKey]),
        );
      }
      return n;
    },
  };
}
