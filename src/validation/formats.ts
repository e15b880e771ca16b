/**
 * The strict formats every input is checked against (docs/security.md#validation). Pure functions: each
 * returns `undefined` when the value is acceptable, or a message saying what is wrong (without the field
 * name: the caller adds where). Shared by event validation, the GraphQL UUID scalar, the REST monitoring
 * configuration and the name checks of routers and integrations, so every entry point agrees.
 */

// ---------------------------------------------------------------------------------------------------------------
// UUIDs

/** Canonical textual form only: 8-4-4-4-12 hex digits (either case). No `urn:uuid:`, no braces, no missing dashes. */
const UUID_SHAPE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';
const MAX_UUID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

export function uuidProblem(v: string): string | undefined {
  if (!UUID_SHAPE.test(v))
    return 'must be a UUID in the canonical 8-4-4-4-12 hex form, e.g. 123e4567-e89b-12d3-a456-426614174000 (no urn:uuid: prefix, no braces)';
  const lower = v.toLowerCase();
  // The nil and max UUIDs (RFC 9562 §5.9, §5.10) are placeholders, never the id of a real resource.
  if (lower === NIL_UUID) return 'must not be the nil UUID';
  if (lower === MAX_UUID) return 'must not be the max UUID';
  return undefined;
}

export const isUuid = (v: unknown): v is string => typeof v === 'string' && uuidProblem(v) === undefined;

// ---------------------------------------------------------------------------------------------------------------
// Timestamps (RFC 3339 profile of ISO 8601, as the spec shows them)

/**
 * `utc`: `2025-03-14T09:26:53Z` or `…53.25Z` (statusTransition: "in UTC with Z").
 * `offset`: the same with `Z` or a numeric offset, `2025-03-18T08:00:00.123+01:00` (notificationDate).
 * Shape is checked loosely first (digits of any count) so the message can say which part is wrong.
 */
const TIMESTAMP_SHAPE = /^(\d+)-(\d+)-(\d+)([^\d])(\d+):(\d+):(\d+)(?:\.(\d*))?(.*)$/s;
const MAX_FRACTION_DIGITS = 9;

export type TimestampZone = 'utc' | 'offset';

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

export function timestampProblem(v: string, zone: TimestampZone): string | undefined {
  const example = zone === 'utc' ? '2025-03-14T09:26:53Z' : '2025-03-18T08:00:00.123+01:00';
  const form = `must be an RFC 3339 timestamp like ${example}`;
  const m = TIMESTAMP_SHAPE.exec(v);
  if (!m) return form;
  const [, y, mo, d, sep, h, mi, s, frac, tz] = m as unknown as string[];
  if (y!.length !== 4 || mo!.length !== 2 || d!.length !== 2 || h!.length !== 2 || mi!.length !== 2 || s!.length !== 2) return form;
  if (sep !== 'T') return `${form}: date and time are separated by an upper-case T, got ${JSON.stringify(sep)}`;
  if (frac !== undefined && (frac.length === 0 || frac.length > MAX_FRACTION_DIGITS))
    return `${form}: fractional seconds have 1 to ${MAX_FRACTION_DIGITS} digits`;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (year === 0) return `${form}: year 0000 is not a valid year`;
  if (month < 1 || month > 12) return `${form}: month ${mo} does not exist`;
  if (day < 1 || day > daysInMonth(year, month)) return `${form}: ${y}-${mo}-${d} is not a calendar date`;
  if (Number(h) > 23) return `${form}: hour ${h} is out of range 00-23`;
  if (Number(mi) > 59) return `${form}: minute ${mi} is out of range 00-59`;
  // Leap seconds (:60) are refused: JavaScript dates, Go's time and Kubernetes cannot represent them.
  if (Number(s) > 59) return `${form}: second ${s} is out of range 00-59 (leap seconds are not accepted)`;
  if (zone === 'utc') {
    if (tz !== 'Z') return `${form}: the time must be in UTC, ending in an upper-case Z`;
    return undefined;
  }
  if (tz === 'Z') return undefined;
  const off = /^([+-])(\d{2}):(\d{2})$/.exec(tz!);
  if (!off) return `${form}: the time must end in Z or a numeric offset ±hh:mm`;
  if (Number(off[2]) > 23 || Number(off[3]) > 59) return `${form}: offset ${tz} is out of range`;
  // RFC 3339 §4.3: -00:00 means "offset unknown", which is not the explicit offset the spec asks for.
  if (tz === '-00:00') return `${form}: offset -00:00 means an unknown offset; use Z or +00:00`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// unhealthyDuration: `<h>h<m>m<s>s`

/**
 * The spec's form `<h>h<m>m<s>s` with fractional seconds: all three components, always in that order
 * (so `90m`, `5m0s` and `1h30m` are refused; `0h5m0s` is the form). Minutes and seconds are 0-59 without
 * leading zeros (no `1h60m60s` overflow), hours have at most 6 digits (≈ 114 years), the fraction 1-9 digits.
 */
const DURATION_SHAPE = /^(\d+)h(\d+)m(\d+)(?:\.(\d*))?s$/;
export const MAX_DURATION_HOUR_DIGITS = 6;
const DURATION_FORM = 'must be a duration of the form <h>h<m>m<s>s, e.g. 1h2m3.5s or 0h5m0s';

export function durationProblem(v: string): string | undefined {
  const m = DURATION_SHAPE.exec(v);
  if (!m) return DURATION_FORM;
  const [, h, mi, s, frac] = m as unknown as string[];
  if (h!.length > MAX_DURATION_HOUR_DIGITS) return `${DURATION_FORM}: hours have at most ${MAX_DURATION_HOUR_DIGITS} digits`;
  const canonical = (x: string) => x === '0' || !x.startsWith('0');
  if (!canonical(h!) || !canonical(mi!) || !canonical(s!)) return `${DURATION_FORM}: no leading zeros`;
  if (Number(mi) > 59) return `${DURATION_FORM}: minutes must be 0-59 (carry whole hours into <h>)`;
  if (Number(s) > 59) return `${DURATION_FORM}: seconds must be 0-59 (carry whole minutes into <m>)`;
  if (frac !== undefined && (frac.length === 0 || frac.length > MAX_FRACTION_DIGITS))
    return `${DURATION_FORM}: fractional seconds have 1 to ${MAX_FRACTION_DIGITS} digits`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Text shown to people: names, application ids, messages

/**
 * `name`: single-line text (names, application ids, reasons, DNS names): no control characters (C0, DEL,
 * C1), no format characters (Unicode category Cf: bidi embeddings/overrides/isolates/marks, zero-width
 * space/joiners, word joiner, BOM, soft hyphen, tags), no line/paragraph separators, no lone surrogates,
 * no noncharacters.
 * `text`: free text (status messages, filter expressions): tab, LF and CR allowed; still no other control
 * characters, no lone surrogates, no noncharacters, and no bidi embedding/override/isolate controls (they
 * reorder what a reader sees: "Trojan Source").
 * `secret`: keys and URLs: no control characters and no lone surrogates (those cannot be stored faithfully);
 * messages never show where in the secret the character is.
 */
export type TextKind = 'name' | 'text' | 'secret';

const FORBIDDEN: Record<TextKind, RegExp> = {
  name: /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Noncharacter_Code_Point}]/u,
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
  text: /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cs}\p{Noncharacter_Code_Point}\u202a-\u202e\u2066-\u2069]/u,
  secret: /[\p{Cc}\p{Cs}]/u,
};

const CHARACTER_NAMES: Readonly<Record<number, string>> = {
  0x00: 'NUL',
  0x09: 'TAB',
  0x0a: 'LINE FEED',
  0x0d: 'CARRIAGE RETURN',
  0x7f: 'DELETE',
  0xad: 'SOFT HYPHEN',
  0x200b: 'ZERO WIDTH SPACE',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x2028: 'LINE SEPARATOR',
  0x2029: 'PARAGRAPH SEPARATOR',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE (BOM)',
};

function describeCodePoint(cp: number): string {
  const hex = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  const name = CHARACTER_NAMES[cp];
  if (name) return `${hex} ${name}`;
  if (cp >= 0xd800 && cp <= 0xdfff) return `${hex} (a lone surrogate: not valid Unicode text)`;
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return `${hex} (a control character)`;
  return `${hex} (an invisible format or non-character)`;
}

/** UTF-16 index just after the first `n` code points of `s` (a surrogate pair is one code point). */
function indexAfterCodePoints(s: string, n: number): number {
  let i = 0;
  for (let k = 0; k < n && i < s.length; k++) {
    const c = s.charCodeAt(i);
    const d = s.charCodeAt(i + 1);
    i += c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
  }
  return i;
}

/**
 * `s` cut to at most `max` code points, never inside a surrogate pair; the last kept code point becomes `…`
 * when `max` ≥ 2 (so a reader sees it was cut). Strings that fit are returned as they are.
 */
export function cutToCodePoints(s: string, max: number): string {
  if (s.length <= max) return s; // UTF-16 length ≥ code points: fits
  const end = indexAfterCodePoints(s, max);
  if (end >= s.length) return s;
  if (max < 2) return s.slice(0, end);
  return s.slice(0, indexAfterCodePoints(s, max - 1)) + '\u2026';
}

/** Length in Unicode code points (what people count as characters; `'😀'.length` is 2). */
export function codePointLength(s: string): number {
  // A plain loop over UTF-16 units: much cheaper than iterating code points on a long string.
  let pairs = 0;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return s.length - pairs;
}

/**
 * Checks `s` as text of `kind`: no forbidden character, and at most `maxChars` code points.
 * The message names the character and its 1-based position in code points (not for secrets).
 */
export function textProblem(s: string, kind: TextKind, maxChars?: number): string | undefined {
  return textIssue(s, kind, maxChars)?.message;
}

/** textProblem with the UTF-16 index of the offending character (undefined for a length problem). */
export function textIssue(s: string, kind: TextKind, maxChars?: number): { message: string; index?: number } | undefined {
  // Length first: it is cheaper than the character scan, so an oversized value is refused without a scan.
  if (maxChars !== undefined && s.length > maxChars) {
    const n = codePointLength(s); // s.length ≥ code points, so only count when the quick check cannot decide
    if (n > maxChars) return { message: `must be at most ${maxChars} characters, got ${n}` };
  }
  const m = FORBIDDEN[kind].exec(s);
  if (!m) return undefined;
  const cp = m[0].codePointAt(0)!;
  if (kind === 'secret') return { message: `contains a control character or invalid Unicode (${describeCodePoint(cp).split(' ')[0]})` };
  const at = codePointLength(s.slice(0, m.index)) + 1;
  return {
    message: `contains ${describeCodePoint(cp)} at character ${at}; control, invisible and bidi-reordering characters are not allowed`,
    index: m.index,
  };
}

/** FORBIDDEN with the `g` flag, for replacing every forbidden character at once. */
const FORBIDDEN_ALL: Record<TextKind, RegExp> = {
  name: new RegExp(FORBIDDEN.name.source, 'gu'),
  text: new RegExp(FORBIDDEN.text.source, 'gu'),
  secret: new RegExp(FORBIDDEN.secret.source, 'gu'),
};

/** U+FFFD REPLACEMENT CHARACTER: what Unicode prescribes in place of a character that cannot be shown (category So, allowed everywhere). */
const REPLACEMENT_CHARACTER = '\uFFFD';

/**
 * `s` with every character that `textProblem(_, kind)` refuses replaced by U+FFFD (one code point for one,
 * so the length in code points is unchanged). For producers of text from sources we do not control (the
 * emitter's cluster objects): they must send something valid rather than nothing.
 */
export function replaceForbiddenText(s: string, kind: TextKind): string {
  return s.replace(FORBIDDEN_ALL[kind], REPLACEMENT_CHARACTER);
}

// ---------------------------------------------------------------------------------------------------------------
// Runbook URLs (docs/annotations.md): carried from an annotation into every event about the resource

/** Longest runbook URL, in characters (a browser's practical limit; the URL lands in messages and filters). */
export const MAX_RUNBOOK_URL_CHARS = 2048;

/**
 * An absolute http(s) URL with a host, no user:password@ (it is shown in every message: credentials there would
 * leak), no whitespace, controls or invisible characters, at most MAX_RUNBOOK_URL_CHARS characters.
 */
export function runbookUrlProblem(v: string): string | undefined {
  if (codePointLength(v) > MAX_RUNBOOK_URL_CHARS) return `must be at most ${MAX_RUNBOOK_URL_CHARS} characters`;
  if (/\s/.test(v)) return 'must be a URL without whitespace';
  const text = textProblem(v, 'name');
  if (text) return text;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return 'must be an absolute http or https URL, e.g. https://wiki.example.com/runbooks/tls';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'must be an http or https URL';
  if (!u.hostname) return 'must name a host';
  if (u.username || u.password) return 'must not carry a user name or password';
  return undefined;
}
