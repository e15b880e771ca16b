/**
 * Inventory rows → certificates for expiry, pure: rows of the same issuer DN and serial are one certificate,
 * served from several places (Secrets, clusters).
 */
import type { ExpiryThreshold } from '../model/expiry-thresholds.js';
import type { ExpiryCursor, ExpiryInventoryRow } from '../store/types.js';
import { certIdOf, certKey } from './decide.js';

/** Where one copy of the certificate lives: an inventory row. */
export interface CertificatePlace {
  clusterId: string;
  /** null when the cluster row is missing (the inventory row is then named by the cluster id) */
  clusterName: string | null;
  namespace: string;
  secretName: string;
  certificateName: string | null;
}

/** One certificate for expiry: issuer + serial, with every place it was seen. */
export interface ExpiryCertificate {
  key: string;
  /** certIdOf(key) */
  id: string;
  serial: string;
  issuer: string | null;
  commonName: string | null;
  /** the lifetime's start (null or absent: unknown), for thresholds as a share of the lifetime */
  notBefore?: number | null;
  notAfter: number;
  /** union over its places, sorted */
  applicationIds: string[];
  /** sorted by cluster, namespace, Secret; only the places not ignored, unless every place is */
  places: CertificatePlace[];
  /** union over its places, in place order, at most MAX_DNS_NAMES */
  dnsNames: string[];
  /** every place is ignored (`notify.certmgr.io/ignore`, docs/annotations.md) */
  ignored: boolean;
  /** the first (sorted) place's own thresholds that has any (days, shares); null: the configuration's */
  expiryThresholds: ExpiryThreshold[] | null;
  /** the first (sorted) place's runbook URL that has one */
  runbookUrl: string | null;
}

/** DNS names carried by one expiration event (the inventory's limit per Secret, INVENTORY_LIMITS.dnsNames). */
const MAX_DNS_NAMES = 100;

type Row = ExpiryInventoryRow & { place: CertificatePlace };

/** Places in the order messages list them: cluster (name, then id), namespace, Secret. */
export const byPlace = (a: CertificatePlace, b: CertificatePlace): number =>
  cmp(a.clusterName ?? a.clusterId, b.clusterName ?? b.clusterId) ||
  cmp(a.clusterId, b.clusterId) ||
  cmp(a.namespace, b.namespace) ||
  cmp(a.secretName, b.secretName);

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * One entry per certificate, in the order first seen. Places are sorted; application ids are the union of the
 * places' (any place assigning an application makes it monitored for it). Copies disagreeing on notAfter
 * (not a real X.509 case) count with the earliest.
 *
 * Per-resource policy (docs/annotations.md): a place marked ignored does not count (its applications, names and
 * policy are left out); a certificate is ignored only when every place is (a copy someone else serves unmarked
 * is still watched). Own thresholds and the runbook URL come from the first place, in place order, that has them.
 */
export function groupCertificates(rows: readonly ExpiryInventoryRow[]): ExpiryCertificate[] {
  const byKey = new Map<string, { first: ExpiryInventoryRow; rows: Row[] }>();
  for (const r of rows) {
    const key = certKey(r.issuer, r.serial);
    let c = byKey.get(key);
    if (!c) byKey.set(key, (c = { first: r, rows: [] }));
    const place = {
      clusterId: r.clusterId,
      clusterName: r.clusterName,
      namespace: r.namespace,
      secretName: r.secretName,
      certificateName: r.certificateName,
    };
    c.rows.push({ ...r, place });
  }
  return [...byKey.entries()].map(([key, { first, rows: all }]) => {
    const watched = all.filter((r) => !r.ignored);
    const counted = (watched.length ? watched : all).sort((a, b) => byPlace(a.place, b.place));
    const apps = new Set<string>();
    const dns = new Set<string>();
    for (const r of counted) {
      for (const a of r.applicationIds) apps.add(a);
      for (const d of r.dnsNames) dns.add(d);
    }
    return {
      key,
      id: certIdOf(key),
      serial: first.serial.toUpperCase(),
      issuer: first.issuer,
      commonName: all.find((r) => r.commonName !== null)?.commonName ?? null,
      notBefore: all.find((r) => typeof r.notBefore === 'number')?.notBefore ?? null,
      notAfter: Math.min(...all.map((r) => r.notAfter)),
      applicationIds: [...apps].sort(),
      places: counted.map((r) => r.place),
      dnsNames: [...dns].slice(0, MAX_DNS_NAMES),
      ignored: !watched.length,
      expiryThresholds: counted.find((r) => r.expiryThresholds?.length)?.expiryThresholds ?? null,
      runbookUrl: counted.find((r) => r.runbookUrl)?.runbookUrl ?? null,
    };
  });
}

/**
 * Which rows of a page (in notAfter order) to evaluate now, and where the next page starts (null: this was the
 * last). A certificate's copies share its notAfter, so a full page is cut before its last notAfter, which then
 * begins the next page: a certificate's places are never split across pages. Only when one notAfter fills the
 * whole page is it taken as it is.
 */
export function cutPage(
  rows: readonly ExpiryInventoryRow[],
  pageSize: number,
): { take: readonly ExpiryInventoryRow[]; next: ExpiryCursor | null } {
  const last = rows[rows.length - 1];
  if (rows.length < pageSize || !last) return { take: rows, next: null };
  const head = rows.filter((r) => r.notAfter < last.notAfter);
  const take = head.length ? head : rows;
  const end = take[take.length - 1]!;
  return { take, next: { notAfter: end.notAfter, clusterId: end.clusterId, namespace: end.namespace, secretName: end.secretName } };
}
