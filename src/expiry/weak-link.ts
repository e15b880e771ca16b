/**
 * The chain's weakest link, pure (docs/expiry.md "CA expiring before its certificates"): a CA whose certificate
 * expires before certificates it signed takes them down with it, while their own expiry rules stay silent until
 * their own notAfter. Two ways the inventory shows it:
 *
 * - a root in the inventory (a self-signed certificate: the Secret of a `ca` Issuer, usually): the certificates
 *   whose issuer DN is its subject and that are valid after it (the latest notAfter of that subject counts: a
 *   rotated CA keeping its DN is the new one);
 * - a chain in `tls.crt` whose earliest notAfter (chainNotAfter) is before the leaf's: an intermediate (or the
 *   root, when the chain carries it) expires first. One CA per (leaf issuer DN, chainNotAfter); when a root of
 *   the inventory is that CA, its report takes them.
 *
 * One report per CA and notAfter (weak_link_marks): not per certificate, not per scan; a CA renewed to a later
 * notAfter that is still outlived is reported again. Certificates already expired, or marked ignored, do not count.
 */
import { createHash } from 'node:crypto';
import type { InternalEvent } from '../events/families.js';
import { sanitizeEvent } from '../events/sanitize.js';
import type { ExpiringCertificateData } from '../events/types.js';
import { isMonitored, type MonitoringConfigInput } from '../model/monitoring.js';
import type { WeakLinkRow } from '../store/types.js';
import { byPlace, type CertificatePlace } from './certificates.js';
import { DAY_MS, daysLeftPhrase, daysUntilExpiry } from '../model/days-left.js';
import { certIdOf, certKey } from './decide.js';
import { notificationDate } from './message.js';

/** The rule id of these events (below the certificates' own rules, 1001…, and above the configuration's, 1..3). */
export const WEAK_LINK_RULE_ID = 900;
/** Certificates named in one event (field and message); the rest are counted. */
export const MAX_NAMED = 10;
/** A CA that expired longer ago than this is not reported any more (and its mark is deleted). */
export const WEAK_LINK_STALE_MS = 30 * DAY_MS;
/** daysUntilExpiry's schema bounds (src/events/schemas.ts). */
const MIN_DAYS = -100_000;
const MAX_DAYS = 3650;

/** A certificate signed by the CA that outlives it: one issuer + serial, with its places. */
export interface OutlivingCertificate {
  serial: string;
  issuer: string | null;
  notAfter: number;
  /** sorted by cluster, namespace, Secret */
  places: CertificatePlace[];
  applicationIds: string[];
  runbookUrl: string | null;
}

export interface WeakCa {
  /** the mark's key: certKey of the root; for a CA seen only in chains, of its DN and notAfter */
  key: string;
  /** certIdOf(key): the id in the message (certificateRef) */
  id: string;
  /** `secret`: a root of the inventory; `chain`: only seen in the chains of tls.crt */
  source: 'secret' | 'chain';
  /** the CA's subject DN, the issuer of the certificates it signed */
  dn: string | null;
  /** secret: the root's own issuer (its subject), serial and CN */
  serial: string | null;
  commonName: string | null;
  notAfter: number;
  /** secret: the root's places (empty for chain) */
  places: CertificatePlace[];
  /** secret: every place of the root is marked ignored */
  ignored: boolean;
  runbookUrl: string | null;
  /** latest notAfter first */
  outliving: OutlivingCertificate[];
  /** the read of its certificates was cut at its bound: there are more than listed */
  truncated: boolean;
}

export interface WeakLinkState {
  notAfter: number;
}

export interface WeakLinkDecision {
  due?: { ca: WeakCa; outliving: OutlivingCertificate[] };
  /** the mark to write with the event */
  next?: WeakLinkState & { leafCount: number };
  skipped?: 'disabled' | 'ignored' | 'unmonitored' | 'stale' | 'reported';
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const placeKey = (r: WeakLinkRow): string => `${r.clusterId}\n${r.namespace}\n${r.secretName}`;
const placeOf = (r: WeakLinkRow): CertificatePlace => ({
  clusterId: r.clusterId,
  clusterName: r.clusterName,
  namespace: r.namespace,
  secretName: r.secretName,
  certificateName: r.certificateName,
});
const selfSigned = (r: WeakLinkRow): boolean => r.subject !== null && r.subject === r.issuer;

/** The key of a CA seen only in chains: its DN (the leaves' issuer) and its notAfter. */
export function chainCaKey(dn: string | null, notAfter: number): string {
  return createHash('sha256')
    .update(`chain\n${dn ?? ''}\n${notAfter}`)
    .digest('hex');
}

/** Rows of one certificate each (issuer + serial), places merged, latest notAfter first. */
function certificatesOf(rows: readonly WeakLinkRow[]): OutlivingCertificate[] {
  const by = new Map<string, WeakLinkRow[]>();
  for (const r of rows) {
    const k = certKey(r.issuer, r.serial);
    const list = by.get(k);
    if (list) list.push(r);
    else by.set(k, [r]);
  }
  return [...by.values()]
    .map((rs) => {
      const sorted = [...rs].sort((a, b) => byPlace(placeOf(a), placeOf(b)));
      return {
        serial: sorted[0]!.serial.toUpperCase(),
        issuer: sorted[0]!.issuer,
        notAfter: Math.max(...sorted.map((r) => r.notAfter)),
        places: sorted.map(placeOf),
        applicationIds: [...new Set(sorted.flatMap((r) => r.applicationIds))].sort(),
        runbookUrl: sorted.find((r) => r.runbookUrl)?.runbookUrl ?? null,
      };
    })
    .sort((a, b) => b.notAfter - a.notAfter || byPlace(a.places[0]!, b.places[0]!));
}

/**
 * The CAs outlived by certificates they signed, from inventory rows (the store's reads, or any set of rows: the
 * conditions are all checked here). Rows are deduplicated by place. Sorted by the CA's notAfter, then key.
 */
export function weakLinksOf(input: readonly WeakLinkRow[], now: number): WeakCa[] {
  const rows = [...new Map(input.map((r) => [placeKey(r), r])).values()];
  const counts = (r: WeakLinkRow): boolean => !r.ignored && r.notAfter > now;

  // roots: per subject, the latest notAfter is the CA (a rotated CA keeping its DN is the new one)
  const roots = new Map<string, WeakLinkRow[]>();
  for (const r of rows) {
    if (!selfSigned(r)) continue;
    const cur = roots.get(r.subject!);
    if (!cur || r.notAfter > cur[0]!.notAfter) roots.set(r.subject!, [r]);
    else if (r.notAfter === cur[0]!.notAfter) cur.push(r);
  }

  const out = new Map<string, { ca: Omit<WeakCa, 'outliving' | 'truncated'>; rows: Map<string, WeakLinkRow> }>();
  for (const [dn, rs] of roots) {
    const ca = rs.reduce((a, b) => (certKey(b.issuer, b.serial) < certKey(a.issuer, a.serial) ? b : a));
    const mine = rs.filter((r) => certKey(r.issuer, r.serial) === certKey(ca.issuer, ca.serial));
    const signed = rows.filter((r) => r.issuer === dn && !selfSigned(r) && r.notAfter > ca.notAfter && counts(r));
    if (!signed.length) continue;
    const watched = mine.filter((r) => !r.ignored);
    const places = (watched.length ? watched : mine).map(placeOf).sort(byPlace);
    const key = certKey(ca.issuer, ca.serial);
    out.set(key, {
      ca: {
        key,
        id: certIdOf(key),
        source: 'secret',
        dn,
        serial: ca.serial.toUpperCase(),
        commonName: mine.find((r) => r.commonName !== null)?.commonName ?? null,
        notAfter: ca.notAfter,
        places,
        ignored: !watched.length,
        runbookUrl: (watched.length ? watched : mine).find((r) => r.runbookUrl)?.runbookUrl ?? null,
      },
      rows: new Map(signed.map((r) => [placeKey(r), r])),
    });
  }

  for (const r of rows) {
    if (r.chainNotAfter === null || r.chainNotAfter >= r.notAfter || !counts(r)) continue;
    const root = r.issuer !== null ? roots.get(r.issuer) : undefined;
    // the chain's earliest certificate is that root of the inventory: its report takes the certificate
    const rootKey = root && root[0]!.notAfter === r.chainNotAfter ? certKey(root[0]!.issuer, root[0]!.serial) : undefined;
    const key = rootKey && out.has(rootKey) ? rootKey : chainCaKey(r.issuer, r.chainNotAfter);
    let e = out.get(key);
    if (!e) {
      e = {
        ca: {
          key,
          id: certIdOf(key),
          source: 'chain',
          dn: r.issuer,
          serial: null,
          commonName: null,
          notAfter: r.chainNotAfter,
          places: [],
          ignored: false,
          runbookUrl: null,
        },
        rows: new Map(),
      };
      out.set(key, e);
    }
    e.rows.set(placeKey(r), r);
  }

  return [...out.values()]
    .map(({ ca, rows: signed }) => {
      const outliving = certificatesOf([...signed.values()]);
      return { ...ca, runbookUrl: ca.runbookUrl ?? outliving.find((c) => c.runbookUrl)?.runbookUrl ?? null, outliving, truncated: false };
    })
    .sort((a, b) => a.notAfter - b.notAfter || cmp(a.key, b.key));
}

/**
 * Whether to report the CA now. Reported once per CA and notAfter: a mark of the same or a later notAfter
 * silences it. Only the monitored certificates it signed count (the configuration's applications and
 * unassigned setting); none: nothing is sent and no mark written, so assigning one later reports it.
 */
export function decideWeakLink(ca: WeakCa, config: MonitoringConfigInput, state: WeakLinkState | undefined, now: number): WeakLinkDecision {
  if (!config.enabled) return { skipped: 'disabled' };
  if (ca.ignored) return { skipped: 'ignored' };
  if (ca.notAfter < now - WEAK_LINK_STALE_MS) return { skipped: 'stale' };
  const outliving = ca.outliving.filter((c) => isMonitored(config, c.applicationIds));
  if (!outliving.length) return { skipped: 'unmonitored' };
  if (state && state.notAfter >= ca.notAfter) return { skipped: 'reported' };
  return { due: { ca, outliving }, next: { notAfter: ca.notAfter, leafCount: outliving.length } };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** `cluster/namespace/name` of a certificate's first place (its Certificate, else its Secret). */
function outlivingName(c: OutlivingCertificate): string {
  const p = c.places[0]!;
  return `${p.clusterName ?? p.clusterId}/${p.namespace}/${p.certificateName ?? p.secretName}`;
}

function certificateText(c: OutlivingCertificate): string {
  const p = c.places[0]!;
  const what = p.certificateName ? `Certificate ${p.namespace}/${p.certificateName}` : `Secret ${p.namespace}/${p.secretName}`;
  const more = c.places.length > 1 ? ` (and ${plural(c.places.length - 1, 'other place')})` : '';
  return `${what}, cluster ${p.clusterName ?? p.clusterId}, valid until ${new Date(c.notAfter).toISOString()}${more}`;
}

/**
 * The `evt.policy.expiringcertificates.failed` event of a CA outlived by certificates it signed (rule 900,
 * threshold 0: no days threshold). The message names the CA (its id is the certificate reference) and at most
 * MAX_NAMED certificates, latest notAfter first, then a count; outlivingCount and outlivingCertificates carry the same.
 */
export function weakLinkEvent(due: NonNullable<WeakLinkDecision['due']>, now: number): InternalEvent {
  const { ca, outliving } = due;
  const left = daysUntilExpiry(ca.notAfter, now);
  const until = new Date(ca.notAfter).toISOString();
  const when = daysLeftPhrase(left);
  const count = `${ca.truncated ? 'at least ' : ''}${plural(outliving.length, 'certificate')}`;
  const named = outliving.slice(0, MAX_NAMED);
  const rest = outliving.length - named.length;
  const list = `${named.map(certificateText).join('; ')}${rest > 0 ? `; and ${rest}${ca.truncated ? '+' : ''} more` : ''}.`;
  const first = ca.places[0];
  const subjectText =
    ca.source === 'secret'
      ? `CA certificate ${first ? `${first.namespace}/${first.certificateName ?? first.secretName}` : ca.id} (id ${ca.id}` +
        `${ca.commonName ? `, CN=${ca.commonName}` : ''}), serial number ${ca.serial}, subject ${ca.dn || 'unknown'}` +
        `${first ? `, Secret ${first.namespace}/${first.secretName}, cluster ${first.clusterName ?? first.clusterId}` : ''}`
      : `A CA certificate in the tls.crt chain of certificates issued by ${ca.dn || 'an unknown issuer'} (id ${ca.id})`;
  const signed = ca.source === 'secret' ? 'it signed' : outliving.length === 1 ? 'that carries it' : 'that carry it';
  const message =
    `${subjectText}: valid until ${until} (${when}), before ${count} ${signed}, which stop being trusted when it expires: ` +
    `${list} Renew the CA (or its chain) and re-issue them, or issue them for a shorter duration. Rule ${WEAK_LINK_RULE_ID}.`;
  const data: ExpiringCertificateData = {
    name: `CA certificate expires before ${count} ${signed}`,
    applicationIds: [...new Set(outliving.flatMap((c) => c.applicationIds))].sort(),
    message,
    notificationDate: notificationDate(now),
    threshold: 0,
    ruleId: WEAK_LINK_RULE_ID,
    // spreads: event data is a JSON document; an absent field (CEL has(), the schema) is not one holding undefined
    ...(first ? { certificateName: first.certificateName ?? first.secretName, namespace: first.namespace } : {}),
    ...(first?.clusterName ? { clusterName: first.clusterName } : {}),
    notAfter: until,
    daysUntilExpiry: Math.min(MAX_DAYS, Math.max(MIN_DAYS, left)),
    ...(ca.runbookUrl ? { runbookUrl: ca.runbookUrl } : {}),
    outlivingCount: outliving.length,
    outlivingCertificates: named.map(outlivingName),
  };
  return sanitizeEvent({ type: 'evt.policy.expiringcertificates.failed', data: { ...data } });
}
