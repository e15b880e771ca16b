/**
 * AdmissionReview (admission.k8s.io v1 and v1beta1) → response, as a pure function.
 *
 * What is checked (CREATE and UPDATE of our four kinds; everything else is allowed):
 * - NotificationRouter: the kind's ajv validator on `spec`, then the CEL filter is compiled for its event
 *   family (`validateFilter`); a compile error denies with `spec.filter: line L, column C: <reason>`, the same
 *   text the reconciler puts in the InvalidFilter condition.
 * - NotificationProvider: the ajv validator (type ↔ settings block, with one clear message instead of the
 *   `oneOf` branch noise); settings blocks of other types only warn (the reconciler ignores them).
 * - MonitoringConfig: the ajv validator (at most 3 distinct thresholds, ranges); a name other than `default`
 *   only warns (the object is accepted and reports Ignored).
 * - NotificationTemplate: the ajv validator, then every Liquid part is compiled as the service does; a part
 *   that does not compile denies with `spec.parts.<TYPE>.<field>: line L, column C: <reason>`.
 * - NotificationSilence: the ajv validator, endsAt after startsAt, then the matcher is compiled like the service
 *   does (its family, or every family it compiles for); an error denies with `spec.matcher: line L, column C: …`.
 *
 * An UPDATE that leaves `spec` unchanged (finalizers, labels, annotations, a deletion in progress) is always
 * allowed: an object stored before the webhook existed, or under older filter rules, must stay deletable and
 * the operator must be able to add and remove its finalizer.
 *
 * Messages carry field paths and compile errors only — never values read from Secrets (routers and
 * monitoring configs hold none; providers hold only Secret references).
 */
import { isDeepStrictEqual } from 'node:util';
import {
  GROUP,
  MONITORING_CONFIG_NAME,
  PROVIDER_SETTINGS_FIELD,
  PROVIDER_TYPES,
  VERSION,
  validateMonitoringSpec,
  validateProviderSpec,
  validateRouterSpec,
  validateSilenceSpec,
  validateTemplateSpec,
  type ProviderType,
} from '../api/index.js';
import { FilterCompileError, validateFilter } from '../cel/index.js';
import { compileMatcher } from '../silences/decide.js';
import { ServiceError } from '../model/errors.js';
import { requireParts } from '../service/templates.js';

export const ADMISSION_V1 = 'admission.k8s.io/v1';
export const ADMISSION_V1BETA1 = 'admission.k8s.io/v1beta1';
export type AdmissionApiVersion = typeof ADMISSION_V1 | typeof ADMISSION_V1BETA1;

/** The parts of an AdmissionRequest this webhook reads. */
export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  operation: string;
  name?: string | undefined;
  namespace?: string | undefined;
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  /** Set when denied: `code` 400 and the reason(s), `; `-separated. */
  status?: { code: number; reason: string; message: string };
  /** Shown by kubectl as `Warning: …` (apiserver 1.19+; older ones drop the field). */
  warnings?: string[];
}

export interface AdmissionReviewResponse {
  apiVersion: AdmissionApiVersion;
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

/** The decision for one request, before it is wrapped into a response. */
export interface AdmissionDecision {
  allowed: boolean;
  /** Why it was denied (joined into `status.message`). */
  errors: string[];
  warnings: string[];
  /** For logs and metrics: which kind was checked, or `other`. */
  checked: 'NotificationRouter' | 'NotificationProvider' | 'MonitoringConfig' | 'NotificationTemplate' | 'NotificationSilence' | 'other';
}

/** The body is not an AdmissionReview this webhook can answer (HTTP 400; the apiserver applies failurePolicy). */
export class BadAdmissionReviewError extends Error {
  override readonly name = 'BadAdmissionReviewError';
}

/** Longest `status.message` sent back (the apiserver shows it verbatim; keep it readable). */
const MAX_MESSAGE_LENGTH = 4000;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses and answers one AdmissionReview. Throws BadAdmissionReviewError for a malformed review. */
export function reviewAdmission(body: unknown): AdmissionReviewResponse {
  const request = parseAdmissionReview(body);
  const decision = decideAdmission(request.request);
  return { apiVersion: request.apiVersion, kind: 'AdmissionReview', response: toResponse(request.request.uid, decision) };
}

export function parseAdmissionReview(body: unknown): { apiVersion: AdmissionApiVersion; request: AdmissionRequest } {
  if (!isObject(body)) throw new BadAdmissionReviewError('body is not a JSON object');
  const apiVersion = body['apiVersion'];
  if (apiVersion !== ADMISSION_V1 && apiVersion !== ADMISSION_V1BETA1) {
    throw new BadAdmissionReviewError(`apiVersion must be ${ADMISSION_V1} or ${ADMISSION_V1BETA1}`);
  }
  if (body['kind'] !== 'AdmissionReview') throw new BadAdmissionReviewError('kind must be AdmissionReview');
  const req = body['request'];
  if (!isObject(req)) throw new BadAdmissionReviewError('request is missing');
  const uid = req['uid'];
  if (typeof uid !== 'string' || uid === '') throw new BadAdmissionReviewError('request.uid is missing');
  const kind = req['kind'];
  if (!isObject(kind) || typeof kind['kind'] !== 'string') throw new BadAdmissionReviewError('request.kind is missing');
  const operation = req['operation'];
  if (typeof operation !== 'string') throw new BadAdmissionReviewError('request.operation is missing');
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  return {
    apiVersion,
    request: {
      uid,
      kind: { group: str(kind['group']) ?? '', version: str(kind['version']) ?? '', kind: kind['kind'] },
      operation,
      name: str(req['name']),
      namespace: str(req['namespace']),
      object: req['object'],
      oldObject: req['oldObject'],
      dryRun: req['dryRun'] === true,
    },
  };
}

export function toResponse(uid: string, d: AdmissionDecision): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: d.allowed };
  if (!d.allowed) {
    let message = d.errors.join('; ') || 'denied';
    if (message.length > MAX_MESSAGE_LENGTH) message = `${message.slice(0, MAX_MESSAGE_LENGTH - 1)}…`;
    response.status = { code: 400, reason: 'BadRequest', message };
  }
  if (d.warnings.length) response.warnings = d.warnings;
  return response;
}

const allow = (checked: AdmissionDecision['checked'], warnings: string[] = []): AdmissionDecision => ({
  allowed: true,
  errors: [],
  warnings,
  checked,
});
const deny = (checked: AdmissionDecision['checked'], errors: string[], warnings: string[] = []): AdmissionDecision => ({
  allowed: false,
  errors,
  warnings,
  checked,
});

/** The decision for one request (no I/O). */
export function decideAdmission(req: AdmissionRequest): AdmissionDecision {
  if (req.kind.group !== GROUP || req.kind.version !== VERSION) return allow('other');
  const kind = req.kind.kind;
  if (
    kind !== 'NotificationRouter' &&
    kind !== 'NotificationProvider' &&
    kind !== 'MonitoringConfig' &&
    kind !== 'NotificationTemplate' &&
    kind !== 'NotificationSilence'
  )
    return allow('other');
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return allow(kind);

  const obj = isObject(req.object) ? req.object : {};
  const spec = obj['spec'];
  if (req.operation === 'UPDATE') {
    const old = isObject(req.oldObject) ? req.oldObject : undefined;
    if (old && isDeepStrictEqual(old['spec'], spec)) return allow(kind);
    const meta = isObject(obj['metadata']) ? obj['metadata'] : {};
    if (meta['deletionTimestamp']) return allow(kind);
  }

  switch (kind) {
    case 'NotificationRouter':
      return checkRouter(spec);
    case 'NotificationProvider':
      return checkProvider(spec);
    case 'MonitoringConfig':
      return checkMonitoringConfig(spec, nameOf(obj) ?? req.name);
    case 'NotificationTemplate':
      return checkTemplate(spec);
    case 'NotificationSilence':
      return checkSilence(spec);
  }
}

/** The schema, then every part compiled as the service will: `spec.parts.SLACK.text: line L, column C: reason`. */
function checkTemplate(spec: unknown): AdmissionDecision {
  const v = validateTemplateSpec(spec);
  if (!v.ok) return deny('NotificationTemplate', v.errors);
  try {
    requireParts('spec.parts', v.value.parts);
  } catch (e) {
    if (e instanceof ServiceError) return deny('NotificationTemplate', [e.message]);
    throw e;
  }
  return allow('NotificationTemplate');
}

function checkSilence(spec: unknown): AdmissionDecision {
  const v = validateSilenceSpec(spec);
  if (!v.ok) return deny('NotificationSilence', v.errors);
  const { startsAt, endsAt, matcher, eventTypeId } = v.value;
  if (startsAt !== undefined && Date.parse(endsAt) <= Date.parse(startsAt))
    return deny('NotificationSilence', ['spec.endsAt: must be after spec.startsAt']);
  try {
    compileMatcher(matcher, eventTypeId ?? null);
  } catch (e) {
    if (!(e instanceof FilterCompileError)) throw e;
    const where = eventTypeId === undefined ? ' (for every event family: set spec.eventTypeId to check against one)' : '';
    return deny('NotificationSilence', [`spec.matcher: line ${e.line}, column ${e.column}: ${e.reason}${where}`]);
  }
  return allow('NotificationSilence');
}

function nameOf(obj: Record<string, unknown>): string | undefined {
  const meta = obj['metadata'];
  return isObject(meta) && typeof meta['name'] === 'string' && meta['name'] !== '' ? meta['name'] : undefined;
}

/** `spec.filter: line L, column C: <reason>` (the reconciler's InvalidFilter message) or undefined. */
function filterError(filter: string, eventTypeId: Parameters<typeof validateFilter>[1]): string | undefined {
  const v = validateFilter(filter, eventTypeId);
  if (v.ok) return undefined;
  const reason = v.message.replace(/^\d+:\d+:\s*/, '');
  return `spec.filter: line ${v.line}, column ${v.column}: ${reason}`;
}

function checkRouter(spec: unknown): AdmissionDecision {
  const v = validateRouterSpec(spec);
  if (!v.ok) return deny('NotificationRouter', v.errors);
  const filter = v.value.filter;
  if (filter === undefined || filter.trim() === '') return allow('NotificationRouter');
  const err = filterError(filter, v.value.eventTypeId);
  return err ? deny('NotificationRouter', [err]) : allow('NotificationRouter');
}

const SETTINGS_FIELDS = new Set<string>(Object.values(PROVIDER_SETTINGS_FIELD));
const isProviderType = (t: unknown): t is ProviderType => typeof t === 'string' && (PROVIDER_TYPES as readonly string[]).includes(t);

function checkProvider(spec: unknown): AdmissionDecision {
  const s = isObject(spec) ? spec : {};
  const type = s['type'];
  const errors: string[] = [];
  const warnings: string[] = [];
  const v = validateProviderSpec(spec);
  if (isProviderType(type)) {
    const field = PROVIDER_SETTINGS_FIELD[type];
    if (s[field] === undefined || s[field] === null) errors.push(`spec.${field}: required when spec.type is ${type}`);
    for (const other of SETTINGS_FIELDS) {
      if (other !== field && s[other] !== undefined && s[other] !== null) warnings.push(`spec.${other} is ignored: spec.type is ${type}`);
    }
  }
  if (!v.ok) {
    // the CRD's oneOf reports every branch; with a known type the single message above says it better
    for (const e of v.errors) if (!(isProviderType(type) && isOneOfNoise(e))) errors.push(e);
  }
  const unique = [...new Set(errors)];
  return unique.length ? deny('NotificationProvider', unique, warnings) : allow('NotificationProvider', warnings);
}

function isOneOfNoise(message: string): boolean {
  if (message === 'spec: must match exactly one schema in oneOf') return true;
  const required = /^spec: must have required property '([A-Za-z]+)'$/.exec(message);
  if (required?.[1] && SETTINGS_FIELDS.has(required[1])) return true;
  const single = /^spec\.type: must be one of ([A-Za-z]+)$/.exec(message);
  return Boolean(single?.[1] && isProviderType(single[1]));
}

function checkMonitoringConfig(spec: unknown, name: string | undefined): AdmissionDecision {
  const warnings =
    name !== undefined && name !== MONITORING_CONFIG_NAME
      ? [`MonitoringConfig ${JSON.stringify(name)} is ignored: only the one named ${JSON.stringify(MONITORING_CONFIG_NAME)} is applied`]
      : [];
  const v = validateMonitoringSpec(spec);
  return v.ok ? allow('MonitoringConfig', warnings) : deny('MonitoringConfig', v.errors, warnings);
}
