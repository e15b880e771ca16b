/**
 * The emitter's events always pass validateEvent, whatever the cluster holds: without
 * sanitizing, a Certificate with > 1,000 dnsNames, a 40 KB condition message, a soft hyphen or a control
 * character made the event be refused by the sender and the alert was never sent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVENT_SIZE_LIMITS, validateEvent } from '../../src/events/schemas.js';
import { ELLIPSIS, sanitizeEventData, sanitizeText } from '../../src/events/sanitize.js';
import { cutToCodePoints } from '../../src/validation/formats.js';
import type { ExpiryCertificate } from '../../src/expiry/certificates.js';
import { DAY_MS } from '../../src/expiry/decide.js';
import { expiryEvent } from '../../src/expiry/message.js';
import { diffReady, type HealthOptions } from '../../src/emitter/health/diff.js';
import { MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS, unhealthyDurationOf, isoUtc } from '../../src/events/wire-formats.js';
import { observe, type CertManagerObject, type HealthKind } from '../../src/emitter/health/observe.js';
import { codePointLength, textProblem } from '../../src/validation/formats.js';
import { CLUSTER, certificate, issuer, ready } from './fixtures.js';

const NOW = Date.parse('2026-03-01T10:00:00Z');
const MIN = 60_000;
const OPTS: HealthOptions = { cluster: CLUSTER, gracePeriodMs: MIN, unknownGracePeriodMs: 2 * MIN, issuingGracePeriodMs: 5 * MIN };
const L = EVENT_SIZE_LIMITS;

/** The `.notready` event the emitter builds for `obj`, unhealthy for 10 minutes. */
function notReadyEvent(kind: HealthKind, obj: CertManagerObject) {
  const d = diffReady(undefined, observe(kind, obj, NOW), NOW, OPTS);
  expect(d.event).toBeDefined();
  return d.event!;
}

/** A certificate as the hub's expiry scan sees it (src/expiry/), served from one place, strings as a cluster reported them. */
function expiryCertificate(o: {
  namespace: string;
  secretName: string;
  certificateName: string;
  serial: string;
  issuer: string;
  commonName: string;
  applicationIds: string[];
  clusterName: string;
}): ExpiryCertificate {
  return {
    key: '3f2a9c1e5b618a0d8e0c7d3f1e9b6c42',
    id: '3f2a9c1e-5b61-5a0d-8e0c-7d3f1e9b6c42',
    serial: o.serial,
    issuer: o.issuer,
    commonName: o.commonName,
    notAfter: NOW + 3 * DAY_MS,
    applicationIds: o.applicationIds,
    places: [
      {
        clusterId: 'c-1',
        clusterName: o.clusterName,
        namespace: o.namespace,
        secretName: o.secretName,
        certificateName: o.certificateName,
      },
    ],
    dnsNames: [],
    ignored: false,
    expiryThresholds: null,
    runbookUrl: null,
  };
}

const expectValid = (e: unknown) => {
  const v = validateEvent(e);
  expect(v.ok ? [] : v.errors).toEqual([]);
};

describe('cutToCodePoints', () => {
  it.each<[string, string, number, string]>([
    ['fits', 'abc', 3, 'abc'],
    ['fits by code points though not by UTF-16 units', '😀😀', 2, '😀😀'],
    ['cut with an ellipsis', 'abcdef', 4, `abc${ELLIPSIS}`],
    ['never inside a surrogate pair', '😀😀😀', 2, `😀${ELLIPSIS}`],
    ['no room for an ellipsis', 'abc', 1, 'a'],
    ['zero', 'abc', 0, ''],
    ['a lone surrogate counts as one', '\ud800abc', 3, `\ud800a${ELLIPSIS}`],
  ])('%s', (_n, s, max, want) => {
    expect(cutToCodePoints(s, max)).toBe(want);
    expect(codePointLength(cutToCodePoints(s, max))).toBeLessThanOrEqual(max);
  });
});

describe('sanitizeText', () => {
  it.each<[string, string, 'name' | 'text', number | undefined, string]>([
    ['clean name', 'web-tls', 'name', 253, 'web-tls'],
    ['soft hyphen', 'shop\u00adexample', 'name', 253, 'shop\ufffdexample'],
    ['NUL and DEL', 'a\u0000b\u007f', 'name', 253, 'a\ufffdb\ufffd'],
    ['bidi override and zero-width space', 'x\u202ey\u200bz', 'name', 253, 'x\ufffdy\ufffdz'],
    ['newline in a name', 'a\nb', 'name', 253, 'a\ufffdb'],
    ['newline and tab kept in free text', 'a\nb\tc\r', 'text', 100, 'a\nb\tc\r'],
    ['bell in free text', 'a\u0007b', 'text', 100, 'a\ufffdb'],
    ['bidi isolate in free text', 'a\u2066b', 'text', 100, 'a\ufffdb'],
    ['lone surrogate', 'a\udc00b', 'name', 253, 'a\ufffdb'],
    ['noncharacter outside the BMP (one code point for one)', 'a\u{10ffff}b', 'name', 3, 'a\ufffdb'],
    ['cut, then replaced', 'ab\u00adcdef', 'name', 4, `ab\ufffd${ELLIPSIS}`],
    ['emoji kept', 'ok 😀', 'name', 253, 'ok 😀'],
  ])('%s', (_n, s, kind, max, want) => {
    const r = sanitizeText(s, kind, max);
    expect(r.value).toBe(want);
    expect(textProblem(r.value, kind, max)).toBeUndefined();
  });

  it('U+FFFD itself passes every text kind', () => {
    expect(textProblem('\ufffd', 'name', 1)).toBeUndefined();
    expect(textProblem('\ufffd', 'text', 1)).toBeUndefined();
  });
});

describe('sanitizeEventData', () => {
  it('a list over its limit keeps the first N and the message says so', () => {
    const names = Array.from({ length: 4000 }, (_, i) => `h${i}.example.com`);
    const e = notReadyEvent(
      'Certificate',
      certificate({ spec: { dnsNames: names }, conditions: [ready('False', NOW - 10 * MIN, 'Failed', 'order failed')] }),
    );
    expectValid(e);
    const data = e.data as { SANs: { 'DNS Names': string[] }; statusMessage: string };
    expect(data.SANs['DNS Names']).toEqual(names.slice(0, L.dnsNames));
    expect(data.statusMessage).toBe(`order failed [certmgr-notify: data.SANs['DNS Names'] has only the first 1000 of 4000 entries]`);
  });

  it('a message at its limit gives up room for the note, ending in an ellipsis', () => {
    const r = sanitizeEventData('evt.policy.expiringcertificates.failed', {
      name: 'x',
      applicationIds: Array.from({ length: 1001 }, (_, i) => `app-${i}`),
      message: 'm'.repeat(L.statusMessage),
      notificationDate: '2026-03-01T10:00:00.000+00:00',
      threshold: 7,
      ruleId: 1,
    });
    const msg = r.data['message'] as string;
    expect(codePointLength(msg)).toBe(L.statusMessage);
    expect(msg).toMatch(/m… \[certmgr-notify: data\.applicationIds has only the first 1000 of 1001 entries\]$/);
    expect(r.changes).toEqual([
      { path: 'data.applicationIds', kind: 'list-truncated', kept: 1000, total: 1001 },
      { path: 'data.message', kind: 'string-cut' },
    ]);
  });

  it('a 40 KB condition message is cut to the limit with an ellipsis', () => {
    const e = notReadyEvent('Issuer', issuer('Issuer', { conditions: [ready('False', NOW - 10 * MIN, 'ErrInit', 'x'.repeat(40_000))] }));
    expectValid(e);
    const msg = e.data['statusMessage'] as string;
    expect(codePointLength(msg)).toBe(L.statusMessage);
    expect(msg.endsWith(`x${ELLIPSIS}`)).toBe(true);
  });

  it('a soft hyphen or control character in the subject, names and message becomes U+FFFD', () => {
    const e = notReadyEvent(
      'Certificate',
      certificate({
        spec: {
          commonName: 'shop\u00ad.example.com',
          dnsNames: ['a\u0000.example.com'],
          subject: { organizations: ['Evil\u202eCorp'], countries: ['D\u200bE'] },
          issuerRef: { name: 'le\u0007' },
        },
        conditions: [ready('False', NOW - 10 * MIN, 'Bad\nReason', 'line 1\nline 2\u0000\u2066')],
      }),
    );
    expectValid(e);
    expect(e.data).toMatchObject({
      issuerName: 'le\ufffd',
      statusReason: 'Bad\ufffdReason',
      statusMessage: 'line 1\nline 2\ufffd\ufffd',
      subject: { commonName: 'shop\ufffd.example.com', organizations: ['Evil\ufffdCorp'], countries: ['D\ufffdE'] },
      SANs: { 'DNS Names': ['a\ufffd.example.com'] },
    });
  });

  it('a clean event is unchanged', () => {
    const e = notReadyEvent('Certificate', certificate({ conditions: [ready('False', NOW - 10 * MIN, 'Failed', 'order failed')] }));
    expect(sanitizeEventData(e.type, e.data)).toEqual({ data: e.data, changes: [] });
  });

  it('expiration events: application ids and certificate strings from the cluster', () => {
    const c = expiryCertificate({
      namespace: 'shop',
      secretName: 'web-tls',
      certificateName: 'web\u00ad',
      serial: '0A',
      issuer: 'CN=R3\nO=\u202eX',
      commonName: 'c'.repeat(50_000),
      applicationIds: [...Array.from({ length: 1500 }, (_, i) => `app-${i}`), 'a'.repeat(300), 'b\u0000'],
      clusterName: 'prod',
    });
    const e = expiryEvent(c, { ruleId: 2, threshold: 7, daysLeft: 3 }, NOW);
    expectValid(e);
    expect((e.data['applicationIds'] as string[]).length).toBe(L.applicationIds);
    expect(e.data['message']).toMatch(/\[certmgr-notify: data\.applicationIds has only the first 1000 of 1502 entries\]$/);
  });
});

describe('timestamps and durations from any lastTransitionTime', () => {
  it.each<[string, number, string]>([
    ['year 0000 is clamped to 0001', Date.parse('0000-06-01T00:00:00Z'), '0001-01-01T00:00:00Z'],
    ['year 10000 is clamped to 9999', Date.parse('+010000-01-01T00:00:00Z'), '9999-12-31T23:59:59.999Z'],
    ['NaN', Number.NaN, '0001-01-01T00:00:00Z'],
    ['ordinary', Date.parse('2026-03-01T10:00:00.250Z'), '2026-03-01T10:00:00.250Z'],
  ])('isoUtc: %s', (_n, ms, want) => expect(isoUtc(ms)).toBe(want));

  it('unhealthyDurationOf caps at 999999h59m59.999s (6 hour digits)', () => {
    expect(unhealthyDurationOf(NOW - MIN_TIMESTAMP_MS)).toBe('999999h59m59.999s');
    expect(unhealthyDurationOf(MAX_TIMESTAMP_MS)).toBe('999999h59m59.999s');
  });

  it('a Certificate unhealthy since year 0001 still gets a valid event', () => {
    expectValid(
      notReadyEvent('Certificate', certificate({ conditions: [ready('False', Date.parse('0001-01-01T00:00:00Z'), 'Failed', 'old')] })),
    );
  });
});

describe('property: whatever strings and lists a cluster object holds, the built event is valid', () => {
  // any UTF-16 (lone surrogates, controls, format characters, noncharacters), sometimes past the limits
  const anyText = fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    {
      weight: 2,
      arbitrary: fc.string({
        unit: fc.constantFrom('a', '\u00ad', '\u0000', '\n', '\u202e', '\ud800', '\udc00', '😀', '\ufffe', '\u2028'),
        maxLength: 60,
      }),
    },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 40_000 }).map((n) => '\u00e9'.repeat(n)) },
  );
  const list = (max: number) =>
    fc.oneof(
      { weight: 5, arbitrary: fc.array(anyText, { maxLength: 8 }) },
      { weight: 1, arbitrary: fc.integer({ min: max - 2, max: max + 50 }).map((n) => Array.from({ length: n }, (_, i) => `n${i}`)) },
    );
  const time = fc.oneof(
    fc.integer({ min: NOW - 400 * DAY_MS, max: NOW }),
    fc.integer({ min: -70_000_000_000_000, max: 300_000_000_000_000 }),
  );

  it('health events (Certificate, Issuer, ClusterIssuer; notready and active)', () => {
    fc.assert(
      fc.property(
        fc.record({
          kind: fc.constantFrom<HealthKind>('Certificate', 'Issuer', 'ClusterIssuer'),
          name: anyText,
          namespace: anyText,
          clusterName: anyText,
          reason: anyText,
          message: anyText,
          commonName: anyText,
          issuerName: anyText,
          dnsNames: list(L.dnsNames),
          organizations: list(L.subjectList),
          countries: list(L.subjectList),
          since: time,
        }),
        (g) => {
          const o = { name: g.name, namespace: g.namespace, conditions: [ready('False', g.since, g.reason, g.message)] };
          const spec = {
            commonName: g.commonName,
            dnsNames: g.dnsNames,
            subject: { organizations: g.organizations, countries: g.countries },
            issuerRef: { name: g.issuerName },
          };
          const obj = g.kind === 'Certificate' ? certificate({ ...o, spec }) : issuer(g.kind, o);
          const opts = { ...OPTS, cluster: { ...CLUSTER, name: g.clusterName } };
          const down = diffReady(undefined, observe(g.kind, obj, NOW), NOW, opts);
          const events = [down.event];
          if (down.next) {
            // recovered: `.active`; and deleted while not ready: `.active` with reason Deleted
            const up = { ...obj, status: { conditions: [ready('True', g.since, g.reason, g.message)] } };
            events.push(diffReady(down.next, observe(g.kind, up, NOW + MIN), NOW + MIN, opts).event);
            events.push(diffReady(down.next, undefined, NOW + MIN, opts).event);
          }
          for (const e of events.filter((x) => x !== undefined)) expectValid(e);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('expiration events', () => {
    fc.assert(
      fc.property(
        fc.record({
          namespace: anyText,
          secretName: anyText,
          certificateName: anyText,
          issuer: anyText,
          commonName: anyText,
          serial: anyText,
          apps: list(L.applicationIds),
          clusterName: anyText,
        }),
        (g) => {
          const c = expiryCertificate({
            namespace: g.namespace,
            secretName: g.secretName,
            certificateName: g.certificateName,
            serial: g.serial,
            issuer: g.issuer,
            commonName: g.commonName,
            applicationIds: g.apps,
            clusterName: g.clusterName,
          });
          expectValid(expiryEvent(c, { ruleId: 1, threshold: 7, daysLeft: 3 }, NOW));
        },
      ),
      { numRuns: 300 },
    );
  });
});
