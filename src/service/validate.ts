/** Small input checks shared by the service operations; each throws a ServiceError naming the field. */
import { emailAddressProblem } from '../integrations/email-address.js';
import { isUuid, textProblem, type TextKind } from '../validation/formats.js';
import { badInput } from '../model/errors.js';

export { isUuid };

/** The largest page (`first`) of every connection. */
export const MAX_PAGE = 500;

/** A connection's page size: `first`, else `dflt`, an integer from 1 to MAX_PAGE; `field` names it in the error. */
export function requirePageSize(first: unknown, dflt: number, field = 'first'): number {
  const n = first ?? dflt;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_PAGE)
    throw badInput(field, `${field} must be between 1 and ${MAX_PAGE}`);
  return n;
}

/** Fails naming `field` unless `v` is text of `kind` of at most `max` characters (code points). */
function requireText(field: string, v: string, kind: TextKind, max?: number): string {
  const problem = textProblem(v, kind, max);
  if (problem) throw badInput(field, `${field} ${problem}`);
  return v;
}

/** A name shown to people (routers, integrations, managedBy): single-line, visible characters only. */
export function requireName(field: string, v: unknown, max = 255): string {
  if (typeof v !== 'string' || v.trim() === '') throw badInput(field, `${field} must be a non-empty string`);
  // Checked before trimming: trim() would silently drop a leading BOM or trailing line break.
  return requireText(field, v, 'name', max).trim();
}

export function requireSecret(field: string, v: unknown, max = 1024): string {
  if (typeof v !== 'string' || v.trim() === '') throw badInput(field, `${field} must be a non-empty string`);
  return requireText(field, v, 'secret', max).trim();
}

/** http(s) URL. The message never repeats the URL: it may carry a token. */
export function requireUrl(field: string, v: unknown): string {
  const s = requireSecret(field, v, 2048);
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw badInput(field, `${field} must be an absolute http(s) URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw badInput(field, `${field} must use http or https`);
  return s;
}

export function requireEmails(field: string, v: unknown, max = 50): string[] {
  if (!Array.isArray(v) || v.length === 0) throw badInput(field, `${field} must be a non-empty list of email addresses`);
  if (v.length > max) throw badInput(field, `${field} may hold at most ${max} addresses`);
  return v.map((e, i) => requireEmail(`${field}[${i}]`, e));
}

/** A plain `local@domain` address (src/integrations/email-address.ts): no address literal, IP or display name. */
export function requireEmail(field: string, v: unknown): string {
  if (typeof v !== 'string') throw badInput(field, `${field} is not an email address`);
  const problem = emailAddressProblem(v);
  if (problem) throw badInput(field, `${field} is not an email address (a plain local@domain with a DNS domain name): it ${problem}`);
  return requireText(field, v, 'name', 254);
}

/** Standard Webhooks secret: `whsec_<base64>` (decoded bytes) or any string of 16+ characters. */
export function requireSigningSecret(field: string, v: unknown): string {
  const s = requireSecret(field, v, 512);
  if (s.startsWith('whsec_')) {
    const b64 = s.slice(6);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || Buffer.from(b64, 'base64').length < 16)
      throw badInput(field, `${field} starting with whsec_ must carry base64 of at least 16 bytes`);
  } else if (s.length < 16) throw badInput(field, `${field} must be at least 16 characters (or whsec_<base64>)`);
  return s;
}
