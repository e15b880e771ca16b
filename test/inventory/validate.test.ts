import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INVENTORY_LIMITS as L } from '../../src/model/inventory.js';
import { validateInventoryReport } from '../../src/inventory/validate.js';
import { MAX_INVENTORY_ITEMS_PER_REPORT, type CertificateFacts, type InventoryReport } from '../../src/model/inventory.js';
import { SERVING_LIMITS as S, type ServingEndpointFacts } from '../../src/model/serving.js';

const CLUSTER = '123E4567-E89B-42D3-A456-426614174000';
const EPOCH = '123e4567-e89b-42d3-a456-426614174001';

function facts(i = 0): CertificateFacts {
  return {
    namespace: 'web',
    secretName: `tls-${i}`,
    certificateName: `tls-${i}`,
    certificateUid: 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE',
    serial: '0A1B',
    notBefore: '2026-01-01T00:00:00Z',
    notAfter: '2026-04-01T00:00:00.5Z',
    subject: 'CN=a.example, O=Example',
    commonName: 'a.example',
    dnsNames: ['a.example'],
    issuer: 'CN=CA',
    issuerRef: { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
    ready: { status: 'True', reason: 'Ready' },
    applicationIds: ['app'],
    labels: { 'app.kubernetes.io/name': 'web' },
    chainNotAfter: null,
  };
}

function good(): InventoryReport {
  return {
    protocol: 1,
    cluster: { id: CLUSTER, name: 'prod' },
    agentVersion: '1.2.3',
    epoch: EPOCH,
    seq: 1,
    kind: 'snapshot',
    final: true,
    upserts: [facts(0), facts(1)],
    deletes: [{ namespace: 'web', secretName: 'gone' }],
  };
}

function endpoint(over: Partial<ServingEndpointFacts> = {}): ServingEndpointFacts {
  return {
    host: 'a.example',
    address: '203.0.113.7:443',
    source: { kind: 'Ingress', namespace: 'web', name: 'shop' },
    status: 'stale',
    servedSerial: '0A1A',
    servedNotAfter: '2026-03-01T00:00:00Z',
    checkedAt: '2026-02-20T10:00:00.25Z',
    ...over,
  };
}

/** The report with one change at upserts[1] (or the top), and the fields the answer names. */
function fieldsOf(mutate: (r: InventoryReport & Record<string, unknown>, u: CertificateFacts & Record<string, unknown>) => void): string[] {
  const r = good() as InventoryReport & Record<string, unknown>;
  mutate(r, r.upserts[1] as CertificateFacts & Record<string, unknown>);
  const v = validateInventoryReport(r);
  if (v.ok) return [];
  for (const e of v.errors) expect(e.message.startsWith(e.field || 'report'), e.message).toBe(true);
  return v.errors.map((e) => e.field);
}

const x = (n: number) => 'x'.repeat(n);

describe('validateInventoryReport', () => {
  it('accepts a full report; canonical UUIDs are lower-cased', () => {
    const v = validateInventoryReport(good());
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    expect(v.report.cluster.id).toBe(CLUSTER.toLowerCase());
    expect(v.report.upserts[0]!.certificateUid).toBe('aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee');
  });

  it('accepts the limits exactly and nulls where the X.509 could not be parsed', () => {
    expect(
      fieldsOf((r, u) => {
        r.cluster.name = x(L.name);
        u.namespace = x(L.namespace);
        u.secretName = x(L.name);
        u.dnsNames = Array.from({ length: L.dnsNames }, () => x(L.dnsName));
        u.applicationIds = Array.from({ length: L.applicationIds }, () => x(L.applicationId));
        u.labels = Object.fromEntries(Array.from({ length: L.labels }, (_, i) => [`${i}`.padEnd(L.labelKey, 'k'), x(L.labelValue)]));
        u.subject = x(L.dn);
        Object.assign(u, { serial: null, notBefore: null, notAfter: null, subject: null, issuer: null, chainNotAfter: null });
      }),
    ).toEqual([]);
  });

  // every bounded field refused one past its bound, with its path
  const cases: [string, (r: InventoryReport & Record<string, unknown>, u: CertificateFacts & Record<string, unknown>) => void, string][] = [
    ['cluster.id not a UUID', (r) => (r.cluster.id = 'prod'), 'cluster.id'],
    ['cluster.id the nil UUID', (r) => (r.cluster.id = '00000000-0000-0000-0000-000000000000'), 'cluster.id'],
    ['cluster.name too long', (r) => (r.cluster.name = x(L.name + 1)), 'cluster.name'],
    ['cluster.name empty', (r) => (r.cluster.name = ''), 'cluster.name'],
    ['agentVersion too long', (r) => (r.agentVersion = x(L.agentVersion + 1)), 'agentVersion'],
    ['epoch in braces', (r) => (r.epoch = `{${EPOCH}}`), 'epoch'],
    ['seq 0', (r) => (r.seq = 0), 'seq'],
    ['seq fractional', (r) => (r.seq = 1.5), 'seq'],
    ['kind unknown', (r) => ((r as Record<string, unknown>).kind = 'full'), 'kind'],
    ['protocol 2', (r) => ((r as Record<string, unknown>).protocol = 2), 'protocol'],
    ['unknown top-level field', (r) => (r.privateKey = 'x'), 'privateKey'],
    ['unknown certificate field (a private key)', (_r, u) => (u.privateKey = '-----BEGIN'), 'upserts[1].privateKey'],
    ['namespace too long', (_r, u) => (u.namespace = x(L.namespace + 1)), 'upserts[1].namespace'],
    ['secretName too long', (_r, u) => (u.secretName = x(L.name + 1)), 'upserts[1].secretName'],
    ['certificateName too long', (_r, u) => (u.certificateName = x(L.name + 1)), 'upserts[1].certificateName'],
    ['certificateUid not a UUID', (_r, u) => (u.certificateUid = 'abc'), 'upserts[1].certificateUid'],
    ['serial not hex upper case', (_r, u) => (u.serial = '0a1b'), 'upserts[1].serial'],
    ['serial too long', (_r, u) => (u.serial = 'A'.repeat(L.serial + 1)), 'upserts[1].serial'],
    ['notBefore without zone', (_r, u) => (u.notBefore = '2026-01-01T00:00:00'), 'upserts[1].notBefore'],
    ['notAfter with an offset', (_r, u) => (u.notAfter = '2026-01-01T00:00:00+01:00'), 'upserts[1].notAfter'],
    ['notAfter as epoch ms', (_r, u) => ((u as Record<string, unknown>).notAfter = 1767225600000), 'upserts[1].notAfter'],
    ['chainNotAfter not a date', (_r, u) => (u.chainNotAfter = 'soon'), 'upserts[1].chainNotAfter'],
    ['subject too long', (_r, u) => (u.subject = x(L.dn + 1)), 'upserts[1].subject'],
    ['subject with a newline', (_r, u) => (u.subject = 'CN=a\nCN=b'), 'upserts[1].subject'],
    ['commonName too long', (_r, u) => (u.commonName = x(L.commonName + 1)), 'upserts[1].commonName'],
    ['issuer too long', (_r, u) => (u.issuer = x(L.dn + 1)), 'upserts[1].issuer'],
    ['too many DNS names', (_r, u) => (u.dnsNames = Array.from({ length: L.dnsNames + 1 }, () => 'a')), 'upserts[1].dnsNames'],
    ['a DNS name too long', (_r, u) => (u.dnsNames = ['a', x(L.dnsName + 1)]), 'upserts[1].dnsNames[1]'],
    ['a DNS name with a bidi override', (_r, u) => (u.dnsNames = ['a\u202Eb']), 'upserts[1].dnsNames[0]'],
    ['issuerRef without name', (_r, u) => ((u as Record<string, unknown>).issuerRef = { kind: 'Issuer' }), 'upserts[1].issuerRef.name'],
    ['issuerRef.kind too long', (_r, u) => (u.issuerRef = { name: 'a', kind: x(L.issuerKind + 1) }), 'upserts[1].issuerRef.kind'],
    ['issuerRef.group too long', (_r, u) => (u.issuerRef = { name: 'a', group: x(L.name + 1) }), 'upserts[1].issuerRef.group'],
    ['ready.status unknown', (_r, u) => ((u as Record<string, unknown>).ready = { status: 'true' }), 'upserts[1].ready.status'],
    ['ready.reason too long', (_r, u) => (u.ready = { status: 'False', reason: x(L.readyReason + 1) }), 'upserts[1].ready.reason'],
    [
      'too many application ids',
      (_r, u) => (u.applicationIds = Array.from({ length: L.applicationIds + 1 }, (_, i) => `a${i}`)),
      'upserts[1].applicationIds',
    ],
    ['an application id too long', (_r, u) => (u.applicationIds = [x(L.applicationId + 1)]), 'upserts[1].applicationIds[0]'],
    [
      'too many labels',
      (_r, u) => (u.labels = Object.fromEntries(Array.from({ length: L.labels + 1 }, (_, i) => [`k${i}`, 'v']))),
      'upserts[1].labels',
    ],
    ['a label key too long', (_r, u) => (u.labels = { [x(L.labelKey + 1)]: 'v' }), `upserts[1].labels.${x(L.labelKey + 1)}`],
    ['a label value too long', (_r, u) => (u.labels = { 'app.io/a': x(L.labelValue + 1) }), "upserts[1].labels['app.io/a']"],
    ['a label value not a string', (_r, u) => ((u as Record<string, unknown>).labels = { a: 1 }), 'upserts[1].labels.a'],
    ['a label key with a control character', (_r, u) => (u.labels = { 'a\u0007': 'v' }), "upserts[1].labels['a\u0007']"],
    ['a required fact missing', (_r, u) => delete (u as Partial<CertificateFacts>).dnsNames, 'upserts[1].dnsNames'],
    ['a delete without secretName', (r) => ((r as Record<string, unknown>).deletes = [{ namespace: 'a' }]), 'deletes[0].secretName'],
    ['final on a delta', (r) => Object.assign(r, { kind: 'delta', final: true }), 'final'],
    ['a location twice', (r) => (r.deletes = [{ namespace: 'web', secretName: 'tls-0' }]), 'deletes[0]'],
    // per-resource policy (docs/annotations.md)
    ['ignore not a boolean', (_r, u) => ((u as Record<string, unknown>).ignore = 'true'), 'upserts[1].ignore'],
    ['no expiry thresholds', (_r, u) => (u.expiryThresholds = []), 'upserts[1].expiryThresholds'],
    ['four expiry thresholds', (_r, u) => (u.expiryThresholds = [30, 14, 7, 1]), 'upserts[1].expiryThresholds'],
    ['a repeated expiry threshold', (_r, u) => (u.expiryThresholds = [7, 7]), 'upserts[1].expiryThresholds'],
    ['an expiry threshold of 0 days', (_r, u) => (u.expiryThresholds = [7, 0]), 'upserts[1].expiryThresholds[1]'],
    ['an expiry threshold past 3650 days', (_r, u) => (u.expiryThresholds = [3651]), 'upserts[1].expiryThresholds[0]'],
    ['a fractional expiry threshold', (_r, u) => (u.expiryThresholds = [1.5]), 'upserts[1].expiryThresholds[0]'],
    // shares of the lifetime: canonical "1%".."99%" only
    ['a share of 0%', (_r, u) => (u.expiryThresholds = [7, '0%']), 'upserts[1].expiryThresholds[1]'],
    ['a share of 100%', (_r, u) => (u.expiryThresholds = ['100%']), 'upserts[1].expiryThresholds[0]'],
    ['a share of 150%', (_r, u) => (u.expiryThresholds = ['150%']), 'upserts[1].expiryThresholds[0]'],
    ['a fractional share', (_r, u) => (u.expiryThresholds = ['33.3%']), 'upserts[1].expiryThresholds[0]'],
    ['a negative share', (_r, u) => (u.expiryThresholds = ['-5%']), 'upserts[1].expiryThresholds[0]'],
    ['a share not in its canonical form', (_r, u) => (u.expiryThresholds = ['033%']), 'upserts[1].expiryThresholds[0]'],
    ['days as a string', (_r, u) => (u.expiryThresholds = ['7' as never]), 'upserts[1].expiryThresholds[0]'],
    ['a boolean threshold', (_r, u) => (u.expiryThresholds = [true as never]), 'upserts[1].expiryThresholds[0]'],
    ['a repeated share', (_r, u) => (u.expiryThresholds = ['33%', '33%']), 'upserts[1].expiryThresholds'],
    ['four thresholds, days and shares', (_r, u) => (u.expiryThresholds = [14, '33%', '10%', '1%']), 'upserts[1].expiryThresholds'],
    ['a runbook URL of another scheme', (_r, u) => (u.runbookUrl = 'javascript:alert(1)'), 'upserts[1].runbookUrl'],
    ['a relative runbook URL', (_r, u) => (u.runbookUrl = '/runbooks/tls'), 'upserts[1].runbookUrl'],
    ['a runbook URL with credentials', (_r, u) => (u.runbookUrl = 'https://user:pw@wiki.example/'), 'upserts[1].runbookUrl'],
    ['a runbook URL with a bidi override', (_r, u) => (u.runbookUrl = 'https://wiki.example/\u202Ex'), 'upserts[1].runbookUrl'],
    ['a runbook URL too long', (_r, u) => (u.runbookUrl = `https://wiki.example/${x(L.runbookUrl)}`), 'upserts[1].runbookUrl'],
    ['an empty runbook URL', (_r, u) => (u.runbookUrl = ''), 'upserts[1].runbookUrl'],
    // served truth (docs/serving.md)
    ['serving not a list', (_r, u) => ((u as Record<string, unknown>).serving = { host: 'a' }), 'upserts[1].serving'],
    ['too many endpoints', (_r, u) => (u.serving = Array.from({ length: S.endpoints + 1 }, () => endpoint())), 'upserts[1].serving'],
    ['an endpoint field unknown', (_r, u) => (u.serving = [{ ...endpoint(), probeKey: 'x' } as never]), 'upserts[1].serving[0].probeKey'],
    ['an endpoint without host', (_r, u) => (u.serving = [{ ...endpoint(), host: undefined } as never]), 'upserts[1].serving[0].host'],
    [
      'a host too long',
      (_r, u) => (u.serving = [endpoint(), endpoint({ host: `${x(60)}.${x(60)}.${x(60)}.${x(S.host - 180)}` })]),
      'upserts[1].serving[1].host',
    ],
    ['a host with a space', (_r, u) => (u.serving = [endpoint({ host: 'a example' })]), 'upserts[1].serving[0].host'],
    ['a host with a port', (_r, u) => (u.serving = [endpoint({ host: 'a.example:443' })]), 'upserts[1].serving[0].host'],
    ['an empty host', (_r, u) => (u.serving = [endpoint({ host: '' })]), 'upserts[1].serving[0].host'],
    ['an address without a port', (_r, u) => (u.serving = [endpoint({ address: '203.0.113.7' })]), 'upserts[1].serving[0].address'],
    ['an address with port 0', (_r, u) => (u.serving = [endpoint({ address: 'a.example:0' })]), 'upserts[1].serving[0].address'],
    ['an address with port 65536', (_r, u) => (u.serving = [endpoint({ address: 'a.example:65536' })]), 'upserts[1].serving[0].address'],
    [
      'an address with a zero-padded port',
      (_r, u) => (u.serving = [endpoint({ address: 'a.example:0443' })]),
      'upserts[1].serving[0].address',
    ],
    ['an address as a URL', (_r, u) => (u.serving = [endpoint({ address: 'https://a.example:443' })]), 'upserts[1].serving[0].address'],
    [
      'an IPv6 address without brackets',
      (_r, u) => (u.serving = [endpoint({ address: '2001:db8::1:443' })]),
      'upserts[1].serving[0].address',
    ],
    ['a bracketed address not IPv6', (_r, u) => (u.serving = [endpoint({ address: '[a.example]:443' })]), 'upserts[1].serving[0].address'],
    ['an address with a newline', (_r, u) => (u.serving = [endpoint({ address: 'a.example\n:443' })]), 'upserts[1].serving[0].address'],
    ['an address too long', (_r, u) => (u.serving = [endpoint({ address: `${x(S.address)}:443` })]), 'upserts[1].serving[0].address'],
    ['a status unknown', (_r, u) => (u.serving = [endpoint({ status: 'fine' as never })]), 'upserts[1].serving[0].status'],
    [
      'a source kind unknown',
      (_r, u) => (u.serving = [endpoint({ source: { kind: 'Route' as never, namespace: 'web', name: 'r' } })]),
      'upserts[1].serving[0].source.kind',
    ],
    [
      'a source namespace too long',
      (_r, u) => (u.serving = [endpoint({ source: { kind: 'Gateway', namespace: x(L.namespace + 1), name: 'g' } })]),
      'upserts[1].serving[0].source.namespace',
    ],
    [
      'a source without name',
      (_r, u) => (u.serving = [endpoint({ source: { kind: 'Gateway', namespace: 'web' } as never })]),
      'upserts[1].serving[0].source.name',
    ],
    [
      'a reason too long',
      (_r, u) => (u.serving = [endpoint({ status: 'notProbed', address: null, reason: x(S.reason + 1) })]),
      'upserts[1].serving[0].reason',
    ],
    [
      'a reason with a bidi override',
      (_r, u) => (u.serving = [endpoint({ status: 'unreachable', reason: 'refused \u202E' })]),
      'upserts[1].serving[0].reason',
    ],
    ['a served serial in lower case', (_r, u) => (u.serving = [endpoint({ servedSerial: '0a1a' })]), 'upserts[1].serving[0].servedSerial'],
    [
      'a served serial too long',
      (_r, u) => (u.serving = [endpoint({ servedSerial: 'A'.repeat(L.serial + 1) })]),
      'upserts[1].serving[0].servedSerial',
    ],
    [
      'a served notAfter with an offset',
      (_r, u) => (u.serving = [endpoint({ servedNotAfter: '2026-03-01T01:00:00+01:00' })]),
      'upserts[1].serving[0].servedNotAfter',
    ],
    [
      'a checkedAt as epoch ms',
      (_r, u) => (u.serving = [endpoint({ checkedAt: 1767225600000 as never })]),
      'upserts[1].serving[0].checkedAt',
    ],
    // the fields' agreement
    ['no address on a probed endpoint', (_r, u) => (u.serving = [endpoint({ address: null })]), 'upserts[1].serving[0].address'],
    [
      'a stale verdict without the served serial',
      (_r, u) => (u.serving = [endpoint(), endpoint({ servedSerial: null })]),
      'upserts[1].serving[1].servedSerial',
    ],
    [
      'an ok verdict never checked',
      (_r, u) => (u.serving = [endpoint({ status: 'ok', checkedAt: null })]),
      'upserts[1].serving[0].checkedAt',
    ],
    [
      'a served notAfter without its serial',
      (_r, u) => (u.serving = [endpoint({ status: 'unreachable', servedSerial: null })]),
      'upserts[1].serving[0].servedSerial',
    ],
  ];
  it.each(cases)('refuses %s', (_name, mutate, field) => {
    expect(fieldsOf(mutate)).toEqual([field]);
  });

  it('accepts the policy fields within their limits (an agent may send none)', () => {
    const r = good();
    r.upserts[0] = {
      ...facts(0),
      ignore: true,
      expiryThresholds: [3650, 3, 1],
      runbookUrl: `https://wiki.example/${x(L.runbookUrl - 21)}`,
    };
    r.upserts[1] = { ...facts(1), ignore: false, runbookUrl: 'http://runbooks.internal:8080/tls#expiry' };
    r.upserts[2] = { ...facts(2), expiryThresholds: [14, '99%', '1%'] };
    const v = validateInventoryReport(r);
    expect(v.ok && v.report.upserts.map((u) => [u.ignore, u.expiryThresholds, u.runbookUrl?.length])).toEqual([
      [true, [3650, 3, 1], L.runbookUrl],
      [false, undefined, 40],
      [undefined, [14, '99%', '1%'], undefined],
    ]);
  });

  it('accepts the served truth within its limits, every status and address form (an agent that does not probe sends none)', () => {
    const r = good();
    const many = Array.from({ length: S.endpoints }, (_, i) => endpoint({ host: `h${i}.a.example` }));
    const longest = `${x(63)}.${x(63)}.${x(63)}.${x(S.host - 192)}`;
    // a DNS name of the host's limit and a 5-digit port; the address limit leaves room for [IPv6] too
    many[0] = endpoint({ host: longest, address: `${longest}:65535` });
    r.upserts[0] = { ...facts(0), serving: many };
    r.upserts[1] = {
      ...facts(1),
      serving: [
        endpoint({ status: 'ok', address: 'shop.example.com:8443' }),
        endpoint({ status: 'mismatch', address: '[2001:db8::1]:443', source: { kind: 'Gateway', namespace: 'infra', name: 'gw' } }),
        endpoint({ status: 'expired', address: '10.0.0.1:65535' }),
        endpoint({ status: 'unreachable', reason: 'connect ECONNREFUSED 10.0.0.2:443', servedSerial: null, servedNotAfter: null }),
        endpoint({ status: 'unreachable', reason: 'timeout', address: 'lb.example.:443' }),
        endpoint({ status: 'pending', servedSerial: null, servedNotAfter: null, checkedAt: null }),
        endpoint({
          host: '*.a.example',
          status: 'notProbed',
          address: null,
          reason: 'a wildcard host',
          servedSerial: null,
          servedNotAfter: null,
          checkedAt: null,
        }),
      ],
    };
    r.upserts[2] = { ...facts(2), serving: [] };
    const v = validateInventoryReport(r);
    expect(v.ok ? [] : v.errors).toEqual([]);
    expect(v.ok && v.report.upserts.map((u) => u.serving?.length)).toEqual([S.endpoints, 7, 0]);
  });

  it(`refuses more than ${MAX_INVENTORY_ITEMS_PER_REPORT} items, upserts and deletes together`, () => {
    const r = good();
    r.upserts = Array.from({ length: 600 }, (_, i) => facts(i));
    r.deletes = Array.from({ length: 401 }, (_, i) => ({ namespace: 'del', secretName: `d-${i}` }));
    const v = validateInventoryReport(r);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.errors[0]!.message).toMatch(/at most 1000 upserts and deletes together, got 1001/);
    r.upserts = Array.from({ length: MAX_INVENTORY_ITEMS_PER_REPORT + 1 }, (_, i) => facts(i));
    r.deletes = [];
    const w = validateInventoryReport(r);
    expect(!w.ok && w.errors.map((e) => e.field)).toEqual(['upserts']);
  });

  it('refuses what is not an object, and caps the number of errors', () => {
    for (const body of [null, [], 'report', 1])
      expect(validateInventoryReport(body)).toEqual({ ok: false, errors: [{ field: '', message: expect.any(String) }] });
    const r = good();
    r.upserts = Array.from({ length: 1000 }, (_, i) => ({ ...facts(i), serial: 'bad' }));
    const v = validateInventoryReport(r);
    expect(!v.ok && v.errors.length).toBe(100);
  });
});

describe('validateInventoryReport on hostile input (property)', () => {
  it('never throws; an accepted report holds only bounded, well-formed values', () => {
    // a valid report with any one field replaced by an arbitrary JSON value, or any JSON value at all
    const paths: (string | number)[][] = [
      ['cluster', 'id'],
      ['cluster', 'name'],
      ['seq'],
      ['kind'],
      ['final'],
      ['upserts', 0, 'namespace'],
      ['upserts', 0, 'notAfter'],
      ['upserts', 0, 'dnsNames'],
      ['upserts', 0, 'labels'],
      ['upserts', 0, 'ready'],
      ['upserts', 0, 'issuerRef'],
      ['upserts', 0, 'serving'],
      ['upserts', 0, 'serving', 0],
      ['upserts', 0, 'serving', 0, 'address'],
      ['deletes', 0],
      ['upserts', 1],
    ];
    fc.assert(
      fc.property(fc.constantFrom(...paths), fc.jsonValue({ maxDepth: 4 }), fc.boolean(), (path, value, whole) => {
        let body: unknown = value;
        if (!whole) {
          const r = good() as unknown as Record<string | number, unknown>;
          (r.upserts as CertificateFacts[])[0]!.serving = [endpoint()];
          let o = r;
          for (const k of path.slice(0, -1)) o = o[k] as Record<string | number, unknown>;
          o[path.at(-1)!] = value;
          body = r;
        }
        const v = validateInventoryReport(body);
        if (!v.ok) {
          expect(v.errors.length).toBeGreaterThan(0);
          expect(v.errors.length).toBeLessThanOrEqual(100);
          return;
        }
        expect(v.report.upserts.length + v.report.deletes.length).toBeLessThanOrEqual(MAX_INVENTORY_ITEMS_PER_REPORT);
        for (const u of v.report.upserts) {
          expect(u.namespace.length).toBeLessThanOrEqual(L.namespace);
          for (const t of [u.notBefore, u.notAfter, u.chainNotAfter]) if (t !== null) expect(Number.isNaN(Date.parse(t))).toBe(false);
          for (const e of u.serving ?? []) {
            expect(typeof e.host === 'string' && e.host.length <= S.host).toBe(true);
            expect(e.address === null || e.address.length <= S.address).toBe(true);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});
