/**
 * ajv validators compiled from the same schema objects the CRDs are generated from. The apiserver already
 * enforces these (except what v1.20 cannot express); the reconcilers re-check every spec so an old or
 * hand-edited CRD cannot push invalid data into the service.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Schema } from './schema.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** An ajv instance that understands the Kubernetes structural-schema extensions. */
function createKubeAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
  addFormats(ajv);
  for (const keyword of [
    'x-kubernetes-preserve-unknown-fields',
    'x-kubernetes-list-map-keys',
    'x-kubernetes-map-type',
    'x-kubernetes-validations',
    'x-kubernetes-int-or-string',
    'x-kubernetes-embedded-resource',
  ]) {
    ajv.addKeyword({ keyword });
  }
  // list-type `set` means distinct items (the apiserver rejects duplicates); `map` means distinct map keys.
  ajv.addKeyword({
    keyword: 'x-kubernetes-list-type',
    type: 'array',
    schemaType: 'string',
    validate: function listType(schemaValue: string, data: unknown[], parentSchema?: Record<string, unknown>) {
      let keyOf: (v: unknown) => string;
      if (schemaValue === 'set') keyOf = (v) => JSON.stringify(v);
      else if (schemaValue === 'map') {
        const keys = (parentSchema?.['x-kubernetes-list-map-keys'] as string[] | undefined) ?? [];
        keyOf = (v) => JSON.stringify(keys.map((k) => (v as Record<string, unknown> | null)?.[k]));
      } else return true;
      const seen = new Set<string>();
      for (const item of data) {
        const k = keyOf(item);
        if (seen.has(k)) {
          (listType as unknown as { errors: Partial<ErrorObject>[] }).errors = [
            { keyword: 'x-kubernetes-list-type', message: `must not contain duplicate items (list-type ${schemaValue})`, params: {} },
          ];
          return false;
        }
        seen.add(k);
      }
      return true;
    },
  });
  return ajv;
}

let shared: Ajv | undefined;
const compiled = new WeakMap<Schema, ValidateFunction>();

export type Validation<T> = { ok: true; value: T } | { ok: false; errors: string[] };

/** `spec.thresholds[1]: must be <= 3650`-style messages. */
function formatAjvErrors(errors: readonly ErrorObject[] | null | undefined, root = 'spec'): string[] {
  const out: string[] = [];
  for (const e of errors ?? []) {
    // oneOf branch failures repeat as "must match exactly one schema"; the branch errors say more
    if (e.keyword === 'if') continue;
    const path = e.instancePath
      .split('/')
      .slice(1)
      .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p.replace(/~1/g, '/').replace(/~0/g, '~')}`))
      .join('');
    let msg = e.message ?? 'is invalid';
    if (e.keyword === 'required')
      msg = `must have required property '${String((e.params as { missingProperty?: string }).missingProperty)}'`;
    if (e.keyword === 'enum')
      msg = `must be one of ${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map(String).join(', ')}`;
    out.push(`${root}${path}: ${msg}`);
  }
  return [...new Set(out)];
}

/**
 * Validates `value` against `schema` (a CRD spec schema), applying defaults to a copy.
 * Returns the defaulted copy or every error.
 */
export function validateAgainst<T>(schema: Schema, value: unknown, root = 'spec'): Validation<T> {
  shared ??= createKubeAjv();
  let fn = compiled.get(schema);
  if (!fn) {
    fn = shared.compile(schema as object);
    compiled.set(schema, fn);
  }
  const copy = value === undefined ? {} : structuredClone(value);
  if (fn(copy)) return { ok: true, value: copy as T };
  return { ok: false, errors: formatAjvErrors(fn.errors, root) };
}
