/**
 * The tiny internal SQL abstraction the repositories and migrations are written against.
 *
 * SQL uses `?` placeholders on both dialects; the PostgreSQL adapter rewrites them to `$1, $2, …`.
 * Values are bound as-is except: booleans become 0/1 on SQLite, undefined becomes NULL.
 * Rows come back as plain column→value records; decoding into domain records lives in rows.ts.
 */
import { StoreInvalidTextError } from './errors.js';

export type Dialect = 'sqlite' | 'postgres';

export type SqlValue = string | number | boolean | null | undefined;
export type SqlRow = Record<string, unknown>;

export interface SqlDb {
  readonly dialect: Dialect;
  all(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
  get(sql: string, params?: readonly SqlValue[]): Promise<SqlRow | undefined>;
  /** Runs a statement; returns the number of rows changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /**
   * SQLite, in a transaction only: all(), then COMMIT in the same round trip to the store's thread. The
   * transaction ends with it (nothing may follow); its wrapper does not commit again.
   */
  allAndCommit?(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
}

// In unicode mode [\uD800-\uDFFF] matches only unpaired surrogates; a pair is one astral code point.
const UNSTORABLE = /\0|[\uD800-\uDFFF]/u;

/**
 * Defence in depth under input validation: both engines refuse the same text (see StoreInvalidTextError),
 * so a value that slipped past validation fails alike on SQLite and PostgreSQL and nothing is written.
 */
export function assertStorableParams(params: readonly SqlValue[] | undefined): void {
  if (!params) return;
  for (let i = 0; i < params.length; i++) {
    const v = params[i];
    if (typeof v !== 'string') continue;
    const m = UNSTORABLE.exec(v);
    if (m)
      throw new StoreInvalidTextError(
        `store: text parameter ${i + 1} contains ${m[0] === '\0' ? 'a NUL character (U+0000)' : 'a lone surrogate (invalid Unicode)'}; not stored`,
      );
  }
}

/**
 * A diagnostic text (a delivery's last error, which may quote a remote server) made storable: NUL and lone
 * surrogates become U+FFFD. Unlike user data, refusing it would leave the delivery's outcome unrecorded.
 */
export function diagnostic(s: string): string {
  return s.replace(/\0|[\uD800-\uDFFF]/gu, '\uFFFD');
}

/**
 * Rewrites `?` placeholders to PostgreSQL's `$n`, leaving `?` inside '…' literals, "…" identifiers
 * and comments alone.
 */
export function toPgPlaceholders(sql: string): string {
  let out = '';
  let n = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const stop = end === -1 ? sql.length : end + 1;
      out += sql.slice(i, stop);
      i = stop;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop;
    } else if (c === '?') {
      out += `$${++n}`;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** `?, ?, ?` for an IN list of n values (n ≥ 1). */
export function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(', ');
}

/**
 * `xs` as consecutive slices (order kept) whose lengths are powers of two, each at most the largest power of two
 * ≤ `max`: 37 items → 32, 4, 1. A statement's text grows with its VALUES or IN list, and each distinct text is a
 * prepared statement of its own (SQLite's statement cache, PostgreSQL's named statements); with power-of-two
 * lengths a caller-chosen batch size yields at most log2(max) + 1 texts per statement instead of one per size.
 */
export function statementChunks<T>(xs: readonly T[], max: number): T[][] {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`statementChunks: max must be a positive integer, got ${max}`);
  const cap = floorPowerOfTwo(max);
  const out: T[][] = [];
  for (let i = 0; i < xs.length;) {
    const size = Math.min(cap, floorPowerOfTwo(xs.length - i));
    out.push(xs.slice(i, i + size));
    i += size;
  }
  return out;
}

/** The largest power of two ≤ n (n ≥ 1). */
function floorPowerOfTwo(n: number): number {
  let p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/**
 * An IN list's values padded to a power-of-two length by repeating the last one (`x IN (a, b, b, b)` is
 * `x IN (a, b)`): for a lookup that must stay one statement (its ORDER BY spans the whole list), with the same
 * bounded set of texts as statementChunks. Empty stays empty.
 */
export function padToPowerOfTwo<T>(xs: readonly T[]): T[] {
  if (xs.length === 0) return [];
  let n = 1;
  while (n < xs.length) n *= 2;
  return [...xs, ...Array.from({ length: n - xs.length }, () => xs[xs.length - 1]!)];
}
