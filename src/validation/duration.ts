/**
 * Durations of the command line and the limits file, written the way Go (and Kubernetes tooling) writes them: a
 * sequence of <number><unit> with units h, m, s, ms, e.g. "500ms", "30s", "5m", "1h30m", "24h"; "0" alone is zero.
 */

const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
const DURATION_RE = /^(?:[0-9]+(?:\.[0-9]+)?(?:ms|h|m|s))+$/;

/** Whole milliseconds of a duration, or undefined when it is not one (empty, no unit, unknown unit, below 1 ms). */
export function parseDuration(v: string): number | undefined {
  if (v === '0') return 0;
  if (v.length > 64 || !DURATION_RE.test(v)) return undefined;
  let ms = 0;
  for (const m of v.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|h|m|s)/g)) ms += Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  const whole = Math.round(ms);
  // a fraction of a millisecond is not a duration these settings can keep (decimal fractions carry float noise)
  return Number.isSafeInteger(whole) && Math.abs(ms - whole) < 1e-6 ? whole : undefined;
}

/** The shortest spelling: 90_000 → "1m30s", 1_500 → "1s500ms", 0 → "0s". */
export function formatDuration(ms: number): string {
  if (ms <= 0) return '0s';
  let rest = Math.floor(ms);
  let out = '';
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
    ['ms', 1],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out;
}

/** What a message says a duration looks like. */
export const DURATION_EXAMPLES = 'a duration such as 500ms, 30s, 5m, 1h30m or 24h';
