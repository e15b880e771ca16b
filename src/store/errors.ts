/** Errors the store raises, the same on both engines. The driver's error is kept as `cause`. */

export class StoreError extends Error {
  override name = 'StoreError';
}

/**
 * A text value the engines would not store alike: NUL (PostgreSQL refuses it, SQLite keeps it) or a lone
 * surrogate (both drivers silently turn it into U+FFFD). Refused on both engines before any statement runs.
 * The message names the parameter, never its value.
 */
export class StoreInvalidTextError extends StoreError {
  override name = 'StoreInvalidTextError';
}

export type ConstraintKind = 'foreign_key' | 'unique' | 'check' | 'not_null';

/**
 * A write broke a database constraint, e.g. deleting an integration that a router still uses
 * (`foreign_key`), or creating a router whose integration does not exist for that company.
 */
export class StoreConstraintError extends StoreError {
  override name = 'StoreConstraintError';
  constructor(
    readonly constraint: ConstraintKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** node:sqlite errors: { code: 'ERR_SQLITE_ERROR', errcode: <extended result code>, message }. */
export function fromSqliteError(err: unknown): unknown {
  if (!(err instanceof Error) || (err as { code?: unknown }).code !== 'ERR_SQLITE_ERROR') return err;
  const errcode = (err as { errcode?: unknown }).errcode;
  if (typeof errcode !== 'number' || (errcode & 0xff) !== 19 /* SQLITE_CONSTRAINT */) return err;
  const m = err.message;
  // ON DELETE RESTRICT reports SQLITE_CONSTRAINT_TRIGGER (1811), so look at the message as well.
  const kind: ConstraintKind | undefined =
    errcode === 787 || /FOREIGN KEY/i.test(m)
      ? 'foreign_key'
      : errcode === 2067 || errcode === 1555 || /UNIQUE|PRIMARY KEY/i.test(m)
        ? 'unique'
        : errcode === 1299 || /NOT NULL/i.test(m)
          ? 'not_null'
          : errcode === 275 || /CHECK/i.test(m)
            ? 'check'
            : undefined;
  return kind ? new StoreConstraintError(kind, m, { cause: err }) : err;
}

const PG_CONSTRAINT_CODES: Record<string, ConstraintKind> = {
  '23503': 'foreign_key',
  '23505': 'unique',
  '23514': 'check',
  '23502': 'not_null',
};

/** pg errors carry the SQLSTATE in `code`. */
export function fromPgError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  const kind = typeof code === 'string' ? PG_CONSTRAINT_CODES[code] : undefined;
  return kind ? new StoreConstraintError(kind, err.message, { cause: err }) : err;
}
