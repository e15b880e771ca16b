/**
 * The leaf certificate of a TLS Secret (`tls.crt`, PEM, leaf first as cert-manager writes it), read with
 * node:crypto's X509Certificate. Pure apart from the parsing.
 */
import { X509Certificate } from 'node:crypto';

export interface LeafCertificate {
  /** hex, upper case, as openssl prints it */
  serialNumber: string;
  notBefore: number;
  notAfter: number;
  /** distinguished names, one line: `CN=example.com, O=Example` */
  subject: string;
  issuer: string;
  commonName?: string;
  dnsNames: string[];
  /** SHA-256 of the DER, hex */
  sha256: string;
  /** a UUID derived from the SHA-256 fingerprint: the certificate's id in expiration messages */
  id: string;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;

/** An RFC 9562 version-8 (custom) UUID from the first 128 bits of a hex digest. */
export function uuidFromHex(hex: string): string {
  const h = hex
    .replace(/[^0-9a-f]/gi, '')
    .toLowerCase()
    .padEnd(32, '0');
  const variant = ((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16).padStart(2, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

export function oneLine(dn: string): string {
  return dn
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean)
    .join(', ');
}

export function commonNameOf(dn: string): string | undefined {
  for (const part of dn.split('\n')) {
    const m = /^CN=(.*)$/.exec(part.trim());
    if (m) return m[1];
  }
  return undefined;
}

/** DNS names of a subjectAltName string (`DNS:a, DNS:b, IP Address:1.2.3.4`); quoted values are unquoted. */
export function dnsNamesOf(san: string | undefined): string[] {
  if (!san) return [];
  const out: string[] = [];
  for (const m of san.matchAll(/DNS:("(?:[^"\\]|\\.)*"|[^,]*)/g)) {
    let v = (m[1] ?? '').trim();
    if (v.startsWith('"')) {
      try {
        v = JSON.parse(v) as string;
      } catch {
        v = v.slice(1, -1);
      }
    }
    if (v) out.push(v);
  }
  return out;
}

/** The first certificate of a PEM bundle, or undefined when there is none or it does not parse. */
export function parseLeafCertificate(pem: string | Buffer): LeafCertificate | undefined {
  const text = typeof pem === 'string' ? pem : pem.toString('utf8');
  const block = PEM_CERT.exec(text)?.[0];
  if (!block) return undefined;
  let x: X509Certificate;
  try {
    x = new X509Certificate(block);
  } catch {
    return undefined;
  }
  const notAfter = x.validToDate?.getTime() ?? Date.parse(x.validTo);
  const notBefore = x.validFromDate?.getTime() ?? Date.parse(x.validFrom);
  if (!Number.isFinite(notAfter)) return undefined;
  const sha256 = x.fingerprint256.replace(/:/g, '').toLowerCase();
  const cn = commonNameOf(x.subject);
  return {
    serialNumber: x.serialNumber.toUpperCase(),
    notBefore,
    notAfter,
    subject: oneLine(x.subject),
    issuer: oneLine(x.issuer),
    ...(cn !== undefined ? { commonName: cn } : {}),
    dnsNames: dnsNamesOf(x.subjectAltName),
    sha256,
    id: uuidFromHex(sha256),
  };
}
