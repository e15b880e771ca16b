/** Pure expiry decisions: dueExpirations() tables, the event, application ids, and leaf parsing. */
import { describe, expect, it } from 'vitest';
import { validateEvent } from '../../../src/events/schemas.js';
import type { MonitoringConfigInput as MonitoringConfig } from '../../../src/service/monitoring.js';
import {
  DAY_MS,
  applicationIdsOf,
  crossingTime,
  daysLeft,
  dueExpirations,
  expirationEvent,
  notificationDate,
  parseApplicationIds,
  type ExpiryCertificate,
  type ExpiryState,
} from '../../../src/emitter/expiry/due.js';
import { certificateRef } from '../../../src/integrations/render.js';
import { dnsNamesOf, parseLeafCertificate, uuidFromHex } from '../../../src/emitter/expiry/x509.js';
import { selfSigned } from '../fixtures.js';

const NOW = Date.parse('2026-11-12T06:00:00Z');
const H = 3_600_000;
const CFG: MonitoringConfig = { enabled: true, thresholds: [30, 14, 7], applicationIds: [], includeUnassignedCertificates: true };
const CERT_ID = '3f2a9c1e-5b61-8a0d-8e0c-7d3f1e9b6c42';

function cert(o: { left?: number; serial?: string; apps?: string[] } = {}): ExpiryCertificate {
  return {
    namespace: 'shop',
    secretName: 'web-tls',
    certificateName: 'web',
    leaf: {
      id: CERT_ID,
      serialNumber: o.serial ?? '0A1B2C',
      notAfter: NOW + (o.left ?? 10 * DAY_MS),
      issuer: "CN=R3, O=Let's Encrypt, C=US",
      commonName: 'shop.example.com',
    },
    applicationIds: o.apps ?? [],
  };
}

/** Scans `c` at each of `times` with `config`, carrying the state; returns the ruleIds emitted. */
function timeline(
  c: ExpiryCertificate,
  times: number[],
  config: MonitoringConfig | ((t: number) => MonitoringConfig) = CFG,
  start?: ExpiryState,
) {
  let state = start;
  const emitted: number[] = [];
  for (const t of times) {
    const d = dueExpirations(c, typeof config === 'function' ? config(t) : config, state, t);
    if (d.due) emitted.push(d.due.ruleId);
    state = d.next;
  }
  return { emitted, state };
}

describe('dueExpirations', () => {
  it('10 days left with 30/14/7: one event for the most urgent crossed rule (14 days, rule 2); 30 is covered', () => {
    const d = dueExpirations(cert(), CFG, undefined, NOW);
    expect(d.due).toEqual({ ruleId: 2, threshold: 14, daysLeft: 10 });
    expect(d.next).toEqual({
      serial: '0A1B2C',
      notAfter: NOW + 10 * DAY_MS,
      marks: [
        { ruleId: 1, threshold: 30, daysLeft: 10, emitted: false },
        { ruleId: 2, threshold: 14, daysLeft: 10, emitted: true },
      ],
    });
    expect(d.recheckAt).toBe(crossingTime(NOW + 10 * DAY_MS, 7));
    // the next scan: nothing
    const again = dueExpirations(cert(), CFG, d.next, NOW + H);
    expect(again.due).toBeUndefined();
    expect(again.next).toEqual(d.next);
  });

  it('a certificate followed from 40 days to expiry: one event per rule, at each crossing', () => {
    const c = cert({ left: 40 * DAY_MS });
    const times = Array.from({ length: 41 * 4 }, (_, i) => NOW + i * 6 * H); // every 6 hours until past expiry
    expect(timeline(c, times).emitted).toEqual([1, 2, 3]);
  });

  it('days left are rounded up: a rule is crossed once at most threshold × 24 h remain', () => {
    const one = { ...CFG, thresholds: [14] };
    expect(daysLeft(NOW + 14 * DAY_MS + H, NOW)).toBe(15);
    expect(dueExpirations(cert({ left: 14 * DAY_MS + H }), one, undefined, NOW).due).toBeUndefined();
    expect(dueExpirations(cert({ left: 14 * DAY_MS }), one, undefined, NOW).due).toEqual({ ruleId: 1, threshold: 14, daysLeft: 14 });
    expect(dueExpirations(cert({ left: 14 * DAY_MS - H }), one, undefined, NOW).due?.daysLeft).toBe(14);
    expect(crossingTime(NOW + 15 * DAY_MS, 14)).toBe(NOW + DAY_MS);
    expect(daysLeft(NOW - H, NOW)).toBe(0);
    expect(daysLeft(NOW - DAY_MS - H, NOW)).toBe(-1);
  });

  it('renewal (another serial) starts over; a scan before the renewal crosses a threshold clears the marks', () => {
    const first = dueExpirations(cert(), CFG, undefined, NOW);
    expect(first.due?.ruleId).toBe(2);
    const renewed = dueExpirations(cert({ serial: 'FFEE01', left: 90 * DAY_MS }), CFG, first.next, NOW + H);
    expect(renewed).toMatchObject({ next: undefined, skipped: 'none-crossed' });
    // a renewal that is itself close to expiry is notified again
    const shortLived = dueExpirations(cert({ serial: 'FFEE02', left: 5 * DAY_MS }), CFG, first.next, NOW + H);
    expect(shortLived.due).toEqual({ ruleId: 3, threshold: 7, daysLeft: 5 });
    expect(shortLived.next?.serial).toBe('FFEE02');
  });

  it('threshold changes: a tighter threshold notifies again, a looser one does not re-notify', () => {
    const first = dueExpirations(cert({ left: 14 * DAY_MS }), CFG, undefined, NOW); // rule 2 at 14 days
    expect(first.due?.ruleId).toBe(2);
    const tighter = { ...CFG, thresholds: [30, 10, 7] };
    const c = cert({ left: 14 * DAY_MS });
    expect(dueExpirations(c, tighter, first.next, NOW + DAY_MS).due).toBeUndefined(); // 13 days left, rule 2 is now 10
    const at10 = dueExpirations(c, tighter, first.next, NOW + 4 * DAY_MS);
    expect(at10.due).toEqual({ ruleId: 2, threshold: 10, daysLeft: 10 });
    const looser = { ...CFG, thresholds: [30, 20, 7] };
    expect(dueExpirations(c, looser, first.next, NOW + DAY_MS).due).toBeUndefined();
    // re-numbered rules: marks made at 10 days cover rule 1 = 14 days
    expect(
      dueExpirations(
        cert({ left: 10 * DAY_MS }),
        { ...CFG, thresholds: [14, 30, 7] },
        dueExpirations(cert(), CFG, undefined, NOW).next,
        NOW + H,
      ).due,
    ).toBeUndefined();
    // a new rule is new
    expect(dueExpirations(c, { ...CFG, thresholds: [30, 14, 12] }, first.next, NOW + 2 * DAY_MS).due).toEqual({
      ruleId: 3,
      threshold: 12,
      daysLeft: 12,
    });
  });

  it('disabled configuration: nothing, marks kept; enabling later notifies', () => {
    const prev = dueExpirations(cert(), CFG, undefined, NOW).next;
    const off = { ...CFG, enabled: false };
    expect(dueExpirations(cert({ left: 5 * DAY_MS }), off, prev, NOW)).toEqual({
      next: prev && { ...prev, notAfter: NOW + 5 * DAY_MS },
      skipped: 'disabled',
    });
    expect(dueExpirations(cert(), off, undefined, NOW)).toEqual({ next: undefined, skipped: 'disabled' });
    expect(dueExpirations(cert({ left: 5 * DAY_MS }), CFG, prev, NOW).due?.ruleId).toBe(3);
  });

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
      const d = dueExpirations(cert({ apps }), { ...CFG, applicationIds, includeUnassignedCertificates }, undefined, NOW);
      if (monitored) expect(d.due?.ruleId).toBe(2);
      else expect(d).toEqual({ next: undefined, skipped: 'unmonitored' });
    },
  );

  it('no thresholds, or none crossed: nothing; recheck at the next crossing', () => {
    expect(dueExpirations(cert(), { ...CFG, thresholds: [] }, undefined, NOW)).toEqual({ next: undefined, skipped: 'none-crossed' });
    const far = dueExpirations(cert({ left: 60 * DAY_MS }), CFG, undefined, NOW);
    expect(far).toEqual({ next: undefined, skipped: 'none-crossed', recheckAt: crossingTime(NOW + 60 * DAY_MS, 30) });
  });

  it('already expired when first seen: one event (the most urgent rule)', () => {
    const d = dueExpirations(cert({ left: -3 * DAY_MS }), CFG, undefined, NOW);
    expect(d.due).toEqual({ ruleId: 3, threshold: 7, daysLeft: -3 });
    expect(dueExpirations(cert({ left: -3 * DAY_MS }), CFG, d.next, NOW + DAY_MS).due).toBeUndefined();
  });
});

describe('expirationEvent', () => {
  it('has the spec’s fields, validates, and names certificate, id, serial, issuer, application, days and validity end', () => {
    const c = cert({ apps: ['app-1', 'app-2'] });
    const e = expirationEvent(c, { ruleId: 2, threshold: 14, daysLeft: 10 }, NOW, { name: 'prod' });
    expect(validateEvent(e)).toMatchObject({ ok: true });
    expect(e.type).toBe('evt.policy.expiringcertificates.failed');
    expect(Object.keys(e.data).sort()).toEqual(['applicationIds', 'message', 'name', 'notificationDate', 'ruleId', 'threshold']);
    expect(e.data).toMatchObject({
      name: 'Certificate expiring in 10 days',
      applicationIds: ['app-1', 'app-2'],
      threshold: 14,
      ruleId: 2,
      notificationDate: '2026-11-12T06:00:00.000+00:00',
    });
    const m = e.data['message'] as string;
    for (const part of [
      'shop/web',
      CERT_ID,
      '0A1B2C',
      "CN=R3, O=Let's Encrypt, C=US",
      'app-1, app-2',
      '10 days',
      new Date(NOW + 10 * DAY_MS).toISOString(),
      'Secret shop/web-tls',
    ]) {
      expect(m).toContain(part);
    }
    // the incident dedup key is per certificate (its id in the message) and rule
    expect(certificateRef(e.data)).toBe(CERT_ID);
  });

  it('unassigned and expired wording', () => {
    const e = expirationEvent(cert({ left: -2 * DAY_MS }), { ruleId: 3, threshold: 7, daysLeft: -2 }, NOW, { name: 'prod' });
    expect(e.data['name']).toBe('Certificate expired 2 days ago');
    expect(e.data['applicationIds']).toEqual([]);
    expect(e.data['message']).toContain('no application (unassigned)');
    expect(validateEvent(e)).toMatchObject({ ok: true });
  });

  it('notificationDate has an explicit offset and fractional seconds', () => {
    expect(notificationDate(Date.parse('2026-11-22T06:00:00.123Z'))).toBe('2026-11-22T06:00:00.123+00:00');
  });
});

describe('application ids', () => {
  it('parses the annotation; the Secret wins over its Certificate; none is unassigned', () => {
    expect(parseApplicationIds(' app-1, app-2,,app-1 ')).toEqual(['app-1', 'app-2']);
    const certObj = { metadata: { annotations: { 'notify.certmgr.io/application-ids': 'from-cert' } } };
    expect(applicationIdsOf({ 'notify.certmgr.io/application-ids': 'from-secret' }, certObj)).toEqual(['from-secret']);
    expect(applicationIdsOf({}, certObj)).toEqual(['from-cert']);
    expect(
      applicationIdsOf(undefined, { spec: { secretTemplate: { annotations: { 'notify.certmgr.io/application-ids': 'tmpl' } } } }),
    ).toEqual(['tmpl']);
    expect(applicationIdsOf({ other: 'x' })).toEqual([]);
  });
});

describe('leaf certificate', () => {
  it('parses the first certificate of tls.crt (serial, notAfter, issuer, CN, DNS names, id)', () => {
    const leaf = selfSigned({ cn: 'leaf.example.com', dns: ['leaf.example.com', 'alt.example.com'], days: 10, serial: '0x0A1B2C3D' });
    const other = selfSigned({ cn: 'ca.example.com', days: 400 });
    const before = Date.now();
    const p = parseLeafCertificate(Buffer.from(leaf.pem + other.pem))!;
    expect(p.serialNumber).toBe('0A1B2C3D');
    expect(p.serialNumber).toBe(leaf.serial);
    expect(p.commonName).toBe('leaf.example.com');
    expect(p.subject).toBe('O=Example Corp, CN=leaf.example.com');
    expect(p.issuer).toBe(p.subject);
    expect(p.dnsNames).toEqual(['leaf.example.com', 'alt.example.com']);
    expect(Math.abs(p.notAfter - (before + 10 * DAY_MS))).toBeLessThan(60_000);
    expect(p.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseLeafCertificate(leaf.pem)!.id).toBe(p.id);
    expect(parseLeafCertificate('not a certificate')).toBeUndefined();
    expect(parseLeafCertificate('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----')).toBeUndefined();
  });

  it('helpers', () => {
    expect(dnsNamesOf('DNS:a.example.com, IP Address:10.0.0.1, DNS:"b,c.example.com"')).toEqual(['a.example.com', 'b,c.example.com']);
    expect(uuidFromHex('00'.repeat(32))).toBe('00000000-0000-8000-8000-000000000000');
  });
});
