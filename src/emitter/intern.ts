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
