/**
 * The expiration decision, pure: which threshold rule (if any) a certificate has newly crossed, given the
 * monitoring configuration and what was already emitted for it.
 *
 * - days left = days until notAfter, rounded up (9 days 23 h → 10); a rule is crossed when days left ≤ its
 *   threshold, i.e. when at most `threshold` × 24 h remain. 0 or less: expired.
 * - At most one event per certificate per evaluation: the most urgent crossed rule (smallest threshold).
 *   Less urgent rules crossed at the same time are recorded as covered (not emitted), so a certificate
 *   first seen 5 days before expiry with thresholds 30/14/7 gets one event (rule 3), not three.
 * - Once per (certificate serial, rule): a rule is satisfied when it was marked for this serial with the
 *   same threshold, or at a time when the days left were already within its current threshold. So changing
 *   rule 2 from 14 to 10 days notifies again at 10 days; changing it to 20 days does not re-notify.
 * - A new serial (renewal) starts over. Disabled configuration or an unmonitored certificate: no event,
 *   marks kept (a renewal still clears them).
 */
import { isMonitored, rulesOf, type MonitoringConfigInput } from '../../model/monitoring.js';
import type { InternalEvent } from '../../events/families.js';
import { sanitizeEvent } from '../../events/sanitize.js';
import type { ExpiringCertificateData } from '../../events/types.js';
import type { LeafCertificate } from './x509.js';

export const DAY_MS = 86_400_000;

/** One threshold of the configuration with its ruleId (the service's rule, so event ruleIds match its GET). */
type ExpiryRule = ReturnType<typeof rulesOf>[number];

/** Annotation (on the Secret, or on its cert-manager Certificate) listing application ids, comma separated. */
const APPLICATION_IDS_ANNOTATION = 'notify.certmgr.io/application-ids';

export interface ExpiryCertificate {
  /** the Secret holding it */
  namespace: string;
  secretName: string;
  /** the cert-manager Certificate that issued it (Secret annotation cert-manager.io/certificate-name) */
  certificateName?: string;
  leaf: Pick<LeafCertificate, 'id' | 'serialNumber' | 'notAfter' | 'issuer' | 'commonName'>;
  applicationIds: string[];
}

export interface ExpiryMark {
  ruleId: number;
  threshold: number;
  /** days left when the mark was made */
  daysLeft: number;
  /** an event was emitted for it (else it was covered by a more urgent rule) */
  emitted: boolean;
}

/** Per Secret, persisted: the marks of the serial it holds. */
export interface ExpiryState {
  serial: string;
  notAfter: number;
  marks: ExpiryMark[];
}

export interface DueExpiration extends ExpiryRule {
  daysLeft: number;
}

export interface ExpiryDecision {
  due?: DueExpiration;
  next: ExpiryState | undefined;
  /** evaluate again at this time (ms epoch): the next rule's crossing */
  recheckAt?: number;
  /** why nothing is due, for logs and tests */
  skipped?: 'disabled' | 'unmonitored' | 'none-crossed';
}

/** Days until notAfter, rounded up; 0 or negative once expired (−1: expired one to two days ago). */
export function daysLeft(notAfter: number, now: number): number {
  return Math.ceil((notAfter - now) / DAY_MS) || 0;
}

/** First moment at which `daysLeft(notAfter, t) <= threshold`: when `threshold` days remain. */
export function crossingTime(notAfter: number, threshold: number): number {
  return notAfter - threshold * DAY_MS;
}

function satisfied(rule: ExpiryRule, marks: readonly ExpiryMark[]): boolean {
  return marks.some((m) => m.ruleId === rule.ruleId && (m.threshold === rule.threshold || m.daysLeft <= rule.threshold));
}

export function dueExpirations(
  cert: ExpiryCertificate,
  config: MonitoringConfigInput,
  alreadyEmitted: ExpiryState | undefined,
  now: number,
): ExpiryDecision {
  const serial = cert.leaf.serialNumber;
  const marks = alreadyEmitted && alreadyEmitted.serial === serial ? alreadyEmitted.marks : [];
  const kept: ExpiryState | undefined = marks.length ? { serial, notAfter: cert.leaf.notAfter, marks } : undefined;
  if (!config.enabled) return { next: kept, skipped: 'disabled' };
  if (!isMonitored(config, cert.applicationIds)) return { next: kept, skipped: 'unmonitored' };

  const left = daysLeft(cert.leaf.notAfter, now);
  const rules = rulesOf(config.thresholds);
  const crossed = rules.filter((r) => left <= r.threshold && !satisfied(r, marks));
  const future = rules.filter((r) => left > r.threshold).map((r) => crossingTime(cert.leaf.notAfter, r.threshold));
  const recheckAt = future.length ? Math.min(...future) : undefined;
  const withRecheck = (d: ExpiryDecision): ExpiryDecision => (recheckAt !== undefined ? { ...d, recheckAt } : d);
  if (!crossed.length) return withRecheck({ next: kept, skipped: 'none-crossed' });

  const most = [...crossed].sort((a, b) => a.threshold - b.threshold || a.ruleId - b.ruleId)[0]!;
  const crossedIds = new Set(crossed.map((r) => r.ruleId));
  const next: ExpiryState = {
    serial,
    notAfter: cert.leaf.notAfter,
    marks: [
      ...marks.filter((m) => !crossedIds.has(m.ruleId)),
      ...crossed.map((r) => ({ ruleId: r.ruleId, threshold: r.threshold, daysLeft: left, emitted: r === most })),
    ].sort((a, b) => a.ruleId - b.ruleId),
  };
  return withRecheck({ due: { ...most, daysLeft: left }, next });
}

/** `2026-11-22T06:00:00.000+00:00`: explicit offset, fractional seconds. */
export function notificationDate(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '+00:00');
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function expirationName(left: number): string {
  if (left > 0) return `Certificate expiring in ${plural(left, 'day')}`;
  return left === 0 ? 'Certificate expired' : `Certificate expired ${plural(-left, 'day')} ago`;
}

/**
 * The spec's `evt.policy.expiringcertificates.failed` event for a due rule, sanitized (src/events/sanitize.ts):
 * application ids from annotations and the certificate's own strings may exceed the limits or hold
 * characters the text rules refuse, which must not stop the alert.
 */
export function expirationEvent(cert: ExpiryCertificate, due: DueExpiration, now: number, cluster: { name: string }): InternalEvent {
  const leaf = cert.leaf;
  const name = `${cert.namespace}/${cert.certificateName ?? cert.secretName}`;
  const cn = leaf.commonName ? `, CN=${leaf.commonName}` : '';
  const apps = cert.applicationIds.length ? `application ${cert.applicationIds.join(', ')}` : 'no application (unassigned)';
  const when =
    due.daysLeft > 0
      ? `expires in ${plural(due.daysLeft, 'day')}`
      : due.daysLeft === 0
        ? 'expired less than a day ago'
        : `expired ${plural(-due.daysLeft, 'day')} ago`;
  const where = `Secret ${cert.namespace}/${cert.secretName}${cert.certificateName ? `, Certificate ${name}` : ''}, cluster ${cluster.name}`;
  const message =
    `Certificate ${name} (id ${leaf.id}${cn}), serial number ${leaf.serialNumber}, issuer ${leaf.issuer || 'unknown'}, ${apps}: ` +
    `${when} (${plural(due.daysLeft, 'day')} until expiration); valid until ${new Date(leaf.notAfter).toISOString()}. ` +
    `Threshold ${plural(due.threshold, 'day')} (rule ${due.ruleId}). ${where}.`;
  const data: ExpiringCertificateData = {
    name: expirationName(due.daysLeft),
    applicationIds: [...cert.applicationIds],
    message,
    notificationDate: notificationDate(now),
    threshold: due.threshold,
    ruleId: due.ruleId,
  };
  return sanitizeEvent({ type: 'evt.policy.expiringcertificates.failed', data: { ...data } });
}

/** `app-1, app-2` → ['app-1', 'app-2'] (trimmed, de-duplicated, empty parts dropped). */
export function parseApplicationIds(v: string | undefined): string[] {
  if (!v) return [];
  return [
    ...new Set(
      v
        .split(/[,\s]+/)
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
}

/**
 * Application ids of a certificate: the Secret's annotation, else its Certificate's annotation, else the
 * Certificate's spec.secretTemplate annotation (cert-manager copies that to the Secret anyway).
 * None: unassigned.
 */
export function applicationIdsOf(
  secretAnnotations: Record<string, string> | undefined,
  certificate?: {
    metadata?: { annotations?: Record<string, string> };
    spec?: { secretTemplate?: { annotations?: Record<string, string> } };
  },
): string[] {
  const fromSecret = secretAnnotations?.[APPLICATION_IDS_ANNOTATION];
  if (fromSecret !== undefined) return parseApplicationIds(fromSecret);
  const fromCert =
    certificate?.metadata?.annotations?.[APPLICATION_IDS_ANNOTATION] ??
    certificate?.spec?.secretTemplate?.annotations?.[APPLICATION_IDS_ANNOTATION];
  return parseApplicationIds(fromCert);
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A stored ExpiryState as this version writes it; anything else is undefined (the state store drops it with a warning). */
export function decodeExpiryState(raw: unknown): ExpiryState | undefined {
  if (!isObj(raw) || typeof raw['serial'] !== 'string' || typeof raw['notAfter'] !== 'number' || !Array.isArray(raw['marks']))
    return undefined;
  const marks = (raw['marks'] as unknown[]).filter(
    (m): m is ExpiryMark =>
      isObj(m) && typeof m['ruleId'] === 'number' && typeof m['threshold'] === 'number' && typeof m['daysLeft'] === 'number',
  );
  return { serial: raw['serial'], notAfter: raw['notAfter'], marks };
}
