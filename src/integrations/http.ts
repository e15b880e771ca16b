/**
 * The one HTTP client of the integrations: undici fetch, a per-attempt timeout combined with the
 * caller's signal, status classification, Retry-After parsing, response-body truncation and
 * redaction. Error messages are built here from status codes and error codes only; they never
 * contain the request URL (webhook, Slack and Teams URLs carry tokens in their path or query), nor
 * text chosen by the receiver (its reason phrase or body): a tenant's URL may point anywhere.
 *
 * Requests go through undici's request (its Dispatcher API) with the caller's dispatcher: the egress policy's
 * (egress.ts) for tenant-given URLs, undici's default for the operator's own destinations. Not fetch: a POST
 * costs much less CPU than fetch without the WHATWG Request, Headers and streams, and without the abort
 * signal's weak references and finalization that fetch sets up per request. What fetch did that a POST of ours relied on is done here: no redirect
 * followed, URLs with credentials refused, header names case-insensitive, the response body read up to a bound.
 * fetch's default headers (accept-encoding among them) are not sent: a response body is read as sent.
 */
import { createHash } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { getGlobalDispatcher, request, type Dispatcher } from 'undici';
import { EGRESS_DENIED, type EgressPolicy } from './egress.js';
import { codePointLength, cutToCodePoints } from '../validation/formats.js';
import type { DeliveryResult } from './types.js';

export const RESPONSE_BODY_LIMIT = 1024;

export interface HttpContext {
  timeoutMs: number;
  userAgent: string;
  clock: () => number;
  signal?: AbortSignal | undefined;
  /** undici dispatcher; the egress policy's one for tenant-given URLs. Default: undici's global dispatcher. */
  dispatcher?: Dispatcher | undefined;
}

export interface HttpPost {
  /** Target URL. Treated as a secret: it never appears in results. */
  url: string;
  body: string;
  contentType?: string | undefined;
  headers?: Record<string, string> | undefined;
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
/** Shorter values are not redacted (they would match ordinary text). */
const MIN_FRAGMENT = 4;
const FRAGMENTS_MAX = 1024;

function computeFragments(secrets: readonly (string | undefined)[]): string[] {
  const out = new Set<string>();
  for (const s of secrets) {
    if (!s || s.length < MIN_FRAGMENT) continue;
    out.add(s);
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) {
      try {
        const u = new URL(s);
        for (const part of [u.username, u.password, safeDecode(u.password), u.pathname, u.search]) {
          if (part && part.length >= MIN_FRAGMENT) out.add(part);
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

/** The response body as text, at most `limit` bytes (UTF-8, not cut inside a character); the rest is not read. */
async function readBody(
  body: Dispatcher.ResponseData['body'],
  contentLength: string | string[] | undefined,
  limit: number,
): Promise<string> {
  // A declared length within the bound: read it whole (undici fails a body longer than its content-length).
  if (typeof contentLength === 'string' && /^\d+$/.test(contentLength) && Number(contentLength) <= limit)
    return Buffer.from(await body.arrayBuffer()).toString('utf8');
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size > limit) break; // a huge or endless body must not hold the attempt
    }
  } finally {
    if (!body.destroyed) body.destroy(); // stop reading (the connection is closed, not reused)
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
  if (ctx.signal?.aborted) return { outcome: 'retry', error: 'aborted before sending' };
  // as fetch's Headers made them: the caller's headers replace ours of the same name, and names that differ only
  // in case are one header whose values are joined
  const given: Record<string, string> = {
    'content-type': req.contentType ?? 'application/json',
    'user-agent': ctx.userAgent,
    ...req.headers,
  };
  // no prototype: a name such as constructor or __proto__ (a stored row's) is a header like any other
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const name of Object.keys(given)) {
    const lower = name.toLowerCase();
    const had = headers[lower];
    headers[lower] = had === undefined ? given[name]! : `${had}, ${given[name]!}`;
  }
  const attempt = attemptSignal(ctx.timeoutMs, ctx.signal);
  let status: number;
  let retryAfter: string | string[] | undefined;
  let responseBody: string;
  try {
    const url = new URL(req.url);
    // fetch refuses credentials in a URL (the egress policy refuses them earlier for tenant URLs)
    if (url.username || url.password) throw new TypeError('a request URL must not include credentials');
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('a request URL must be http(s)');
    const res = await request(url, {
      method: 'POST',
      signal: attempt.signal,
      dispatcher: ctx.dispatcher ?? getGlobalDispatcher(),
      headers,
      body: req.body,
    });
    status = res.statusCode;
    retryAfter = res.headers['retry-after'];
    responseBody = await readBody(res.body, res.headers['content-length'], RESPONSE_BODY_LIMIT);
  } catch (err) {
    if (attempt.timedOut()) return { outcome: 'retry', error: `timed out after ${ctx.timeoutMs} ms` };
    if (ctx.signal?.aborted) return { outcome: 'retry', error: 'aborted' };
    // A refused destination stays refused: retrying cannot help (and must not probe again).
    return { outcome: isEgressDenied(err) ? 'dead' : 'retry', error: describeNetworkError(err) };
  } finally {
    attempt.done();
  }
  const outcome = classifyStatus(status);
  const result: DeliveryResult = { outcome, statusCode: status };
  // The redaction's fragments are at least MIN_FRAGMENT long: a shorter text (an "ok") has nothing to redact.
  let fragments: string[] | undefined;
  const redacted = (text: string) => (text.length < MIN_FRAGMENT ? text : redact(text, (fragments ??= secretFragments(req.secrets))));
  if (outcome !== 'delivered') {
    // The standard reason phrase, not the receiver's: its text is not reflected.
    const reason = status >= 300 && status < 400 ? 'redirect not followed' : STATUS_CODES[status];
    result.error = redacted(`HTTP ${status}${reason ? ` ${reason}` : ''}`).slice(0, 200);
  }
  if (outcome === 'retry') {
    const after = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter.join(', ') : retryAfter, ctx.clock());
    if (after !== undefined) result.retryAfterMs = after;
  }
  if (responseBody) result.responseBody = truncateUtf8(redacted(responseBody), RESPONSE_BODY_LIMIT);
  return result;
}
