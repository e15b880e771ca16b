/**
 * at the event level: every value the abuse test got accepted is refused by
 * validateEvent with the path of the field and a message saying what is wrong; what the emitters write
 * is still accepted.
 */
import { describe, expect, it } from 'vitest';
import { validateEvent } from '../../src/events/schemas.js';
import { notificationDate } from '../../src/expiry/message.js';
import { unhealthyDurationOf, isoUtc } from '../../src/events/wire-formats.js';
import {
  certificateResourceActive,
  certificateResourceNotReady,
  expiringCertificate,
  issuerActive,
  issuerNotReady,
} from '../fixtures/events.js';

function errorsOf(e: unknown) {
  const r = validateEvent(e);
  if (r.ok) throw new Error(`expected the event to be rejected: ${JSON.stringify(e)}`);
  return r.errors;
}

/** The raw JSON of an expiration event with `ruleId`/`threshold` written as given (e.g. `1e308`). */
const rawExpiring = (ruleId: string, threshold = '14') =>
  JSON.parse(
    `{"type":"evt.policy.expiringcertificates.failed","data":{"name":"n","applicationIds":[],"message":"m","notificationDate":"2025-03-18T08:00:00Z","threshold":${threshold},"ruleId":${ruleId}}}`,
  ) as unknown;

describe('validateEvent: strict formats', () => {
  it.each<[string, unknown, string, RegExp]>([
    // UUIDs
    [
      'urn:uuid: clusterId',
      issuerNotReady({ clusterId: 'urn:uuid:3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31' }),
      'data.clusterId',
      /canonical 8-4-4-4-12/,
    ],
    [
      'braced resourceId',
      certificateResourceActive({ resourceId: '{5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a}' }),
      'data.resourceId',
      /canonical/,
    ],
    ['nil clusterId', issuerActive({ clusterId: '00000000-0000-0000-0000-000000000000' }), 'data.clusterId', /nil UUID/],
    ['nil resourceId', issuerNotReady({ resourceId: '00000000-0000-0000-0000-000000000000' }), 'data.resourceId', /nil UUID/],
    ['dashless UUID', certificateResourceNotReady({ clusterId: '3f6c2a9e8b1d4c7a9e521d0b7f4a6c31' }), 'data.clusterId', /canonical/],
    // statusTransition: UTC with Z
    ['space separator', issuerNotReady({ statusTransition: '2025-03-14 09:26:53Z' }), 'data.statusTransition', /upper-case T/],
    ['no Z', issuerNotReady({ statusTransition: '2025-03-14T09:26:53' }), 'data.statusTransition', /ending in an upper-case Z/],
    [
      'numeric offset where the spec shows Z',
      certificateResourceActive({ statusTransition: '2025-03-14T09:26:53+00:00' }),
      'data.statusTransition',
      /Z/,
    ],
    ['year 0000', issuerActive({ statusTransition: '0000-01-01T00:00:00Z' }), 'data.statusTransition', /year 0000/],
    ['Feb 30', certificateResourceNotReady({ statusTransition: '2025-02-30T10:00:00Z' }), 'data.statusTransition', /not a calendar date/],
    ['leap second at noon', issuerNotReady({ statusTransition: '2025-06-30T12:00:60Z' }), 'data.statusTransition', /leap seconds/],
    [
      'leap second at the end of a year',
      issuerNotReady({ statusTransition: '2016-12-31T23:59:60Z' }),
      'data.statusTransition',
      /leap seconds/,
    ],
    ['hour 24', issuerNotReady({ statusTransition: '2025-03-14T24:00:00Z' }), 'data.statusTransition', /hour 24/],
    // notificationDate: explicit offset
    [
      'notificationDate with a space',
      expiringCertificate({ notificationDate: '2025-03-18 08:00:00.123+01:00' }),
      'data.notificationDate',
      /upper-case T/,
    ],
    [
      'notificationDate without offset',
      expiringCertificate({ notificationDate: '2025-03-18T08:00:00.123' }),
      'data.notificationDate',
      /numeric offset/,
    ],
    [
      'notificationDate unknown offset',
      expiringCertificate({ notificationDate: '2025-03-18T08:00:00.123-00:00' }),
      'data.notificationDate',
      /unknown offset/,
    ],
    [
      'notificationDate year 0000',
      expiringCertificate({ notificationDate: '0000-03-18T08:00:00.123+01:00' }),
      'data.notificationDate',
      /year 0000/,
    ],
    // unhealthyDuration
    ['21-digit hours', issuerActive({ unhealthyDuration: '123456789012345678901h0m0s' }), 'data.unhealthyDuration', /at most 6 digits/],
    ['1h60m60s overflow', certificateResourceNotReady({ unhealthyDuration: '1h60m60s' }), 'data.unhealthyDuration', /minutes must be 0-59/],
    ['seconds overflow', certificateResourceActive({ unhealthyDuration: '0h0m60s' }), 'data.unhealthyDuration', /seconds must be 0-59/],
    ['90m (no hours, no seconds)', issuerActive({ unhealthyDuration: '90m' }), 'data.unhealthyDuration', /<h>h<m>m<s>s/],
    ['long fraction', issuerActive({ unhealthyDuration: '0h0m1.0000000001s' }), 'data.unhealthyDuration', /1 to 9 digits/],
    // integers
    ['ruleId 1e308', rawExpiring('1e308'), 'data.ruleId', /<= 2147483647/],
    ['ruleId 2^31', rawExpiring('2147483648'), 'data.ruleId', /<= 2147483647/],
    ['ruleId negative', rawExpiring('-1'), 'data.ruleId', />= 1/],
    ['ruleId float', rawExpiring('1.5'), 'data.ruleId', /integer/],
    ['threshold 1e308', rawExpiring('1', '1e308'), 'data.threshold', /<= 3650/],
    ['threshold negative', rawExpiring('1', '-7'), 'data.threshold', />= 0/],
    ['threshold float', rawExpiring('1', '7.25'), 'data.threshold', /integer/],
  ])('rejects %s at its path', (_name, e, path, message) => {
    expect(errorsOf(e)).toContainEqual({ path, message: expect.stringMatching(message) });
  });

  it.each<[string, unknown]>([
    ['the largest ruleId', rawExpiring('2147483647')],
    ['threshold 3650', rawExpiring('1', '3650')],
    ['integral JSON number 3.0', rawExpiring('3.0')],
    ['upper-case UUID', issuerNotReady({ clusterId: '3F6C2A9E-8B1D-4C7A-9E52-1D0B7F4A6C31' })],
    ['statusTransition with a fraction', issuerNotReady({ statusTransition: '2025-03-14T09:26:53.25Z' })],
    ['Feb 29 of a leap year', issuerNotReady({ statusTransition: '2024-02-29T09:26:53Z' })],
    ['notificationDate in Z', expiringCertificate({ notificationDate: '2025-03-18T08:00:00Z' })],
    ['notificationDate with a negative offset', expiringCertificate({ notificationDate: '2025-03-18T08:00:00.123456-05:00' })],
    ['huge but bounded hours', certificateResourceActive({ unhealthyDuration: '999999h59m59.999999999s' })],
  ])('accepts %s', (_name, e) => {
    expect(validateEvent(e)).toMatchObject({ ok: true });
  });

  it('accepts what the emitters write (timestamps, durations, notification dates)', () => {
    for (const ms of [0, 999, 1000, 59_999, 3_600_000, 3 * 86_400_000 + 1234, 1e12])
      expect(validateEvent(issuerActive({ unhealthyDuration: unhealthyDurationOf(ms) })).ok, unhealthyDurationOf(ms)).toBe(true);
    for (const t of [Date.UTC(2024, 1, 29, 23, 59, 59), Date.UTC(2025, 0, 1), Date.UTC(2025, 5, 30, 12, 0, 0, 125)]) {
      expect(validateEvent(issuerNotReady({ statusTransition: isoUtc(t) })).ok, isoUtc(t)).toBe(true);
      expect(validateEvent(expiringCertificate({ notificationDate: notificationDate(t) })).ok, notificationDate(t)).toBe(true);
    }
  });
});

describe('validateEvent: text in every string', () => {
  const withSans = (names: string[]) => certificateResourceNotReady({ SANs: { 'DNS Names': names } });
  const withSubject = (over: object) => certificateResourceActive({ subject: { ...certificateResourceActive().data.subject, ...over } });
  it.each<[string, unknown, string, RegExp]>([
    ['NUL in clusterName', issuerNotReady({ clusterName: 'prod\u0000' }), 'data.clusterName', /U\+0000 NUL at character 5/],
    ['bidi override in issuerName', issuerActive({ issuerName: 'lets\u202Eencrypt' }), 'data.issuerName', /U\+202E RIGHT-TO-LEFT OVERRIDE/],
    ['zero-width space in namespace', certificateResourceActive({ namespace: 'shop\u200B' }), 'data.namespace', /U\+200B ZERO WIDTH SPACE/],
    ['BOM in certificateName', certificateResourceNotReady({ certificateName: '\uFEFFtls' }), 'data.certificateName', /U\+FEFF/],
    ['newline in statusReason', issuerNotReady({ statusReason: 'Ready\nFAKE LOG LINE' }), 'data.statusReason', /LINE FEED/],
    ['lone surrogate in a DNS name', withSans(['ok.example.com', 'x\uD800.example.com']), "data.SANs['DNS Names'][1]", /lone surrogate/],
    [
      'isolate in subject.organizations',
      withSubject({ organizations: ['Example \u2066Org'] }),
      'data.subject.organizations[0]',
      /LEFT-TO-RIGHT ISOLATE/,
    ],
    ['word joiner in commonName', withSubject({ commonName: 'api\u2060.example.org' }), 'data.subject.commonName', /WORD JOINER/],
    ['NUL in an application id', expiringCertificate({ applicationIds: ['payments', 'app\u0000'] }), 'data.applicationIds[1]', /NUL/],
    [
      'zero-width joiner in an application id',
      expiringCertificate({ applicationIds: ['pay\u200Dments'] }),
      'data.applicationIds[0]',
      /ZERO WIDTH JOINER/,
    ],
    ['NUL in statusMessage', issuerNotReady({ statusMessage: 'failed\u0000' }), 'data.statusMessage', /NUL/],
    ['bidi override in message', expiringCertificate({ message: 'expires in \u202E41 days' }), 'data.message', /RIGHT-TO-LEFT OVERRIDE/],
    ['ESC in statusMessage', issuerNotReady({ statusMessage: '\u001b[31mred' }), 'data.statusMessage', /U\+001B/],
  ])('rejects %s at its path', (_name, e, path, message) => {
    expect(errorsOf(e)).toContainEqual({ path, message: expect.stringMatching(message) });
  });

  it('free-text messages keep line breaks and tabs', () => {
    expect(validateEvent(issuerNotReady({ statusMessage: 'line 1\nline 2\r\n\tindented' })).ok).toBe(true);
    expect(validateEvent(expiringCertificate({ message: 'a\nb' })).ok).toBe(true);
  });

  it('non-Latin text and emoji are fine', () => {
    expect(validateEvent(issuerNotReady({ clusterName: 'プロダクション', statusMessage: 'خطأ في التحقق 😀' })).ok).toBe(true);
  });
});
