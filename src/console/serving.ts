/**
 * The certificates page's "Served" column (docs/serving.md): what the endpoints configured with a certificate's
 * Secret serve, as words. Pure (no DOM): unit-tested in test/console/serving.test.ts.
 */
import { formatDuration, formatTime } from './format.js';

/** The API's ServingStatus values. */
export type ServingStatusName = 'OK' | 'STALE' | 'MISMATCH' | 'EXPIRED' | 'UNREACHABLE' | 'PENDING' | 'NOT_PROBED';

export interface ServedEndpoint {
  host: string;
  address: string | null;
  status: ServingStatusName;
  reason: string | null;
  servedSerial: string | null;
  servedNotAfter: string | null;
  checkedAt: string | null;
}

/** The Served filter's choices: value (`PROBLEM`, `NO_PROBLEM` or a status) and label. */
export const SERVED_FILTERS: readonly (readonly [value: string, label: string])[] = [
  ['PROBLEM', 'any problem'],
  ['NO_PROBLEM', 'no problem'],
  ['STALE', 'stale (not reloaded)'],
  ['MISMATCH', 'mismatch'],
  ['EXPIRED', 'expired'],
  ['UNREACHABLE', 'unreachable'],
  ['PENDING', 'pending'],
  ['NOT_PROBED', 'not probed'],
  ['OK', 'ok'],
];

/** The CertificateFilter fields of a Served choice (empty: any). */
export function servedFilter(value: string): { servingProblem?: boolean; servingStatus?: string } {
  if (value === 'PROBLEM') return { servingProblem: true };
  if (value === 'NO_PROBLEM') return { servingProblem: false };
  return value ? { servingStatus: value } : {};
}

/** `NOT_PROBED` → `not probed`. */
export const statusWord = (s: ServingStatusName): string => s.toLowerCase().replace('_', ' ');

const PROBLEMS: readonly ServingStatusName[] = ['EXPIRED', 'MISMATCH', 'STALE', 'UNREACHABLE'];
export const isProblem = (s: ServingStatusName | null): boolean => s !== null && PROBLEMS.includes(s);

/**
 * What the cell says beside a stale verdict: how long ago the certificate was renewed (its notBefore), so
 * "stale — renewed 12m ago" says at a glance that a consumer has not reloaded since. Null otherwise.
 */
export function servedNote(c: { servingStatus: ServingStatusName | null; notBefore: string | null }, nowMs: number): string | null {
  if (c.servingStatus !== 'STALE' || !c.notBefore) return null;
  const t = Date.parse(c.notBefore);
  return Number.isNaN(t) ? null : `renewed ${formatDuration(nowMs - t)} ago`;
}

/** The cell's headline: the worst status and its note (`stale — renewed 12m ago`); null without endpoints. */
export function servedHeadline(c: { servingStatus: ServingStatusName | null; notBefore: string | null }, nowMs: number): string | null {
  if (c.servingStatus === null) return null;
  const note = servedNote(c, nowMs);
  return `${statusWord(c.servingStatus)}${note ? ` — ${note}` : ''}`;
}

/**
 * One endpoint as a line: `www.shop.example at 203.0.113.7:443: stale, serves 0A1B (until 2026-03-01 00:00 UTC),
 * checked 2m ago`; the reason of one not probed or unreachable.
 */
export function endpointLine(e: ServedEndpoint, nowMs: number): string {
  const parts = [`${e.host}${e.address ? ` at ${e.address}` : ''}: ${statusWord(e.status)}`];
  if (e.servedSerial) parts.push(`serves ${e.servedSerial}${e.servedNotAfter ? ` (until ${formatTime(e.servedNotAfter)})` : ''}`);
  if (e.reason) parts.push(e.reason);
  if (e.checkedAt) {
    const t = Date.parse(e.checkedAt);
    if (!Number.isNaN(t)) parts.push(`checked ${formatDuration(nowMs - t)} ago`);
  } else parts.push('never checked');
  return parts.join(', ');
}
