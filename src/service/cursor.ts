/**
 * The opaque `after` cursors of the time-ordered connections (deliveries, silences, events, unhealthyResources):
 * `<milliseconds>:<text>` in base64url. One decoder bounds them all: a cursor is at most MAX_CURSOR characters and
 * its number at most 16 digits and exact in a double (a millisecond time; a longer one would overflow
 * PostgreSQL's bigint and fail as an internal error instead of the caller's, a larger one would be rounded).
 */
import { badInput } from '../model/errors.js';

/** Longest cursor accepted (a resource key, the longest text, is at most 255 characters). */
const MAX_CURSOR = 512;

export const encodeCursor = (n: number, text: string): string => Buffer.from(`${n}:${text}`).toString('base64url');

/**
 * The number and text of a cursor `connection` returned; `text` must pass `valid` (a UUID, a non-empty key).
 * Anything else is the caller's error on `after`.
 */
export function decodeCursor(c: unknown, connection: string, valid: (text: string) => boolean): { n: number; text: string } {
  const bad = () => badInput('after', `after is not a cursor returned by ${connection}`);
  if (typeof c !== 'string' || c.length > MAX_CURSOR) throw bad();
  const s = Buffer.from(c, 'base64url').toString();
  const i = s.indexOf(':');
  const t = s.slice(0, i);
  const text = s.slice(i + 1);
  if (i < 1 || !/^\d{1,16}$/.test(t) || !Number.isSafeInteger(Number(t)) || !valid(text)) throw bad();
  return { n: Number(t), text };
}
