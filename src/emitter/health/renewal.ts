/**
 * Pure: what a Certificate's renewal says about its health at `now`, beside the Ready condition. cert-manager
 * keeps Ready=True until the certificate in the Secret expires, whatever happens to its renewal, so two
 * troubles never reach Ready (docs/emitter.md "When"):
 *
 * - **Renewal failing**: the latest issuance failed. cert-manager's issuing controller (failIssueCertificate)
 *   sets the Issuing condition to False with the failed CertificateRequest's reason and "The certificate request
 *   has failed to complete and will be retried: …", increments status.failedIssuanceAttempts and sets
 *   status.lastFailureTime; a successful issuance removes the Issuing condition (or, with server-side apply,
 *   sets it False with reason `Issued`) and clears both fields. So any of: Issuing=False with a reason other
 *   than `Issued`, failedIssuanceAttempts > 0, lastFailureTime set, means a failure since the last successful
 *   issuance. The reason and message are the Issuing condition's (the CA's words); the failure starts at
 *   lastFailureTime.
 * - **Renewal overdue**: status.renewalTime passed `overdueGraceMs` ago and no new certificate replaced it
 *   (the readiness controller moves renewalTime forward as soon as one is in the Secret), with no failure
 *   recorded: a stuck issuance, or no controller running. Reason `RenewalOverdue`, from renewalTime.
 *
 * A failure wins over overdue (it carries the cause). Neither is looked at here while Ready is False or Unknown
 * or the certificate expired: observe() decides those.
 */
import type { CertManagerCondition } from './condition.js';

/** Default of `--health-renewal-overdue-grace`: a renewal normally completes within minutes of renewalTime. */
export const DEFAULT_RENEWAL_OVERDUE_GRACE_MS = 60 * 60_000;
export const RENEWAL_OVERDUE_REASON = 'RenewalOverdue';
/** A failure is recorded (failedIssuanceAttempts / lastFailureTime) but the Issuing condition no longer says which. */
export const RENEWAL_FAILING_REASON = 'RenewalFailing';
/** The Issuing condition's reason when cert-manager (server-side apply) records a successful issuance. */
const ISSUED_REASON = 'Issued';

/** The parts of a Certificate's status the renewal rules read (times in ms epoch). */
export interface RenewalStatus {
  issuing?: CertManagerCondition | undefined;
  failedIssuanceAttempts?: number | undefined;
  lastFailureTime?: number | undefined;
  renewalTime?: number | undefined;
  notAfter?: number | undefined;
}

export type RenewalHealth =
  | {
      healthy: true;
      /** when the renewal becomes overdue, if nothing changes before (ms epoch; only while still ahead) */
      overdueAt?: number;
    }
  | {
      healthy: false;
      kind: 'failing' | 'overdue';
      reason: string;
      message: string;
      /** start of the trouble (ms epoch): lastFailureTime, or renewalTime */
      since: number;
    };

/** Go's time.RFC1123 in UTC, as cert-manager formats times in its messages. */
export function rfc1123(ms: number): string {
  return new Date(ms).toUTCString().replace('GMT', 'UTC');
}

function toMillis(v: string | Date | undefined | null): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const ms = v instanceof Date ? v.getTime() : Date.parse(v);
  return Number.isFinite(ms) ? ms : undefined;
}

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;

/** The renewal's health of a Certificate that is Ready=True and not expired, at `now`. */
export function renewalHealth(s: RenewalStatus, now: number, overdueGraceMs: number): RenewalHealth {
  const issuing = s.issuing;
  const attempts = typeof s.failedIssuanceAttempts === 'number' && s.failedIssuanceAttempts > 0 ? s.failedIssuanceAttempts : 0;
  const failedCondition = issuing?.status === 'False' && (issuing.reason ?? '') !== ISSUED_REASON;
  if (failedCondition || attempts > 0 || s.lastFailureTime !== undefined) {
    const since = s.lastFailureTime ?? toMillis(issuing?.lastTransitionTime) ?? now;
    if (failedCondition)
      return {
        healthy: false,
        kind: 'failing',
        reason: issuing.reason || 'Failed',
        message: issuing.message || `The certificate request failed at ${rfc1123(since)}`,
        since,
      };
    // between attempts: cert-manager is retrying, the failure's words are gone from the Issuing condition
    const tried = attempts > 0 ? `${plural(attempts, 'issuance attempt')} failed` : 'An issuance attempt failed';
    const last = s.lastFailureTime !== undefined ? `, the last at ${rfc1123(s.lastFailureTime)}` : '';
    const retry = issuing?.status === 'True' ? `; cert-manager is retrying: ${issuing.message || issuing.reason || 'issuing'}` : '';
    return { healthy: false, kind: 'failing', reason: RENEWAL_FAILING_REASON, message: `${tried}${last}${retry}`, since };
  }
  if (s.renewalTime === undefined) return { healthy: true };
  const overdueAt = s.renewalTime + overdueGraceMs;
  if (now < overdueAt) return { healthy: true, overdueAt };
  const expires = s.notAfter !== undefined ? ` (the current certificate expires on ${rfc1123(s.notAfter)})` : '';
  const progress =
    issuing?.status === 'True'
      ? `an issuance has been in progress since ${rfc1123(toMillis(issuing.lastTransitionTime) ?? s.renewalTime)} without completing: ${issuing.message || issuing.reason || 'issuing'}`
      : 'no issuance is in progress: is cert-manager running?';
  return {
    healthy: false,
    kind: 'overdue',
    reason: RENEWAL_OVERDUE_REASON,
    message: `Renewal was due at ${rfc1123(s.renewalTime)} and no new certificate has been issued${expires}; ${progress}`,
    since: s.renewalTime,
  };
}
