/**
 * The delivery workers' side of the outbox (DeliveryQueueOps), written once over SqlDb with each engine's
 * variant where the plans differ: the claim (order per key, parking), the fenced outcomes and supersede, and the
 * queue's gauges.
 */
import { DELIVERY_COLUMNS, INTEGRATION_COLUMNS, rowToDelivery, rowToEvent, rowToIntegration } from './rows.js';
import { type SecretBox } from './secret-box.js';
import { type SqlDb, type SqlRow, type SqlValue, diagnostic, placeholders, statementChunks } from './sqldb.js';
import type {
  ClaimedDelivery,
  DeliveryOutcome,
  DeliveryQueueOps,
  DeliveryRecord,
  DeliveryStats,
  EventRecord,
  IntegrationRecord,
  SupersedeCheck,
} from './types.js';

const DL = DELIVERY_COLUMNS.join(', ');

function asClaimed(
  d: DeliveryRecord,
  e: EventRecord,
  newerSent: boolean,
  integration: IntegrationRecord | null | undefined,
): ClaimedDelivery {
  if (d.status !== 'IN_FLIGHT' || d.leaseUntil === null) throw new Error(`store: claimed delivery ${d.id} is not IN_FLIGHT`);
  return {
    ...d,
    status: 'IN_FLIGHT',
    leaseUntil: d.leaseUntil,
    event: { type: e.type, data: e.data, receivedAt: e.receivedAt },
    newerSent,
    integration,
  };
}

/**
 * `EXISTS (sub)` for the per-row order checks. On PostgreSQL a scalar subquery instead: an EXISTS may be planned
 * as a semi/anti join, and with statistics that predate a burst (the open rows were few when the table was last
 * analyzed) PostgreSQL joins by scanning the whole order index for every candidate row (seconds for one claim
 * over a backlog). A scalar subquery always runs as a per-row probe with the row's values as
 * index conditions. SQLite plans these as probes already (INDEXED BY where it matters).
 */
const exists = (sub: string, pg: boolean) => (pg ? `((${sub} LIMIT 1) IS NOT NULL)` : `EXISTS (${sub})`);
/**
 * `NOT EXISTS (sub)`, for a `sub` that selects 1. On PostgreSQL `(probe) IS DISTINCT FROM 1`: the same test as
 * `(probe) IS NULL`, written for the planner's estimate. It has no statistics for a subquery and guesses that IS
 * NULL keeps 0.5% of the rows but IS DISTINCT FROM 99.5%. The claim filters its due rows with this: at 0.5% the
 * planner expects to read every due row to find `limit` heads, so it probes every due row and sorts them (O(backlog)
 * per claim); at 99.5% it reads the claim index in order and stops after `limit` heads, as SQLite does.
 */
const notExists = (sub: string, pg: boolean) => (pg ? `((${sub} LIMIT 1) IS DISTINCT FROM 1)` : `NOT EXISTS (${sub})`);

/** A newer delivery of `t`'s key was sent or is being sent ('in-order' mode's NEWER; reads deliveries_order_idx). */
const newerSent = (t: string, pg: boolean) =>
  exists(
    `SELECT 1 FROM deliveries n
  WHERE n.company_id = ${t}.company_id AND n.integration_id = ${t}.integration_id AND n.order_key = ${t}.order_key
    AND (n.order_at, n.order_seq, n.id) > (${t}.order_at, ${t}.order_seq, ${t}.id) AND n.status IN ('IN_FLIGHT', 'DELIVERED')`,
    pg,
  );

/**
 * Due for a claim: PENDING and due, or IN_FLIGHT with an expired lease. A claim sets next_attempt_at
 * to the lease end, so both are `next_attempt_at <= now` over the partial index deliveries_claim_idx
 * (ordered, no sort); the lease_until test only restates the rule. Parameters: now, now.
 */
const DUE = `status IN ('PENDING', 'IN_FLIGHT') AND next_attempt_at <= ? AND (status = 'PENDING' OR lease_until <= ?)`;
/**
 * Order per key (delivery/order.ts): `d` is the head of its key, i.e. no older delivery of the same
 * (company, integration, order_key) is PENDING or IN_FLIGHT. Unordered rows (order_key NULL) always are.
 * Reads deliveries_order_open_idx (SQLite is told to: it would pick the full order index, whose range holds
 * the key's whole history). The claim's outer table must be aliased `d`.
 */
const olderOpenSql = (t: 'd' | 'w', pg: boolean) => `SELECT 1 FROM deliveries o${pg ? '' : ' INDEXED BY deliveries_order_open_idx'}
  WHERE o.company_id = ${t}.company_id AND o.integration_id = ${t}.integration_id AND o.order_key = ${t}.order_key
    AND o.status IN ('PENDING', 'IN_FLIGHT')
    AND (o.order_at, o.order_seq, o.id) < (${t}.order_at, ${t}.order_seq, ${t}.id)`;
const olderOpen = (t: 'd' | 'w', pg = false) => exists(olderOpenSql(t, pg), pg);
const HEAD = (pg: boolean) => notExists(olderOpenSql('d', pg), pg);
/** A newer delivery of the UPDATE target's key that makes it obsolete, per mode (reads deliveries_order_idx). */
const NEWER: Record<'supersede' | 'in-order', string> = {
  // a SILENCED delivery carries no state to the receiver: it makes nothing obsolete
  supersede: ` AND n.status <> 'SILENCED'`,
  'in-order': ` AND n.status IN ('IN_FLIGHT', 'DELIVERED')`,
};
/**
 * Parking (cost only; correctness is HEAD's): the claim reads the due range in order and skips blocked rows, so
 * a long backlog on one key would be re-read by every claim (quadratic). Before claiming, blocked rows among the
 * first PARK_WINDOW × limit due ones are parked: made due again only at the lease end. When a key's head
 * leaves the queue (DELIVERED, DEAD, SUPERSEDED), UNPARK makes the key's next open delivery due at once. A missed
 * unpark (a crash between the two statements, a head deleted by retention) costs at most one lease.
 */
const PARK_WINDOW = 4;
/** The next open (PENDING) delivery of head `h`'s key, if any: a scalar subquery. */
const NEXT_OPEN = `SELECT o.id FROM deliveries o
      WHERE o.company_id = h.company_id AND o.integration_id = h.integration_id AND o.order_key = h.order_key
        AND o.status IN ('PENDING', 'IN_FLIGHT') AND o.status = 'PENDING' AND o.id <> h.id
      ORDER BY o.order_at, o.order_seq, o.id LIMIT 1`;
/**
 * UNPARK for several finished heads at once: for each, its key's next open delivery is made due. Parameters: now,
 * now, then the heads' ids. (The IN list names the partial index's predicate, so SQLite uses it.)
 */
const UNPARK = (pg: boolean, heads: number, left = '') => `UPDATE deliveries SET next_attempt_at = ?
  WHERE next_attempt_at > ? AND id IN (
    SELECT (${NEXT_OPEN.replace('FROM deliveries o', `FROM deliveries o${pg ? '' : ' INDEXED BY deliveries_order_open_idx'}`)})
    FROM deliveries h WHERE h.id IN (${placeholders(heads)}) AND h.order_key IS NOT NULL${left})`;
/**
 * UNPARK for the rows an outcome statement took out of the queue, run right after it in its transaction (SQLite:
 * sent without waiting for its RETURNING): DELIVERED or DEAD at this attempt, written by it (updated_at = now). A
 * row whose outcome the fence refused (a late attempt) is left alone: unparking for it could undo its key's next
 * delivery's backoff. Parameters: now, now, the heads' ids, then each head's id and attempt, then now.
 */
const UNPARK_LEFT = (heads: number) =>
  UNPARK(
    false,
    heads,
    ` AND h.status IN ('DELIVERED', 'DEAD') AND (h.id, h.attempts) IN (VALUES ${Array.from({ length: heads }, () => '(?, ?)').join(', ')}) AND h.updated_at = ?`,
  );
/** Whether `d`'s key has an older delivery, in any status (SQLite's claim: see sqlite.ts claimDeliveries). */
const anyOlder = (t: string) => `EXISTS (SELECT 1 FROM deliveries o INDEXED BY deliveries_order_idx
  WHERE o.company_id = ${t}.company_id AND o.integration_id = ${t}.integration_id AND o.order_key = ${t}.order_key
    AND (o.order_at, o.order_seq, o.id) < (${t}.order_at, ${t}.order_seq, ${t}.id))`;
/**
 * The rows of a batched, fenced update: `v(vid, vattempts, …)` joined to deliveries by id. The casts give
 * PostgreSQL the VALUES' types (its parameters are untyped text otherwise); SQLite ignores them (affinity only).
 */
const valuesCte = (columns: string, row: string, n: number) =>
  `WITH v(${columns}) AS (VALUES ${Array.from({ length: n }, () => `(${row})`).join(', ')})`;
/**
 * Fencing for the batched updates: the row is still IN_FLIGHT with the attempt the outcome belongs to. On PostgreSQL
 * the status test is written `status || '' = 'IN_FLIGHT'`: the same test, but one no index can serve, so each row is
 * found by its id. With `status = 'IN_FLIGHT'` the partial indexes on open rows qualify, and when the statistics
 * saw few open rows (a table analyzed while its queue was empty) the planner read every open row through one of
 * them and joined it to the VALUES: O(queue) per statement (1,356 buffers for 8 outcomes at 200 open rows).
 */
const FENCE_V = (pg: boolean) =>
  `deliveries.id = v.vid AND deliveries.status${pg ? " || ''" : ''} = 'IN_FLIGHT' AND deliveries.attempts = v.vattempts`;
/** Outcomes per statement (statementChunks; 6 parameters each, well under both engines' parameter limits). */
const OUTCOME_CHUNK = 256;
const OUTCOME_STATUS = { delivered: 'DELIVERED', retry: 'PENDING', dead: 'DEAD' } as const;

/** Fencing: only the holder of the current attempt may record its outcome. Parameters: id, attemptNo. */
const FENCE = `id = ? AND status = 'IN_FLIGHT' AND attempts = ?`;

/**
 * When a claim parks (cost only, like parking itself): after a claim that came back short (blocked rows or an
 * empty queue: the next one may scan blocked rows), and at least every PARK_EVERY claims; a claim that filled its
 * batch found heads without a long blocked prefix. Kept by the store across claims.
 */
export interface ParkState {
  due: boolean;
  since: number;
}
/** What a SQLite claim saw besides its rows: `older`, one of them has an older delivery of its key. */
export interface ClaimNotes {
  older: boolean;
}

interface QueueOpsOptions {
  /** The claims' parking schedule, kept by the store across claims. */
  parking?: ParkState;
  /** Filled by a SQLite claim (see ClaimNotes). */
  notes?: ClaimNotes;
  /** The key ring that opens the claimed deliveries' integration secrets. */
  box?: () => SecretBox | undefined;
}

/**
 * A claim's rows: the delivery's columns, its event's as event_*, newer_sent, and its integration's as i_* (null
 * when deleted: LEFT JOIN). Each integration is decoded (its secrets opened) once.
 */
function claimedOf(rows: readonly SqlRow[], box: SecretBox | undefined): ClaimedDelivery[] {
  const integrations = new Map<string, IntegrationRecord>();
  return rows.map((row) => {
    const d = rowToDelivery(row);
    const key = `${d.companyId}/${d.integrationId}`;
    let integration: IntegrationRecord | null | undefined = integrations.get(key) ?? null;
    if (!integration && row['i_id'] !== null && row['i_id'] !== undefined) {
      try {
        integration = rowToIntegration(Object.fromEntries(INTEGRATION_COLUMNS.map((c) => [c, row[`i_${c}`]])), box);
        integrations.set(key, integration);
      } catch {
        // a record that does not decode fails only its own rows: the worker reads it again and says why (undefined)
        integration = undefined;
      }
    }
    const event = rowToEvent({
      id: row['event_id'],
      company_id: row['company_id'],
      type: row['event_type'],
      data: row['event_data'],
      received_at: row['event_received_at'],
    });
    return asClaimed(d, event, row['newer_sent'] === true || row['newer_sent'] === 1, integration);
  });
}
const PARK_EVERY = 8;

/** The worker-side outbox operations (each one atomic on its own; see DeliveryQueueOps). */
export function createQueueOps(db: SqlDb, opts: QueueOpsOptions = {}): DeliveryQueueOps {
  const pg = db.dialect === 'postgres';
  const parking = opts.parking ?? { due: true, since: 0 };
  const notes = opts.notes ?? { older: false };

  /** When a key's head left the queue (DELIVERED, DEAD, SUPERSEDED), its next open delivery is due at once. */
  async function unpark(heads: string[], now: number): Promise<void> {
    for (const chunk of statementChunks(heads, OUTCOME_CHUNK)) await db.run(UNPARK(pg, chunk.length), [now, now, ...chunk]);
  }

  /**
   * One fenced UPDATE for a chunk of outcomes (each row gets its own status, due time, error and code), then one
   * UNPARK for the ordered ones that left the queue. Not one transaction: a crash in between costs one lease.
   */
  async function recordOutcomes(outcomes: readonly DeliveryOutcome[], now: number): Promise<boolean[]> {
    const applied = new Set<string>();
    const chunks = statementChunks(outcomes, OUTCOME_CHUNK);
    for (const [k, chunk] of chunks.entries()) {
      const params: SqlValue[] = [];
      for (const o of chunk)
        params.push(
          o.id,
          o.attemptNo,
          OUTCOME_STATUS[o.kind],
          // written a little after the attempt ended (grouped): a retry is never due before the row says it changed
          o.kind === 'retry' ? Math.max(o.nextAttemptAt, now) : null,
          o.kind === 'delivered' ? null : diagnostic(o.error),
          o.statusCode,
        );
      const update = `UPDATE deliveries SET status = v.vstatus,
           next_attempt_at = CASE WHEN v.vstatus = 'PENDING' THEN v.vnext ELSE deliveries.next_attempt_at END,
           delivered_at = CASE WHEN v.vstatus = 'DELIVERED' THEN CAST(? AS BIGINT) ELSE deliveries.delivered_at END,
           updated_at = CAST(? AS BIGINT), lease_until = NULL, last_error = v.verr, last_status_code = v.vcode
         FROM v WHERE ${FENCE_V(pg)}`;
      const cte = valuesCte(
        'vid, vattempts, vstatus, vnext, verr, vcode',
        '?, CAST(? AS INTEGER), ?, CAST(? AS BIGINT), ?, CAST(? AS INTEGER)',
        chunk.length,
      );
      if (pg) {
        // One round trip: the outcomes and UNPARK for the heads that left the queue. UNPARK's rows are PENDING in
        // the statement's snapshot, the outcomes' IN_FLIGHT: never the same row.
        const rows = await db.all(
          `${cte},
           done AS (${update} RETURNING deliveries.id, deliveries.status, deliveries.company_id, deliveries.integration_id, deliveries.order_key),
           unparked AS (
             UPDATE deliveries SET next_attempt_at = ?
             WHERE next_attempt_at > ? AND id IN (
               SELECT (${NEXT_OPEN}) FROM done h WHERE h.status <> 'PENDING' AND h.order_key IS NOT NULL))
           SELECT id FROM done`,
          [...params, now, now, now, now],
        );
        for (const r of rows) applied.add(String(r['id']));
        continue;
      }
      // The outcomes, and UNPARK right after them in the same transaction, sent together (one round trip to the
      // store's thread); the thread refuses UNPARK if the outcomes failed.
      const ids = chunk.map((o) => o.id);
      const unparkLeft = UNPARK_LEFT(ids.length);
      const unparkParams = [now, now, ...ids, ...chunk.flatMap((o) => [o.id, o.attemptNo]), now];
      const last = k === chunks.length - 1;
      const [rows] = await Promise.all([
        db.all(`${cte} ${update} RETURNING id`, [...params, now, now]),
        last && db.allAndCommit ? db.allAndCommit(unparkLeft, unparkParams) : db.run(unparkLeft, unparkParams),
      ]);
      for (const r of rows) applied.add(String(r['id']));
    }
    return outcomes.map((o) => applied.has(o.id));
  }

  /** The fence at send time for several claimed deliveries: one check-and-set per mode present (see supersede). */
  async function supersedeMany(items: readonly SupersedeCheck[], now: number): Promise<boolean[]> {
    const superseded = new Set<string>();
    for (const mode of ['supersede', 'in-order'] as const) {
      const mine = items.filter((c) => c.mode === mode);
      for (const chunk of statementChunks(mine, OUTCOME_CHUNK)) {
        // One statement: the check and the change are atomic, and fenced like the outcomes. The attempt
        // is not counted (nothing was sent).
        const rows = await db.all(
          `${valuesCte('vid, vattempts', '?, CAST(? AS INTEGER)', chunk.length)}
           UPDATE deliveries SET status = 'SUPERSEDED', updated_at = CAST(? AS BIGINT), lease_until = NULL, attempts = attempts - 1
           FROM v WHERE ${FENCE_V(pg)} AND deliveries.attempts > 0 AND ${exists(
             `SELECT 1 FROM deliveries n
             WHERE n.company_id = deliveries.company_id AND n.integration_id = deliveries.integration_id
               AND n.order_key = deliveries.order_key
               AND (n.order_at, n.order_seq, n.id) > (deliveries.order_at, deliveries.order_seq, deliveries.id)${NEWER[mode]}`,
             pg,
           )}
           RETURNING id`,
          [...chunk.flatMap((c) => [c.id, c.attemptNo]), now],
        );
        const ids = rows.map((r) => String(r['id']));
        for (const id of ids) superseded.add(id);
        if (ids.length) await unpark(ids, now);
      }
    }
    return items.map((c) => superseded.has(c.id));
  }

  return {
    async claimDeliveries(now, limit, leaseMs, owner = null) {
      const n = Math.floor(limit);
      if (!(n >= 1)) return [];
      const lease = now + Math.max(1, Math.floor(leaseMs));
      // An IN_FLIGHT row is claimable only when its lease ran out. Taken over by another claimer, its claim was
      // abandoned (its holder died or was cut off); taken again by the same one, it was not (its outcome could not be
      // written, e.g. the store was down). SET reads the old status and claimed_by.
      const set = `status = 'IN_FLIGHT', lease_until = ?, next_attempt_at = ?, attempts = attempts + 1, updated_at = ?, claimed_by = ?,
        abandoned_claims = abandoned_claims + CASE WHEN status = 'IN_FLIGHT' AND claimed_by ${pg ? 'IS DISTINCT FROM' : 'IS NOT'} ? THEN 1 ELSE 0 END`;
      let claimed: ClaimedDelivery[];
      const park = `UPDATE deliveries SET next_attempt_at = ?
         WHERE id IN (
           SELECT w.id FROM (
             SELECT id, status, company_id, integration_id, order_key, order_at, order_seq
             FROM deliveries${pg ? '' : ' INDEXED BY deliveries_claim_idx'} WHERE ${DUE}
             ORDER BY next_attempt_at, id LIMIT ${pg ? n * PARK_WINDOW : '?'}${pg ? ' FOR UPDATE SKIP LOCKED' : ''}) w
           WHERE w.status = 'PENDING' AND w.order_key IS NOT NULL AND ${olderOpen('w', pg)})`;
      const parkParams = pg ? [lease, now, now] : [lease, now, now, n * PARK_WINDOW];
      const parkNow = parking.due || ++parking.since >= PARK_EVERY;
      if (parkNow) parking.since = 0;
      if (pg) {
        // One statement (one round trip): park, then lock due heads, skipping those another claimer holds, and
        // update them. Both parts see the statement's snapshot, so the park helps the next claims, not this one;
        // they touch different rows (blocked ones, heads). A row another transaction claimed and committed
        // meanwhile is re-checked against DUE (READ COMMITTED re-evaluation) and dropped, so no row is handed
        // out twice. The limits are literals (integers): the statement is prepared (postgres.ts), and a generic plan
        // that does not know its LIMIT expects 10% of the due rows and hashes them against the whole table.
        const rows = await db.all(
          `WITH ${parkNow ? `parked AS (${park}),` : ''}
           claimed AS (
             UPDATE deliveries SET ${set}
             WHERE id IN (
               SELECT id FROM deliveries d WHERE ${DUE} AND ${HEAD(true)}
               ORDER BY next_attempt_at, id LIMIT ${n}
               FOR UPDATE SKIP LOCKED)
             RETURNING ${DL}
           )
           SELECT claimed.*, e.type AS event_type, e.data AS event_data, e.received_at AS event_received_at,
             ${newerSent('claimed', true)} AS newer_sent, ${INTEGRATION_COLUMNS.map((c) => `i.${c} AS i_${c}`).join(', ')}
           FROM claimed JOIN events e ON e.company_id = claimed.company_id AND e.id = claimed.event_id
           LEFT JOIN integrations i ON i.company_id = claimed.company_id AND i.id = claimed.integration_id`,
          [...(parkNow ? parkParams : []), lease, lease, now, owner, owner, now, now],
        );
        claimed = claimedOf(rows, opts.box?.());
      } else {
        // SQLite: in a transaction (sqlite.ts claimDeliveries), one writer at a time (across processes too). Every
        // statement goes to the store's thread at once, in order (it refuses the rest after a failure), and the
        // last one carries the COMMIT: one round trip. The claimed ids wait in a temp table, because UPDATE …
        // RETURNING cannot join the events, integrations and order checks the worker needs.
        const steps: [string, SqlValue[]][] = [
          ['CREATE TEMP TABLE IF NOT EXISTS claim_batch (id TEXT PRIMARY KEY)', []],
          ['DELETE FROM temp.claim_batch', []],
        ];
        if (parkNow) steps.push([park, parkParams]);
        steps.push(
          [
            `INSERT INTO temp.claim_batch (id)
             SELECT id FROM deliveries AS d INDEXED BY deliveries_claim_idx WHERE ${DUE} AND ${HEAD(false)}
             ORDER BY next_attempt_at, id LIMIT ?`,
            [now, now, n],
          ],
          [`UPDATE deliveries SET ${set} WHERE id IN (SELECT id FROM temp.claim_batch)`, [lease, lease, now, owner, owner]],
        );
        const sent = steps.map(([sql, params]) => db.run(sql, params));
        for (const p of sent) p.catch(() => undefined); // a failure is also the SELECT's (refused after it)
        // CROSS JOIN fixes SQLite's join order: the temp table has no statistics, and with a plain JOIN the planner
        // scans every delivery and probes the temp table.
        const select = `SELECT ${DELIVERY_COLUMNS.map((c) => `d.${c}`).join(', ')},
             e.type AS event_type, e.data AS event_data, e.received_at AS event_received_at,
             ${newerSent('d', false)} AS newer_sent, ${anyOlder('d')} AS older, ${INTEGRATION_COLUMNS.map((c) => `i.${c} AS i_${c}`).join(', ')}
           FROM temp.claim_batch c CROSS JOIN deliveries d ON d.id = c.id
           CROSS JOIN events e ON e.company_id = d.company_id AND e.id = d.event_id
           LEFT JOIN integrations i ON i.company_id = d.company_id AND i.id = d.integration_id`;
        const rows = await (db.allAndCommit ? db.allAndCommit(select) : db.all(select));
        await Promise.all(sent);
        // an event deleted in between took its deliveries with it (ON DELETE CASCADE): the join drops nothing else
        claimed = claimedOf(rows, opts.box?.());
        notes.older = rows.some((r) => Number(r['older']) === 1);
      }
      parking.due = claimed.length < n;
      return claimed.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    },

    async releaseClaims(owner, now, abandoned) {
      return db.run(
        `UPDATE deliveries SET status = 'PENDING', next_attempt_at = ?, lease_until = NULL, updated_at = ?, claimed_by = NULL,
           abandoned_claims = abandoned_claims + ?
         WHERE status = 'IN_FLIGHT' AND claimed_by = ?`,
        [now, now, abandoned ? 1 : 0, owner],
      );
    },

    markDelivered: async (id, attemptNo, now, statusCode) =>
      (await recordOutcomes([{ id, attemptNo, kind: 'delivered', statusCode }], now))[0]!,

    markRetry: async (id, attemptNo, nextAttemptAt, error, statusCode, now) =>
      (await recordOutcomes([{ id, attemptNo, kind: 'retry', nextAttemptAt, error, statusCode }], now))[0]!,

    markDead: async (id, attemptNo, now, error, statusCode) =>
      (await recordOutcomes([{ id, attemptNo, kind: 'dead', error, statusCode }], now))[0]!,

    recordOutcomes,

    supersede: async (id, attemptNo, now, mode) => (await supersedeMany([{ id, attemptNo, mode }], now))[0]!,

    supersedeMany,

    async deferDelivery(id, attemptNo, nextAttemptAt, now) {
      const n = await db.run(
        `UPDATE deliveries SET status = 'PENDING', next_attempt_at = ?, updated_at = ?, lease_until = NULL,
           attempts = attempts - 1
         WHERE ${FENCE} AND attempts > 0`,
        [nextAttemptAt, now, id, attemptNo],
      );
      return n > 0;
    },

    async deliveryStats() {
      // Both parts read partial indexes only (claim and dead-letter), never the DELIVERED bulk.
      const stats: DeliveryStats = { PENDING: 0, IN_FLIGHT: 0, DEAD: 0 };
      const rows = await db.all(
        `SELECT status, count(*) AS n FROM deliveries WHERE status IN ('PENDING', 'IN_FLIGHT') GROUP BY status
         UNION ALL
         SELECT 'DEAD' AS status, count(*) AS n FROM deliveries WHERE status = 'DEAD'`,
      );
      for (const row of rows) {
        const status = String(row['status']) as keyof DeliveryStats;
        if (status in stats) stats[status] = Number(row['n']);
      }
      return stats;
    },

    async oldestPendingAge(now) {
      // The first entry of the claim index: the most overdue claimable row (expired leases included).
      const row = await db.get(`SELECT min(next_attempt_at) AS t FROM deliveries WHERE ${DUE}`, [now, now]);
      const t = row?.['t'];
      return t === null || t === undefined ? 0 : Math.max(0, now - Number(t));
    },
  };
}
