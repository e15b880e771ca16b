/** Request limits and the pure decisions the HTTP shell applies (depth of JSON bodies, store outages, route labels). */

/** Request bodies (REST, GraphQL, events). */
export const BODY_LIMIT = '1mb';
/** JSON nesting allowed in any request body: real payloads nest < 8; deep values break recursive code downstream. */
export const MAX_JSON_DEPTH = 32;
/** Seconds a client is told to wait when the store is unavailable. */
export const RETRY_AFTER_SECONDS = 5;

const MAX_KEY_IN_PATH = 40;

/**
 * Where `value` nests deeper than `max` (containers counted: `{}` is 1, `{"a":[1]}` is 2), as a field path
 * like `a.b[0].c`, or null when it does not. Iterative, so a value nested 500,000 deep (JSON.parse accepts
 * that within 1 MiB) cannot overflow the stack here.
 */
export function jsonDepthViolation(value: unknown, max = MAX_JSON_DEPTH): string | null {
  const stack: { v: unknown; depth: number; path: string }[] = [{ v: value, depth: 0, path: '' }];
  while (stack.length) {
    const { v, depth, path } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > max) return path || '(body)';
    if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], depth: depth + 1, path: `${path}[${i}]` });
    else
      for (const k of Object.keys(v).reverse()) {
        const key = k.length > MAX_KEY_IN_PATH || !/^[A-Za-z_$][\w$-]*$/.test(k) ? `[${JSON.stringify(k.slice(0, MAX_KEY_IN_PATH))}]` : k;
        stack.push({ v: (v as Record<string, unknown>)[k], depth: depth + 1, path: key.startsWith('[') ? path + key : path ? `${path}.${key}` : key });
      }
  }
  return null;
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
  if (/^Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|store is closed$|database is not open/i.test(msg)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isStoreUnavailable(x, seen + 1))) return true;
  return isStoreUnavailable(e.cause, seen + 1);
}

/** Metrics route label: the matched route pattern (bounded set), never the raw path. */
export function routeLabel(matched: { baseUrl: string; routePath: unknown } | undefined): string {
  if (!matched || typeof matched.routePath !== 'string') return 'other';
  return matched.baseUrl + matched.routePath;
}
