/**
 * Grouping's store operations (docs/grouping.md; migration 12), written once over SqlDb for both engines.
 *
 * Concurrency: the group row is the group's lock. Ingestion creates a missing row (INSERT … ON CONFLICT DO NOTHING)
 * and then locks it (`lockGroups`: SELECT … FOR UPDATE on PostgreSQL) before it reads or writes members; the
 * flusher locks due groups with FOR UPDATE SKIP LOCKED, so one transaction at a time works on a group, on any
 * number of replicas. SQLite serializes write transactions already.
 */
import type { GroupRow, MemberRow } from '../grouping/records.js';
import { bool, int, intOrNull, json, str, strOrNull } from './rows.js';
import { type SqlDb, type SqlRow, placeholders, statementChunks } from './sqldb.js';
import type { GroupOps } from './types.js';

const GROUP_COLUMNS = [
  'id',
  'company_id',
  'router_id',
  'group_key',
  'labels',
  'router_name',
  'integration_id',
  'group_wait_ms',
  'group_interval_ms',
  'repeat_interval_ms',
  'created_at',
  'next_flush_at',
  'last_flush_at',
  'changed',
  'sent_firing',
  'member_count',
  'overflow_firing',
  'overflow_transient',
  'last_event_id',
  'last_flush_event_id',
  'resolved_told',
  'hold_issuer',
  'issuer_ready_at',
  'hold_released',
] as const;
const GC = GROUP_COLUMNS.join(', ');
const MEMBER_COLUMNS = ['group_id', 'member_key', 'event_id', 'state', 'transient', 'order_at', 'order_seq', 'accepted_at'] as const;
const MC = MEMBER_COLUMNS.map((c) => `m.${c}`).join(', ');
/** Keys per IN list / rows per multi-row INSERT (statementChunks; 8 parameters a member row, 20 a group row). */
const CHUNK = 256;

function groupToRow(g: GroupRow) {
  return [
    g.id,
    g.companyId,
    g.routerId,
    g.key,
    JSON.stringify(g.labels),
    g.routerName,
    g.integrationId,
    g.groupWaitMs,
    g.groupIntervalMs,
    g.repeatIntervalMs,
    g.createdAt,
    g.nextFlushAt,
    g.lastFlushAt,
    g.changed,
    g.sentFiring,
    g.memberCount,
    g.overflowFiring,
    g.overflowTransient,
    g.lastEventId,
    g.lastFlushEventId,
    g.resolvedTold,
    g.holdIssuer ?? null,
    g.issuerReadyAt ?? null,
    g.holdReleased ?? false,
  ];
}

function rowToGroup(row: SqlRow): GroupRow {
  const holdIssuer = strOrNull(row, 'hold_issuer');
  return {
    id: str(row, 'id'),
    companyId: str(row, 'company_id'),
    routerId: str(row, 'router_id'),
    key: str(row, 'group_key'),
    labels: json<Record<string, string>>(row, 'labels'),
    routerName: str(row, 'router_name'),
    integrationId: str(row, 'integration_id'),
    groupWaitMs: int(row, 'group_wait_ms'),
    groupIntervalMs: int(row, 'group_interval_ms'),
    repeatIntervalMs: intOrNull(row, 'repeat_interval_ms'),
    createdAt: int(row, 'created_at'),
    nextFlushAt: intOrNull(row, 'next_flush_at'),
    lastFlushAt: intOrNull(row, 'last_flush_at'),
    changed: bool(row, 'changed'),
    sentFiring: bool(row, 'sent_firing'),
    memberCount: int(row, 'member_count'),
    overflowFiring: int(row, 'overflow_firing'),
    overflowTransient: int(row, 'overflow_transient'),
    lastEventId: str(row, 'last_event_id'),
    lastFlushEventId: strOrNull(row, 'last_flush_event_id'),
    resolvedTold: int(row, 'resolved_told'),
    // a hold's state (hold.ts); a group has none
    holdIssuer: holdIssuer ?? undefined,
    issuerReadyAt: holdIssuer === null ? undefined : intOrNull(row, 'issuer_ready_at'),
    holdReleased: holdIssuer === null ? undefined : bool(row, 'hold_released'),
  };
}

function rowToMember(row: SqlRow): MemberRow {
  const state = str(row, 'state');
  return {
    memberKey: str(row, 'member_key'),
    eventId: str(row, 'event_id'),
    state: state === 'resolved' ? 'resolved' : 'firing',
    transient: bool(row, 'transient'),
    orderAt: int(row, 'order_at'),
    orderSeq: int(row, 'order_seq'),
    acceptedAt: int(row, 'accepted_at'),
  };
}

export function createGroupOps(db: SqlDb): GroupOps {
  const pg = db.dialect === 'postgres';
  return {
    async lockGroups(init) {
      if (init.length === 0) return [];
      for (const chunk of statementChunks(init, CHUNK)) {
        const row = `(${placeholders(GROUP_COLUMNS.length)})`;
        await db.run(
          `INSERT INTO notification_groups (${GC}) VALUES ${chunk.map(() => row).join(', ')}
           ON CONFLICT (company_id, router_id, group_key) DO NOTHING`,
          chunk.flatMap(groupToRow),
        );
      }
      const first = init[0]!;
      const byKey = new Map<string, GroupRow>();
      for (const chunk of statementChunks(init, CHUNK)) {
        const keys = chunk.map((g) => g.key);
        const rows = await db.all(
          `SELECT ${GC} FROM notification_groups WHERE company_id = ? AND router_id = ? AND group_key IN (${placeholders(keys.length)})
           ORDER BY group_key${pg ? ' FOR UPDATE' : ''}`,
          [first.companyId, first.routerId, ...keys],
        );
        for (const r of rows) byKey.set(str(r, 'group_key'), rowToGroup(r));
      }
      return init.map((g) => {
        const got = byKey.get(g.key);
        if (!got) throw new Error(`store: group ${g.key} vanished inside its transaction`);
        return got;
      });
    },

    async countRouterGroups(companyId, routerId) {
      const row = await db.get(`SELECT count(*) AS n FROM notification_groups WHERE company_id = ? AND router_id = ?`, [
        companyId,
        routerId,
      ]);
      return Number(row?.['n'] ?? 0);
    },

    async existingGroupKeys(companyId, routerId, keys) {
      const out: string[] = [];
      const wanted = [...new Set(keys)];
      for (const chunk of statementChunks(wanted, CHUNK)) {
        const rows = await db.all(
          `SELECT group_key FROM notification_groups WHERE company_id = ? AND router_id = ? AND group_key IN (${placeholders(chunk.length)})`,
          [companyId, routerId, ...chunk],
        );
        out.push(...rows.map((r) => str(r, 'group_key')));
      }
      return out;
    },

    async getGroupMembers(groupId, memberKeys) {
      const out: MemberRow[] = [];
      const wanted = [...new Set(memberKeys)];
      for (const chunk of statementChunks(wanted, CHUNK)) {
        const rows = await db.all(
          `SELECT ${MC} FROM notification_group_members m WHERE m.group_id = ? AND m.member_key IN (${placeholders(chunk.length)})`,
          [groupId, ...chunk],
        );
        out.push(...rows.map(rowToMember));
      }
      return out;
    },

    async putGroupMembers(groupId, members) {
      for (const chunk of statementChunks(members, CHUNK)) {
        const row = `(${placeholders(MEMBER_COLUMNS.length)})`;
        await db.run(
          `INSERT INTO notification_group_members (${MEMBER_COLUMNS.join(', ')}) VALUES ${chunk.map(() => row).join(', ')}
           ON CONFLICT (group_id, member_key) DO UPDATE SET
             event_id = excluded.event_id, state = excluded.state, transient = excluded.transient,
             order_at = excluded.order_at, order_seq = excluded.order_seq, accepted_at = excluded.accepted_at`,
          chunk.flatMap((m) => [groupId, m.memberKey, m.eventId, m.state, m.transient, m.orderAt, m.orderSeq, m.acceptedAt]),
        );
      }
    },

    async saveGroup(g) {
      await db.run(
        `UPDATE notification_groups SET labels = ?, router_name = ?, integration_id = ?, group_wait_ms = ?, group_interval_ms = ?,
           repeat_interval_ms = ?, next_flush_at = ?, last_flush_at = ?, changed = ?, sent_firing = ?, member_count = ?,
           overflow_firing = ?, overflow_transient = ?, last_event_id = ?, last_flush_event_id = ?, resolved_told = ?,
           issuer_ready_at = ?, hold_released = ?
         WHERE id = ?`,
        [
          JSON.stringify(g.labels),
          g.routerName,
          g.integrationId,
          g.groupWaitMs,
          g.groupIntervalMs,
          g.repeatIntervalMs,
          g.nextFlushAt,
          g.lastFlushAt,
          g.changed,
          g.sentFiring,
          g.memberCount,
          g.overflowFiring,
          g.overflowTransient,
          g.lastEventId,
          g.lastFlushEventId,
          g.resolvedTold,
          g.issuerReadyAt ?? null,
          g.holdReleased ?? false,
          g.id,
        ],
      );
    },

    async lockDueGroups(now, limit) {
      const n = Math.max(1, Math.min(1000, Math.floor(limit)));
      const rows = await db.all(
        `SELECT ${GC} FROM notification_groups WHERE next_flush_at IS NOT NULL AND next_flush_at <= ?
         ORDER BY next_flush_at, id LIMIT ?${pg ? ' FOR UPDATE SKIP LOCKED' : ''}`,
        [now, n],
      );
      return rows.map(rowToGroup);
    },

    async groupMemberCounts(groupId) {
      const rows = await db.all(
        `SELECT state, transient, count(*) AS n FROM notification_group_members WHERE group_id = ? GROUP BY state, transient`,
        [groupId],
      );
      const c = { firing: 0, transient: 0, resolved: 0 };
      for (const r of rows) {
        const n = Number(r['n']);
        if (str(r, 'state') === 'resolved') c.resolved += n;
        else if (bool(r, 'transient')) c.transient += n;
        else c.firing += n;
      }
      return c;
    },

    async listGroupMembers(groupId, state, limit) {
      const n = Math.max(1, Math.min(100, Math.floor(limit)));
      const rows = await db.all(
        `SELECT ${MC}, e.type AS event_type, e.data AS event_data, e.received_at AS event_received_at
           FROM notification_group_members m
           LEFT JOIN events e ON e.id = m.event_id
          WHERE m.group_id = ? AND m.state = ?
          ORDER BY m.order_at DESC, m.order_seq DESC, m.member_key
          LIMIT ?`,
        [groupId, state, n],
      );
      return rows.map((r) => ({
        ...rowToMember(r),
        event:
          r['event_type'] === null || r['event_type'] === undefined
            ? null
            : {
                type: str(r, 'event_type'),
                data: JSON.parse(str(r, 'event_data')) as Record<string, unknown>,
                receivedAt: int(r, 'event_received_at'),
              },
      }));
    },

    dropSettledMembers(groupId) {
      return db.run(`DELETE FROM notification_group_members WHERE group_id = ? AND (state = 'resolved' OR transient = ?)`, [groupId, true]);
    },

    async deleteGroup(groupId) {
      await db.run(`DELETE FROM notification_group_members WHERE group_id = ?`, [groupId]);
      await db.run(`DELETE FROM notification_groups WHERE id = ?`, [groupId]);
    },

    async countGroups() {
      const row = await db.get(`SELECT count(*) AS n FROM notification_groups`);
      return Number(row?.['n'] ?? 0);
    },

    async lockIssuerHolds(companyId, issuerKeys) {
      const out: GroupRow[] = [];
      const wanted = [...new Set(issuerKeys)].sort();
      for (const chunk of statementChunks(wanted, CHUNK)) {
        const rows = await db.all(
          `SELECT ${GC} FROM notification_groups WHERE company_id = ? AND hold_issuer IN (${placeholders(chunk.length)})
           ORDER BY router_id, group_key${pg ? ' FOR UPDATE' : ''}`,
          [companyId, ...chunk],
        );
        out.push(...rows.map(rowToGroup));
      }
      return out;
    },

    async resourceStreaks(companyId, keys) {
      const out = new Map<string, { orderAt: number; orderSeq: number } | null>();
      const wanted = [...new Set(keys)];
      for (const chunk of statementChunks(wanted, CHUNK)) {
        const rows = await db.all(
          `SELECT resource_key, since_order_at, since_order_seq FROM resource_health
            WHERE company_id = ? AND resource_key IN (${placeholders(chunk.length)})`,
          [companyId, ...chunk],
        );
        for (const r of rows) {
          const at = intOrNull(r, 'since_order_at');
          out.set(str(r, 'resource_key'), at === null ? null : { orderAt: at, orderSeq: int(r, 'since_order_seq') });
        }
      }
      return out;
    },
  };
}
