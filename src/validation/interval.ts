/**
 * Intervals of a router's notification policy (groupWait, groupInterval, repeatInterval), written the way
 * Alertmanager and Flux write them: a sequence of <integer><unit> with units d, h, m, s in that order, e.g.
 * "30s", "5m", "4h", "1h30m", "7d". One pattern for the API, the CRD schema and the docs.
 */

/** The CRD's `pattern` and the API's check. */
export const INTERVAL_PATTERN = '^(?:[0-9]{1,5}d)?(?:[0-9]{1,6}h)?(?:[0-9]{1,6}m)?(?:[0-9]{1,7}s)?$';
const INTERVAL_RE = new RegExp(INTERVAL_PATTERN);
const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000 } as const;

/** Milliseconds of an interval, or undefined when it is not one (empty, unknown unit, wrong order). */
export function parseInterval(v: string): number | undefined {
  if (v === '' || !INTERVAL_RE.test(v)) return undefined;
  let ms = 0;
  for (const m of v.matchAll(/([0-9]+)([dhms])/g)) ms += Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  return ms;
}

/** The shortest spelling of a whole number of seconds: 90000 → "1m30s", 0 → "0s". */
export function formatInterval(ms: number): string {
  let s = Math.floor(ms / 1000);
  if (s <= 0) return '0s';
  let out = '';
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const n = Math.floor(s / size);
    if (n > 0) out += `${n}${unit}`;
    s -= n * size;
  }
  return out;
}
