/**
 * JSON Schemas (draft-07 style, checked with ajv) for the `data` of each concrete event type, exactly as the
 * spec's field tables give them, plus the field trees derived from the same schemas for CEL path checks.
 */
import { Ajv, type ErrorObject, type SchemaObject, type ValidateFunction } from 'ajv';
import {
  MAX_RUNBOOK_URL_CHARS,
  durationProblem,
  runbookUrlProblem,
  textProblem,
  timestampProblem,
  uuidProblem,
  type TextKind,
} from '../validation/formats.js';
import { EVENT_FAMILIES, EVENT_TYPES, isEventType, type EventType, type EventTypeId, type InternalEvent } from './families.js';
import { fieldTreeFromSchema, joinFieldPath, mergeFieldTrees, type FieldNode, type ObjectFieldNode } from './field-tree.js';
import type { EventDataByType } from './types.js';
import { ajvFieldError, type FormatProblems } from '../validation/ajv-errors.js';
import { ROOT_CAUSE_CLASSES, ROOT_CAUSE_FIELDS, ROOT_CAUSE_LIMITS } from './root-cause.js';

/** Highest threshold in days (the monitoring configuration's limit, src/model/monitoring.ts). */
const MAX_THRESHOLD_DAYS = 3650;
/** Rule ids are positive int32: what every consumer (CEL int, PostgreSQL integer, JSON) holds exactly. */
const MAX_RULE_ID = 2_147_483_647;
/** daysUntilExpiry's lower bound: a certificate expired ~270 years ago still fits (int32 for every consumer). */
const MAX_EXPIRED_DAYS = 100_000;

// Strict formats (src/validation/formats.ts): canonical non-nil UUIDs, RFC 3339 timestamps as the spec shows them.
const uuid = { type: 'string', format: 'uuid' } as const;
const timestamp = { type: 'string', format: 'utc-date-time' } as const;
const offsetTimestamp = { type: 'string', format: 'offset-date-time' } as const;
const duration = { type: 'string', format: 'duration' } as const;

// Size limits: every list and string is bounded, so event size is bounded and CEL filters get a
// worst-case cost at compile time (src/cel/cost.ts reads these limits). Kubernetes' own limits where one
// exists: object names are DNS subdomains (253), namespaces DNS labels (63), Condition reason 1024 and
// message 32768 (metav1.Condition); DNS names 253 (RFC 1035). Formats are left as they are.
export const EVENT_SIZE_LIMITS = {
  name: 253,
  /** `name` of expiration events (a notification name, free text). */
  notificationName: 1024,
  namespace: 63,
  statusReason: 1024,
  statusMessage: 32_768,
  /** SANs['DNS Names'] entries. */
  dnsNames: 1000,
  dnsName: 253,
  /** subject.commonName and each subject list entry. */
  subjectText: 256,
  subjectList: 64,
  /** applicationIds: the same limits as the monitoring configuration's applicationIds. */
  applicationIds: 1000,
  applicationId: 256,
  /** agentVersion of the hub's agent events (the inventory report's limit, src/inventory/validate.ts). */
  agentVersion: 64,
  /** uuid, date-time and duration fields: their formats are short; the limit only bounds the cost model. */
  formatted: 64,
  /** dnsNames of expiration events (the inventory's limit per certificate, src/model/inventory.ts) */
  expiryDnsNames: 100,
  /** The root-cause fields of certificate health events (src/events/root-cause.ts). */
  rootCauseClass: ROOT_CAUSE_LIMITS.class,
  rootCauseHint: ROOT_CAUSE_LIMITS.hint,
  rootCauseMessage: ROOT_CAUSE_LIMITS.message,
  rootCauseResource: ROOT_CAUSE_LIMITS.resource,
} as const;
const L = EVENT_SIZE_LIMITS;
const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
const list = (maxItems: number, maxLength: number) => ({ type: 'array', maxItems, items: text(maxLength) }) as const;
const uuidField = { ...uuid, maxLength: L.formatted } as const;
const timestampField = { ...timestamp, maxLength: L.formatted } as const;
const offsetTimestampField = { ...offsetTimestamp, maxLength: L.formatted } as const;
const durationField = { ...duration, maxLength: L.formatted } as const;
const subjectList = list(L.subjectList, L.subjectText);
/** Hub extension (docs/annotations.md): an absolute http(s) URL, no credentials. */
const runbookUrlField = { type: 'string', format: 'runbook-url', maxLength: MAX_RUNBOOK_URL_CHARS } as const;

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

/** A closed object schema whose property names are checked against the TypeScript shape T. */
function objectSchema<T>(properties: { readonly [K in keyof T]-?: SchemaObject }, required: readonly RequiredKeys<T>[]): SchemaObject {
  return { type: 'object', properties, required, additionalProperties: false };
}

const subject = objectSchema<EventDataByType['evt.healthstatus.certmgr-certificate-resource.notready']['subject']>(
  {
    commonName: text(L.subjectText),
    countries: subjectList,
    localities: subjectList,
    organizationalUnits: subjectList,
    organizations: subjectList,
    provinces: subjectList,
  },
  ['commonName', 'countries', 'localities', 'organizationalUnits', 'organizations', 'provinces'],
);

/** `SANs`: only the key `DNS Names`; the object is empty when there are no names. */
const sans = objectSchema<EventDataByType['evt.healthstatus.certmgr-certificate-resource.notready']['SANs']>(
  { 'DNS Names': list(L.dnsNames, L.dnsName) },
  [],
);

const issuerFields = {
  clusterId: uuidField,
  clusterName: text(L.name),
  issuerName: text(L.name),
  namespace: text(L.namespace),
  resourceId: uuidField,
  statusMessage: text(L.statusMessage),
  statusReason: text(L.statusReason),
  statusTransition: timestampField,
  runbookUrl: runbookUrlField,
} as const;
const issuerRequired = (Object.keys(issuerFields) as (keyof typeof issuerFields)[]).filter((k) => k !== 'runbookUrl');

const certificateResourceFields = {
  clusterName: text(L.name),
  clusterId: uuidField,
  certificateName: text(L.name),
  namespace: text(L.namespace),
  issuerName: text(L.name),
  statusMessage: text(L.statusMessage),
  unhealthyDuration: durationField,
  statusReason: text(L.statusReason),
  statusTransition: timestampField,
  subject,
  SANs: sans,
  runbookUrl: runbookUrlField,
  // hub extension (docs/emitter.md "Root cause"): optional, the deepest failure below an unhealthy Certificate
  rootCause: { type: 'string', enum: [...ROOT_CAUSE_CLASSES], maxLength: L.rootCauseClass },
  rootCauseHint: text(L.rootCauseHint),
  rootCauseMessage: text(L.rootCauseMessage),
  rootCauseResource: text(L.rootCauseResource),
} as const;
const OPTIONAL_CERTIFICATE_FIELDS = ['runbookUrl', ...ROOT_CAUSE_FIELDS] as const;
type OptionalCertificateField = (typeof OPTIONAL_CERTIFICATE_FIELDS)[number];
const certificateResourceRequired = (Object.keys(certificateResourceFields) as (keyof typeof certificateResourceFields)[]).filter(
  (k): k is Exclude<keyof typeof certificateResourceFields, OptionalCertificateField> =>
    !(OPTIONAL_CERTIFICATE_FIELDS as readonly string[]).includes(k),
);

// Hub extension (docs/inventory.md "Silent clusters as events"): named like the spec's health events.
const agentFields = {
  clusterId: uuidField,
  clusterName: text(L.name),
  lastSeenAt: timestampField,
  statusTransition: timestampField,
  statusMessage: text(L.statusMessage),
  statusReason: text(L.statusReason),
  agentVersion: text(L.agentVersion),
} as const;
const agentRequired = Object.keys(agentFields) as (keyof typeof agentFields)[];

/** One schema per concrete event type, for its `data`. */
export const EVENT_DATA_SCHEMAS: { readonly [T in EventType]: SchemaObject } = {
  'evt.healthstatus.certmgr-issuer.notready': objectSchema<EventDataByType['evt.healthstatus.certmgr-issuer.notready']>(
    issuerFields,
    issuerRequired,
  ),
  'evt.healthstatus.certmgr-issuer.active': objectSchema<EventDataByType['evt.healthstatus.certmgr-issuer.active']>(
    { ...issuerFields, unhealthyDuration: durationField },
    [...issuerRequired, 'unhealthyDuration'],
  ),
  'evt.healthstatus.certmgr-certificate-resource.notready': objectSchema<
    EventDataByType['evt.healthstatus.certmgr-certificate-resource.notready']
  >(certificateResourceFields, certificateResourceRequired),
  'evt.healthstatus.certmgr-certificate-resource.active': objectSchema<
    EventDataByType['evt.healthstatus.certmgr-certificate-resource.active']
  >({ ...certificateResourceFields, resourceId: uuidField }, [...certificateResourceRequired, 'resourceId']),
  'evt.policy.expiringcertificates.failed': objectSchema<EventDataByType['evt.policy.expiringcertificates.failed']>(
    {
      name: text(L.notificationName),
      applicationIds: list(L.applicationIds, L.applicationId),
      message: text(L.statusMessage),
      notificationDate: offsetTimestampField,
      // Days, like the monitoring configuration's thresholds (0 = expires today); int32 so 1e308 cannot pass.
      threshold: { type: 'integer', minimum: 0, maximum: MAX_THRESHOLD_DAYS },
      ruleId: { type: 'integer', minimum: 1, maximum: MAX_RULE_ID },
      // hub extension (docs/expiry.md "Event fields"): optional, set by the hub's expiry scan
      thresholdPercent: { type: 'integer', minimum: 1, maximum: 99 },
      runbookUrl: runbookUrlField,
      certificateName: text(L.name),
      namespace: text(L.namespace),
      clusterName: text(L.name),
      notAfter: timestampField,
      // days, like threshold; negative once expired (at most the threshold, at least ~-10^5 days back)
      daysUntilExpiry: { type: 'integer', minimum: -MAX_EXPIRED_DAYS, maximum: MAX_THRESHOLD_DAYS },
      dnsNames: list(L.expiryDnsNames, L.dnsName),
      // rule 900 (docs/expiry.md "CA expiring before its certificates"): the certificates the CA signed that outlive
      // it, counted, and the first 10 named `cluster/namespace/name`
      outlivingCount: { type: 'integer', minimum: 1, maximum: MAX_RULE_ID },
      outlivingCertificates: list(10, 2 * L.name + L.namespace + 2),
    },
    ['name', 'applicationIds', 'message', 'notificationDate', 'threshold', 'ruleId'],
  ),
  'evt.healthstatus.certmgr-agent.notready': objectSchema<EventDataByType['evt.healthstatus.certmgr-agent.notready']>(
    agentFields,
    agentRequired,
  ),
  'evt.healthstatus.certmgr-agent.active': objectSchema<EventDataByType['evt.healthstatus.certmgr-agent.active']>(
    { ...agentFields, unhealthyDuration: durationField },
    [...agentRequired, 'unhealthyDuration'],
  ),
};

// ---------------------------------------------------------------------------------------------------------------
// Field trees (for CEL `data.<path>` checks), derived from the schemas above.

/** The allowed `data` paths of each concrete event type. */
export const EVENT_TYPE_FIELD_TREES: { readonly [T in EventType]: ObjectFieldNode } = Object.fromEntries(
  EVENT_TYPES.map((t) => [t, asObjectTree(fieldTreeFromSchema(EVENT_DATA_SCHEMAS[t]))]),
) as { [T in EventType]: ObjectFieldNode };

/** The allowed `data` paths of each family: the union over its concrete types. */
export const FAMILY_FIELD_TREES: { readonly [F in EventTypeId]: ObjectFieldNode } = Object.fromEntries(
  EVENT_FAMILIES.map((f) => [
    f.eventTypeId,
    asObjectTree(f.types.map((t): FieldNode => EVENT_TYPE_FIELD_TREES[t]).reduce((a, b) => mergeFieldTrees(a, b))),
  ]),
) as { [F in EventTypeId]: ObjectFieldNode };

function asObjectTree(node: FieldNode): ObjectFieldNode {
  if (node.kind !== 'object') throw new Error('event data schema must describe an object');
  return node;
}

// ---------------------------------------------------------------------------------------------------------------
// Validation

export interface EventValidationError {
  /** Where the problem is, in CEL-like notation: `type`, `data.clusterId`, `data.SANs['DNS Names'][0]`. */
  path: string;
  message: string;
}

export type EventValidationResult = { ok: true; event: InternalEvent } | { ok: false; errors: EventValidationError[] };

/** The problem of a value in each custom format; ajv only learns yes/no, the message is recomputed from this. */
const FORMATS: FormatProblems = {
  uuid: uuidProblem,
  'utc-date-time': (v) => timestampProblem(v, 'utc'),
  'offset-date-time': (v) => timestampProblem(v, 'offset'),
  duration: durationProblem,
  'runbook-url': runbookUrlProblem,
};

const ajv = new Ajv({ allErrors: true, strict: true });
for (const [name, problem] of Object.entries(FORMATS))
  ajv.addFormat(name, { type: 'string', validate: (v: string) => problem(v) === undefined });

const validators = new Map<EventType, ValidateFunction>(EVENT_TYPES.map((t) => [t, ajv.compile(EVENT_DATA_SCHEMAS[t])]));

/** Validates an internal event `{ type, data }` against its type's schema. */
export function validateEvent(e: unknown): EventValidationResult {
  if (typeof e !== 'object' || e === null || Array.isArray(e)) {
    return { ok: false, errors: [{ path: '', message: 'event must be an object { type, data }' }] };
  }
  const errors: EventValidationError[] = [];
  for (const key of Object.keys(e)) {
    if (key !== 'type' && key !== 'data') errors.push({ path: joinFieldPath('', key), message: 'is not an allowed field' });
  }
  const { type, data } = e as { type?: unknown; data?: unknown };
  if (type === undefined) errors.push({ path: 'type', message: 'is required' });
  else if (!isEventType(type)) errors.push({ path: 'type', message: `must be one of ${EVENT_TYPES.join(', ')}` });
  if (data === undefined) errors.push({ path: 'data', message: 'is required' });
  else if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    errors.push({ path: 'data', message: 'must be an object' });
  } else if (isEventType(type)) {
    const validate = validators.get(type);
    if (validate && !validate(data)) errors.push(...(validate.errors ?? []).map((err) => toValidationError(err, data)));
    else errors.push(...textErrors(data));
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, event: e as InternalEvent };
}

function toValidationError(err: ErrorObject, data: object): EventValidationError {
  return ajvFieldError(err, data, instancePathToFieldPath(err.instancePath), FORMATS);
}

/** Free-text fields (newlines and tabs allowed); every other string in an event is single-line name-like text. */
export const FREE_TEXT_FIELDS: ReadonlySet<string> = new Set(['data.statusMessage', 'data.message']);

/**
 * Every string of a schema-valid `data` (wherever it is, so no field can be forgotten) must be text the
 * stores keep faithfully and a reader sees as it is: no NUL or other controls, no bidi overrides, no
 * zero-width characters, no lone surrogates (src/validation/formats.ts).
 */
function textErrors(data: object): EventValidationError[] {
  const errors: EventValidationError[] = [];
  const walk = (v: unknown, path: string): void => {
    if (typeof v === 'string') {
      const kind: TextKind = FREE_TEXT_FIELDS.has(path) ? 'text' : 'name';
      const problem = textProblem(v, kind);
      if (problem) errors.push({ path, message: problem });
    } else if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) walk(x, joinFieldPath(path, k));
  };
  walk(data, 'data');
  return errors;
}

/** `/SANs/DNS Names/0` → `data.SANs['DNS Names'][0]` (every numeric segment in these schemas is an array index). */
function instancePathToFieldPath(pointer: string): string {
  let path = 'data';
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    path = /^[0-9]+$/.test(segment) ? `${path}[${segment}]` : joinFieldPath(path, segment);
  }
  return path;
}
