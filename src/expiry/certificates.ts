/**
 * Inventory rows → certificates for expiry, pure: rows of the same issuer DN and serial are one certificate,
 * served from several places (Secrets, clusters).
 */
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
  notAfter: number;
  /** union over its places, sorted */
  applicationIds: string[];
  /** sorted by cluster, namespace, Secret */
  places: CertificatePlace[];
}

const byPlace = (a: CertificatePlace, b: CertificatePlace): number =>
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
 */
export function groupCertificates(rows: readonly ExpiryInventoryRow[]): ExpiryCertificate[] {
  const byKey = new Map<string, ExpiryCertificate & { apps: Set<string> }>();
  for (const r of rows) {
    const key = certKey(r.issuer, r.serial);
    let c = byKey.get(key);
    if (!c) {
      c = {
        key,
        id: certIdOf(key),
        serial: r.serial.toUpperCase(),
        issuer: r.issuer,
        commonName: r.commonName,
        notAfter: r.notAfter,
        applicationIds: [],
        places: [],
        apps: new Set(),
      };
      byKey.set(key, c);
    }
    c.notAfter = Math.min(c.notAfter, r.notAfter);
    c.commonName ??= r.commonName;
    for (const a of r.applicationIds) c.apps.add(a);
    c.places.push({
      clusterId: r.clusterId,
      clusterName: r.clusterName,
      namespace: r.namespace,
      secretName: r.secretName,
      certificateName: r.certificateName,
    });
  }
  return [...byKey.values()].map(({ apps, ...c }) => ({ ...c, applicationIds: [...apps].sort(), places: c.places.sort(byPlace) }));
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
