/**
 * Makes event data built from sources we do not control (cluster objects, certificates, annotations) fit the
 * event schema (schemas.ts) instead of being refused: an alert that is refused is never sent, so a
 * Certificate with 4,000 dnsNames or a soft hyphen in its subject would otherwise fail silently.
 * Pure; driven by EVENT_DATA_SCHEMAS so a new field is covered without touching this file.
 *
 * - Lists longer than their `maxItems` keep their first N entries; the event's free-text field
 *   (`statusMessage` / `message`) ends with a note saying which list was cut and from how many entries
 *   (the schemas are closed: there is no other place for a count).
 * - Strings longer than their `maxLength` (in code points) are cut on a code-point boundary and end with
 *   `…` (U+2026) when at least two code points fit.
 * - Characters the text rules refuse (src/validation/formats.ts: controls, format characters such as the
 *   soft hyphen or bidi overrides, lone surrogates, noncharacters; free text keeps tab/LF/CR) become U+FFFD.
 * - Formatted strings (UUIDs, timestamps, durations) and numbers are left alone: the emitter produces those
 *   itself (see isoUtc / unhealthyDurationOf in src/events/wire-formats.ts).
 */
import type { SchemaObject } from 'ajv';
import { codePointLength, cutToCodePoints, replaceForbiddenText } from '../validation/formats.js';
import type { EventType, InternalEvent } from './families.js';
import { joinFieldPath } from './field-tree.js';
import { EVENT_DATA_SCHEMAS, FREE_TEXT_FIELDS } from './schemas.js';

export const ELLIPSIS = '\u2026';

/** What sanitizing changed (for logs and tests; no values). */
export interface SanitizeChange {
  /** CEL-like path, e.g. `data.SANs['DNS Names']`, `data.subject.commonName` */
  path: string;
  kind: 'list-truncated' | 'string-cut' | 'characters-replaced';
  /** list-truncated: entries kept and entries there were */
  kept?: number;
  total?: number;
}

export interface Sanitized {
  data: Record<string, unknown>;
  changes: SanitizeChange[];
}

/** One string of the given kind and limit made valid; reports what changed. */
export function sanitizeText(
  s: string,
  kind: 'name' | 'text',
  max: number | undefined,
): { value: string; cut: boolean; replaced: boolean } {
  const cutValue = max === undefined ? s : cutToCodePoints(s, max);
  const value = replaceForbiddenText(cutValue, kind);
  return { value, cut: cutValue !== s, replaced: value !== cutValue };
}

function walk(schema: SchemaObject | undefined, v: unknown, path: string, changes: SanitizeChange[]): unknown {
  if (!schema) return v;
  if (schema.type === 'string' && typeof v === 'string' && schema.format === undefined) {
    const r = sanitizeText(v, FREE_TEXT_FIELDS.has(path) ? 'text' : 'name', schema.maxLength as number | undefined);
    if (r.cut) changes.push({ path, kind: 'string-cut' });
    if (r.replaced) changes.push({ path, kind: 'characters-replaced' });
    return r.value;
  }
  if (schema.type === 'array' && Array.isArray(v)) {
    const max = schema.maxItems as number | undefined;
    const kept = max !== undefined && v.length > max ? v.slice(0, max) : v;
    if (kept !== v) changes.push({ path, kind: 'list-truncated', kept: kept.length, total: v.length });
    return kept.map((x, i) => walk(schema.items as SchemaObject | undefined, x, `${path}[${i}]`, changes));
  }
  if (schema.type === 'object' && typeof v === 'object' && v !== null && !Array.isArray(v)) {
    const props = (schema.properties ?? {}) as Record<string, SchemaObject>;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v))
      out[k] = walk(Object.hasOwn(props, k) ? props[k] : undefined, x, joinFieldPath(path, k), changes);
    return out;
  }
  return v;
}

/** The note appended to the free-text field when lists were cut. */
function truncationNote(changes: readonly SanitizeChange[]): string {
  const lists = changes.filter((c) => c.kind === 'list-truncated');
  if (!lists.length) return '';
  return `[certmgr-notify: ${lists.map((c) => `${c.path} has only the first ${c.kept} of ${c.total} entries`).join('; ')}]`;
}

/** `data` of an event of `type` made valid for its schema (see the file comment). */
export function sanitizeEventData(type: EventType, data: Record<string, unknown>): Sanitized {
  const schema = EVENT_DATA_SCHEMAS[type];
  const changes: SanitizeChange[] = [];
  const out = walk(schema, data, 'data', changes) as Record<string, unknown>;
  const note = truncationNote(changes);
  if (note) {
    const props = (schema.properties ?? {}) as Record<string, SchemaObject>;
    const key = Object.keys(props).find((k) => FREE_TEXT_FIELDS.has(joinFieldPath('data', k)));
    const current = key !== undefined ? out[key] : undefined;
    if (key !== undefined && typeof current === 'string') {
      const max = props[key]!.maxLength as number;
      const suffix = current ? ` ${note}` : note;
      // the note is ours and short; the message gives up room for it (cut with an ellipsis when needed)
      const kept = cutToCodePoints(current, Math.max(0, max - codePointLength(suffix)));
      const path = joinFieldPath('data', key);
      if (kept !== current && !changes.some((c) => c.path === path && c.kind === 'string-cut')) changes.push({ path, kind: 'string-cut' });
      out[key] = kept + suffix;
    }
  }
  return { data: out, changes };
}

/** The event with sanitized data. */
export function sanitizeEvent(e: InternalEvent): InternalEvent {
  return { type: e.type, data: sanitizeEventData(e.type, e.data).data };
}
