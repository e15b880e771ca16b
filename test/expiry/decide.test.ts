/** The hub's pure expiry decision, identity, grouping and message: table tests. */
import { describe, expect, it } from 'vitest';
import { validateEvent } from '../../src/events/schemas.js';
import type { MonitoringConfigInput } from '../../src/model/monitoring.js';
import { cutPage, groupCertificates, type ExpiryCertificate } from '../../src/expiry/certificates.js';
import { DAY_MS, certIdOf, certKey, decideExpiry, decodeMarks, scanHorizon, type ExpiryState } from '../../src/expiry/decide.js';
import { daysUntilExpiry } from '../../src/model/days-left.js';
import { MAX_PLACES, expiryEvent, notificationDate } from '../../src/expiry/message.js';
import { certificateRef } from '../../src/model/event-view.js';
import type { ExpiryInventoryRow } from '../../src/store/types.js';

const NOW = Date.parse('2026-11-12T06:00:00Z');
const H = 3_600_000;
const CFG: MonitoringConfigInput = { enabled: true, thresholds: [30, 14, 7], applicationIds: [], includeUnassignedCertificates: true };
const ISSUER = "CN=R3, O=Let's Encrypt, C=US";

const cert = (left: number, applicationIds: string[] = []) => ({ notAfter: NOW + left, applicationIds });

/** Scans at each time with `config`, carrying the state the store would keep; returns the ruleIds emitted. */
function timeline(
  c: { notAfter: number; applicationIds: string[] } | ((t: number) => { notAfter: number; applicationIds: string[] }),
  times: number[],
  config: MonitoringConfigInput | ((t: number) => MonitoringConfigInput) = CFG,
  start?: ExpiryState,
) {
  let state = start;
  const emitted: number[] = [];
  for (const t of times) {
    const d = decideExpiry(typeof c === 'function' ? c(t) : c, typeof config === 'function' ? config(t) : config, state, t);
    if (d.due) emitted.push(d.due.ruleId);
    if (d.next) state = d.next; // the store keeps what is not replaced
  }
  return { emitted, state };
}

describe('decideExpiry', () => {
  it('first sight with 3 thresholds already crossed: one event, for the nearest (rule 3); the others are covered', () => {
    const d = decideExpiry(cert(5 * DAY_MS), CFG, undefined, NOW);
    expect(d.due).toEqual({ ruleId: 3, threshold: 7, daysLeft: 5 });
    expect(d.next).toEqual({
      notAfter: NOW + 5 * DAY_MS,
      marks: [
        { ruleId: 1, threshold: 30, daysLeft: 5, leftMs: 5 * DAY_MS, emitted: false },
        { ruleId: 2, threshold: 14, daysLeft: 5, leftMs: 5 * DAY_MS, emitted: false },
        { ruleId: 3, threshold: 7, daysLeft: 5, leftMs: 5 * DAY_MS, emitted: true },
      ],
    });
  });

  it('next threshold crossed later: one more event; scanning again (a restart: the state is the store’s) repeats nothing', () => {
    const first = decideExpiry(cert(20 * DAY_MS), CFG, undefined, NOW);
    expect(first.due?.ruleId).toBe(1);
    expect(decideExpiry(cert(20 * DAY_MS), CFG, first.next, NOW + H)).toEqual({ skipped: 'none-crossed' });
    const second = decideExpiry(cert(20 * DAY_MS), CFG, first.next, NOW + 6 * DAY_MS);
    expect(second.due).toEqual({ ruleId: 2, threshold: 14, daysLeft: 14 });
    expect(decideExpiry(cert(20 * DAY_MS), CFG, second.next, NOW + 6 * DAY_MS)).toEqual({ skipped: 'none-crossed' });
  });

  it('followed every 6 hours from 40 days to past expiry: exactly one event per rule', () => {
    const times = Array.from({ length: 42 * 4 }, (_, i) => NOW + i * 6 * H);
    expect(timeline(cert(40 * DAY_MS), times).emitted).toEqual([1, 2, 3]);
  });

  it('catch-up: off from 20 to 5 days left (two thresholds passed): one event, for the nearest', () => {
    const c = cert(40 * DAY_MS);
    const before = timeline(c, [NOW, NOW + 10 * DAY_MS + H]); // 30 crossed at 30 days left
    expect(before.emitted).toEqual([1]);
    const after = timeline(c, [NOW + 35 * DAY_MS, NOW + 35 * DAY_MS + H], CFG, before.state);
    expect(after.emitted).toEqual([3]);
  });

  it('crossed once at most threshold × 24 h remain; days left rounded down (src/model/days-left.ts); horizon of the scan', () => {
    const one = { ...CFG, thresholds: [14] };
    expect(daysUntilExpiry(NOW + 14 * DAY_MS + H, NOW)).toBe(14);
    expect(decideExpiry(cert(14 * DAY_MS + 1), one, undefined, NOW).due).toBeUndefined();
    expect(decideExpiry(cert(14 * DAY_MS), one, undefined, NOW).due).toEqual({ ruleId: 1, threshold: 14, daysLeft: 14 });
    expect(decideExpiry(cert(14 * DAY_MS), one, undefined, NOW + H).due).toEqual({ ruleId: 1, threshold: 14, daysLeft: 13 });
    expect(daysUntilExpiry(NOW - H, NOW)).toBe(-1);
    expect(daysUntilExpiry(NOW - DAY_MS - H, NOW)).toBe(-2);
    expect(scanHorizon([30, 14, 7], NOW)).toBe(NOW + 30 * DAY_MS);
    expect(scanHorizon([], NOW)).toBe(NOW);
  });

  it('notAfter moves forward (renewal under the same issuer and serial): the marks start over', () => {
    const first = decideExpiry(cert(5 * DAY_MS), CFG, undefined, NOW);
    const renewed = decideExpiry(cert(10 * DAY_MS), CFG, first.next, NOW + H);
    expect(renewed.due).toEqual({ ruleId: 2, threshold: 14, daysLeft: 9 }); // 10 days less 1 h
    expect(renewed.next?.notAfter).toBe(NOW + 10 * DAY_MS);
    expect(renewed.next?.marks.map((m) => m.ruleId)).toEqual([1, 2]);
  });

  it('an older notAfter served again after the renewal: no event, state untouched (no flapping)', () => {
    const old = cert(5 * DAY_MS);
    const renewed = cert(80 * DAY_MS);
    // the inventory shows the old and the new copy in turn (e.g. a cluster not yet updated)
    const seen = (t: number) => (Math.floor((t - NOW) / H) % 2 === 0 ? old : renewed);
    const { emitted, state } = timeline(
      seen,
      Array.from({ length: 48 }, (_, i) => NOW + i * H),
    );
    expect(emitted).toEqual([3]);
    expect(decideExpiry(old, CFG, { notAfter: renewed.notAfter, marks: [] }, NOW)).toEqual({ skipped: 'older' });
    expect(state?.notAfter).toBe(old.notAfter); // the new one crossed nothing yet: nothing written for it
  });

  it('threshold changes: tighter notifies again, looser does not; re-numbered rules use the marks’ days left', () => {
    const first = decideExpiry(cert(14 * DAY_MS), CFG, undefined, NOW);
    expect(first.due?.ruleId).toBe(2);
    const tighter = { ...CFG, thresholds: [30, 10, 7] };
    expect(decideExpiry(cert(14 * DAY_MS), tighter, first.next, NOW + DAY_MS).due).toBeUndefined();
    expect(decideExpiry(cert(14 * DAY_MS), tighter, first.next, NOW + 4 * DAY_MS).due).toEqual({ ruleId: 2, threshold: 10, daysLeft: 10 });
    expect(decideExpiry(cert(14 * DAY_MS), { ...CFG, thresholds: [30, 20, 7] }, first.next, NOW + DAY_MS).due).toBeUndefined();
    // a new rule added at 30 days while 13 days are left: crossed, notified once
    const added = decideExpiry(cert(14 * DAY_MS), { ...CFG, thresholds: [30, 14, 7, 13] }, first.next, NOW + DAY_MS);
    expect(added.due).toEqual({ ruleId: 4, threshold: 13, daysLeft: 13 });
  });

  it.each<[string, MonitoringConfigInput, string[], string]>([
    ['disabled configuration', { ...CFG, enabled: false }, [], 'disabled'],
    ['unassigned, unassigned not included', { ...CFG, includeUnassignedCertificates: false }, [], 'unmonitored'],
    ['another application', { ...CFG, applicationIds: ['app-2'] }, ['app-1'], 'unmonitored'],
  ])('%s: no event, nothing written', (_name, config, apps, skipped) => {
    expect(decideExpiry(cert(5 * DAY_MS, apps), config, undefined, NOW)).toEqual({ skipped });
  });

  it('a monitored application: notified', () => {
    expect(decideExpiry(cert(5 * DAY_MS, ['app-1', 'app-2']), { ...CFG, applicationIds: ['app-2'] }, undefined, NOW).due?.ruleId).toBe(3);
  });

  // moved from the emitter's own evaluation (src/emitter/expiry/due.ts, removed): the same rules hold here
  it.each([
    // applicationIds of the config, includeUnassigned, certificate's apps, monitored
    [[], true, [], true],
    [[], false, [], false],
    [[], false, ['app-1'], true],
    [['app-1'], true, [], true],
    [['app-1'], false, [], false],
    [['app-1'], false, ['app-1', 'app-9'], true],
    [['app-1'], true, ['app-2'], false],
  ] as [string[], boolean, string[], boolean][])(
    'monitored apps %j, unassigned %s, certificate apps %j → %s',
    (applicationIds, includeUnassignedCertificates, apps, monitored) => {
      const d = decideExpiry(cert(10 * DAY_MS, apps), { ...CFG, applicationIds, includeUnassignedCertificates }, undefined, NOW);
      if (monitored) expect(d.due?.ruleId).toBe(2);
      else expect(d).toEqual({ skipped: 'unmonitored' });
    },
  );

  it('disabled while a threshold is crossed: nothing, marks kept; enabling later notifies the nearest rule once', () => {
    const prev = decideExpiry(cert(10 * DAY_MS), CFG, undefined, NOW).next;
    const off = { ...CFG, enabled: false };
    expect(decideExpiry(cert(10 * DAY_MS), off, prev, NOW + 5 * DAY_MS)).toEqual({ skipped: 'disabled' });
    const on = decideExpiry(cert(10 * DAY_MS), CFG, prev, NOW + 5 * DAY_MS);
    expect(on.due).toEqual({ ruleId: 3, threshold: 7, daysLeft: 5 });
    expect(decideExpiry(cert(10 * DAY_MS), CFG, on.next, NOW + 5 * DAY_MS + H)).toEqual({ skipped: 'none-crossed' });
  });

  it('no thresholds, or none crossed: nothing', () => {
    expect(decideExpiry(cert(10 * DAY_MS), { ...CFG, thresholds: [] }, undefined, NOW)).toEqual({ skipped: 'none-crossed' });
    expect(decideExpiry(cert(60 * DAY_MS), CFG, undefined, NOW)).toEqual({ skipped: 'none-crossed' });
  });

  it('already expired when first seen: one event (the most urgent rule), not again', () => {
    const d = decideExpiry(cert(-3 * DAY_MS), CFG, undefined, NOW);
    expect(d.due).toEqual({ ruleId: 3, threshold: 7, daysLeft: -3 });
    expect(decideExpiry(cert(-3 * DAY_MS), CFG, d.next, NOW + DAY_MS)).toEqual({ skipped: 'none-crossed' });
  });

  it('decodeMarks keeps only well-formed marks', () => {
    const good = { ruleId: 1, threshold: 30, daysLeft: 5, emitted: true };
    expect(decodeMarks([good, { ruleId: '1' }, null, 3])).toEqual([good]);
    expect(decodeMarks({})).toEqual([]);
  });
});

const place = (over: Partial<ExpiryInventoryRow> = {}): ExpiryInventoryRow => ({
  clusterId: 'c-1',
  clusterName: 'prod-eu',
  namespace: 'shop',
  secretName: 'web-tls',
  certificateName: 'web',
  serial: '0a1b2c',
  issuer: ISSUER,
  commonName: 'shop.example.com',
  notAfter: NOW + 5 * DAY_MS,
  applicationIds: [],
  dnsNames: ['shop.example.com'],
  ignored: false,
  expiryThresholds: null,
  runbookUrl: null,
  ...over,
});

describe('certificate identity and grouping', () => {
  it('issuer DN + serial (case-insensitive hex) is the identity; the id is a UUID derived from it', () => {
    expect(certKey(ISSUER, '0a1b2c')).toBe(certKey(ISSUER, '0A1B2C'));
    expect(certKey(ISSUER, '0A1B2C')).not.toBe(certKey('CN=Other', '0A1B2C'));
    expect(certKey(null, '0A')).toBe(certKey('', '0A'));
    expect(certIdOf(certKey(ISSUER, '0A1B2C'))).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('the same serial in two clusters is one certificate with both places and the union of applications', () => {
    const certs = groupCertificates([
      place({ clusterId: 'c-2', clusterName: 'prod-us', applicationIds: ['app-2'] }),
      place({ applicationIds: ['app-1', 'app-2'] }),
      place({ serial: 'FF', secretName: 'other' }),
    ]);
    expect(certs).toHaveLength(2);
    expect(certs[0]).toMatchObject({ serial: '0A1B2C', applicationIds: ['app-1', 'app-2'] });
    expect(certs[0]!.places.map((p) => p.clusterName)).toEqual(['prod-eu', 'prod-us']);
    expect(certs[1]!.places).toHaveLength(1);
  });
});

describe('cutPage', () => {
  const at = (secretName: string, days: number) => place({ secretName, notAfter: NOW + days * DAY_MS });
  const cursor = (r: ExpiryInventoryRow) => ({
    notAfter: r.notAfter,
    clusterId: r.clusterId,
    namespace: r.namespace,
    secretName: r.secretName,
  });

  it('a page shorter than the page size is the last: all of it, no next', () => {
    const rows = [at('a', 1), at('b', 2)];
    expect(cutPage(rows, 3)).toEqual({ take: rows, next: null });
    expect(cutPage([], 3)).toEqual({ take: [], next: null });
  });

  it('a full page ends before its last notAfter, which begins the next page', () => {
    const rows = [at('a', 1), at('b', 2), at('c', 3), at('d', 3)];
    expect(cutPage(rows, 4)).toEqual({ take: rows.slice(0, 2), next: cursor(rows[1]!) });
  });

  it('one notAfter filling the whole page: taken whole, the next page goes on after it', () => {
    const rows = [at('a', 3), at('b', 3)];
    expect(cutPage(rows, 2)).toEqual({ take: rows, next: cursor(rows[1]!) });
  });
});

describe('expiryEvent', () => {
  const one = groupCertificates([place({ applicationIds: ['app-1'] })])[0]!;

  it('the spec event: name, applications, message with name and id, serial, issuer, application, days, validity end', () => {
    const e = expiryEvent(one, { ruleId: 3, threshold: 7, daysLeft: 5 }, NOW);
    expect(validateEvent(e).ok).toBe(true);
    expect(e).toEqual({
      type: 'evt.policy.expiringcertificates.failed',
      data: {
        name: 'Certificate expiring in 5 days',
        applicationIds: ['app-1'],
        message:
          `Certificate shop/web (id ${one.id}, CN=shop.example.com), serial number 0A1B2C, issuer ${ISSUER}, application app-1: ` +
          'expires in 5 days (5 days until expiration); valid until 2026-11-17T06:00:00.000Z. Threshold 7 days (rule 3). ' +
          'Secret shop/web-tls, Certificate shop/web, cluster prod-eu.',
        notificationDate: '2026-11-12T06:00:00.000+00:00',
        threshold: 7,
        ruleId: 3,
        certificateName: 'web',
        namespace: 'shop',
        clusterName: 'prod-eu',
        notAfter: '2026-11-17T06:00:00.000Z',
        daysUntilExpiry: 5,
        dnsNames: ['shop.example.com'],
      },
    });
  });

  it('expired, unassigned, no Certificate, unknown cluster name', () => {
    const c = groupCertificates([place({ certificateName: null, clusterName: null, notAfter: NOW - 2 * DAY_MS, commonName: null })])[0]!;
    const e = expiryEvent(c, { ruleId: 1, threshold: 30, daysLeft: -2 }, NOW);
    expect(e.data['name']).toBe('Certificate expired 1 day ago');
    expect(e.data['message']).toContain('no application (unassigned): expired 1 day ago (-2 days until expiration)');
    expect(e.data['message']).toContain('Secret shop/web-tls, cluster c-1.');
    expect(expiryEvent(c, { ruleId: 1, threshold: 30, daysLeft: -1 }, NOW).data['name']).toBe('Certificate expired less than a day ago');
    expect(expiryEvent(c, { ruleId: 1, threshold: 30, daysLeft: 0 }, NOW).data['name']).toBe('Certificate expiring in less than a day');
  });

  it('several places are all listed; beyond MAX_PLACES they are counted', () => {
    const two = groupCertificates([place(), place({ clusterId: 'c-2', clusterName: 'prod-us' })])[0]!;
    expect(expiryEvent(two, { ruleId: 3, threshold: 7, daysLeft: 5 }, NOW).data['message']).toContain(
      'Served from 2 places: Secret shop/web-tls, Certificate shop/web, cluster prod-eu; Secret shop/web-tls, Certificate shop/web, cluster prod-us.',
    );
    const many: ExpiryCertificate = groupCertificates(
      Array.from({ length: MAX_PLACES + 5 }, (_, i) => place({ secretName: `s-${String(i).padStart(2, '0')}` })),
    )[0]!;
    const msg = String(expiryEvent(many, { ruleId: 3, threshold: 7, daysLeft: 5 }, NOW).data['message']);
    expect(msg).toContain(`Served from ${MAX_PLACES + 5} places:`);
    expect(msg).toContain('; and 5 more.');
    expect(msg).not.toContain(`s-${MAX_PLACES}`);
  });

  it('the incident dedup key is per certificate: its id in the message; notificationDate has an offset and fractions', () => {
    const e = expiryEvent(groupCertificates([place()])[0]!, { ruleId: 2, threshold: 14, daysLeft: 10 }, NOW);
    expect(certificateRef(e.data)).toBe(certIdOf(certKey(ISSUER, '0A1B2C')));
    expect(notificationDate(Date.parse('2026-11-22T06:00:00.123Z'))).toBe('2026-11-22T06:00:00.123+00:00');
  });

  it('hostile strings from clusters are made valid, not refused', () => {
    const c = groupCertificates([place({ commonName: 'a\u00adb', issuer: 'CN=' + 'x'.repeat(40_000) })])[0]!;
    expect(validateEvent(expiryEvent(c, { ruleId: 3, threshold: 7, daysLeft: 5 }, NOW)).ok).toBe(true);
  });
});
