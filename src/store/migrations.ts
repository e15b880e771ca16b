/**
 * Schema migrations: a numbered list, append-only. Never edit or renumber a released migration;
 * add a new one instead.
 *
 * Each migration has its statements per dialect. Most are written once with `ddl(t => …)`, where
 * `t` holds the few type spellings that differ; write two literal lists when a statement really
 * differs (e.g. the outbox claim's partial index, or anything PostgreSQL-only).
 *
 * `runMigrations` must be called inside one transaction (the stores do that). It records applied
 * versions in `schema_migrations`, so running it again is a no-op. On PostgreSQL it first takes
 * a transaction-scoped advisory lock keyed by the current schema, so several replicas starting at
 * once apply each migration exactly once (the others wait, then see it recorded). On SQLite the
 * transaction is BEGIN IMMEDIATE, which already serializes writers, across processes too.
 *
 * Version 2 is the durable delivery outbox (`events`, `deliveries`); the claim query (outbox-queue.ts)
 * uses `FOR UPDATE SKIP LOCKED` on PostgreSQL only (SQLite's single writer makes the plain
 * `UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING` atomic already).
 */
import type { Dialect, SqlDb } from './sqldb.js';

export interface Migration {
  version: number;
  name: string;
  up: Readonly<Record<Dialect, readonly string[]>>;
}

interface DialectTypes {
  dialect: Dialect;
  /** epoch-ms and other 64-bit integers */
  bigint: string;
  /** `name <boolean type> NOT NULL` (SQLite: INTEGER constrained to 0/1) */
  bool(column: string): string;
  /** Table suffix: SQLite tables are STRICT, so a wrongly typed value fails instead of being stored. */
  table: string;
}

const TYPES: Record<Dialect, DialectTypes> = {
  sqlite: {
    dialect: 'sqlite',
    bigint: 'INTEGER',
    bool: (c) => `${c} INTEGER NOT NULL CHECK (${c} IN (0, 1))`,
    table: ' STRICT',
  },
  postgres: {
    dialect: 'postgres',
    bigint: 'BIGINT',
    bool: (c) => `${c} BOOLEAN NOT NULL`,
    table: '',
  },
};

/** The same statements for both dialects, with the differing type spellings filled in. */
function ddl(f: (t: DialectTypes) => string[]): Record<Dialect, string[]> {
  return { sqlite: f(TYPES.sqlite), postgres: f(TYPES.postgres) };
}

/** Silences (version 11): one row per silence; `expired_at` set by expireSilence. */
const SILENCES_TABLE = (bigint: string, table: string) => `CREATE TABLE silences (
  id TEXT PRIMARY KEY,
  company_id TEXT NOT NULL,
  matcher TEXT NOT NULL,
  event_type_id TEXT,
  event_type_ids TEXT NOT NULL,
  starts_at ${bigint} NOT NULL,
  ends_at ${bigint} NOT NULL,
  comment TEXT NOT NULL,
  created_by TEXT NOT NULL,
  managed_by TEXT,
  created_at ${bigint} NOT NULL,
  updated_at ${bigint} NOT NULL,
  expired_at ${bigint},
  CHECK (ends_at > starts_at)
)${table}`;
const SILENCES_INDEXES = [
  // the routing snapshot's read (not yet ended) and the listing by state
  `CREATE INDEX silences_company_ends_idx ON silences (company_id, ends_at)`,
  `CREATE INDEX silences_company_created_idx ON silences (company_id, created_at, id)`,
];

/**
 * Order per key: "is an older delivery of this key still open?" (the claim) reads the partial index
 * of open rows; "is there a newer one?" (supersede) reads the full one from the delivery's position on.
 */
const ORDER_INDEXES = [
  `CREATE INDEX deliveries_order_open_idx ON deliveries (company_id, integration_id, order_key, order_at, order_seq, id)
     WHERE status IN ('PENDING', 'IN_FLIGHT') AND order_key IS NOT NULL`,
  `CREATE INDEX deliveries_order_idx ON deliveries (company_id, integration_id, order_key, order_at, order_seq, id)
     WHERE order_key IS NOT NULL`,
];

/**
 * Version 16: the list filters' indexes. Each inventory index leads with the filter's column and continues in the
 * listing order (not_after, then the key), so a page is the first rows of one range. The health filter is an
 * expression (READY / NOT_READY / UNKNOWN from ready_status); the listing filters by the same expression.
 */
export const INVENTORY_HEALTH_SQL = (alias: string) =>
  `(CASE WHEN ${alias}ready_status = 'True' THEN 'READY' WHEN ${alias}ready_status = 'False' THEN 'NOT_READY' ELSE 'UNKNOWN' END)`;
/**
 * The served truth's filters (migration 22, docs/serving.md): rows whose worst endpoint is a problem, and rows
 * with endpoints none of which is. Each has a partial index; a query names the same term so both engines use it
 * (SQLite matches a partial index's WHERE term by its text).
 */
export const SERVING_PROBLEM_SQL = (alias: string) => `${alias}serving_status IN ('expired', 'mismatch', 'stale', 'unreachable')`;
export const SERVING_NO_PROBLEM_SQL = (alias: string) => `${alias}serving_status IN ('notProbed', 'ok', 'pending')`;
const LIST_FILTER_INDEXES = [
  `CREATE INDEX inventory_certificates_cluster_idx ON inventory_certificates (company_id, cluster_id, not_after, namespace, secret_name)`,
  `CREATE INDEX inventory_certificates_namespace_idx ON inventory_certificates (company_id, namespace, not_after, cluster_id, secret_name)`,
  `CREATE INDEX inventory_certificates_health_idx ON inventory_certificates
     (company_id, ${INVENTORY_HEALTH_SQL('')}, not_after, cluster_id, namespace, secret_name)`,
  `CREATE INDEX deliveries_company_status_idx ON deliveries (company_id, status, created_at DESC, id DESC)`,
  `CREATE INDEX deliveries_company_event_idx ON deliveries (company_id, event_id, created_at DESC, id DESC)`,
];
const APPLICATION_COLUMNS = 'company_id, application_id, cluster_id, namespace, secret_name, not_after';
/** One row per (inventory row, application id); not_after copied so the listing reads this index in order. */
const APPLICATIONS_TABLE = (bigint: string, table: string) => `CREATE TABLE inventory_certificate_applications (
  company_id TEXT NOT NULL,
  application_id TEXT NOT NULL,
  cluster_id TEXT NOT NULL,
  namespace TEXT NOT NULL,
  secret_name TEXT NOT NULL,
  not_after ${bigint},
  PRIMARY KEY (company_id, cluster_id, namespace, secret_name, application_id)
)${table}`;
const APPLICATIONS_INDEXES = [
  `CREATE INDEX inventory_certificate_applications_list_idx ON inventory_certificate_applications
     (company_id, application_id, not_after, cluster_id, namespace, secret_name)`,
];
const APPLICATIONS_DELETE_OLD = `DELETE FROM inventory_certificate_applications
  WHERE company_id = OLD.company_id AND cluster_id = OLD.cluster_id AND namespace = OLD.namespace AND secret_name = OLD.secret_name;`;
const APPLICATIONS_INSERT_SQLITE = `INSERT INTO inventory_certificate_applications (${APPLICATION_COLUMNS})
  SELECT DISTINCT NEW.company_id, a.value, NEW.cluster_id, NEW.namespace, NEW.secret_name, NEW.not_after
  FROM json_each(NEW.application_ids) a WHERE a.type = 'text';`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'config: monitoring_configs, integrations, routers',
    up: ddl((t) => [
      `CREATE TABLE monitoring_configs (
        id TEXT PRIMARY KEY,
        company_id TEXT NOT NULL UNIQUE,
        ${t.bool('enabled')},
        thresholds TEXT NOT NULL,
        application_ids TEXT NOT NULL,
        ${t.bool('include_unassigned_certificates')},
        updated_at ${t.bigint} NOT NULL
      )${t.table}`,
      `CREATE TABLE integrations (
        id TEXT PRIMARY KEY,
        company_id TEXT NOT NULL,
        name TEXT NOT NULL,
        type TEXT NOT NULL,
        ${t.bool('enabled')},
        config TEXT NOT NULL,
        secrets TEXT NOT NULL,
        managed_by TEXT,
        created_at ${t.bigint} NOT NULL,
        updated_at ${t.bigint} NOT NULL,
        -- target of the routers FK; its leading column also serves lookups by company_id
        UNIQUE (company_id, id)
      )${t.table}`,
      // The FK includes company_id, so a router can only point at an integration of its own company.
      `CREATE TABLE routers (
        id TEXT PRIMARY KEY,
        company_id TEXT NOT NULL,
        name TEXT NOT NULL,
        event_type_id TEXT NOT NULL,
        ${t.bool('enabled')},
        filter_expr TEXT NOT NULL,
        integration_id TEXT NOT NULL,
        template_id TEXT,
        generation TEXT NOT NULL,
        managed_by TEXT,
        created_at ${t.bigint} NOT NULL,
        updated_at ${t.bigint} NOT NULL,
        FOREIGN KEY (company_id, integration_id) REFERENCES integrations (company_id, id) ON DELETE RESTRICT
      )${t.table}`,
      `CREATE INDEX routers_company_id_idx ON routers (company_id)`,
      `CREATE INDEX routers_company_integration_idx ON routers (company_id, integration_id)`,
      `CREATE INDEX routers_event_type_id_idx ON routers (event_type_id)`,
    ]),
  },
  {
    version: 2,
    name: 'outbox: events, deliveries',
    up: ddl((t) => [
      // Accepted events, immutable. data is the event's JSON (TEXT on both engines).
      `CREATE TABLE events (
        id TEXT PRIMARY KEY,
        company_id TEXT NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        received_at ${t.bigint} NOT NULL,
        -- target of the deliveries FK, so a delivery can only belong to an event of its own company
        UNIQUE (company_id, id)
      )${t.table}`,
      // One row per (event, router) match. No FK to routers or integrations: those may be deleted
      // while their deliveries stay visible (a delivery to a deleted integration ends DEAD).
      // Deleting an event (retention) deletes its deliveries.
      `CREATE TABLE deliveries (
        id TEXT PRIMARY KEY,
        company_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        router_id TEXT NOT NULL,
        router_name TEXT NOT NULL,
        integration_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('PENDING', 'IN_FLIGHT', 'DELIVERED', 'DEAD')),
        attempts INTEGER NOT NULL CHECK (attempts >= 0),
        next_attempt_at ${t.bigint} NOT NULL,
        lease_until ${t.bigint},
        last_error TEXT,
        last_status_code INTEGER,
        created_at ${t.bigint} NOT NULL,
        updated_at ${t.bigint} NOT NULL,
        delivered_at ${t.bigint},
        CHECK (status <> 'IN_FLIGHT' OR lease_until IS NOT NULL),
        -- one delivery per (event, router); also serves the FK (cascade) and lookups by event
        UNIQUE (company_id, event_id, router_id),
        FOREIGN KEY (company_id, event_id) REFERENCES events (company_id, id) ON DELETE CASCADE
      )${t.table}`,
      // Claiming. A claim sets next_attempt_at = lease_until, so "PENDING and due, or IN_FLIGHT with
      // an expired lease" is one ordered range of this index: the claim reads the first n entries,
      // no sort, however big the backlog. Partial: DELIVERED and DEAD rows (the bulk) stay out of it.
      // (SQLite's claim names it with INDEXED BY: without statistics its planner may pick another one.)
      `CREATE INDEX deliveries_claim_idx ON deliveries (next_attempt_at, id) WHERE status IN ('PENDING', 'IN_FLIGHT')`,
      // Dead letters: listed per company, counted for the gauge (partial: stays small).
      `CREATE INDEX deliveries_dead_idx ON deliveries (company_id, created_at DESC, id DESC) WHERE status = 'DEAD'`,
      // Listing (API): newest first per company, optionally per integration.
      `CREATE INDEX deliveries_company_created_idx ON deliveries (company_id, created_at DESC, id DESC)`,
      `CREATE INDEX deliveries_company_integration_idx ON deliveries (company_id, integration_id, created_at DESC, id DESC)`,
    ]),
  },
  {
    // Order per key and supersession (delivery/order.ts). SQLite cannot change a CHECK
    // constraint in place, so its deliveries table is rebuilt (same columns, rows and indexes).
    version: 3,
    name: 'outbox: order per key (order_key, order_at, order_seq), SUPERSEDED status',
    up: {
      sqlite: [
        `CREATE TABLE deliveries_v3 (
          id TEXT PRIMARY KEY,
          company_id TEXT NOT NULL,
          event_id TEXT NOT NULL,
          router_id TEXT NOT NULL,
          router_name TEXT NOT NULL,
          integration_id TEXT NOT NULL,
          status TEXT NOT NULL CHECK (status IN ('PENDING', 'IN_FLIGHT', 'DELIVERED', 'DEAD', 'SUPERSEDED')),
          attempts INTEGER NOT NULL CHECK (attempts >= 0),
          next_attempt_at INTEGER NOT NULL,
          lease_until INTEGER,
          last_error TEXT,
          last_status_code INTEGER,
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          delivered_at INTEGER,
          order_key TEXT,
          order_at INTEGER NOT NULL,
          order_seq INTEGER NOT NULL,
          CHECK (status <> 'IN_FLIGHT' OR lease_until IS NOT NULL),
          UNIQUE (company_id, event_id, router_id),
          FOREIGN KEY (company_id, event_id) REFERENCES events (company_id, id) ON DELETE CASCADE
        ) STRICT`,
        // Rows from before: unordered (order_key NULL), as they were.
        `INSERT INTO deliveries_v3 (id, company_id, event_id, router_id, router_name, integration_id, status, attempts,
           next_attempt_at, lease_until, last_error, last_status_code, created_at, updated_at, delivered_at,
           order_key, order_at, order_seq)
         SELECT id, company_id, event_id, router_id, router_name, integration_id, status, attempts,
           next_attempt_at, lease_until, last_error, last_status_code, created_at, updated_at, delivered_at,
           NULL, created_at, created_at * 1000
         FROM deliveries`,
        `DROP TABLE deliveries`,
        `ALTER TABLE deliveries_v3 RENAME TO deliveries`,
        `CREATE INDEX deliveries_claim_idx ON deliveries (next_attempt_at, id) WHERE status IN ('PENDING', 'IN_FLIGHT')`,
        `CREATE INDEX deliveries_dead_idx ON deliveries (company_id, created_at DESC, id DESC) WHERE status = 'DEAD'`,
        `CREATE INDEX deliveries_company_created_idx ON deliveries (company_id, created_at DESC, id DESC)`,
        `CREATE INDEX deliveries_company_integration_idx ON deliveries (company_id, integration_id, created_at DESC, id DESC)`,
        ...ORDER_INDEXES,
      ],
      postgres: [
        `ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check`,
        `ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
           CHECK (status IN ('PENDING', 'IN_FLIGHT', 'DELIVERED', 'DEAD', 'SUPERSEDED'))`,
        `ALTER TABLE deliveries ADD COLUMN order_key TEXT,
           ADD COLUMN order_at BIGINT NOT NULL DEFAULT 0, ADD COLUMN order_seq BIGINT NOT NULL DEFAULT 0`,
        `UPDATE deliveries SET order_at = created_at, order_seq = created_at * 1000`,
        `ALTER TABLE deliveries ALTER COLUMN order_at DROP DEFAULT, ALTER COLUMN order_seq DROP DEFAULT`,
        ...ORDER_INDEXES,
      ],
    },
  },
  {
    // Fast recovery: a claim names its owner (--instance-id, stable across a restart of the same
    // pod), so a restarted process takes back its own claims at once instead of waiting for their leases.
    version: 4,
    name: 'outbox: claimed_by (the owner of an IN_FLIGHT claim)',
    up: ddl(() => [
      `ALTER TABLE deliveries ADD COLUMN claimed_by TEXT`,
      `CREATE INDEX deliveries_claimed_by_idx ON deliveries (claimed_by) WHERE status = 'IN_FLIGHT'`,
    ]),
  },
  {
    // Ownership across clusters: the monitoring configuration's manager (src/model/manager.ts).
    // NULL for rows from before: the first operator write claims them.
    version: 5,
    name: 'config: monitoring_configs.manager',
    up: ddl(() => [`ALTER TABLE monitoring_configs ADD COLUMN manager TEXT`]),
  },
  {
    // Certificate inventory (docs/inventory.md): the clusters agents report and one row per TLS Secret.
    // `epoch` / `last_seq` are the report protocol's position (src/inventory/decide.ts); a row's `epoch` tells
    // which full sync last saw it, so the final snapshot report removes the rest. not_after & co are epoch ms,
    // NULL when the Secret holds no parsable certificate. The expiry index leads with (company_id, not_after)
    // and ends with the key, so the expiry scan and the keyset-paginated listing both read it in order.
    version: 6,
    name: 'inventory: clusters, inventory_certificates',
    up: ddl((t) => [
      `CREATE TABLE clusters (
        company_id TEXT NOT NULL,
        id TEXT NOT NULL,
        name TEXT NOT NULL,
        agent_version TEXT NOT NULL,
        epoch TEXT NOT NULL,
        last_seq ${t.bigint} NOT NULL,
        ${t.bool('snapshot_complete')},
        first_seen_at ${t.bigint} NOT NULL,
        last_seen_at ${t.bigint} NOT NULL,
        certificate_count ${t.bigint} NOT NULL,
        PRIMARY KEY (company_id, id)
      )${t.table}`,
      `CREATE INDEX clusters_last_seen_idx ON clusters (last_seen_at)`,
      `CREATE TABLE inventory_certificates (
        company_id TEXT NOT NULL,
        cluster_id TEXT NOT NULL,
        namespace TEXT NOT NULL,
        secret_name TEXT NOT NULL,
        certificate_name TEXT,
        certificate_uid TEXT,
        serial TEXT,
        not_before ${t.bigint},
        not_after ${t.bigint},
        subject TEXT,
        common_name TEXT,
        dns_names TEXT NOT NULL,
        issuer TEXT,
        issuer_ref TEXT,
        ready_status TEXT,
        ready_reason TEXT,
        application_ids TEXT NOT NULL,
        labels TEXT NOT NULL,
        chain_not_after ${t.bigint},
        epoch TEXT NOT NULL,
        updated_at ${t.bigint} NOT NULL,
        PRIMARY KEY (company_id, cluster_id, namespace, secret_name)
      )${t.table}`,
      `CREATE INDEX inventory_certificates_expiry_idx ON inventory_certificates (company_id, not_after, cluster_id, namespace, secret_name)`,
      `CREATE INDEX inventory_certificates_serial_idx ON inventory_certificates (company_id, issuer, serial)`,
    ]),
  },
  {
    // Expiry evaluation on the hub (src/expiry/): per certificate (issuer DN + serial, hashed), the
    // notAfter its marks belong to and which rules were notified or covered. Written in the transaction that
    // accepts the event, so an event exists exactly when its mark does.
    version: 7,
    name: 'expiry: expiry_marks, expiry_scans',
    up: ddl((t) => [
      `CREATE TABLE expiry_marks (
        company_id TEXT NOT NULL,
        cert_key TEXT NOT NULL,
        issuer TEXT NOT NULL,
        serial TEXT NOT NULL,
        not_after ${t.bigint} NOT NULL,
        marks TEXT NOT NULL,
        updated_at ${t.bigint} NOT NULL,
        PRIMARY KEY (company_id, cert_key)
      )${t.table}`,
      // the clean-up of marks of certificates long expired and gone from the inventory
      `CREATE INDEX expiry_marks_not_after_idx ON expiry_marks (company_id, not_after)`,
      // when a company's scan last started (any replica): replicas skip a company scanned moments ago
      `CREATE TABLE expiry_scans (
        company_id TEXT PRIMARY KEY,
        started_at ${t.bigint} NOT NULL
      )${t.table}`,
    ]),
  },
  {
    // Silent clusters as events (docs/inventory.md): when the hub accepted the cluster's
    // evt.healthstatus.certmgr-agent.notready (the transition time it states); NULL while the cluster reports.
    // Written with the event in one transaction, and only from NULL, so a restart, a failover or a second
    // leader never repeats or forgets one; the report that clears it accepts the .active. The partial index
    // holds only the clusters not yet notified: the leader's check reads the oldest of them, however many
    // clusters have long been silent.
    version: 8,
    name: 'inventory: clusters.silent_since',
    up: ddl((t) => [
      `ALTER TABLE clusters ADD COLUMN silent_since ${t.bigint}`,
      `CREATE INDEX clusters_not_silenced_idx ON clusters (last_seen_at) WHERE silent_since IS NULL`,
    ]),
  },
  {
    // A router's notification policy (docs/signal.md): grouping and reminders. Defaults keep the
    // spec's behaviour (no grouping: group_by '[]'; no reminders: repeat_interval_ms NULL).
    version: 9,
    name: 'routers: group_by, group_wait_ms, group_interval_ms, repeat_interval_ms',
    up: ddl((t) => [
      `ALTER TABLE routers ADD COLUMN group_by TEXT NOT NULL DEFAULT '[]'`,
      `ALTER TABLE routers ADD COLUMN group_wait_ms ${t.bigint} NOT NULL DEFAULT 30000`,
      `ALTER TABLE routers ADD COLUMN group_interval_ms ${t.bigint} NOT NULL DEFAULT 300000`,
      `ALTER TABLE routers ADD COLUMN repeat_interval_ms ${t.bigint}`,
    ]),
  },
  {
    // Notification templates (docs/templates.md): a router's template_id references one. parts is
    // the template's JSON (Liquid sources per integration type), compiled by the service before it is written.
    // The (company_id, template_id) index serves the delete check (routers still using a template) and the
    // worker's router → template join.
    version: 10,
    name: 'templates',
    up: ddl((t) => [
      `CREATE TABLE templates (
        id TEXT PRIMARY KEY,
        company_id TEXT NOT NULL,
        name TEXT NOT NULL,
        parts TEXT NOT NULL,
        managed_by TEXT,
        created_at ${t.bigint} NOT NULL,
        updated_at ${t.bigint} NOT NULL
      )${t.table}`,
      `CREATE INDEX templates_company_id_idx ON templates (company_id)`,
      `CREATE INDEX routers_company_template_idx ON routers (company_id, template_id)`,
    ]),
  },
  {
    // Silences (docs/silences.md): maintenance windows whose matcher (CEL, like a router filter) mutes
    // notifications, and the SILENCED delivery status with the silence it was recorded under. SQLite cannot
    // change a CHECK constraint in place, so its deliveries table is rebuilt (same columns, rows and indexes,
    // plus silence_id), as in version 3. Silenced rows are terminal: the claim's partial indexes leave them out.
    // Active silences are read per company at every routing snapshot build: (company_id, ends_at).
    version: 11,
    name: 'silences; deliveries: SILENCED status, silence_id',
    up: {
      sqlite: [
        SILENCES_TABLE('INTEGER', ' STRICT'),
        ...SILENCES_INDEXES,
        `CREATE TABLE deliveries_v11 (
          id TEXT PRIMARY KEY,
          company_id TEXT NOT NULL,
          event_id TEXT NOT NULL,
          router_id TEXT NOT NULL,
          router_name TEXT NOT NULL,
          integration_id TEXT NOT NULL,
          status TEXT NOT NULL CHECK (status IN ('PENDING', 'IN_FLIGHT', 'DELIVERED', 'DEAD', 'SUPERSEDED', 'SILENCED')),
          attempts INTEGER NOT NULL CHECK (attempts >= 0),
          next_attempt_at INTEGER NOT NULL,
          lease_until INTEGER,
          last_error TEXT,
          last_status_code INTEGER,
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          delivered_at INTEGER,
          order_key TEXT,
          order_at INTEGER NOT NULL,
          order_seq INTEGER NOT NULL,
          claimed_by TEXT,
          silence_id TEXT,
          CHECK (status <> 'IN_FLIGHT' OR lease_until IS NOT NULL),
          UNIQUE (company_id, event_id, router_id),
          FOREIGN KEY (company_id, event_id) REFERENCES events (company_id, id) ON DELETE CASCADE
        ) STRICT`,
        `INSERT INTO deliveries_v11 (id, company_id, event_id, router_id, router_name, integration_id, status, attempts,
           next_attempt_at, lease_until, last_error, last_status_code, created_at, updated_at, delivered_at,
           order_key, order_at, order_seq, claimed_by, silence_id)
         SELECT id, company_id, event_id, router_id, router_name, integration_id, status, attempts,
           next_attempt_at, lease_until, last_error, last_status_code, created_at, updated_at, delivered_at,
           order_key, order_at, order_seq, claimed_by, NULL
         FROM deliveries`,
        `DROP TABLE deliveries`,
        `ALTER TABLE deliveries_v11 RENAME TO deliveries`,
        `CREATE INDEX deliveries_claim_idx ON deliveries (next_attempt_at, id) WHERE status IN ('PENDING', 'IN_FLIGHT')`,
        `CREATE INDEX deliveries_dead_idx ON deliveries (company_id, created_at DESC, id DESC) WHERE status = 'DEAD'`,
        `CREATE INDEX deliveries_company_created_idx ON deliveries (company_id, created_at DESC, id DESC)`,
        `CREATE INDEX deliveries_company_integration_idx ON deliveries (company_id, integration_id, created_at DESC, id DESC)`,
        ...ORDER_INDEXES,
        `CREATE INDEX deliveries_claimed_by_idx ON deliveries (claimed_by) WHERE status = 'IN_FLIGHT'`,
      ],
      postgres: [
        SILENCES_TABLE('BIGINT', ''),
        ...SILENCES_INDEXES,
        `ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check`,
        `ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
           CHECK (status IN ('PENDING', 'IN_FLIGHT', 'DELIVERED', 'DEAD', 'SUPERSEDED', 'SILENCED'))`,
        `ALTER TABLE deliveries ADD COLUMN silence_id TEXT`,
      ],
    },
  },
  {
    // Grouping (docs/grouping.md): a grouped router's events become members of a group (one per router and
    // groupBy values); a flusher writes one delivery per group notification, with a snapshot of what it says
    // (deliveries.group_snapshot) so a retry sends the same content, under order_key = group_key.
    version: 12,
    name: 'grouping: notification_groups, notification_group_members, deliveries.group_key + group_snapshot',
    up: ddl((t) => [
      `CREATE TABLE notification_groups (
        id TEXT PRIMARY KEY,
        company_id TEXT NOT NULL,
        router_id TEXT NOT NULL,
        group_key TEXT NOT NULL,
        labels TEXT NOT NULL,
        router_name TEXT NOT NULL,
        integration_id TEXT NOT NULL,
        group_wait_ms ${t.bigint} NOT NULL,
        group_interval_ms ${t.bigint} NOT NULL,
        repeat_interval_ms ${t.bigint},
        created_at ${t.bigint} NOT NULL,
        next_flush_at ${t.bigint},
        last_flush_at ${t.bigint},
        ${t.bool('changed')},
        ${t.bool('sent_firing')},
        member_count ${t.bigint} NOT NULL,
        overflow_firing ${t.bigint} NOT NULL,
        overflow_transient ${t.bigint} NOT NULL,
        last_event_id TEXT NOT NULL,
        last_flush_event_id TEXT,
        UNIQUE (company_id, router_id, group_key)
      )${t.table}`,
      // the flusher reads the most overdue groups; idle groups (nothing to send until a change) stay out of it
      `CREATE INDEX notification_groups_due_idx ON notification_groups (next_flush_at, id) WHERE next_flush_at IS NOT NULL`,
      `CREATE TABLE notification_group_members (
        group_id TEXT NOT NULL REFERENCES notification_groups (id) ON DELETE CASCADE,
        member_key TEXT NOT NULL,
        event_id TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('firing', 'resolved')),
        ${t.bool('transient')},
        order_at ${t.bigint} NOT NULL,
        order_seq ${t.bigint} NOT NULL,
        accepted_at ${t.bigint} NOT NULL,
        PRIMARY KEY (group_id, member_key)
      )${t.table}`,
      // a notification lists the newest members of each state
      `CREATE INDEX notification_group_members_list_idx ON notification_group_members (group_id, state, order_at, order_seq)`,
      `ALTER TABLE deliveries ADD COLUMN group_key TEXT`,
      `ALTER TABLE deliveries ADD COLUMN group_snapshot TEXT`,
    ]),
  },
  {
    // Reminders (docs/reminders.md, src/reminders/): one row per (router, orderKey) with the position of
    // the event it speaks for; written only towards newer positions, so concurrent transactions cannot undo a
    // newer state. Closed rows (is_open false) are markers kept for a day against older events arriving late.
    // The scanner claims rows by next_due_at; the open counts (caps) read the partial index.
    // deliveries.reminder marks a reminder delivery (Notification.reminder, Delivery.reminder).
    version: 13,
    name: 'reminders; deliveries.reminder',
    up: {
      sqlite: [
        `CREATE TABLE reminders (
          company_id TEXT NOT NULL,
          router_id TEXT NOT NULL,
          order_key TEXT NOT NULL,
          is_open INTEGER NOT NULL CHECK (is_open IN (0, 1)),
          event_id TEXT NOT NULL,
          event_type_id TEXT NOT NULL,
          integration_id TEXT NOT NULL,
          order_at INTEGER NOT NULL,
          order_seq INTEGER NOT NULL,
          next_due_at INTEGER NOT NULL,
          count INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          PRIMARY KEY (company_id, router_id, order_key),
          FOREIGN KEY (company_id, event_id) REFERENCES events (company_id, id) ON DELETE CASCADE
        ) STRICT`,
        `CREATE INDEX reminders_due_idx ON reminders (next_due_at)`,
        `CREATE INDEX reminders_open_idx ON reminders (company_id, router_id) WHERE is_open = 1`,
        `CREATE INDEX reminders_event_idx ON reminders (company_id, event_id)`,
        // (The rebuild keeps the columns of 11 and 12: silence_id, group_key, group_snapshot.)
        // A reminder delivery repeats its event's (event, router): UNIQUE (company_id, event_id, router_id) now
        // holds for the other rows only (partial unique index). SQLite cannot drop a table constraint: rebuilt.
        `CREATE TABLE deliveries_v13 (
          id TEXT PRIMARY KEY,
          company_id TEXT NOT NULL,
          event_id TEXT NOT NULL,
          router_id TEXT NOT NULL,
          router_name TEXT NOT NULL,
          integration_id TEXT NOT NULL,
          status TEXT NOT NULL CHECK (status IN ('PENDING', 'IN_FLIGHT', 'DELIVERED', 'DEAD', 'SUPERSEDED', 'SILENCED')),
          attempts INTEGER NOT NULL CHECK (attempts >= 0),
          next_attempt_at INTEGER NOT NULL,
          lease_until INTEGER,
          last_error TEXT,
          last_status_code INTEGER,
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          delivered_at INTEGER,
          order_key TEXT,
          order_at INTEGER NOT NULL,
          order_seq INTEGER NOT NULL,
          claimed_by TEXT,
          silence_id TEXT,
          group_key TEXT,
          group_snapshot TEXT,
          reminder INTEGER NOT NULL DEFAULT 0 CHECK (reminder IN (0, 1)),
          CHECK (status <> 'IN_FLIGHT' OR lease_until IS NOT NULL),
          FOREIGN KEY (company_id, event_id) REFERENCES events (company_id, id) ON DELETE CASCADE
        ) STRICT`,
        `INSERT INTO deliveries_v13 (id, company_id, event_id, router_id, router_name, integration_id, status, attempts,
           next_attempt_at, lease_until, last_error, last_status_code, created_at, updated_at, delivered_at,
           order_key, order_at, order_seq, claimed_by, silence_id, group_key, group_snapshot, reminder)
         SELECT id, company_id, event_id, router_id, router_name, integration_id, status, attempts,
           next_attempt_at, lease_until, last_error, last_status_code, created_at, updated_at, delivered_at,
           order_key, order_at, order_seq, claimed_by, silence_id, group_key, group_snapshot, 0
         FROM deliveries`,
        `DROP TABLE deliveries`,
        `ALTER TABLE deliveries_v13 RENAME TO deliveries`,
        `CREATE INDEX deliveries_claim_idx ON deliveries (next_attempt_at, id) WHERE status IN ('PENDING', 'IN_FLIGHT')`,
        `CREATE INDEX deliveries_dead_idx ON deliveries (company_id, created_at DESC, id DESC) WHERE status = 'DEAD'`,
        `CREATE INDEX deliveries_company_created_idx ON deliveries (company_id, created_at DESC, id DESC)`,
        `CREATE INDEX deliveries_company_integration_idx ON deliveries (company_id, integration_id, created_at DESC, id DESC)`,
        ...ORDER_INDEXES,
        `CREATE INDEX deliveries_claimed_by_idx ON deliveries (claimed_by) WHERE status = 'IN_FLIGHT'`,
        `CREATE UNIQUE INDEX deliveries_event_router_idx ON deliveries (company_id, event_id, router_id) WHERE reminder = 0`,
      ],
      postgres: [
        `CREATE TABLE reminders (
          company_id TEXT NOT NULL,
          router_id TEXT NOT NULL,
          order_key TEXT NOT NULL,
          is_open BOOLEAN NOT NULL,
          event_id TEXT NOT NULL,
          event_type_id TEXT NOT NULL,
          integration_id TEXT NOT NULL,
          order_at BIGINT NOT NULL,
          order_seq BIGINT NOT NULL,
          next_due_at BIGINT NOT NULL,
          count BIGINT NOT NULL,
          updated_at BIGINT NOT NULL,
          PRIMARY KEY (company_id, router_id, order_key),
          FOREIGN KEY (company_id, event_id) REFERENCES events (company_id, id) ON DELETE CASCADE
        )`,
        `CREATE INDEX reminders_due_idx ON reminders (next_due_at)`,
        `CREATE INDEX reminders_open_idx ON reminders (company_id, router_id) WHERE is_open`,
        `CREATE INDEX reminders_event_idx ON reminders (company_id, event_id)`,
        `ALTER TABLE deliveries ADD COLUMN reminder BOOLEAN NOT NULL DEFAULT false`,
        `ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_company_id_event_id_router_id_key`,
        `CREATE UNIQUE INDEX deliveries_event_router_idx ON deliveries (company_id, event_id, router_id) WHERE NOT reminder`,
      ],
    },
  },
  {
    // Per-resource policy (docs/annotations.md): what the agent read from a certificate's
    // notify.certmgr.io/* annotations. `ignored` rows are kept (the inventory lists them) but never notified;
    // `expiry_thresholds` (JSON array, NULL: the company's) replace the monitoring configuration's thresholds for
    // the row, and `expiry_threshold_max` (their largest) lets the expiry scan widen its notAfter range to them
    // with one index read (the partial index holds only the rows that have their own thresholds).
    version: 14,
    name: 'inventory: ignored, expiry_thresholds, runbook_url',
    up: {
      sqlite: [
        `ALTER TABLE inventory_certificates ADD COLUMN ignored INTEGER NOT NULL DEFAULT 0 CHECK (ignored IN (0, 1))`,
        `ALTER TABLE inventory_certificates ADD COLUMN expiry_thresholds TEXT`,
        `ALTER TABLE inventory_certificates ADD COLUMN expiry_threshold_max INTEGER`,
        `ALTER TABLE inventory_certificates ADD COLUMN runbook_url TEXT`,
        `CREATE INDEX inventory_certificates_own_thresholds_idx ON inventory_certificates (company_id, expiry_threshold_max)
           WHERE expiry_threshold_max IS NOT NULL`,
      ],
      postgres: [
        `ALTER TABLE inventory_certificates ADD COLUMN ignored BOOLEAN NOT NULL DEFAULT false`,
        `ALTER TABLE inventory_certificates ADD COLUMN expiry_thresholds TEXT`,
        `ALTER TABLE inventory_certificates ADD COLUMN expiry_threshold_max BIGINT`,
        `ALTER TABLE inventory_certificates ADD COLUMN runbook_url TEXT`,
        `CREATE INDEX inventory_certificates_own_thresholds_idx ON inventory_certificates (company_id, expiry_threshold_max)
           WHERE expiry_threshold_max IS NOT NULL`,
      ],
    },
  },
  {
    // The console (src/store/console-repo.ts): the events listing reads events newest first per company
    // (and per type), and the health page reads resource_health: per resource (the correlation key, the order key
    // of its deliveries) its newest health event and, while that is a .notready, the streak's first .notready
    // (`since`, its receivedAt, and its order position). Ingestion keeps it (src/events/health.ts), so the page
    // reads one index range, however long the events' history. Health events stored before this version are not
    // in it: a resource appears with its next health event.
    version: 15,
    name: 'console: events listing indexes, resource_health',
    up: ddl((t) => [
      `CREATE INDEX events_company_received_idx ON events (company_id, received_at, id)`,
      `CREATE INDEX events_company_type_received_idx ON events (company_id, type, received_at, id)`,
      `CREATE TABLE resource_health (
        company_id TEXT NOT NULL,
        resource_key TEXT NOT NULL,
        event_id TEXT NOT NULL,
        order_at ${t.bigint} NOT NULL,
        order_seq ${t.bigint} NOT NULL,
        since ${t.bigint},
        since_order_at ${t.bigint},
        since_order_seq ${t.bigint},
        PRIMARY KEY (company_id, resource_key),
        FOREIGN KEY (company_id, event_id) REFERENCES events (company_id, id) ON DELETE CASCADE
      )${t.table}`,
      // since is set exactly while the resource is unhealthy: the page is this partial index, in order
      `CREATE INDEX resource_health_unhealthy_idx ON resource_health (company_id, since, resource_key) WHERE since IS NOT NULL`,
      `CREATE INDEX resource_health_event_idx ON resource_health (company_id, event_id)`,
    ]),
  },
  {
    // Tenant list filters each read an index range in listing order (docs/security.md, "Store work per request"):
    // a filter no index served read the company's whole inventory or delivery history for one page. The
    // inventory listing (soonest notAfter first) gets one index per filter, the filter's column then the listing
    // order; a certificate's applicationIds (a JSON array) are kept one row per id in
    // inventory_certificate_applications by triggers, so every write path (upsert, delete, cluster removal)
    // keeps it. Deliveries get (status) and (event_id) in listing order: the unique (event, router) index is
    // partial (reminder = 0) and cannot serve a filter by event alone.
    version: 16,
    name: 'list filters: inventory and deliveries indexes, inventory_certificate_applications',
    up: {
      sqlite: [
        ...LIST_FILTER_INDEXES,
        APPLICATIONS_TABLE('INTEGER', ' STRICT'),
        ...APPLICATIONS_INDEXES,
        `CREATE TRIGGER inventory_certificate_applications_insert AFTER INSERT ON inventory_certificates
         BEGIN
           ${APPLICATIONS_INSERT_SQLITE}
         END`,
        `CREATE TRIGGER inventory_certificate_applications_update AFTER UPDATE ON inventory_certificates
         WHEN OLD.application_ids IS NOT NEW.application_ids OR OLD.not_after IS NOT NEW.not_after
           OR OLD.cluster_id IS NOT NEW.cluster_id OR OLD.namespace IS NOT NEW.namespace OR OLD.secret_name IS NOT NEW.secret_name
         BEGIN
           ${APPLICATIONS_DELETE_OLD}
           ${APPLICATIONS_INSERT_SQLITE}
         END`,
        `CREATE TRIGGER inventory_certificate_applications_delete AFTER DELETE ON inventory_certificates
         BEGIN
           ${APPLICATIONS_DELETE_OLD}
         END`,
        `INSERT INTO inventory_certificate_applications (${APPLICATION_COLUMNS})
         SELECT DISTINCT i.company_id, a.value, i.cluster_id, i.namespace, i.secret_name, i.not_after
         FROM inventory_certificates i, json_each(i.application_ids) a WHERE a.type = 'text'`,
      ],
      postgres: [
        ...LIST_FILTER_INDEXES,
        APPLICATIONS_TABLE('BIGINT', ''),
        ...APPLICATIONS_INDEXES,
        `CREATE FUNCTION inventory_certificate_applications_sync() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF TG_OP <> 'INSERT' THEN
             ${APPLICATIONS_DELETE_OLD}
           END IF;
           IF TG_OP <> 'DELETE' THEN
             INSERT INTO inventory_certificate_applications (${APPLICATION_COLUMNS})
             SELECT DISTINCT NEW.company_id, a #>> '{}', NEW.cluster_id, NEW.namespace, NEW.secret_name, NEW.not_after
             FROM jsonb_array_elements(NEW.application_ids::jsonb) a WHERE jsonb_typeof(a) = 'string';
           END IF;
           RETURN NULL;
         END $$`,
        `CREATE TRIGGER inventory_certificate_applications_insert_delete AFTER INSERT OR DELETE ON inventory_certificates
         FOR EACH ROW EXECUTE FUNCTION inventory_certificate_applications_sync()`,
        `CREATE TRIGGER inventory_certificate_applications_update AFTER UPDATE ON inventory_certificates
         FOR EACH ROW WHEN (OLD.application_ids IS DISTINCT FROM NEW.application_ids OR OLD.not_after IS DISTINCT FROM NEW.not_after
           OR OLD.cluster_id IS DISTINCT FROM NEW.cluster_id OR OLD.namespace IS DISTINCT FROM NEW.namespace
           OR OLD.secret_name IS DISTINCT FROM NEW.secret_name)
         EXECUTE FUNCTION inventory_certificate_applications_sync()`,
        `INSERT INTO inventory_certificate_applications (${APPLICATION_COLUMNS})
         SELECT DISTINCT i.company_id, a #>> '{}', i.cluster_id, i.namespace, i.secret_name, i.not_after
         FROM inventory_certificates i, jsonb_array_elements(i.application_ids::jsonb) a WHERE jsonb_typeof(a) = 'string'`,
      ],
    },
  },
  {
    // How many times a claim of the delivery was abandoned: its process died holding it (taken back at start) or
    // its lease ran out. The worker sends a delivery that has one alone and dead-letters it (POISONED) at the
    // second, so a delivery that kills its process cannot crash-loop the hub (docs/reliability.md).
    version: 17,
    name: 'outbox: abandoned_claims',
    up: ddl(() => [`ALTER TABLE deliveries ADD COLUMN abandoned_claims INTEGER NOT NULL DEFAULT 0`]),
  },
  {
    // Members a group's notifications have told recovered (their rows are dropped after each notification), so
    // the final "all N recovered" counts every member of the episode, not the last interval's.
    version: 18,
    name: 'grouping: notification_groups.resolved_told',
    up: ddl(() => [`ALTER TABLE notification_groups ADD COLUMN resolved_told INTEGER NOT NULL DEFAULT 0`]),
  },
  {
    // The chain's weakest link (docs/expiry.md "CA expiring before its certificates"): the expiry scan reads the
    // rows whose chain in tls.crt expires before their leaf (a partial index: only those rows), the self-signed
    // certificates (a partial index: roots, among them the Secrets of `ca` Issuers) with their latest notAfter
    // per subject, and the certificates a root signed that outlive it (issuer, notAfter: a range, not every
    // certificate of the issuer). weak_link_marks: one row per CA reported, so each is reported once.
    version: 20,
    name: 'expiry: weak_link_marks, chain and root indexes',
    up: ddl((t) => [
      `CREATE INDEX inventory_certificates_weak_chain_idx ON inventory_certificates (company_id, issuer, chain_not_after)
         WHERE chain_not_after < not_after`,
      `CREATE INDEX inventory_certificates_self_signed_idx ON inventory_certificates (company_id, subject, not_after)
         WHERE subject = issuer`,
      `CREATE INDEX inventory_certificates_issuer_not_after_idx ON inventory_certificates (company_id, issuer, not_after)`,
      `CREATE TABLE weak_link_marks (
        company_id TEXT NOT NULL,
        ca_key TEXT NOT NULL,
        not_after ${t.bigint} NOT NULL,
        leaf_count INTEGER NOT NULL,
        reported_at ${t.bigint} NOT NULL,
        PRIMARY KEY (company_id, ca_key)
      )${t.table}`,
      `CREATE INDEX weak_link_marks_not_after_idx ON weak_link_marks (company_id, not_after)`,
    ]),
  },
  {
    // Held under the issuer (docs/grouping.md): a router's `holdUnderIssuer` option, and a hold is a group row with
    // the issuer's correlation key (hold_issuer), when the issuer was seen ready again and whether its summary
    // went out. Ingestion finds a recovering issuer's holds by (company, hold_issuer).
    version: 21,
    name: 'grouping: routers.hold_under_issuer; notification_groups.hold_issuer, issuer_ready_at, hold_released',
    up: ddl((t) => [
      `ALTER TABLE routers ADD COLUMN hold_under_issuer ${t.dialect === 'postgres' ? 'BOOLEAN NOT NULL DEFAULT false' : 'INTEGER NOT NULL DEFAULT 0 CHECK (hold_under_issuer IN (0, 1))'}`,
      `ALTER TABLE notification_groups ADD COLUMN hold_issuer TEXT`,
      `ALTER TABLE notification_groups ADD COLUMN issuer_ready_at ${t.bigint}`,
      `ALTER TABLE notification_groups ADD COLUMN hold_released ${t.dialect === 'postgres' ? 'BOOLEAN NOT NULL DEFAULT false' : 'INTEGER NOT NULL DEFAULT 0 CHECK (hold_released IN (0, 1))'}`,
      `CREATE INDEX notification_groups_hold_idx ON notification_groups (company_id, hold_issuer) WHERE hold_issuer IS NOT NULL`,
    ]),
  },
  {
    // The served truth (docs/serving.md): each row's endpoints and what they serve (JSON, as the listing shows
    // them) and their worst status, the column the filters read: by status (an index in listing order of the rows
    // that have endpoints), and problem or not (a partial index each, holding only those rows).
    version: 22,
    name: 'inventory: serving, serving_status and their list indexes',
    up: ddl(() => [
      `ALTER TABLE inventory_certificates ADD COLUMN serving TEXT`,
      `ALTER TABLE inventory_certificates ADD COLUMN serving_status TEXT
         CHECK (serving_status IN ('expired', 'mismatch', 'stale', 'unreachable', 'pending', 'notProbed', 'ok'))`,
      `CREATE INDEX inventory_certificates_serving_idx ON inventory_certificates
         (company_id, serving_status, not_after, cluster_id, namespace, secret_name) WHERE serving_status IS NOT NULL`,
      `CREATE INDEX inventory_certificates_serving_problem_idx ON inventory_certificates
         (company_id, not_after, cluster_id, namespace, secret_name) WHERE ${SERVING_PROBLEM_SQL('')}`,
      `CREATE INDEX inventory_certificates_serving_no_problem_idx ON inventory_certificates
         (company_id, not_after, cluster_id, namespace, secret_name) WHERE ${SERVING_NO_PROBLEM_SQL('')}`,
    ]),
  },
  {
    // An integration's own send rate (docs/integrations.md "Rate limits"): JSON {ratePerSec, burst}, ratePerSec 0
    // meaning unlimited; NULL keeps its type's default.
    version: 23,
    name: 'integrations: rate_limit',
    up: ddl(() => [`ALTER TABLE integrations ADD COLUMN rate_limit TEXT`]),
  },
];

// Catch numbering mistakes at load time rather than in production.
MIGRATIONS.forEach((m, i) => {
  const prev = MIGRATIONS[i - 1];
  if (!Number.isInteger(m.version) || m.version < 1 || (prev && m.version <= prev.version)) {
    throw new Error(`store migrations: version ${m.version} ("${m.name}") is not ascending`);
  }
});

/** Advisory-lock class for migrations (ASCII "cert"); the second key is the schema's hash. */
const PG_MIGRATION_LOCK = 0x63657274;

/**
 * Applies the pending migrations. Call inside one transaction. Returns the versions applied now
 * (empty when the schema was already up to date).
 */
export async function runMigrations(db: SqlDb, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  if (db.dialect === 'postgres') {
    await db.get(`SELECT pg_advisory_xact_lock(${PG_MIGRATION_LOCK}, hashtext(coalesce(current_schema(), '')))`);
  }
  await db.run(
    `CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at ${TYPES[db.dialect].bigint} NOT NULL
    )`,
  );
  const done = new Set((await db.all('SELECT version FROM schema_migrations')).map((r) => Number(r['version'])));
  const applied: number[] = [];
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    for (const stmt of m.up[db.dialect]) await db.run(stmt);
    await db.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [m.version, m.name, Date.now()]);
    applied.push(m.version);
  }
  return applied;
}
