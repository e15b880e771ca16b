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

  it('what OpenSSL refuses is not read by the fast path either (an unknown TBS member, unused signature bits, junk in the PEM)', () => {
    const pem = cert({ subj: '/CN=m', san: 'DNS:m.example.com' });
    const der = pemBody(pem);
    expect(derFacts(der)).toBeDefined();
    const top = children(der, 0, der.length);
    const tbs = children(der, top[0]!.start, top[0]!.end)[0]!;
    const tbsMembers = children(der, tbs.start, tbs.end);
    const exts = tbsMembers[tbsMembers.length - 1]!;
    expect(der[exts.at]).toBe(0xa3);
    const sig = children(der, top[0]!.start, top[0]!.end)[2]!;
    expect(der[sig.at]).toBe(0x03);
    const mutants: [string, Buffer | string][] = [
      ['extensions tagged [5]', patch(der, exts.at, 0xa5)],
      ['extensions tagged OCTET STRING', patch(der, exts.at, 0x04)],
      ['9 unused bits in the signature', patch(der, sig.start, 9)],
      ['a junk line in the base64', pem.replace(/\n(?=[A-Za-z0-9+/])/, '\n!!!!\n')],
    ];
    for (const [what, m] of mutants) {
      const text = typeof m === 'string' ? m : toPem(m);
      expect(() => new X509Certificate(text), what).toThrow();
      expect(derFacts(pemBody(text)), what).toBeUndefined();
      expect(parseChain(text), what).toBeNull();
    }
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

/** The TLVs directly inside [start, end): tag position, content start and end (short and long lengths). */
function children(b: Buffer, start: number, end: number): { at: number; start: number; end: number }[] {
  const out: { at: number; start: number; end: number }[] = [];
  for (let at = start; at < end;) {
    let len = b[at + 1]!;
    let c = at + 2;
    if (len & 0x80) {
      const n = len & 0x7f;
      len = 0;
      for (let i = 0; i < n; i++) len = len * 256 + b[c + i]!;
      c += n;
    }
    out.push({ at, start: c, end: c + len });
    at = c + len;
  }
  return out;
}

function patch(der: Buffer, at: number, value: number): Buffer {
  const copy = Buffer.from(der);
  copy[at] = value;
  return copy;
}

function toPem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
