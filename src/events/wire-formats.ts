/**
 * The spec's wire formats of event times, written by every producer of events (the emitter's health events,
 * the hub's expiry and silent-cluster events): `statusTransition` (ISO 8601 UTC with `Z`) and
 * `unhealthyDuration` (`<h>h<m>m<s>s`). src/validation/formats.ts checks what arrives; these write it.
 */
import { MAX_DURATION_HOUR_DIGITS } from '../validation/formats.js';

/** The longest duration the format takes (hours have at most 6 digits): 999999h59m59.999s, about 114 years. */
const MAX_DURATION_MS = (10 ** MAX_DURATION_HOUR_DIGITS - 1) * 3_600_000 + 3_599_999;

/**
 * `<h>h<m>m<s>s` with fractional seconds (milliseconds, trailing zeros dropped), e.g. `0h5m3.25s`, `26h0m0s`.
 * Capped at MAX_DURATION_MS (a lastTransitionTime in year 0001 would otherwise give 8 hour digits).
 */
export function unhealthyDurationOf(ms: number): string {
  const total = Math.min(MAX_DURATION_MS, Math.max(0, Math.round(ms)));
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const sMs = total % 60_000;
  const whole = Math.floor(sMs / 1000);
  const frac = sMs % 1000;
  const s = frac ? `${whole}.${String(frac).padStart(3, '0').replace(/0+$/, '')}` : String(whole);
  return `${h}h${m}m${s}s`;
}

/** The timestamps the spec's format takes: years 0001 to 9999 (toISOString writes `+010000-…` past them). */
export const MIN_TIMESTAMP_MS = Date.parse('0001-01-01T00:00:00Z');
export const MAX_TIMESTAMP_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * ISO 8601 in UTC with `Z`; whole seconds are written without a fraction, like Kubernetes timestamps.
 * Clamped to years 0001-9999 (a cluster object may carry any lastTransitionTime).
 */
export function isoUtc(ms: number): string {
  const t = Number.isFinite(ms) ? Math.min(MAX_TIMESTAMP_MS, Math.max(MIN_TIMESTAMP_MS, ms)) : MIN_TIMESTAMP_MS;
  return new Date(t).toISOString().replace('.000Z', 'Z');
}
