/**
 * The CERTIFICATE_EXPIRATION inventory monitoring configuration's use cases: validation of a PUT, the response
 * shape, get and put. The pure rules (defaults, limits, ruleIds, isMonitored) are in src/model/monitoring.ts.
 */
import {
  MAX_APPLICATION_ID_CHARS,
  MAX_APPLICATION_IDS,
  MAX_THRESHOLD_DAYS,
  MAX_THRESHOLDS,
  MONITORING_TYPE,
  defaultMonitoringConfig,
  monitoringConfigId,
  rulesOf,
} from '../model/monitoring.js';
import type { MonitoringConfigInput } from '../model/monitoring.js';
import { decideMonitoringWrite, describeManager } from '../model/manager.js';
import type { MonitoringConfigRecord } from '../model/records.js';
import type { ServiceContext } from './context.js';
import { textProblem } from '../validation/formats.js';
import { ServiceError, ValidationErrors, type FieldError } from '../model/errors.js';

export { MONITORING_TYPE };
export type { MonitoringConfigInput };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
/** A short rendering of a rejected value for messages: never the whole (possibly huge or deeply nested) input. */
const preview = (v: unknown): string => {
  if (typeof v === 'string') return JSON.stringify(v.length > 64 ? v.slice(0, 64) + '…' : v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  return typeName(v);
};

/**
 * Validates a PUT body `{ inventoryMonitoringConfiguration: {...} }`; throws ValidationErrors naming every bad field.
 * `rules` (read-only, returned by GET) is tolerated and ignored so a GET body can be sent back.
 */
export function parseMonitoringPut(body: unknown): MonitoringConfigInput {
  const P = 'inventoryMonitoringConfiguration';
  const errs: FieldError[] = [];
  const bad = (field: string, message: string) => errs.push({ code: 'BAD_USER_INPUT', field, message });
  if (!isObject(body))
    throw new ValidationErrors([{ code: 'BAD_USER_INPUT', field: '', message: `body must be a JSON object, got ${typeName(body)}` }]);
  for (const k of Object.keys(body)) if (k !== P) bad(k.slice(0, 64), `unknown field ${preview(k)}; the body is { ${P}: {...} }`);
  const c = body[P];
  if (c === undefined) bad(P, 'is required');
  else if (!isObject(c)) bad(P, `must be an object, got ${typeName(c)}`);
  if (!isObject(c)) throw new ValidationErrors(errs);

  const known = [
    'inventoryMonitoringConfigurationType',
    'enabled',
    'thresholds',
    'applicationIds',
    'includeUnassignedCertificates',
    'rules',
  ];
  for (const k of Object.keys(c)) if (!known.includes(k)) bad(`${P}.${k.slice(0, 64)}`, `unknown field ${preview(k)}`);

  const t = c.inventoryMonitoringConfigurationType;
  if (t === undefined) bad(`${P}.inventoryMonitoringConfigurationType`, 'is required');
  else if (t !== MONITORING_TYPE) bad(`${P}.inventoryMonitoringConfigurationType`, `must be '${MONITORING_TYPE}', got ${preview(t)}`);

  for (const f of ['enabled', 'includeUnassignedCertificates'] as const) {
    const v = c[f];
    if (v === undefined) bad(`${P}.${f}`, 'is required');
    else if (typeof v !== 'boolean') bad(`${P}.${f}`, `must be a boolean, got ${typeName(v)}`);
  }

  const th = c.thresholds;
  if (th === undefined) bad(`${P}.thresholds`, 'is required');
  else if (!Array.isArray(th)) bad(`${P}.thresholds`, `must be an array of integers, got ${typeName(th)}`);
  else {
    if (th.length > MAX_THRESHOLDS) bad(`${P}.thresholds`, `at most ${MAX_THRESHOLDS} thresholds are allowed, got ${th.length}`);
    const seen = new Set<number>();
    th.forEach((v, i) => {
      const f = `${P}.thresholds[${i}]`;
      if (typeof v !== 'number' || !Number.isInteger(v)) bad(f, `must be an integer number of days, got ${preview(v)}`);
      else if (v <= 0) bad(f, `must be greater than 0, got ${v}`);
      else if (v > MAX_THRESHOLD_DAYS) bad(f, `must be at most ${MAX_THRESHOLD_DAYS} days, got ${v}`);
      else if (seen.has(v)) bad(f, `duplicate threshold ${v}`);
      else seen.add(v);
    });
  }

  const apps = c.applicationIds;
  if (apps === undefined) bad(`${P}.applicationIds`, 'is required');
  else if (!Array.isArray(apps)) bad(`${P}.applicationIds`, `must be an array of strings, got ${typeName(apps)}`);
  else {
    if (apps.length > MAX_APPLICATION_IDS) bad(`${P}.applicationIds`, `at most ${MAX_APPLICATION_IDS} application ids are allowed`);
    const seen = new Set<string>();
    apps.forEach((v, i) => {
      const f = `${P}.applicationIds[${i}]`;
      const problem = typeof v === 'string' ? textProblem(v, 'name', MAX_APPLICATION_ID_CHARS) : undefined;
      if (typeof v !== 'string' || v.trim() === '') bad(f, `must be a non-empty string, got ${preview(v)}`);
      else if (problem) bad(f, problem);
      else if (seen.has(v)) bad(f, `duplicate application id ${preview(v)}`);
      else seen.add(v);
    });
  }
  if (c.rules !== undefined && !Array.isArray(c.rules)) bad(`${P}.rules`, 'is read-only; send it back as returned by GET or leave it out');
  if (errs.length) throw new ValidationErrors(errs);
  return {
    enabled: c.enabled as boolean,
    thresholds: th as number[],
    applicationIds: apps as string[],
    includeUnassignedCertificates: c.includeUnassignedCertificates as boolean,
  };
}

export function monitoringResponse(rec: MonitoringConfigRecord) {
  return {
    id: rec.id,
    companyId: rec.companyId,
    configuration: {
      inventoryMonitoringConfigurationType: MONITORING_TYPE,
      enabled: rec.enabled,
      thresholds: rec.thresholds,
      applicationIds: rec.applicationIds,
      includeUnassignedCertificates: rec.includeUnassignedCertificates,
      rules: rulesOf(rec.thresholds),
    },
  };
}

export async function getMonitoringConfig(ctx: ServiceContext): Promise<MonitoringConfigRecord> {
  return (await ctx.store.getMonitoringConfig(ctx.companyId)) ?? defaultMonitoringConfig(ctx.companyId);
}

/**
 * Writes the configuration under the ownership rule (src/model/manager.ts): `writer` is the request's manager
 * (undefined: a plain API write, which takes the record over); `release`: the manager gives the record up.
 * A write by another manager throws CONFLICT naming the current one and changes nothing.
 */
export async function putMonitoringConfig(
  ctx: ServiceContext,
  input: MonitoringConfigInput,
  writer?: string,
  release = false,
): Promise<MonitoringConfigRecord> {
  // compare-and-set: a concurrent write that changed the manager first makes us decide again (twice is enough:
  // the second read sees that write's manager)
  for (let attempt = 0; ; attempt++) {
    const current = (await ctx.store.getMonitoringConfig(ctx.companyId))?.manager ?? null;
    const d = decideMonitoringWrite(current, writer, release);
    if (!d.ok) {
      throw new ServiceError('CONFLICT', `the monitoring configuration is managed by ${describeManager(d.current)}`, undefined, {
        manager: d.current,
      });
    }
    const rec = await ctx.store.putMonitoringConfigIf(
      {
        ...input,
        id: monitoringConfigId(ctx.companyId),
        companyId: ctx.companyId,
        updatedAt: ctx.now(),
        manager: d.manager ?? undefined,
      },
      current,
    );
    if (rec) {
      ctx.onChange?.('monitoring', ctx.companyId);
      return rec;
    }
    if (attempt >= 2) throw new ServiceError('CONFLICT', 'the monitoring configuration changed concurrently; retry');
  }
}
