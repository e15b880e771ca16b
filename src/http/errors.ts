import type { Response } from 'express';
import type { FieldError } from '../model/errors.js';
import { StoreInvalidTextError } from '../store/errors.js';
import { cutToCodePoints } from '../validation/formats.js';

/** What the API says when the store refuses a text (the store's own message names a parameter number). */
const INVALID_TEXT_MESSAGE = 'a text value contains a NUL character or invalid Unicode (a lone surrogate); nothing was stored';

/**
 * Store errors that are the caller's input, not a server fault: the answer both APIs give (REST status, GraphQL
 * code), or null. The message names no value.
 */
export function storeInputError(err: unknown): { status: 400; code: 'BAD_USER_INPUT'; message: string } | null {
  return err instanceof StoreInvalidTextError ? { status: 400, code: 'BAD_USER_INPUT', message: INVALID_TEXT_MESSAGE } : null;
}

/**
 * Longest error message (and field path) an API answer carries, in code points. Messages may quote input
 * (graphql-js echoes a bad variable value in full, REST quotes path segments): a 100 KB value must not come
 * back, nor be logged, in full.
 */
export const MAX_ERROR_MESSAGE_CHARS = 300;

/**
 * `s` cut to at most `max` code points, the last one "…" when cut. Cuts between code points, so a surrogate
 * pair is never split; reads at most `max` code points of `s` however long it is.
 */
export function capText(s: string, max = MAX_ERROR_MESSAGE_CHARS): string {
  return cutToCodePoints(s, max);
}

/** Longest error message and stack logged for an unexpected error (they may quote input too). */
export const MAX_LOGGED_ERROR_CHARS = { message: 1_000, stack: 4_000 } as const;

/**
 * An unexpected error as logged: type, code, cause chain (3 deep) and capped message and stack, so an error
 * whose message quotes a huge input does not write it to the log in full. Other values pass through.
 */
export function boundedErr(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error)) return typeof err === 'string' ? capText(err, MAX_LOGGED_ERROR_CHARS.message) : err;
  const code = (err as { code?: unknown }).code;
  return {
    type: err.name,
    message: capText(err.message, MAX_LOGGED_ERROR_CHARS.message),
    stack: err.stack === undefined ? undefined : capText(err.stack, MAX_LOGGED_ERROR_CHARS.stack),
    code: typeof code === 'string' || typeof code === 'number' ? code : undefined,
    cause: err.cause !== undefined && depth < 3 ? boundedErr(err.cause, depth + 1) : undefined,
  };
}

type ErrorItem = { code: string; message: string; field?: string | undefined };

const capItem = <T extends ErrorItem>(e: T): T => ({
  ...e,
  message: capText(e.message),
  field: e.field === undefined ? undefined : capText(e.field),
});

/** REST error body everywhere: { errors: [ { code, message, field } ] }. */
export function sendErrors(
  res: Response,
  status: number,
  errors: FieldError[] | { code: string; message: string; field?: string | undefined }[],
): void {
  if (res.headersSent) return; // the request deadline answered first
  res
    .status(status)
    .type('application/json')
    .send(JSON.stringify({ errors: (errors as ErrorItem[]).map(capItem) }));
}

export function sendError(res: Response, status: number, code: string, message: string, field?: string): void {
  sendErrors(res, status, [field === undefined ? { code, message } : { code, message, field }]);
}

/** GraphQL-shaped error body for transport-level failures on /graphql (401, 413, 415, 400). */
export function sendGraphqlError(
  res: Response,
  status: number,
  code: string,
  message: string,
  extensions: Record<string, unknown> = {},
): void {
  if (res.headersSent) return;
  res
    .status(status)
    .type('application/json')
    .send(JSON.stringify({ errors: [{ message: capText(message), code, extensions: { code, ...extensions } }] }));
}
