/** Text helpers of the console. Pure (no DOM): unit-tested in test/console/format.test.ts. */

/** `2026-03-14T09:26:53.120Z` → `2026-03-14 09:26 UTC` (every page shows UTC: clusters and people sit in many zones). */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A duration as its two largest units: `3d 4h`, `5h 12m`, `42s`. Negative durations count as 0. */
export function formatDuration(ms: number): string {
  let s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86_400);
  s -= d * 86_400;
  const h = Math.floor(s / 3_600);
  s -= h * 3_600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const parts: [number, string][] = [
    [d, 'd'],
    [h, 'h'],
    [m, 'm'],
    [s, 's'],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  if (first < 0) return '0s';
  return parts
    .slice(first, first + 2)
    .filter(([n]) => n > 0)
    .map(([n, u]) => `${n}${u}`)
    .join(' ');
}

/** How long ago `iso` was at `nowMs`: `3d 4h ago`. */
export function ago(iso: string | null | undefined, nowMs: number): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : `${formatDuration(nowMs - t)} ago`;
}

/** `<input type="datetime-local">`'s value (taken as UTC) → RFC 3339, or undefined when empty or not a time. */
export function localInputToIso(value: string): string | undefined {
  if (value.trim() === '') return undefined;
  const d = new Date(`${value}Z`);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** What deleting a record an operator manages does (said before deleting): it comes back at the operator's next resync. */
export function managedNote(managedBy: string | null): string | undefined {
  return managedBy ? `It is managed by ${managedBy}: delete its resource there, or the operator re-creates it.` : undefined;
}

/** Silence duration presets: label and length in ms. */
export const SILENCE_PRESETS: readonly (readonly [label: string, ms: number])[] = [
  ['1h', 3_600_000],
  ['4h', 4 * 3_600_000],
  ['1d', 86_400_000],
  ['1w', 7 * 86_400_000],
];

/**
 * The `<input type="datetime-local">` value (UTC, minutes) `ms` after the start: the start input's time, or `nowMs`
 * when it is empty or not a time.
 */
export function endAfter(startsInput: string, nowMs: number, ms: number): string {
  const start = localInputToIso(startsInput);
  const from = start ? Date.parse(start) : nowMs;
  return new Date(from + ms).toISOString().slice(0, 16);
}

/** `Issuer cert-manager/letsencrypt-prod`, `ClusterIssuer ca`, `Agent prod-eu-1`; empty when the event names no resource. */
export function resourceLabel(r: { kind: string; namespace: string | null; name: string }): string {
  return r.name ? `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}` : '';
}
