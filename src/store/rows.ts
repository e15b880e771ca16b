/**
 * Row ⇄ record mapping, in one place for both engines.
 *
 * Storage conventions: UUIDs as TEXT, times as epoch-ms BIGINT, JSON as TEXT (both engines),
 * booleans as BOOLEAN on PostgreSQL and INTEGER 0/1 on SQLite (bound by the SqlDb adapter).
 */
import type { EventTypeId } from '../events/families.js';
import { SecretKeyError, isSealed, type SecretBox, type SecretSlot } from './secret-box.js';
import type { SqlRow, SqlValue } from './sqldb.js';
import type {
  DeliveryRecord,
  DeliveryStatus,
  EventRecord,
  IntegrationPatch,
  IntegrationRecord,
  IntegrationType,
  MonitoringConfigRecord,
  NewDelivery,
  RouterGeneration,
  RouterPatch,
  RouterRecord,
} from './types.js';

// ---- decoders --------------------------------------------------------------------------------

function col(row: SqlRow, name: string): unknown {
  const v = row[name];
  // a column's value is never undefined (NULL is null): only then look whether the row has it at all
  if (v === undefined && !(name in row)) throw new Error(`store: row has no column "${name}"`);
  return v;
}

export function str(row: SqlRow, name: string): string {
  const v = col(row, name);
  if (typeof v !== 'string') throw new Error(`store: column "${name}" is not text`);
  return v;
}

export function strOrNull(row: SqlRow, name: string): string | null {
  const v = col(row, name);
  return v === null ? null : str(row, name);
}

export function int(row: SqlRow, name: string): number {
  const v = col(row, name);
  const n = typeof v === 'number' ? v : typeof v === 'bigint' || typeof v === 'string' ? Number(v) : NaN;
  if (!Number.isSafeInteger(n)) throw new Error(`store: column "${name}" is not an integer`);
  return n;
}

export function intOrNull(row: SqlRow, name: string): number | null {
  return col(row, name) === null ? null : int(row, name);
}

export function bool(row: SqlRow, name: string): boolean {
  const v = col(row, name);
  if (v === true || v === 1 || v === 1n) return true;
  if (v === false || v === 0 || v === 0n) return false;
  throw new Error(`store: column "${name}" is not a boolean`);
}

export function json<T>(row: SqlRow, name: string): T {
  const v = col(row, name);
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

const enc = (v: unknown): string => JSON.stringify(v);

// ---- monitoring_configs ----------------------------------------------------------------------

export const MONITORING_CONFIG_COLUMNS = [
  'id',
  'company_id',
  'enabled',
  'thresholds',
  'application_ids',
  'include_unassigned_certificates',
  'updated_at',
  'manager',
] as const;

/** application_ids is the agent's JSON array; anything else counts as none (unassigned). */
export function stringList(text: unknown): string[] {
  if (typeof text !== 'string') return [];
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

export function monitoringConfigToRow(r: MonitoringConfigRecord): SqlValue[] {
  return [
    r.id,
    r.companyId,
    r.enabled,
    enc(r.thresholds),
    enc(r.applicationIds),
    r.includeUnassignedCertificates,
    r.updatedAt,
    r.manager ?? null,
  ];
}

export function rowToMonitoringConfig(row: SqlRow): MonitoringConfigRecord {
  return {
    id: str(row, 'id'),
    companyId: str(row, 'company_id'),
    enabled: bool(row, 'enabled'),
    thresholds: json<number[]>(row, 'thresholds'),
    applicationIds: json<string[]>(row, 'application_ids'),
    includeUnassignedCertificates: bool(row, 'include_unassigned_certificates'),
    updatedAt: int(row, 'updated_at'),
    manager: typeof row['manager'] === 'string' ? row['manager'] : undefined,
  };
}

// ---- integrations ----------------------------------------------------------------------------

export const INTEGRATION_COLUMNS = [
  'id',
  'company_id',
  'name',
  'type',
  'enabled',
  'config',
  'secrets',
  'managed_by',
  'rate_limit',
  'created_at',
  'updated_at',
] as const;

const SECRETS_COLUMN = 'integrations.secrets';

/**
 * The stored form of an integration's secrets: sealed (AES-256-GCM, bound to the row) when a key ring is
 * configured, else plaintext JSON (stores opened without one, e.g. by tests of other parts).
 */
export function encodeSecrets(secrets: Record<string, string>, slot: Omit<SecretSlot, 'column'>, box: SecretBox | undefined): string {
  const json = enc(secrets);
  return box ? box.seal(json, { column: SECRETS_COLUMN, ...slot }) : json;
}

/** The inverse of encodeSecrets; also reads plaintext rows written before encryption (migration). */
export function decodeSecrets(stored: string, slot: Omit<SecretSlot, 'column'>, box: SecretBox | undefined): Record<string, string> {
  if (!isSealed(stored)) return JSON.parse(stored) as Record<string, string>;
  if (!box)
    throw new SecretKeyError(
      `${SECRETS_COLUMN} of ${slot.id}: the secrets are encrypted but no secret key is configured (--secret-key-file)`,
    );
  return JSON.parse(box.open(stored, { column: SECRETS_COLUMN, ...slot })) as Record<string, string>;
}

export function integrationToRow(r: IntegrationRecord, box?: SecretBox): SqlValue[] {
  return [
    r.id,
    r.companyId,
    r.name,
    r.type,
    r.enabled,
    enc(r.config),
    encodeSecrets(r.secrets, { companyId: r.companyId, id: r.id }, box),
    r.managedBy,
    encRateLimit(r.rateLimit ?? null),
    r.createdAt,
    r.updatedAt,
  ];
}

type OwnRateLimit = NonNullable<IntegrationRecord['rateLimit']>;

/** An integration's own rate limit as stored (JSON; NULL: its type's default). */
const encRateLimit = (l: OwnRateLimit | null): string | null => (l === null ? null : enc({ ratePerSec: l.ratePerSec, burst: l.burst }));

/** The stored rate limit, or null (the type's default) for NULL or anything that is not one (the API writes only valid ones). */
function rateLimitOf(row: SqlRow): OwnRateLimit | null {
  const v = row['rate_limit'];
  if (typeof v !== 'string') return null;
  try {
    const l = JSON.parse(v) as Partial<OwnRateLimit> | null;
    return l && typeof l.ratePerSec === 'number' && typeof l.burst === 'number' ? { ratePerSec: l.ratePerSec, burst: l.burst } : null;
  } catch {
    return null;
  }
}

/**
 * Sealed secrets are decrypted lazily, on first access of `secrets` (only the notifiers read them): listing
 * integrations, routing and the API never need them, so a row that cannot be decrypted (wrong or missing
 * key) fails only the delivery that needs it, with a SecretKeyError naming the row and key id.
 */
export function rowToIntegration(row: SqlRow, box?: SecretBox): IntegrationRecord {
  const id = str(row, 'id');
  const companyId = str(row, 'company_id');
  const stored = str(row, 'secrets');
  const rec = {
    id,
    companyId,
    name: str(row, 'name'),
    type: str(row, 'type') as IntegrationType,
    enabled: bool(row, 'enabled'),
    config: json<Record<string, unknown>>(row, 'config'),
    managedBy: strOrNull(row, 'managed_by'),
    createdAt: int(row, 'created_at'),
    updatedAt: int(row, 'updated_at'),
  } as IntegrationRecord;
  // absent (not null) when the type's default applies: records compare as they did before the column
  const rateLimit = rateLimitOf(row);
  if (rateLimit) rec.rateLimit = rateLimit;
  if (!isSealed(stored)) {
    rec.secrets = decodeSecrets(stored, { companyId, id }, box);
    return rec;
  }
  let plain: Record<string, string> | undefined;
  Object.defineProperty(rec, 'secrets', {
    enumerable: true,
    configurable: true,
    get: () => (plain ??= decodeSecrets(stored, { companyId, id }, box)),
    set: (v: Record<string, string>) => {
      plain = v;
    },
  });
  return rec;
}

/** Patchable record field → [column, encoder]. Fields not listed here can never be patched. */
export type PatchColumns<P> = {
  [K in keyof Required<P>]: readonly [column: string, encode: (v: Required<P>[K]) => SqlValue];
};

const same = <T extends SqlValue>(v: T): T => v;

export const INTEGRATION_PATCH_COLUMNS: PatchColumns<IntegrationPatch> = {
  name: ['name', same],
  enabled: ['enabled', same],
  config: ['config', enc],
  // sealed per row by repo.updateIntegration (the encryption is bound to company and id); never written from here
  secrets: [
    'secrets',
    () => {
      throw new Error('store: integration secrets must be written through encodeSecrets');
    },
  ],
  managedBy: ['managed_by', same],
  rateLimit: ['rate_limit', encRateLimit],
};

// ---- routers ---------------------------------------------------------------------------------

export const ROUTER_COLUMNS = [
  'id',
  'company_id',
  'name',
  'event_type_id',
  'enabled',
  'filter_expr',
  'integration_id',
  'template_id',
  'group_by',
  'group_wait_ms',
  'group_interval_ms',
  'repeat_interval_ms',
  'hold_under_issuer',
  'generation',
  'managed_by',
  'created_at',
  'updated_at',
] as const;

export function routerToRow(r: RouterRecord): SqlValue[] {
  return [
    r.id,
    r.companyId,
    r.name,
    r.eventTypeId,
    r.enabled,
    r.filter,
    r.integrationId,
    r.templateId,
    enc(r.groupBy),
    r.groupWaitMs,
    r.groupIntervalMs,
    r.repeatIntervalMs,
    r.holdUnderIssuer,
    r.generation,
    r.managedBy,
    r.createdAt,
    r.updatedAt,
  ];
}

export function rowToRouter(row: SqlRow): RouterRecord {
  return {
    id: str(row, 'id'),
    companyId: str(row, 'company_id'),
    name: str(row, 'name'),
    eventTypeId: str(row, 'event_type_id') as EventTypeId,
    enabled: bool(row, 'enabled'),
    filter: str(row, 'filter_expr'),
    integrationId: str(row, 'integration_id'),
    templateId: strOrNull(row, 'template_id'),
    groupBy: json<string[]>(row, 'group_by'),
    groupWaitMs: int(row, 'group_wait_ms'),
    groupIntervalMs: int(row, 'group_interval_ms'),
    repeatIntervalMs: intOrNull(row, 'repeat_interval_ms'),
    holdUnderIssuer: bool(row, 'hold_under_issuer'),
    generation: str(row, 'generation') as RouterGeneration,
    managedBy: strOrNull(row, 'managed_by'),
    createdAt: int(row, 'created_at'),
    updatedAt: int(row, 'updated_at'),
  };
}

export const ROUTER_PATCH_COLUMNS: PatchColumns<RouterPatch> = {
  name: ['name', same],
  eventTypeId: ['event_type_id', same],
  enabled: ['enabled', same],
  filter: ['filter_expr', same],
  integrationId: ['integration_id', same],
  templateId: ['template_id', same],
  groupBy: ['group_by', enc],
  groupWaitMs: ['group_wait_ms', same],
  groupIntervalMs: ['group_interval_ms', same],
  repeatIntervalMs: ['repeat_interval_ms', same],
  holdUnderIssuer: ['hold_under_issuer', same],
  managedBy: ['managed_by', same],
};

// ---- events ------------------------------------------------------------------------------------

export const EVENT_COLUMNS = ['id', 'company_id', 'type', 'data', 'received_at'] as const;

export function eventToRow(r: EventRecord): SqlValue[] {
  return [r.id, r.companyId, r.type, enc(r.data), r.receivedAt];
}

export function rowToEvent(row: SqlRow): EventRecord {
  return {
    id: str(row, 'id'),
    companyId: str(row, 'company_id'),
    type: str(row, 'type'),
    data: json<Record<string, unknown>>(row, 'data'),
    receivedAt: int(row, 'received_at'),
  };
}

// ---- deliveries --------------------------------------------------------------------------------

export const DELIVERY_COLUMNS = [
  'id',
  'company_id',
  'event_id',
  'router_id',
  'router_name',
  'integration_id',
  'status',
  'attempts',
  'next_attempt_at',
  'lease_until',
  'last_error',
  'last_status_code',
  'created_at',
  'updated_at',
  'delivered_at',
  'order_key',
  'order_at',
  'order_seq',
  'claimed_by',
  'reminder',
  'silence_id',
  'group_key',
  'group_snapshot',
  'abandoned_claims',
] as const;

export function newDeliveryToRow(r: NewDelivery): SqlValue[] {
  return [
    r.id,
    r.companyId,
    r.eventId,
    r.routerId,
    r.routerName,
    r.integrationId,
    r.silenceId === undefined ? 'PENDING' : 'SILENCED',
    0,
    r.createdAt, // due at once
    null,
    null,
    null,
    r.createdAt,
    r.createdAt,
    null,
    r.orderKey ?? null,
    r.orderAt ?? r.createdAt,
    r.orderSeq ?? r.createdAt * 1000,
    null,
    r.reminder ?? false,
    r.silenceId ?? null,
    r.groupKey ?? null,
    r.groupSnapshot ?? null,
    0,
  ];
}

export function rowToDelivery(row: SqlRow): DeliveryRecord {
  return {
    id: str(row, 'id'),
    companyId: str(row, 'company_id'),
    eventId: str(row, 'event_id'),
    routerId: str(row, 'router_id'),
    routerName: str(row, 'router_name'),
    integrationId: str(row, 'integration_id'),
    status: str(row, 'status') as DeliveryStatus,
    attempts: int(row, 'attempts'),
    nextAttemptAt: int(row, 'next_attempt_at'),
    leaseUntil: intOrNull(row, 'lease_until'),
    lastError: strOrNull(row, 'last_error'),
    lastStatusCode: intOrNull(row, 'last_status_code'),
    createdAt: int(row, 'created_at'),
    updatedAt: int(row, 'updated_at'),
    deliveredAt: intOrNull(row, 'delivered_at'),
    orderKey: strOrNull(row, 'order_key'),
    orderAt: int(row, 'order_at'),
    orderSeq: int(row, 'order_seq'),
    claimedBy: strOrNull(row, 'claimed_by'),
    reminder: bool(row, 'reminder'),
    silenceId: strOrNull(row, 'silence_id'),
    abandonedClaims: int(row, 'abandoned_claims'),
    ...groupOfRow(row),
  };
}

function groupOfRow(row: SqlRow): Pick<DeliveryRecord, 'groupKey' | 'groupSnapshot'> {
  const key = strOrNull(row, 'group_key');
  const snapshot = strOrNull(row, 'group_snapshot');
  return key === null || snapshot === null ? {} : { groupKey: key, groupSnapshot: snapshot };
}
