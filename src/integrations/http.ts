/**
 * The one HTTP client of the integrations: undici fetch, a per-attempt timeout combined with the
 * caller's signal, status classification, Retry-After parsing, response-body truncation and
 * redaction. Error messages are built here from status codes and error codes only; they never
 * contain the request URL (webhook, Slack and Teams URLs carry tokens in their path or query), nor
 * text chosen by the receiver (its reason phrase or body): a tenant's URL may point anywhere.
 *
 * Requests go through undici's fetch with the caller's dispatcher: the egress policy's (egress.ts)
 * for tenant-given URLs, undici's default for the operator's own destinations.
 */
import { createHash } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { fetch, type Dispatcher, type Response } from 'undici';
import { EGRESS_DENIED, type EgressPolicy } from './egress.js';
import { codePointLength, cutToCodePoints } from '../validation/formats.js';
import type { DeliveryResult } from './types.js';

export const RESPONSE_BODY_LIMIT = 1024;

export interface HttpContext {
  timeoutMs: number;
  userAgent: string;
  clock: () => number;
  signal?: AbortSignal;
  /** undici dispatcher; the egress policy's one for tenant-given URLs. Default: undici's global dispatcher. */
  dispatcher?: Dispatcher;
}

export interface HttpPost {
  /** Target URL. Treated as a secret: it never appears in results. */
  url: string;
  body: string;
  contentType?: string;
  headers?: Record<string, string>;
  /**
   * Secret values (keys, signing secrets, secret URLs: pass the URL here when it is a secret) to
   * redact from any text that leaves this module.
   */
  secrets: readonly string[];
}

/**
 * Classifies an HTTP status:
 * 2xx delivered; 408, 425, 429 and 5xx retry; everything else (3xx, which is not followed, and
 * other 4xx including 410) dead.
 */
export function classifyStatus(status: number): DeliveryResult['outcome'] {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 408 || status === 425 || status === 429 || status >= 500) return 'retry';
  return 'dead';
}

/**
 * Parses Retry-After: delay-seconds (a non-negative integer) or an HTTP date. Returns milliseconds
 * from `now` (never negative), or undefined when absent or unparsable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value == null) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP date always names a weekday or month; this keeps Date.parse from accepting odd numbers.
  if (!/[a-z]/i.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Cuts a string to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function truncateUtf8(s: string, maxBytes: number = RESPONSE_BODY_LIMIT): string {
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= maxBytes) return s;
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) so the cut lands on a character boundary.
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** Cuts a string to at most `max` characters (code points), ending with an ellipsis when cut. */
export function truncateChars(s: string, max: number): string {
  // below 2 there is no room for a kept character and the ellipsis: the ellipsis alone says it was cut
  return max < 2 && codePointLength(s) > max ? '…' : cutToCodePoints(s, max);
}

/**
 * Expands secret values into the fragments to redact: the value itself and, for URLs, the
 * credentials, path and query, which a receiver may echo on its own (e.g. "Cannot POST /T0/B0/xyz").
 */
export function secretFragments(secrets: readonly (string | undefined)[]): string[] {
  // the same few secrets on every attempt of an integration: remembered (bounded), since it parses URLs
  // by digest, not the secrets themselves; stored secrets never hold NUL (the store refuses it)
  const id = createHash('sha256').update(secrets.join('\0')).digest('base64');
  const known = fragmentsOf.get(id);
  if (known) return known;
  const fragments = computeFragments(secrets);
  if (fragmentsOf.size >= FRAGMENTS_MAX) fragmentsOf.clear();
  fragmentsOf.set(id, fragments);
  return fragments;
}

const fragmentsOf = new Map<string, string[]>();
const FRAGMENTS_MAX = 1024;

function computeFragments(secrets: readonly (string | undefined)[]): string[] {
  const out = new Set<string>();
  for (const s of secrets) {
    if (!s || s.length < 4) continue;
    out.add(s);
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) {
      try {
        const u = new URL(s);
        for (const part of [u.username, u.password, safeDecode(u.password), u.pathname, u.search]) {
          if (part && part.length >= 4) out.add(part);
        }
        if (u.pathname.length > 1 && u.search) out.add(u.pathname + u.search);
      } catch {
        /* not a URL: the whole value is already in the set */
      }
    }
  }
  // Longest first, so a URL is replaced whole before its path is.
  return [...out].sort((a, b) => b.length - a.length);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function redact(text: string, fragments: readonly string[]): string {
  let out = text;
  for (const f of fragments) out = out.split(f).join('[REDACTED]');
  return out;
}

const NETWORK_ERRORS: Record<string, string> = {
  [EGRESS_DENIED]: 'destination not allowed by the egress policy',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed by peer',
  UND_ERR_HEADERS_TIMEOUT: 'no response headers in time',
  UND_ERR_BODY_TIMEOUT: 'response body stalled',
};

/** Turns a thrown network error into a short message made only of known codes: no URL, no host. */
export function describeNetworkError(err: unknown): string {
  const codes: string[] = [];
  let cur: unknown = err;
  for (let depth = 0; cur && typeof cur === 'object' && depth < 5; depth++) {
    // `originalCode` is nodemailer's: the socket error code behind its own ESOCKET/ECONNECTION.
    for (const code of [(cur as { code?: unknown }).code, (cur as { originalCode?: unknown }).originalCode]) {
      if (typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code)) codes.push(code);
    }
    cur = (cur as { cause?: unknown }).cause;
  }
  const code = codes.find((c) => c in NETWORK_ERRORS) ?? codes[0];
  if (!code) return 'network error';
  const text = NETWORK_ERRORS[code];
  if (text) return `network error: ${text} (${code})`;
  if (/CERT|TLS|SSL/.test(code)) return `TLS error (${code})`;
  return `network error (${code})`;
}

/** Validates a target URL without echoing it; returns an error message or null. */
export function checkTargetUrl(url: string | undefined, what: string): string | null {
  if (!url) return `${what} is not configured`;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `${what} is not a valid URL`;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return `${what} must be an http(s) URL`;
  return null;
}

/** Whether a thrown fetch error (or its causes) is an egress-policy refusal. */
function isEgressDenied(err: unknown): boolean {
  let cur: unknown = err;
  for (let depth = 0; cur && typeof cur === 'object' && depth < 5; depth++) {
    if ((cur as { code?: unknown }).code === EGRESS_DENIED) return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Validates a tenant-given target URL against the egress policy (scheme, credentials, port, literal
 * address, metadata name) without echoing it; returns an error message or null. The connect-time
 * check of the policy's dispatcher still applies to whatever the name resolves to.
 */
export function checkTenantUrl(url: string | undefined, what: string, egress: EgressPolicy): string | null {
  if (!url) return `${what} is not configured`;
  const bad = egress.checkUrl(url, 'connect');
  return bad ? `${what} ${bad}` : null;
}

async function readBody(res: Response, limit: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size <= limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    // Stop reading once past the limit; a huge or endless body must not hold the attempt.
    reader.cancel().catch(() => {});
  }
  return truncateUtf8(Buffer.concat(chunks).toString('utf8'), limit);
}

/**
 * The attempt's signal: aborted after `timeoutMs` or with the caller's. One controller and one timer (not
 * AbortSignal.timeout + AbortSignal.any, whose weak references cost more than the rest of the request's setup).
 */
function attemptSignal(timeoutMs: number, outer?: AbortSignal): { signal: AbortSignal; timedOut(): boolean; done(): void } {
  const c = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    c.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'));
  }, timeoutMs);
  timer.unref(); // as AbortSignal.timeout: a pending attempt does not keep the process alive
  const onAbort = () => c.abort(outer!.reason);
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: c.signal,
    timedOut: () => timedOut,
    done() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * POSTs a body and classifies the response. Redirects are not followed (a 3xx is 'dead').
 * Never throws: every failure becomes a DeliveryResult.
 */
export async function postAndClassify(req: HttpPost, ctx: HttpContext): Promise<DeliveryResult> {
  const fragments = secretFragments(req.secrets);
  if (ctx.signal?.aborted) return { outcome: 'retry', error: 'aborted before sending' };
  const attempt = attemptSignal(ctx.timeoutMs, ctx.signal);
  const signal = attempt.signal;
  let res: Response;
  let responseBody: string;
  try {
    res = await fetch(req.url, {
      method: 'POST',
      redirect: 'manual',
      signal,
      ...(ctx.dispatcher ? { dispatcher: ctx.dispatcher } : {}),
      headers: {
        'content-type': req.contentType ?? 'application/json',
        'user-agent': ctx.userAgent,
        ...req.headers,
      },
      body: req.body,
    });
    responseBody = await readBody(res, RESPONSE_BODY_LIMIT);
  } catch (err) {
    if (attempt.timedOut()) return { outcome: 'retry', error: `timed out after ${ctx.timeoutMs} ms` };
    if (ctx.signal?.aborted) return { outcome: 'retry', error: 'aborted' };
    // A refused destination stays refused: retrying cannot help (and must not probe again).
    return { outcome: isEgressDenied(err) ? 'dead' : 'retry', error: describeNetworkError(err) };
  } finally {
    attempt.done();
  }
  const outcome = classifyStatus(res.status);
  const result: DeliveryResult = { outcome, statusCode: res.status };
  if (outcome !== 'delivered') {
    // The standard reason phrase, not the receiver's: its text is not reflected.
    const reason = res.status >= 300 && res.status < 400 ? 'redirect not followed' : STATUS_CODES[res.status];
    result.error = redact(`HTTP ${res.status}${reason ? ` ${reason}` : ''}`, fragments).slice(0, 200);
  }
  if (outcome === 'retry') {
    const after = parseRetryAfter(res.headers.get('retry-after'), ctx.clock());
    if (after !== undefined) result.retryAfterMs = after;
  }
  if (responseBody) result.responseBody = truncateUtf8(redact(responseBody, fragments), RESPONSE_BODY_LIMIT);
  return result;
}
