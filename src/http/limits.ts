/** Request limits and the pure decisions the HTTP shell applies (depth of JSON bodies, store outages, route labels). */

/** Request bodies (REST, GraphQL, events). */
export const BODY_LIMIT = '1mb';
/** `POST /v1/inventory`: up to 1,000 certificates' facts (docs/inventory.md#limits). */
export const INVENTORY_BODY_LIMIT = '4mb';
/** JSON nesting allowed in any request body: real payloads nest < 8; deep values break recursive code downstream. */
export const MAX_JSON_DEPTH = 32;
/** Seconds a client is told to wait when the store is unavailable. */
export const RETRY_AFTER_SECONDS = 5;

/**
 * What the per-request deadline answers. A request whose body is still arriving was slow on the client's side:
 * 408 REQUEST_TIMEOUT (RFC 9110 15.5.9), and the connection is closed (the rest of the body would otherwise be
 * read as the next request). A request received whole was slow on ours: 503 DEADLINE_EXCEEDED, retry later.
 */
export function deadlineAnswer(requestReceived: boolean): { status: 408 | 503; code: string; closeConnection: boolean } {
  return requestReceived
    ? { status: 503, code: 'DEADLINE_EXCEEDED', closeConnection: false }
    : { status: 408, code: 'REQUEST_TIMEOUT', closeConnection: true };
}

const MAX_KEY_IN_PATH = 40;

const keySegment = (k: string): string =>
  k.length <= MAX_KEY_IN_PATH && /^[A-Za-z_$][\w$-]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k.slice(0, MAX_KEY_IN_PATH))}]`;

/**
 * Where `value` nests deeper than `max` (containers counted: `{}` is 1, `{"a":[1]}` is 2), as a field path
 * like `a.b[0].c`, or null when it does not. The walk stops descending at `max + 1`, so its recursion is bounded
 * by the limit, not by the input (JSON.parse accepts 500,000 levels within 1 MiB); the path string is built only
 * for the violation.
 */
export function jsonDepthViolation(value: unknown, max = MAX_JSON_DEPTH): string | null {
  const path: (string | number)[] = [];
  const walk = (v: unknown, depth: number): boolean => {
    if (v === null || typeof v !== 'object') return false;
    if (depth + 1 > max) return true;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (x !== null && typeof x === 'object') {
          path.push(i);
          if (walk(x, depth + 1)) return true;
          path.pop();
        }
      }
    } else {
      for (const k in v) {
        if (!Object.hasOwn(v, k)) continue;
        const x = (v as Record<string, unknown>)[k];
        if (x !== null && typeof x === 'object') {
          path.push(k);
          if (walk(x, depth + 1)) return true;
          path.pop();
        }
      }
    }
    return false;
  };
  if (!walk(value, 0)) return null;
  if (path.length === 0) return '(body)';
  const s = path.map((p) => (typeof p === 'number' ? `[${p}]` : keySegment(p))).join('');
  return s.startsWith('.') ? s.slice(1) : s;
}

/** Network-level error codes of a store that cannot be reached (node net / pg). */
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/**
 * Whether an error means "the store is unavailable right now" (answer 503 + Retry-After), as opposed to a bug
 * (500). PostgreSQL SQLSTATE classes 08 (connection exception), 53 (insufficient resources), 57P0x (shutdown);
 * pg's pool/connection messages; a closed store. Walks `cause` and AggregateError members.
 */
export function isStoreUnavailable(err: unknown, seen = 0): boolean {
  if (seen > 5 || err === null || typeof err !== 'object') return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown; name?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (NET_CODES.has(code)) return true;
  if (/^(08...|53...|57P0[1-4])$/.test(code)) return true;
  const msg = typeof e.message === 'string' ? e.message : '';
  if (
    /^Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|store is closed$|database is not open/i.test(
      msg,
    )
  )
    return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isStoreUnavailable(x, seen + 1))) return true;
  return isStoreUnavailable(e.cause, seen + 1);
}

/** Metrics route label: the matched route pattern (bounded set), never the raw path. */
export function routeLabel(matched: { baseUrl: string; routePath: unknown } | undefined): string {
  if (!matched || typeof matched.routePath !== 'string') return 'other';
  return matched.baseUrl + matched.routePath;
}
