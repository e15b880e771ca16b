/**
 * JSON Schemas (draft-07 style, checked with ajv) for the `data` of each concrete event type, exactly as the
 * spec's field tables give them, plus the field trees derived from the same schemas for CEL path checks.
 */
import { Ajv, type ErrorObject, type SchemaObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { EVENT_FAMILIES, EVENT_TYPES, isEventType, type EventType, type EventTypeId, type InternalEvent } from './families.js';
import { fieldTreeFromSchema, joinFieldPath, mergeFieldTrees, type FieldNode, type ObjectFieldNode } from './field-tree.js';
import type { EventDataByType } from './types.js';

/** `<h>h<m>m<s>s` with optional fractional seconds, e.g. `1h2m3.5s`, `0h0m12.25s`. */
export const UNHEALTHY_DURATION_PATTERN = '^[0-9]+h[0-9]+m[0-9]+(\\.[0-9]+)?s$';

const uuid = { type: 'string', format: 'uuid' } as const;
const timestamp = { type: 'string', format: 'date-time' } as const;
const duration = { type: 'string', pattern: UNHEALTHY_DURATION_PATTERN } as const;

// Size limits (issue 7): every list and string is bounded, so event size is bounded and CEL filters get a
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
  /** uuid, date-time and duration fields: their formats are short; the limit only bounds the cost model. */
  formatted: 64,
} as const;
const L = EVENT_SIZE_LIMITS;
const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
const list = (maxItems: number, maxLength: number) => ({ type: 'array', maxItems, items: text(maxLength) }) as const;
const uuidField = { ...uuid, maxLength: L.formatted } as const;
const timestampField = { ...timestamp, maxLength: L.formatted } as const;
const durationField = { ...duration, maxLength: L.formatted } as const;
const subjectList = list(L.subjectList, L.subjectText);

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

/** A closed object schema whose property names are checked against the TypeScript shape T. */
function objectSchema<T>(
  properties: { readonly [K in keyof T]-?: SchemaObject },
  required: readonly RequiredKeys<T>[],
): SchemaObject {
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
} as const;
const issuerRequired = Object.keys(issuerFields) as (keyof typeof issuerFields)[];

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
} as const;
const certificateResourceRequired = Object.keys(certificateResourceFields) as (keyof typeof certificateResourceFields)[];

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
      notificationDate: timestampField,
      threshold: { type: 'integer' },
      ruleId: { type: 'integer', minimum: 1 },
    },
    ['name', 'applicationIds', 'message', 'notificationDate', 'threshold', 'ruleId'],
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

export type EventValidationResult =
  | { ok: true; event: InternalEvent }
  | { ok: false; errors: EventValidationError[] };

const ajv = new Ajv({ allErrors: true, strict: true });
addFormatsModule.default(ajv, ['uuid', 'date-time']);

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
    if (validate && !validate(data)) errors.push(...(validate.errors ?? []).map(toValidationError));
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, event: e as InternalEvent };
}

function toValidationError(err: ErrorObject): EventValidationError {
  let path = instancePathToFieldPath(err.instancePath);
  let message = err.message ?? 'is invalid';
  const params = err.params as Record<string, unknown>;
  if (err.keyword === 'required' && typeof params.missingProperty === 'string') {
    path = joinFieldPath(path, params.missingProperty);
    message = 'is required';
  } else if (err.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    path = joinFieldPath(path, params.additionalProperty);
    message = 'is not an allowed field';
  } else if (err.keyword === 'pattern' && params.pattern === UNHEALTHY_DURATION_PATTERN) {
    message = 'must be a duration of the form <h>h<m>m<s>s, e.g. 1h2m3.5s';
  } else if (err.keyword === 'format') {
    message = FORMAT_MESSAGES[String(params.format)] ?? message;
  }
  return { path, message };
}

const FORMAT_MESSAGES: Readonly<Record<string, string>> = {
  uuid: 'must be a UUID',
  'date-time': 'must be an ISO 8601 date-time with a time zone',
};

/** `/SANs/DNS Names/0` → `data.SANs['DNS Names'][0]` (every numeric segment in these schemas is an array index). */
function instancePathToFieldPath(pointer: string): string {
  let path = 'data';
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    path = /^[0-9]+$/.test(segment) ? `${path}[${segment}]` : joinFieldPath(path, segment);
  }
  return path;
}
