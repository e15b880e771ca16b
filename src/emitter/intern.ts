/**
 * One copy of a string value many cached objects share (namespaces, issuer names and DNs, condition reasons and
 * messages, label values): JSON.parse allocates every value anew, so 100,000 objects would otherwise hold
 * 100,000 copies of "True". Bounded: cleared when full (strings already cached stay valid; only later copies
 * are no longer shared until they are seen again). Long values are not kept: they are rarely shared.
 */
const shared = new Map<string, string>();
const MAX_SHARED = 10_000;
const MAX_LENGTH = 256;

export function intern(v: string): string;
export function intern(v: string | undefined): string | undefined;
export function intern(v: string | undefined): string | undefined {
  if (v === undefined || v.length > MAX_LENGTH) return v;
  const hit = shared.get(v);
  if (hit !== undefined) return hit;
  if (shared.size >= MAX_SHARED) shared.clear();
  shared.set(v, v);
  return v;
}

/**
 * One frozen copy of a small object or array many cached objects hold alike (a Secret's labels, an issuerRef, a
 * Ready condition without its time): keyed by its JSON, bounded like `intern`. Frozen: a holder that tried to
 * change its copy would change everyone's, so that throws instead.
 */
const sharedObjects = new Map<string, object>();
const MAX_SHARED_OBJECTS = 10_000;
const MAX_OBJECT_KEY = 1024;

export function share<T extends object>(o: T): Readonly<T> {
  const key = JSON.stringify(o);
  if (key.length > MAX_OBJECT_KEY) return Object.freeze(o);
  const hit = sharedObjects.get(key);
  if (hit !== undefined) return hit as T;
  if (sharedObjects.size >= MAX_SHARED_OBJECTS) sharedObjects.clear();
  sharedObjects.set(key, Object.freeze(o));
  return o;
}

/** ms epoch of an RFC 3339 string or a Date (client-node may give either); undefined when absent or invalid. */
export function toMillis(v: unknown): number | undefined {
  if (v instanceof Date) return Number.isFinite(v.getTime()) ? v.getTime() : undefined;
  if (typeof v !== 'string' || v === '') return undefined;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * A getter's value, built when read and kept for the last object it was built for only (one for all objects, not
 * one each): for values its readers read several times in a row (a cached record's `metadata`: client-node's cache
 * reads it three to five times per listed item). Frozen: every reader of that run gets the same copy.
 */
export function lastBuilt<O extends object, V extends object>(build: (of: O) => V): (of: O) => Readonly<V> {
  let last: O | undefined;
  let value: Readonly<V> | undefined;
  return (of) => {
    if (last !== of || value === undefined) {
      value = Object.freeze(build(of));
      last = of;
    }
    return value;
  };
}
