/**
 * The spec's `evt.policy.expiringcertificates.failed` event for one certificate (all its places) and its due
 * rule. The message keeps the format of the emitter's former local evaluation and ends with every place the
 * certificate is served from (at most MAX_PLACES named, then a count). The hub's optional fields (docs/expiry.md
 * "Event fields") name the first place and the certificate's facts, for filters, templates and messages.
 */
import type { InternalEvent } from '../events/families.js';
import { sanitizeEvent } from '../events/sanitize.js';
import type { ExpiringCertificateData } from '../events/types.js';
import type { CertificatePlace, ExpiryCertificate } from './certificates.js';
import { DAY_MS, daysLeftPhrase } from '../model/days-left.js';
import type { DueExpiration } from './decide.js';

/** daysUntilExpiry's schema bound (src/events/schemas.ts): a notAfter of the distant past is clamped to it. */
const MIN_DAYS_UNTIL_EXPIRY = -100_000;

/** Places named in one message; the rest are counted (the message's length is bounded by the schema anyway). */
export const MAX_PLACES = 20;

/** `2026-11-22T06:00:00.000+00:00`: explicit offset, fractional seconds. */
export function notificationDate(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '+00:00');
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function expirationName(left: number): string {
  if (left > 0) return `Certificate expiring in ${plural(left, 'day')}`;
  return left === 0 ? 'Certificate expiring in less than a day' : `Certificate ${daysLeftPhrase(left)}`;
}

function placeText(p: CertificatePlace): string {
  const cert = p.certificateName ? `, Certificate ${p.namespace}/${p.certificateName}` : '';
  return `Secret ${p.namespace}/${p.secretName}${cert}, cluster ${p.clusterName ?? p.clusterId}`;
}

/**
 * Sanitized (src/events/sanitize.ts): names, DNs and application ids come from clusters and may exceed the
 * limits or hold characters the text rules refuse, which must not stop the alert.
 */
export function expiryEvent(cert: ExpiryCertificate, due: DueExpiration, now: number): InternalEvent {
  const first = cert.places[0];
  const name = first ? `${first.namespace}/${first.certificateName ?? first.secretName}` : cert.id;
  const cn = cert.commonName ? `, CN=${cert.commonName}` : '';
  const apps = cert.applicationIds.length ? `application ${cert.applicationIds.join(', ')}` : 'no application (unassigned)';
  const when = daysLeftPhrase(due.daysLeft);
  // a share of the lifetime says so: 33% of a 6-day lifetime is 2 days
  const share = due.share
    ? `${due.share.percent}% of a lifetime of ${plural(Number((due.share.lifetimeMs / DAY_MS).toFixed(1)), 'day')}, `
    : '';
  const named = cert.places.slice(0, MAX_PLACES).map(placeText);
  const more = cert.places.length - named.length;
  const where =
    cert.places.length === 1
      ? `${named[0]!}.`
      : `Served from ${plural(cert.places.length, 'place')}: ${named.join('; ')}${more > 0 ? `; and ${more} more` : ''}.`;
  const message =
    `Certificate ${name} (id ${cert.id}${cn}), serial number ${cert.serial}, issuer ${cert.issuer || 'unknown'}, ${apps}: ` +
    `${when} (${plural(due.daysLeft, 'day')} until expiration); valid until ${new Date(cert.notAfter).toISOString()}. ` +
    `Threshold ${plural(due.threshold, 'day')} (${share}rule ${due.ruleId}). ${where}`;
  const data: ExpiringCertificateData = {
    name: expirationName(due.daysLeft),
    applicationIds: [...cert.applicationIds],
    message,
    notificationDate: notificationDate(now),
    threshold: due.threshold,
    ruleId: due.ruleId,
    // spreads: event data is a JSON document; an absent field (CEL has(), the schema) is not one holding undefined
    ...(due.share ? { thresholdPercent: due.share.percent } : {}),
    ...(first ? { certificateName: first.certificateName ?? first.secretName, namespace: first.namespace } : {}),
    ...(first?.clusterName ? { clusterName: first.clusterName } : {}),
    notAfter: new Date(cert.notAfter).toISOString(),
    daysUntilExpiry: Math.max(MIN_DAYS_UNTIL_EXPIRY, due.daysLeft),
    dnsNames: [...cert.dnsNames],
    ...(cert.runbookUrl ? { runbookUrl: cert.runbookUrl } : {}),
  };
  return sanitizeEvent({ type: 'evt.policy.expiringcertificates.failed', data: { ...data } });
}
