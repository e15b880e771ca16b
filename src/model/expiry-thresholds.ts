/**
 * A certificate's own expiry thresholds (`notify.certmgr.io/expiry-thresholds`, docs/annotations.md), pure: each
 * entry is whole days (`7`) or a whole percent of the certificate's lifetime, notAfter − notBefore (`"33%"`), so
 * one annotation fits a 6-day and a 90-day certificate alike. The agent parses the annotation into this form
 * (src/emitter/policy.ts), the inventory carries and stores it as written here, and the hub's expiry evaluation
 * turns it into rules with this module (docs/expiry.md "Rule ids").
 */
import { MAX_THRESHOLD_DAYS, certificateRulesOf } from './monitoring.js';

/** Whole days (1..MAX_THRESHOLD_DAYS), or a whole percent of the lifetime (`"1%"`..`"99%"`). */
export type ExpiryThreshold = number | `${number}%`;

export const MIN_SHARE_PERCENT = 1;
export const MAX_SHARE_PERCENT = 99;
/** Rule ids of shares: 2001, 2002, 2003 from the largest share down (days have 1001.., the company's 1..3). */
const SHARE_RULE_ID_BASE = 2000;
const DAY_MS = 86_400_000;
/** The canonical written form only: `"33%"`, no leading zero, no sign, no fraction. */
const SHARE = /^([1-9][0-9]?)%$/;

/** A rule of the expiry evaluation. `share`: a percentage rule, with its time before notAfter in ms. */
export interface ExpiryRule {
  ruleId: number;
  /** days (the event's `threshold`); a share's time rounded up to whole days */
  threshold: number;
  share?: { percent: number; ms: number; lifetimeMs: number };
}

/** The percent of a share entry; undefined for days. */
function sharePercent(t: unknown): number | undefined {
  if (typeof t !== 'string') return undefined;
  const m = SHARE.exec(t);
  return m ? Number(m[1]) : undefined;
}

const isThresholdDays = (t: unknown): t is number => typeof t === 'number' && Number.isInteger(t) && t >= 1 && t <= MAX_THRESHOLD_DAYS;

/** One well-formed entry (days in range, or a share in its canonical form). */
export function isExpiryThreshold(t: unknown): t is ExpiryThreshold {
  return isThresholdDays(t) || sharePercent(t) !== undefined;
}

/** Distinct entries, days from the largest down, then shares from the largest down (the order rule ids follow). */
export function sortThresholds(list: readonly ExpiryThreshold[]): ExpiryThreshold[] {
  const days = [...new Set(list.filter(isThresholdDays))].sort((a, b) => b - a);
  const shares = [...new Set(list.map(sharePercent).filter((p) => p !== undefined))].sort((a, b) => b - a);
  return [...days, ...shares.map((p) => `${p}%` as const)];
}

/** notAfter − notBefore, or null when unknown or not positive (a share then has nothing to be a share of). */
export function lifetimeOf(notBefore: number | null | undefined, notAfter: number | null | undefined): number | null {
  if (typeof notBefore !== 'number' || typeof notAfter !== 'number') return null;
  return notAfter > notBefore ? notAfter - notBefore : null;
}

/**
 * The rules of a certificate's own thresholds: days as 1001.. (certificateRulesOf), shares as 2001.. from the
 * largest share down. A share's time is `percent` of the lifetime, at most MAX_THRESHOLD_DAYS like any
 * threshold; without a lifetime shares give no rule.
 */
export function ownRulesOf(thresholds: readonly ExpiryThreshold[], lifetimeMs: number | null): ExpiryRule[] {
  const sorted = sortThresholds(thresholds);
  const days: ExpiryRule[] = certificateRulesOf(sorted.filter(isThresholdDays));
  if (lifetimeMs === null || lifetimeMs <= 0) return days;
  const shares = sorted.map(sharePercent).filter((p) => p !== undefined);
  return [
    ...days,
    ...shares.map((percent, i) => {
      const ms = Math.min(Math.floor((lifetimeMs * percent) / 100), MAX_THRESHOLD_DAYS * DAY_MS);
      return { ruleId: SHARE_RULE_ID_BASE + i + 1, threshold: Math.ceil(ms / DAY_MS), share: { percent, ms, lifetimeMs } };
    }),
  ];
}

/**
 * The largest own threshold of a row in whole days (rounded up), for the scan's range (the inventory's
 * `expiry_threshold_max`); null when the row's own thresholds give no rule (the company's then apply).
 */
export function ownThresholdMaxDays(
  thresholds: readonly ExpiryThreshold[] | null,
  notBefore: number | null,
  notAfter: number | null,
): number | null {
  if (!thresholds?.length) return null;
  const rules = ownRulesOf(thresholds, lifetimeOf(notBefore, notAfter));
  return rules.length ? Math.max(...rules.map((r) => r.threshold)) : null;
}
