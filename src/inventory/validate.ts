/**
 * Strict validation of `POST /v1/inventory` bodies (InventoryReport, src/model/inventory.ts): every string and
 * list is bounded, UUIDs canonical, times RFC 3339 UTC, text free of controls and invisible characters. Errors
 * name where: `upserts[3].notAfter`. ajv like src/events/schemas.ts, plus the checks a schema cannot say.
 */
import { Ajv, type ErrorObject, type SchemaObject } from 'ajv';
import { joinFieldPath } from '../events/field-tree.js';
import { INVENTORY_LIMITS, INVENTORY_PROTOCOL, MAX_INVENTORY_ITEMS_PER_REPORT, type InventoryReport } from '../model/inventory.js';
import { SERVING_LIMITS, SERVING_STATUSES } from '../model/serving.js';
import { codePointLength, runbookUrlProblem, textProblem, timestampProblem, uuidProblem } from '../validation/formats.js';
import { ajvFieldError, type FormatProblems } from '../validation/ajv-errors.js';
import { servingAddressProblem, servingEndpointProblems, servingHostProblem } from './serving.js';

/** Limits of the report's fields (docs/inventory.md#limits); Kubernetes' own where it has one. */
const L = INVENTORY_LIMITS;

const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
const nullableText = (maxLength: number) => ({ type: 'string', maxLength, nullable: true }) as const;
const uuid = { type: 'string', format: 'uuid', maxLength: L.formatted } as const;
const time = { type: 'string', format: 'utc-date-time', maxLength: L.formatted, nullable: true } as const;

const location = {
  namespace: { ...text(L.namespace), minLength: 1 },
  secretName: { ...text(L.name), minLength: 1 },
} as const;

/** One endpoint of the served truth (src/model/serving.ts); the fields' agreement is checked after the schema. */
const servingEndpoint: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['host', 'address', 'source', 'status', 'servedSerial', 'servedNotAfter', 'checkedAt'],
  properties: {
    // the formats check the length first (one message, not two)
    host: { type: 'string', format: 'serving-host' },
    address: { type: 'string', format: 'serving-address', nullable: true },
    source: {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'namespace', 'name'],
      properties: {
        kind: { type: 'string', enum: ['Ingress', 'Gateway'] },
        namespace: location.namespace,
        name: { ...text(L.name), minLength: 1 },
      },
    },
    status: { type: 'string', enum: [...SERVING_STATUSES] },
    reason: { ...text(SERVING_LIMITS.reason), minLength: 1 },
    servedSerial: { type: 'string', maxLength: L.serial, minLength: 1, pattern: '^[0-9A-F]+$', nullable: true },
    servedNotAfter: time,
    checkedAt: time,
  },
};

const facts: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: [
    'namespace',
    'secretName',
    'serial',
    'notBefore',
    'notAfter',
    'subject',
    'dnsNames',
    'issuer',
    'applicationIds',
    'labels',
    'chainNotAfter',
  ],
  properties: {
    ...location,
    certificateName: { ...text(L.name), minLength: 1 },
    certificateUid: uuid,
    serial: { type: 'string', maxLength: L.serial, minLength: 1, pattern: '^[0-9A-F]+$', nullable: true },
    notBefore: time,
    notAfter: time,
    subject: nullableText(L.dn),
    commonName: text(L.commonName),
    dnsNames: { type: 'array', maxItems: L.dnsNames, items: { ...text(L.dnsName), minLength: 1 } },
    issuer: nullableText(L.dn),
    issuerRef: {
      type: 'object',
      additionalProperties: false,
      required: ['name'],
      properties: { name: { ...text(L.name), minLength: 1 }, kind: text(L.issuerKind), group: text(L.name) },
    },
    ready: {
      type: 'object',
      additionalProperties: false,
      required: ['status'],
      properties: { status: { type: 'string', enum: ['True', 'False', 'Unknown'] }, reason: text(L.readyReason) },
    },
    applicationIds: { type: 'array', maxItems: L.applicationIds, items: { ...text(L.applicationId), minLength: 1 } },
    labels: {
      type: 'object',
      maxProperties: L.labels,
      propertyNames: { maxLength: L.labelKey, minLength: 1 },
      additionalProperties: text(L.labelValue),
    },
    chainNotAfter: time,
    // per-resource policy (docs/annotations.md): the agent parsed the annotations; the hub checks again
    ignore: { type: 'boolean' },
    expiryThresholds: {
      type: 'array',
      minItems: 1,
      maxItems: L.expiryThresholds,
      uniqueItems: true,
      // whole days, or a whole percent of the lifetime in its canonical form (src/model/expiry-thresholds.ts):
      // the bounds apply to numbers, the pattern to strings (one error per bad entry)
      items: { type: ['integer', 'string'], minimum: 1, maximum: L.expiryThresholdDays, pattern: '^[1-9][0-9]?%$' },
    },
    // the format checks the length first (one message, not two)
    runbookUrl: { type: 'string', format: 'runbook-url' },
    // served truth (docs/serving.md): absent from agents that do not probe
    serving: { type: 'array', maxItems: SERVING_LIMITS.endpoints, items: servingEndpoint },
  },
};

const REPORT_SCHEMA: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['protocol', 'cluster', 'agentVersion', 'epoch', 'seq', 'kind', 'upserts', 'deletes'],
  properties: {
    protocol: { const: INVENTORY_PROTOCOL },
    cluster: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'name'],
      properties: { id: uuid, name: { ...text(L.name), minLength: 1 } },
    },
    agentVersion: { ...text(L.agentVersion), minLength: 1 },
    epoch: uuid,
    seq: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    kind: { type: 'string', enum: ['snapshot', 'delta'] },
    final: { type: 'boolean' },
    upserts: { type: 'array', maxItems: MAX_INVENTORY_ITEMS_PER_REPORT, items: facts },
    deletes: {
      type: 'array',
      maxItems: MAX_INVENTORY_ITEMS_PER_REPORT,
      items: { type: 'object', additionalProperties: false, required: ['namespace', 'secretName'], properties: location },
    },
  },
};

const lengthProblem = (v: string, max: number) => (codePointLength(v) > max ? `must be at most ${max} characters` : undefined);

const FORMATS: FormatProblems = {
  uuid: uuidProblem,
  'utc-date-time': (v) => timestampProblem(v, 'utc'),
  'runbook-url': runbookUrlProblem,
  'serving-host': (v) => lengthProblem(v, SERVING_LIMITS.host) ?? servingHostProblem(v),
  'serving-address': (v) => lengthProblem(v, SERVING_LIMITS.address) ?? servingAddressProblem(v),
};

// union types: an expiry threshold is an integer (days) or a string (a share of the lifetime)
const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
for (const [name, problem] of Object.entries(FORMATS))
  ajv.addFormat(name, { type: 'string', validate: (v: string) => problem(v) === undefined });
const validate = ajv.compile(REPORT_SCHEMA);

export interface InventoryFieldError {
  field: string;
  message: string;
}

export type InventoryValidation = { ok: true; report: InventoryReport } | { ok: false; errors: InventoryFieldError[] };

/** At most this many errors are reported (a hostile body can have millions). */
const MAX_ERRORS = 100;

export function validateInventoryReport(body: unknown): InventoryValidation {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { ok: false, errors: [{ field: '', message: 'the body must be an inventory report object' }] };
  if (!validate(body)) {
    const errs = (validate.errors ?? []).filter((e) => e.keyword !== 'propertyNames'); // its inner error names the key
    return { ok: false, errors: errs.slice(0, MAX_ERRORS).map((e) => toFieldError(e, body)) };
  }
  const report = body as InventoryReport;
  const errors: InventoryFieldError[] = [];
  // text: every string, wherever it is (no field forgotten): single-line, no controls or invisible characters
  const walk = (v: unknown, path: string): void => {
    if (errors.length >= MAX_ERRORS) return;
    if (typeof v === 'string') {
      const p = textProblem(v, 'name');
      if (p) errors.push({ field: path, message: `${path} ${p}` });
    } else if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (typeof v === 'object' && v !== null)
      for (const [k, x] of Object.entries(v)) {
        const at = joinFieldPath(path, k);
        const kp = textProblem(k, 'name');
        if (kp) errors.push({ field: at, message: `${at}: the key ${kp}` });
        walk(x, at);
      }
  };
  walk(report, '');
  const items = report.upserts.length + report.deletes.length;
  if (items > MAX_INVENTORY_ITEMS_PER_REPORT)
    errors.push({
      field: '',
      message: `a report carries at most ${MAX_INVENTORY_ITEMS_PER_REPORT} upserts and deletes together, got ${items}: send several reports`,
    });
  if (report.final !== undefined && report.kind !== 'snapshot')
    errors.push({ field: 'final', message: 'final is only allowed on snapshot reports' });
  // one location once per report: the multi-row upsert must not meet the same row twice
  const seen = new Map<string, string>();
  const once = (l: { namespace: string; secretName: string }, at: string) => {
    const k = `${l.namespace}/${l.secretName}`;
    const before = seen.get(k);
    if (before !== undefined) errors.push({ field: at, message: `${at}: ${k} appears twice in the report (also ${before})` });
    else seen.set(k, at);
  };
  report.upserts.forEach((u, i) => once(u, `upserts[${i}]`));
  report.upserts.forEach((u, i) =>
    u.serving?.forEach((e, j) => {
      for (const p of servingEndpointProblems(e)) {
        const at = `upserts[${i}].serving[${j}].${p.field}`;
        errors.push({ field: at, message: `${at} ${p.message}` });
      }
    }),
  );
  report.deletes.forEach((d, i) => once(d, `deletes[${i}]`));
  if (errors.length) return { ok: false, errors: errors.slice(0, MAX_ERRORS) };
  return {
    ok: true,
    report: {
      ...report,
      cluster: { ...report.cluster, id: report.cluster.id.toLowerCase() },
      epoch: report.epoch.toLowerCase(),
      upserts: report.upserts.map((u) => (u.certificateUid ? { ...u, certificateUid: u.certificateUid.toLowerCase() } : u)),
    },
  };
}

function toFieldError(err: ErrorObject, body: object): InventoryFieldError {
  let { path: field, message } = ajvFieldError(err, body, pointerToPath(err.instancePath), FORMATS);
  const shared = err.keyword === 'required' || err.keyword === 'additionalProperties' || err.keyword === 'format';
  if (!shared && err.propertyName !== undefined) {
    // a label key's own problem (propertyNames): name the key
    field = joinFieldPath(field, err.propertyName);
    message = `key ${message}`;
  } else if (err.keyword === 'const') {
    message = `must be ${INVENTORY_PROTOCOL} (the inventory protocol version this hub speaks)`;
  }
  return { field, message: `${field || 'report'} ${message}` };
}

/** `/upserts/3/notAfter` → `upserts[3].notAfter`. Numeric segments are indexes except under `labels`. */
function pointerToPath(pointer: string): string {
  let path = '';
  let parent = '';
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    path = /^[0-9]+$/.test(segment) && parent !== 'labels' ? `${path}[${segment}]` : joinFieldPath(path, segment);
    parent = segment;
  }
  return path;
}
