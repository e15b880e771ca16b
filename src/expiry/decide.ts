/**
 * The hub's expiration decision, pure (docs/expiry.md). The rules are those the emitter once evaluated in each
 * cluster, evaluated here over the inventory:
 *
 * - A certificate for expiry is its issuer DN + serial (`certKey`): the same certificate served from several
 *   Secrets or clusters is one certificate, notified once, with every place listed.
 * - A rule is crossed when the time left ≤ its threshold × 24 h. A share of the lifetime (`"33%"`, rule ids
 *   2001..2003) is crossed when the time left ≤ that share of notAfter − notBefore. The event's days left are
 *   src/model/days-left.ts's: whole days, rounded down (9 days 23 h → 9; negative: expired).
 * - At most one event per certificate per evaluation: the most urgent crossed rule (smallest threshold). Less
 *   urgent rules crossed at the same time are marked covered (not emitted): a certificate first seen (or seen
 *   again after downtime) 5 days before expiry with thresholds 30/14/7 gets one event, for rule 3.
 * - Once per (certificate, notAfter, threshold): a rule is satisfied when the certificate was notified (or
 *   covered) at a time when its days left were already within the rule's threshold, whichever rule that mark
 *   was for. So changing rule 2 from 14 to 10 days notifies again at 10 days; changing it to 20 days does not;
 *   and switching between the company's rules (1..3) and the certificate's own (1001..1003, from the
 *   `notify.certmgr.io/expiry-thresholds` annotation, docs/annotations.md) never repeats a threshold already
 *   passed: marks stay consistent whatever the rule ids.
 * - A certificate's own thresholds replace the configuration's (whether it is monitored still follows the
 *   configuration); an ignored certificate (`notify.certmgr.io/ignore`) gets no event, marks kept.
 * - The marks are reset only when notAfter moves forward (a renewal keeping issuer and serial). An older
 *   notAfter than the marked one (an old copy served again) changes nothing and emits nothing: no flapping.
 * - Disabled configuration, an ignored or an unmonitored certificate: no event, marks kept.
 */
import { createHash } from 'node:crypto';
import { lifetimeOf, ownRulesOf, type ExpiryRule, type ExpiryThreshold } from '../model/expiry-thresholds.js';
import { isMonitored, rulesOf, type MonitoringConfigInput } from '../model/monitoring.js';
import { DAY_MS, daysUntilExpiry } from '../model/days-left.js';

export { DAY_MS };

export interface ExpiryMark {
  ruleId: number;
  threshold: number;
  /** days left when the mark was made (rounded down; older marks without leftMs hold them rounded up) */
  daysLeft: number;
  /** the time left when the mark was made, in ms (absent on older marks: their daysLeft × 24 h stands for it) */
  leftMs?: number;
  /** an event was emitted for it (else it was covered by a more urgent rule) */
  emitted: boolean;
}

/** What the store keeps per certificate (expiry_marks). */
export interface ExpiryState {
  notAfter: number;
  marks: ExpiryMark[];
}

export interface DueExpiration extends ExpiryRule {
  daysLeft: number;
}

export interface ExpiryDecision {
  due?: DueExpiration;
  /** the state to write; absent: leave the stored state as it is */
  next?: ExpiryState;
  /** why nothing is due, for logs, metrics and tests */
  skipped?: 'disabled' | 'ignored' | 'unmonitored' | 'none-crossed' | 'older';
}

/**
 * The scanner (src/expiry/scanner.ts) evaluates the inventory this often unless configured; here, with the pure
 * parts, so that serve's limits table can name it without loading the scanner's imports.
 */
export const DEFAULT_EXPIRY_SCAN_INTERVAL_MS = 60_000;

/** The latest notAfter that has crossed at least one rule at `now`: the upper bound of the scan's range. */
export function scanHorizon(thresholds: readonly number[], now: number): number {
  return now + Math.max(0, ...thresholds) * DAY_MS;
}

/** How long before notAfter a rule is crossed: its days, or its share of the lifetime. */
const ruleMs = (r: ExpiryRule): number => r.share?.ms ?? r.threshold * DAY_MS;

/**
 * A mark is made when the time left is within the marked rule's threshold, so a mark of the same rule and
 * threshold always satisfies it; a mark made at or past this rule's threshold, of any rule, means the
 * certificate was already told about this point. An older mark without leftMs holds its days left rounded up,
 * for which `leftMs ≤ days × 24 h` is `daysLeft ≤ days`: it decides alike.
 */
function satisfied(rule: ExpiryRule, marks: readonly ExpiryMark[]): boolean {
  return marks.some((m) => (m.leftMs ?? m.daysLeft * DAY_MS) <= ruleMs(rule));
}

/**
 * The rules that apply to a certificate: its own thresholds (annotation) when they give any rule (shares need
 * the lifetime, notAfter − notBefore), else the configuration's.
 */
export function expiryRulesOf(
  cert: { expiryThresholds?: readonly ExpiryThreshold[] | null; notBefore?: number | null; notAfter?: number },
  config: Pick<MonitoringConfigInput, 'thresholds'>,
): ExpiryRule[] {
  const own = cert.expiryThresholds?.length ? ownRulesOf(cert.expiryThresholds, lifetimeOf(cert.notBefore, cert.notAfter)) : [];
  return own.length ? own : rulesOf(config.thresholds);
}

export function decideExpiry(
  cert: {
    notAfter: number;
    notBefore?: number | null;
    applicationIds: readonly string[];
    ignored?: boolean;
    expiryThresholds?: readonly ExpiryThreshold[] | null;
  },
  config: MonitoringConfigInput,
  state: ExpiryState | undefined,
  now: number,
): ExpiryDecision {
  if (!config.enabled) return { skipped: 'disabled' };
  if (cert.ignored) return { skipped: 'ignored' };
  if (!isMonitored(config, cert.applicationIds)) return { skipped: 'unmonitored' };
  if (state && cert.notAfter < state.notAfter) return { skipped: 'older' };
  // a later notAfter is a renewal: its marks start over
  const marks = state && state.notAfter === cert.notAfter ? state.marks : [];

  const left = daysUntilExpiry(cert.notAfter, now);
  const leftMs = cert.notAfter - now;
  const crossed = expiryRulesOf(cert, config).filter((r) => leftMs <= ruleMs(r) && !satisfied(r, marks));
  if (!crossed.length) return { skipped: 'none-crossed' };

  const most = [...crossed].sort((a, b) => ruleMs(a) - ruleMs(b) || a.ruleId - b.ruleId)[0]!;
  const crossedIds = new Set(crossed.map((r) => r.ruleId));
  const next: ExpiryState = {
    notAfter: cert.notAfter,
    marks: [
      ...marks.filter((m) => !crossedIds.has(m.ruleId)),
      ...crossed.map((r) => ({ ruleId: r.ruleId, threshold: r.threshold, daysLeft: left, leftMs, emitted: r === most })),
    ].sort((a, b) => a.ruleId - b.ruleId),
  };
  return { due: { ...most, daysLeft: left }, next };
}

/** The identity of a certificate for expiry: SHA-256 (hex) of issuer DN and serial (upper-case hex). */
export function certKey(issuer: string | null, serial: string): string {
  return createHash('sha256')
    .update(`${issuer ?? ''}\n${serial.toUpperCase()}`)
    .digest('hex');
}

/** The certificate's id in messages: a UUID (version 5 layout) derived from its key, stable everywhere. */
export function certIdOf(key: string): string {
  const h = key;
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

/** A stored marks list as this version writes it; entries of another shape are dropped. */
export function decodeMarks(raw: unknown): ExpiryMark[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter(
    (m): m is ExpiryMark =>
      typeof m === 'object' &&
      m !== null &&
      typeof (m as ExpiryMark).ruleId === 'number' &&
      typeof (m as ExpiryMark).threshold === 'number' &&
      typeof (m as ExpiryMark).daysLeft === 'number' &&
      ((m as ExpiryMark).leftMs === undefined || typeof (m as ExpiryMark).leftMs === 'number') &&
      typeof (m as ExpiryMark).emitted === 'boolean',
  );
}
