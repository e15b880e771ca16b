/**
 * The DER fast path (der.ts) against node:crypto's X509Certificate: for every certificate, parseChain gives what
 * the OpenSSL reading gives (through the same x509.ts helpers), whether the fast path answered or fell back.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { derFacts, pemBody } from '../../../src/emitter/inventory/der.js';
import { parseChain } from '../../../src/emitter/inventory/facts.js';
import { commonNameOf, dnLines, dnsNamesOf } from '../../../src/emitter/inventory/x509.js';

const dir = mkdtempSync(join(tmpdir(), 'cmn-der-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let seq = 0;

function cert(o: { subj: string; san?: string; days?: number; serial?: string; key?: string[]; extra?: string[] }): string {
  const out = join(dir, `c${seq++}.pem`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      ...(o.key ?? ['ec', '-pkeyopt', 'ec_paramgen_curve:P-256']),
      '-nodes',
      '-keyout',
      join(dir, 'k.pem'),
      '-out',
      out,
      '-days',
      String(o.days ?? 90),
      '-utf8',
      '-multivalue-rdn',
      '-subj',
      o.subj,
      ...(o.san ? ['-addext', `subjectAltName=${o.san}`] : []),
      ...(o.serial ? ['-set_serial', o.serial] : []),
      ...(o.extra ?? []),
    ],
    { stdio: 'pipe' },
  );
  return readFileSync(out, 'utf8');
}

/** What parseChain gave before der.ts: every field through X509Certificate. */
function reference(pem: string) {
  const x = new X509Certificate(pem);
  const subject = dnLines(x.subject).join(', ');
  const cn = commonNameOf(x.subject);
  return {
    serial: x.serialNumber.toUpperCase(),
    notBefore: x.validFromDate.toISOString(),
    notAfter: x.validToDate.toISOString(),
    subject,
    ...(cn !== undefined ? { commonName: cn } : {}),
    dnsNames: dnsNamesOf(x.subjectAltName),
    issuer: dnLines(x.issuer).join(', '),
    chainNotAfter: x.validToDate.toISOString(),
  };
}

const cases: [string, () => string, boolean][] = [
  [
    'cert-manager-like leaf, EC',
    () => cert({ subj: '/O=Example Corp/CN=shop.example.com', san: 'DNS:shop.example.com,DNS:*.shop.example.com' }),
    true,
  ],
  [
    'RSA, many attribute types',
    () => cert({ subj: '/C=DE/ST=Berlin/L=Berlin/O=Ex Org/OU=Ops/CN=a.example.com/emailAddress=ops@example.com', key: ['rsa:2048'] }),
    true,
  ],
  ['DC components and serialNumber', () => cert({ subj: '/DC=com/DC=example/serialNumber=42/CN=dc' }), true],
  ['no subject CN, IP and DNS names', () => cert({ subj: '/O=NoCN', san: 'IP:10.0.0.1,DNS:x.example.com,IP:::1' }), true],
  ['serial with the high bit set (DER adds a 00)', () => cert({ subj: '/CN=s', serial: '0x80FF' }), true],
  ['serial 1', () => cert({ subj: '/CN=s', serial: '1' }), true],
  ['long serial', () => cert({ subj: '/CN=s', serial: '0x0102030405060708090A0B0C0D0E0F1011121314' }), true],
  ['notAfter after 2049 (GeneralizedTime)', () => cert({ subj: '/CN=far', days: 40_000 }), true],
  ['a comma in a value (escaped by OpenSSL)', () => cert({ subj: '/O=Example\\, Inc./CN=c' }), false],
  ['a non-ASCII value', () => cert({ subj: '/O=Bäckerei Müller/CN=b' }), false],
  ['a multi-valued RDN', () => cert({ subj: '/O=Ex/CN=a+UID=b' }), false],
  ['an email and a URI SAN', () => cert({ subj: '/CN=e', san: 'email:a@example.com,URI:https://example.com/DNS:x' }), false],
  ['a DNS name with an unusual character', () => cert({ subj: '/CN=u', san: 'DNS:we ird.example.com' }), false],
  ['an unknown attribute type', () => cert({ subj: '/CN=x/pseudonym=p' }), false],
  ['leading space in a value', () => cert({ subj: '/O= lead/CN=x' }), false],
];

describe('derFacts: the same facts as X509Certificate, or no answer', () => {
  it.each(cases)('%s', (_name, make, fast) => {
    const pem = make();
    const facts = parseChain(pem);
    expect(facts).toEqual(reference(pem));
    // whether the fast path answered (else OpenSSL did): both give the reference above
    expect(derFacts(pemBody(pem)) !== undefined).toBe(fast);
  });

  it('malformed or truncated DER: no answer, no throw (OpenSSL then rejects it)', () => {
    const der = pemBody(cert({ subj: '/CN=t', san: 'DNS:t.example.com' }));
    expect(derFacts(der)).toBeDefined();
    for (let cut = 0; cut < der.length; cut += 7) expect(derFacts(der.subarray(0, cut))).toBeUndefined();
    const extra = Buffer.concat([der, Buffer.from([0])]);
    expect(derFacts(extra)).toBeUndefined();
    for (let i = 0; i < 64; i++) {
      const flipped = Buffer.from(der);
      const at = (i * 37) % der.length;
      flipped[at] = flipped[at]! ^ 0xff;
      expect(() => derFacts(flipped)).not.toThrow();
    }
  });
});
