/**
 * What the inventory keeps of a TLS Secret, pure: the informer's transform turns each listed or watched Secret
 * into `TlsSecretFacts` (the X.509 facts of `tls.crt`, parsed once, and the few metadata fields the report
 * needs), so neither the private key nor the certificate bytes outlive the parse. `certificateFactsOf` joins
 * them with the cert-manager Certificate that manages the Secret into the wire's CertificateFacts.
 */
import { X509Certificate } from 'node:crypto';
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import { INVENTORY_LIMITS as L, type CertificateFacts, type CertificateLocation } from '../../model/inventory.js';
import { sanitizeText } from '../../events/sanitize.js';
import type { CertManagerObject } from '../health/condition.js';
import { commonNameOf, dnLines, dnsNamesOf } from './x509.js';
import { derFacts, pemBody, type DerFacts } from './der.js';
import { POLICY_ANNOTATIONS, resourcePolicyOf } from '../policy.js';
import { runbookUrlProblem } from '../../validation/formats.js';
import { isExpiryThreshold } from '../../model/expiry-thresholds.js';
import { intern, lastBuilt, share } from '../intern.js';

export const CERTIFICATE_NAME_ANNOTATION = 'cert-manager.io/certificate-name';
/** The Secret type the TLS Secret informer lists (a field selector: other Secrets never reach the agent). */
export const TLS_SECRET_TYPE = 'kubernetes.io/tls';
/** The one data key of a TLS Secret the transform reads: the informer's list reads no other (never `tls.key`). */
export const READ_TLS_DATA: readonly string[] = ['tls.crt'];
/** Annotation (on the Secret, or on its cert-manager Certificate) listing application ids, comma separated. */
const APPLICATION_IDS_ANNOTATION = 'notify.certmgr.io/application-ids';
/** tls.crt larger than this is not parsed (a chain is a few KiB; the API server allows 1 MiB Secrets) */
const MAX_CHAIN_BYTES = 256 * 1024;
/** certificates of one chain looked at for chainNotAfter */
const MAX_CHAIN_CERTS = 16;

/** The X.509 facts of one `tls.crt`. */
export interface ParsedChain {
  serial: string;
  notBefore: string;
  notAfter: string;
  subject: string;
  commonName?: string | undefined;
  dnsNames: string[];
  issuer: string;
  chainNotAfter: string;
}

/** The cached form of a TLS Secret: metadata the report needs and the parsed chain (null: none parsable). */
export interface TlsSecretFacts extends KubernetesObject {
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    /** only the annotations the inventory and the health policy read */
    annotations?: Record<string, string>;
  };
  chain: ParsedChain | null;
}

const PEM_CERTS = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * notAfter of the chain's other certificates by their PEM text: a cluster's Secrets mostly carry the same few
 * intermediates, and parsing one is costly. Bounded; cleared when full.
 */
const intermediateNotAfter = new Map<string, number>();
const MAX_CACHED_INTERMEDIATES = 1_000;

function notAfterOfIntermediate(pem: string): number | undefined {
  const hit = intermediateNotAfter.get(pem);
  if (hit !== undefined) return hit;
  let t = derFacts(pemBody(pem))?.notAfter;
  if (t === undefined)
    try {
      t = new X509Certificate(pem).validToDate.getTime();
    } catch {
      return undefined; // an unparsable intermediate does not hide the leaf
    }
  if (intermediateNotAfter.size >= MAX_CACHED_INTERMEDIATES) intermediateNotAfter.clear();
  intermediateNotAfter.set(pem, t);
  return t;
}

/**
 * A leaf's facts (PEM, or DER as a TLS peer sends it): read from the DER bytes (der.ts) when that is certain,
 * else by OpenSSL; null: unparsable.
 */
export function leafFacts(cert: string | Uint8Array): DerFacts | null {
  const fast = derFacts(typeof cert === 'string' ? pemBody(cert) : cert);
  if (fast) return fast;
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch {
    return null;
  }
  return {
    serial: leaf.serialNumber.toUpperCase(),
    notBefore: leaf.validFromDate.getTime(),
    notAfter: leaf.validToDate.getTime(),
    subject: dnLines(leaf.subject),
    issuer: dnLines(leaf.issuer),
    dnsNames: dnsNamesOf(leaf.subjectAltName),
  };
}

/** The leaf (first certificate) of a PEM bundle with the earliest notAfter of every parsable certificate in it. */
export function parseChain(pem: string): ParsedChain | null {
  const c = compactChain(pem);
  return c ? chainView(c) : null;
}

/** A compact chain as ParsedChain: its times as ISO strings. */
function chainView(c: CompactChain): ParsedChain {
  return {
    serial: c.serial,
    notBefore: iso(c.notBefore),
    notAfter: iso(c.notAfter),
    subject: c.subject,
    commonName: c.commonName,
    dnsNames: c.dnsNames as string[],
    issuer: c.issuer,
    chainNotAfter: iso(c.chainNotAfter),
  };
}

/** ParsedChain with its times as numbers (its strings are built when read). */
interface CompactChain {
  serial: string;
  notBefore: number;
  notAfter: number;
  subject: string;
  commonName: string | undefined;
  dnsNames: readonly string[];
  issuer: string;
  chainNotAfter: number;
}

/**
 * The cached form of a TLS Secret, one flat object: client-node's nested form of the same fields (metadata,
 * annotations, chain, its ISO strings) is several times larger. `metadata` and `chain` are built
 * when read; labels and the policy annotations, alike on many Secrets, are one shared frozen copy. No uid: the
 * report identifies a Secret by namespace and name (a Certificate's uid is its own record's).
 */
class TlsSecretRecord implements TlsSecretFacts {
  constructor(
    private readonly name: string,
    private readonly namespace: string,
    private readonly resourceVersion: string | undefined,
    private readonly labels: Readonly<Record<string, string>> | undefined,
    /** cert-manager.io/certificate-name, kept apart: its value differs on every Secret */
    private readonly certificateName: string | undefined,
    /** the other annotations kept */
    private readonly otherAnnotations: Readonly<Record<string, string>> | undefined,
    private readonly parsed: CompactChain | null,
  ) {}

  get apiVersion(): string {
    return 'v1';
  }

  get kind(): string {
    return 'Secret';
  }

  /** Built when read, frozen, and the last one kept (lastBuilt: read several times in a row, as CertManagerRecord's). */
  get metadata(): TlsSecretFacts['metadata'] {
    return TlsSecretRecord.metadataOf(this);
  }

  private static readonly metadataOf = lastBuilt((r: TlsSecretRecord) => {
    const annotations =
      r.certificateName !== undefined
        ? Object.freeze({ [CERTIFICATE_NAME_ANNOTATION]: r.certificateName, ...r.otherAnnotations })
        : r.otherAnnotations;
    const md: TlsSecretFacts['metadata'] = { name: r.name, namespace: r.namespace };
    if (r.resourceVersion !== undefined) md.resourceVersion = r.resourceVersion;
    if (r.labels) md.labels = r.labels;
    if (annotations) md.annotations = annotations;
    return md;
  });

  get chain(): ParsedChain | null {
    return this.parsed ? chainView(this.parsed) : null;
  }

  toJSON(): TlsSecretFacts {
    return { apiVersion: this.apiVersion, kind: this.kind, metadata: this.metadata, chain: this.chain };
  }
}

/**
 * parseChain's reading with its times as numbers, as the cache keeps them (no ISO strings formatted per Secret
 * only to be parsed back).
 */
function compactChain(pem: string): CompactChain | null {
  let leaf: DerFacts | null = null;
  let earliest = Infinity;
  let n = 0;
  for (const m of pem.matchAll(PEM_CERTS)) {
    if (n++ === 0) {
      leaf = leafFacts(m[0]);
      if (!leaf) return null; // the first block is the leaf (cert-manager writes it first)
      earliest = leaf.notAfter;
      continue;
    }
    if (n > MAX_CHAIN_CERTS) break;
    const t = notAfterOfIntermediate(m[0]);
    if (t !== undefined && t < earliest) earliest = t;
  }
  if (!leaf) return null;
  const { notAfter, notBefore } = leaf;
  // beyond Date's range (±8.64e15 ms) a time has no ISO form: unreadable
  if (!isDateTime(notAfter) || !isDateTime(notBefore)) return null;
  const cn = commonNameOf(leaf.subject.join('\n'));
  // exactly their number (see strings() in informers.ts)
  const dnsNames = leaf.dnsNames.slice();
  return {
    serial: leaf.serial,
    notBefore,
    notAfter,
    subject: leaf.subject.join(', '),
    // usually also one of the DNS names: one string for both
    commonName: cn !== undefined ? (dnsNames.find((d) => d === cn) ?? cn) : undefined,
    dnsNames,
    // shared by every certificate of one issuer (and intermediate)
    issuer: intern(leaf.issuer.join(', ')),
    chainNotAfter: earliest,
  };
}

const isDateTime = (ms: number): boolean => Number.isFinite(ms) && Math.abs(ms) <= 8.64e15;

/** The annotations of a TLS Secret that are kept besides cert-manager.io/certificate-name. */
const OTHER_KEPT_ANNOTATIONS = [APPLICATION_IDS_ANNOTATION, ...POLICY_ANNOTATIONS];

/**
 * The TLS Secret informer's transform: only `tls.crt` is read (decoded, parsed, dropped); every other data key,
 * `tls.key` included, is never looked at and never kept.
 */
export function tlsSecretFacts(s: V1Secret): TlsSecretFacts {
  const md = s.metadata ?? {};
  const b64 = s.data?.['tls.crt'];
  let chain: CompactChain | null = null;
  if (typeof b64 === 'string' && b64.length <= (MAX_CHAIN_BYTES * 4) / 3 + 4)
    chain = compactChain(Buffer.from(b64, 'base64').toString('utf8'));
  let others: Record<string, string> | undefined;
  for (const k of OTHER_KEPT_ANNOTATIONS) {
    const v = md.annotations?.[k];
    if (v !== undefined) (others ??= {})[k] = v;
  }
  return new TlsSecretRecord(
    md.name ?? '',
    intern(md.namespace ?? ''),
    md.resourceVersion,
    md.labels ? share({ ...md.labels }) : undefined,
    md.annotations?.[CERTIFICATE_NAME_ANNOTATION],
    others && share(others),
    chain,
  );
}

export function locationKey(l: CertificateLocation): string {
  return `${l.namespace}/${l.secretName}`;
}

function readyOf(c: CertManagerObject | undefined): CertificateFacts['ready'] {
  const cond = c?.status?.conditions?.find((x) => x.type === 'Ready');
  if (!cond) return undefined;
  const status = cond.status === 'True' || cond.status === 'False' ? cond.status : 'Unknown';
  return { status, reason: typeof cond.reason === 'string' && cond.reason ? cond.reason : undefined };
}

function issuerRefOf(c: CertManagerObject | undefined): CertificateFacts['issuerRef'] {
  const r = c?.spec?.issuerRef;
  if (!r || typeof r.name !== 'string' || !r.name) return undefined;
  return {
    name: r.name,
    kind: typeof r.kind === 'string' && r.kind ? r.kind : undefined,
    group: typeof r.group === 'string' && r.group ? r.group : undefined,
  };
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
    spec?: { secretTemplate?: { annotations?: Record<string, string> } } | undefined;
  },
): string[] {
  const fromSecret = secretAnnotations?.[APPLICATION_IDS_ANNOTATION];
  if (fromSecret !== undefined) return parseApplicationIds(fromSecret);
  const fromCert =
    certificate?.metadata?.annotations?.[APPLICATION_IDS_ANNOTATION] ??
    certificate?.spec?.secretTemplate?.annotations?.[APPLICATION_IDS_ANNOTATION];
  return parseApplicationIds(fromCert);
}

/** The Certificate named by the Secret's annotation, when it is known; its facts join the Secret's. */
export function certificateFactsOf(s: TlsSecretFacts, certificate: CertManagerObject | undefined): CertificateFacts {
  const c = s.chain;
  const cert =
    certificate && certificate.metadata?.name === s.metadata.annotations?.[CERTIFICATE_NAME_ANNOTATION] ? certificate : undefined;
  const certificateName = s.metadata.annotations?.[CERTIFICATE_NAME_ANNOTATION];
  const issuerRef = issuerRefOf(cert);
  const ready = readyOf(cert);
  const policy = resourcePolicyOf(cert, s.metadata.annotations);
  return clampFacts({
    namespace: s.metadata.namespace,
    secretName: s.metadata.name,
    certificateName: certificateName || undefined,
    certificateUid: cert?.metadata?.uid || undefined,
    serial: c?.serial ?? null,
    notBefore: c?.notBefore ?? null,
    notAfter: c?.notAfter ?? null,
    subject: c?.subject ?? null,
    commonName: c?.commonName,
    dnsNames: c?.dnsNames ?? [],
    issuer: c?.issuer ?? null,
    issuerRef,
    ready,
    applicationIds: applicationIdsOf(s.metadata.annotations, cert),
    labels: { ...s.metadata.labels },
    chainNotAfter: c?.chainNotAfter ?? null,
    // no policy is no key on the wire (not `ignore: false`)
    ignore: policy.ignore || undefined,
    expiryThresholds: policy.expiryThresholds,
    runbookUrl: policy.runbookUrl || undefined,
  });
}

const cut = (v: string, max: number): string => sanitizeText(v, 'name', max).value;
const cutList = (vs: readonly string[], items: number, max: number): string[] => [
  ...new Set(
    vs
      .slice(0, items)
      .map((v) => cut(v, max))
      .filter(Boolean),
  ),
];

/**
 * The facts within the report's limits (INVENTORY_LIMITS) and text rules: what a cluster holds is anyone's
 * (a private CA's 500 SANs, a label or annotation with a zero-width space), and the hub refuses a whole report
 * for one field past them, so one odd Secret would stall the cluster's inventory. Lists keep their first entries,
 * strings are cut on code points, refused characters become U+FFFD (as in health events).
 */
export function clampFacts(f: CertificateFacts): CertificateFacts {
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(f.labels).slice(0, L.labels)) {
    const key = cut(k, L.labelKey);
    if (key) labels[key] = cut(v, L.labelValue);
  }
  const { expiryThresholds, runbookUrl, ...rest } = f;
  // the policy fields are parsed already (policy.ts); anything outside the hub's bounds is dropped, not cut
  const thresholds = [...new Set(expiryThresholds ?? [])].filter(isExpiryThreshold);
  return {
    ...rest,
    expiryThresholds: thresholds.length && thresholds.length <= L.expiryThresholds ? thresholds : undefined,
    runbookUrl: runbookUrl !== undefined && !runbookUrlProblem(runbookUrl) ? runbookUrl : undefined,
    certificateName: f.certificateName !== undefined ? cut(f.certificateName, L.name) : undefined,
    // a serial is hex of the DER integer (RFC 5280: at most 20 octets); longer ones keep their first digits
    serial: f.serial === null ? null : f.serial.slice(0, L.serial),
    subject: f.subject === null ? null : cut(f.subject, L.dn),
    commonName: f.commonName !== undefined ? cut(f.commonName, L.commonName) : undefined,
    dnsNames: cutList(f.dnsNames, L.dnsNames, L.dnsName),
    issuer: f.issuer === null ? null : cut(f.issuer, L.dn),
    issuerRef: f.issuerRef && {
      name: cut(f.issuerRef.name, L.name),
      kind: f.issuerRef.kind !== undefined ? cut(f.issuerRef.kind, L.issuerKind) : undefined,
      group: f.issuerRef.group !== undefined ? cut(f.issuerRef.group, L.name) : undefined,
    },
    ready: f.ready && { status: f.ready.status, reason: f.ready.reason !== undefined ? cut(f.ready.reason, L.readyReason) : undefined },
    applicationIds: cutList(f.applicationIds, L.applicationIds, L.applicationId),
    labels,
  };
}
