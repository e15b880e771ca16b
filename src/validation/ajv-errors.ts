/**
 * One reading of ajv's errors for every JSON-schema-validated input (events, inventory reports): the field a
 * problem belongs to and a message that names it, the same wording wherever a body is refused.
 */
import type { ErrorObject } from 'ajv';
import { joinFieldPath } from '../events/field-tree.js';

/** The problem of a value in a custom format; ajv only learns yes/no, the message is recomputed from this. */
export type FormatProblems = Readonly<Record<string, (v: string) => string | undefined>>;

/** The value at a JSON pointer (`/upserts/3/notAfter`), undefined where the path does not exist. */
function valueAt(data: unknown, pointer: string): unknown {
  let v: unknown = data;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    v = typeof v === 'object' && v !== null && Object.hasOwn(v, key) ? (v as Record<string, unknown>)[key] : undefined;
  }
  return v;
}

/**
 * The field and message of the keywords every schema shares: a missing or unknown member is named itself (not
 * its parent), a bad format says what is wrong with the value. Other keywords keep ajv's message at `path`.
 */
export function ajvFieldError(err: ErrorObject, data: unknown, path: string, formats: FormatProblems): { path: string; message: string } {
  const params = err.params as Record<string, unknown>;
  if (err.keyword === 'required' && typeof params.missingProperty === 'string')
    return { path: joinFieldPath(path, params.missingProperty), message: 'is required' };
  if (err.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string')
    return { path: joinFieldPath(path, params.additionalProperty), message: 'is not an allowed field' };
  const message = err.message ?? 'is invalid';
  if (err.keyword === 'format') {
    const v = valueAt(data, err.instancePath);
    const problem = formats[String(params.format)];
    if (problem && typeof v === 'string') return { path, message: problem(v) ?? message };
  }
  return { path, message };
}
