/** Pure: a TLS Secret → cached facts (no key, no certificate bytes) → CertificateFacts with its Certificate. */
import { X509Certificate } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { certificateFactsOf, clampFacts, parseChain, tlsSecretFacts } from '../../../src/emitter/inventory/facts.js';
import { validateInventoryReport } from '../../../src/inventory/validate.js';
import type { CertificateFacts, InventoryReport } from '../../../src/model/inventory.js';
import { certificate, ready, selfSigned } from '../fixtures.js';

const leaf = selfSigned({ cn: 'shop.example.com', dns: ['shop.example.com', 'www.shop.example.com'], days: 90, serial: '0x0A1B2C' });
const shortLived = selfSigned({ cn: 'Intermediate CA', days: 10 });
const notAfterOf = (pem: string): string => new X509Certificate(pem).validToDate.toISOString();
const b64 = (s: string): string => Buffer.from(s).toString('base64');

function secret(o: { crt?: string; annotations?: Record<string, string>; labels?: Record<string, string>; name?: string } = {}): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: {
      name: o.name ?? 'web-tls',
      namespace: 'shop',
      uid: 'u-1',
      resourceVersion: '7',
      labels: o.labels ?? { app: 'shop' },
      annotations: {
        'cert-manager.io/certificate-name': 'web-tls',
        'kubectl.kubernetes.io/last-applied-configuration': '{"big":"x"}',
        ...o.annotations,
      },
      managedFields: [{ manager: 'cert-manager' }],
    },
    data: { ...(o.crt !== undefined ? { 'tls.crt': b64(o.crt) } : {}), 'tls.key': b64(leaf.keyPem), 'ca.crt': b64(leaf.pem) },
  };
}

describe('tlsSecretFacts (the informer transform)', () => {
  it('keeps parsed facts and the two annotations read; no data key, no key material, no bookkeeping', () => {
    const f = tlsSecretFacts(secret({ crt: leaf.pem + shortLived.pem }));
    const text = JSON.stringify(f);
    expect(text).not.toContain('PRIVATE KEY');
    expect(text).not.toContain(b64(leaf.keyPem).slice(0, 40));
    expect(text).not.toContain(b64(leaf.pem).slice(0, 40)); // not even the certificate bytes
    expect(f).not.toHaveProperty('data');
    expect(f.metadata).toEqual({
      name: 'web-tls',
      namespace: 'shop',
      // no uid: nothing reads a Secret's (the report names it by namespace and name)
      resourceVersion: '7',
      labels: { app: 'shop' },
      annotations: { 'cert-manager.io/certificate-name': 'web-tls' },
    });
    expect(f.chain).toMatchObject({ serial: '0A1B2C', commonName: 'shop.example.com', notAfter: notAfterOf(leaf.pem) });
  });

  it('metadata is built when read and the last one kept: interleaved reads of two Secrets each get their own; it cannot be changed', () => {
    const a = tlsSecretFacts(secret({ crt: leaf.pem }));
    const b = tlsSecretFacts(secret({ crt: leaf.pem, name: 'other-tls', annotations: { 'cert-manager.io/certificate-name': 'other' } }));
    const first = a.metadata;
    expect(a.metadata).toBe(first);
    expect(b.metadata).toMatchObject({ name: 'other-tls', annotations: { 'cert-manager.io/certificate-name': 'other' } });
    expect(a.metadata).toEqual(first);
    expect(a.metadata.annotations).toEqual({ 'cert-manager.io/certificate-name': 'web-tls' });
    expect(Object.isFrozen(a.metadata) && Object.isFrozen(a.metadata.annotations)).toBe(true);
    expect(() => {
      (a.metadata.annotations as Record<string, string>)['x'] = 'y';
    }).toThrow(TypeError);
  });

  it.each([
    ['no tls.crt', undefined],
    ['empty tls.crt', ''],
    ['not PEM', 'hello'],
    ['a PEM block that is not a certificate', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'],
  ])('%s: chain null', (_name, crt) => {
    expect(tlsSecretFacts(secret(crt === undefined ? {} : { crt })).chain).toBeNull();
  });
});

describe('parseChain', () => {
  it('leaf facts from the first certificate; chainNotAfter the earliest of all', () => {
    const c = parseChain(leaf.pem + shortLived.pem)!;
    expect(c.serial).toBe('0A1B2C');
    expect(c.notAfter).toBe(notAfterOf(leaf.pem));
    expect(c.notAfter.endsWith('Z')).toBe(true);
    expect(c.chainNotAfter).toBe(notAfterOf(shortLived.pem));
    expect(c.dnsNames).toEqual(['shop.example.com', 'www.shop.example.com']);
    expect(c.subject).toBe('O=Example Corp, CN=shop.example.com');
    expect(c.issuer).toBe('O=Example Corp, CN=shop.example.com');
  });

  it('a leaf alone: chainNotAfter is its notAfter; a broken second block does not hide the leaf', () => {
    expect(parseChain(leaf.pem)!.chainNotAfter).toBe(notAfterOf(leaf.pem));
    expect(parseChain(leaf.pem + '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')!.chainNotAfter).toBe(
      notAfterOf(leaf.pem),
    );
  });
});

describe('certificateFactsOf', () => {
  const facts = tlsSecretFacts(
    secret({ crt: leaf.pem, labels: { team: 'a' }, annotations: { 'notify.certmgr.io/application-ids': 'app-1, app-2' } }),
  );
  const cert = certificate({ name: 'web-tls', uid: 'c-uid', conditions: [ready('False', 0, 'Failed')] });

  it.each([
    {
      name: 'with its Certificate',
      secret: facts,
      cert,
      want: {
        certificateName: 'web-tls',
        certificateUid: 'c-uid',
        issuerRef: { name: 'letsencrypt-prod', kind: 'ClusterIssuer', group: 'cert-manager.io' },
        ready: { status: 'False', reason: 'Failed' },
        applicationIds: ['app-1', 'app-2'],
      },
    },
    {
      name: 'Certificate not (yet) cached: the name from the annotation only',
      secret: facts,
      cert: undefined,
      want: { certificateName: 'web-tls', applicationIds: ['app-1', 'app-2'] },
    },
    {
      name: 'application ids from the Certificate when the Secret has none',
      secret: tlsSecretFacts(secret({ crt: leaf.pem })),
      cert: { ...cert, metadata: { ...cert.metadata, annotations: { 'notify.certmgr.io/application-ids': 'from-cert' } } },
      want: { applicationIds: ['from-cert'] },
    },
    {
      name: 'a Certificate of another name is not joined',
      secret: facts,
      cert: certificate({ name: 'other', uid: 'x' }),
      want: { certificateName: 'web-tls', applicationIds: ['app-1', 'app-2'] },
      absent: ['certificateUid', 'issuerRef', 'ready'],
    },
  ])('$name', ({ secret: s, cert: c, want, absent }) => {
    const f = certificateFactsOf(s, c);
    expect(f).toMatchObject({
      namespace: 'shop',
      secretName: 'web-tls',
      serial: '0A1B2C',
      notAfter: notAfterOf(leaf.pem),
      commonName: 'shop.example.com',
      labels: s.metadata.labels,
      ...want,
    });
    // as the report carries them (JSON): an unset field is no key
    const sent = JSON.parse(JSON.stringify(f)) as object;
    for (const k of absent ?? []) expect(sent).not.toHaveProperty(k);
  });

  it('no parsable certificate: nulls and empty lists, still a row', () => {
    const f = certificateFactsOf(tlsSecretFacts(secret({ crt: 'junk' })), undefined);
    expect(f).toMatchObject({
      serial: null,
      notBefore: null,
      notAfter: null,
      subject: null,
      issuer: null,
      chainNotAfter: null,
      dnsNames: [],
    });
  });
});

describe('clampFacts: one odd Secret never makes the hub refuse a report', () => {
  const base = certificateFactsOf(tlsSecretFacts(secret({ crt: leaf.pem })), undefined);
  const report = (f: CertificateFacts): InventoryReport => ({
    protocol: 1,
    cluster: { id: '5b0e7c1e-7c5f-4f55-9a37-1f4b8f2f6f11', name: 'c' },
    agentVersion: 'test',
    epoch: '0f6c9d2a-1c2b-4a4b-8c9d-0e1f2a3b4c5d',
    seq: 1,
    kind: 'snapshot',
    final: true,
    upserts: [f],
    deletes: [],
  });
  const hostile: [string, Partial<CertificateFacts>][] = [
    ['500 SAN DNS names (a private CA)', { dnsNames: Array.from({ length: 500 }, (_, i) => `h${i}.example.com`) }],
    ['a 300-character DNS name', { dnsNames: ['a'.repeat(300)] }],
    ['70 labels', { labels: Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`k${i}`, 'v'])) }],
    ['a label value of 100 characters and a zero-width space in a key', { labels: { 'te\u200bam': 'v'.repeat(100) } }],
    ['an application id of 300 characters with a zero-width space', { applicationIds: ['app\u200b' + 'x'.repeat(300)] }],
    ['150 application ids', { applicationIds: Array.from({ length: 150 }, (_, i) => `app-${i}`) }],
    ['a 2,000-character subject with a bidi override', { subject: 'CN=\u202e' + 'x'.repeat(2000) }],
    ['a 300-character common name', { commonName: 'c'.repeat(300) }],
    ['a serial of 80 hex digits', { serial: 'A'.repeat(80) }],
    ['a Ready reason of 5,000 characters with a newline', { ready: { status: 'False', reason: 'r\n'.repeat(2500) } }],
    // per-resource policy: dropped (not cut) when outside the hub's bounds
    ['four expiry thresholds', { expiryThresholds: [30, 14, 7, 1] }],
    ['an expiry threshold of 0 days and a repeated one', { expiryThresholds: [7, 7, 0] }],
    ['shares out of bounds or not canonical', { expiryThresholds: ['100%', '0%', '33.3%', '033%', '33%'] }],
    ['a runbook URL of 3,000 characters', { runbookUrl: `https://wiki.example/${'x'.repeat(3000)}` }],
    ['a javascript: runbook URL', { runbookUrl: 'javascript:alert(1)' }],
  ];
  it.each(hostile)('%s: refused as read, accepted once clamped', (_name, patch) => {
    const raw = { ...base, ...patch };
    expect(validateInventoryReport(report(raw)).ok).toBe(false);
    const v = validateInventoryReport(report(clampFacts(raw)));
    expect(v.ok ? [] : v.errors).toEqual([]);
  });

  it('certificateFactsOf clamps what it reads (70 labels on the Secret → 64 reported)', () => {
    const labels = Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`k${i}`, 'v']));
    const f = certificateFactsOf(tlsSecretFacts(secret({ crt: leaf.pem, labels })), undefined);
    expect(Object.keys(f.labels)).toHaveLength(64);
    expect(validateInventoryReport(report(f)).ok).toBe(true);
  });

  it('keeps what is within the limits unchanged', () => {
    expect(clampFacts(base)).toEqual(base);
    const policy = { ...base, ignore: true, expiryThresholds: [3650, 2, 1], runbookUrl: 'https://wiki.example/tls' };
    expect(clampFacts(policy)).toEqual(policy);
    const shares: CertificateFacts = { ...base, expiryThresholds: [14, '33%', '1%'] };
    expect(clampFacts(shares)).toEqual(shares);
  });
});

describe('per-resource policy in the facts (docs/annotations.md)', () => {
  const IG = 'notify.certmgr.io/ignore';
  const TH = 'notify.certmgr.io/expiry-thresholds';
  const RB = 'notify.certmgr.io/runbook-url';

  it('the informer transform keeps the three policy annotations (and nothing else new)', () => {
    const f = tlsSecretFacts(secret({ crt: leaf.pem, annotations: { [IG]: 'true', [TH]: '7', [RB]: 'https://a.example/', other: 'x' } }));
    expect(f.metadata.annotations).toEqual({
      'cert-manager.io/certificate-name': 'web-tls',
      [IG]: 'true',
      [TH]: '7',
      [RB]: 'https://a.example/',
    });
  });

  it.each<[string, Record<string, string>, Record<string, string>, Partial<CertificateFacts>]>([
    ['none', {}, {}, {}],
    [
      'on the Secret',
      { [IG]: 'true', [TH]: '1,7,3', [RB]: 'https://wiki.example/tls' },
      {},
      { ignore: true, expiryThresholds: [7, 3, 1], runbookUrl: 'https://wiki.example/tls' },
    ],
    ['on the Certificate', {}, { [TH]: '14', [RB]: 'https://c.example/' }, { expiryThresholds: [14], runbookUrl: 'https://c.example/' }],
    ['the Secret wins', { [TH]: '2' }, { [TH]: '14', [IG]: 'true' }, { expiryThresholds: [2], ignore: true }],
    ['bad values are not sent', { [TH]: '0,1', [RB]: 'ftp://x.example/' }, { [IG]: 'nope' }, {}],
    ['shares of the lifetime, sorted', { [TH]: '10%, 33%' }, {}, { expiryThresholds: ['33%', '10%'] }],
    ['days and shares', {}, { [TH]: '33%,3' }, { expiryThresholds: [3, '33%'] }],
    ['a share out of bounds is not sent', { [TH]: '150%' }, {}, {}],
  ])('%s', (_name, onSecret, onCert, want) => {
    const c = certificate();
    const cert = { ...c, metadata: { ...c.metadata, annotations: onCert } };
    const f = certificateFactsOf(tlsSecretFacts(secret({ crt: leaf.pem, annotations: onSecret })), cert);
    expect({ ignore: f.ignore, expiryThresholds: f.expiryThresholds, runbookUrl: f.runbookUrl }).toEqual({
      ignore: undefined,
      expiryThresholds: undefined,
      runbookUrl: undefined,
      ...want,
    });
  });
});
