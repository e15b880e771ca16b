/**
 * Expiry thresholds as a share of the certificate's lifetime (`notify.certmgr.io/expiry-thresholds: "33%"`,
 * docs/expiry.md "Rule ids"): the hub's pure decision followed over whole lifetimes, rule ids 2001.., the event.
 * Table tests.
 */
import { describe, expect, it } from 'vitest';
import { validateEvent } from '../../src/events/schemas.js';
import { groupCertificates } from '../../src/expiry/certificates.js';
import { DAY_MS, decideExpiry, decodeMarks, type ExpiryState } from '../../src/expiry/decide.js';
import { expiryEvent } from '../../src/expiry/message.js';
import type { ExpiryThreshold } from '../../src/model/expiry-thresholds.js';
import type { MonitoringConfigInput } from '../../src/model/monitoring.js';
import type { ExpiryInventoryRow } from '../../src/store/types.js';

const H = 3_600_000;
const ISSUED = Date.parse('2026-11-01T00:00:00Z');
const CFG: MonitoringConfigInput = { enabled: true, thresholds: [30, 14, 7], applicationIds: [], includeUnassignedCertificates: true };

interface Sent {
  ruleId: number;
  threshold: number;
  /** hours before notAfter when the scan sent it */
  hoursLeft: number;
  percent?: number;
}

/**
 * A certificate of `lifetimeDays` scanned every `stepHours` from `fromHoursLeft` before expiry (default: from
 * issuance) to a day past it, carrying the marks the store keeps; what was sent.
 */
function follow(
  lifetimeDays: number,
  own: ExpiryThreshold[] | null,
  opts: { stepHours?: number; fromHoursLeft?: number; notBefore?: number | null; start?: ExpiryState | undefined } = {},
): { sent: Sent[]; state: ExpiryState | undefined } {
  const notAfter = ISSUED + lifetimeDays * DAY_MS;
  const cert = { notAfter, notBefore: opts.notBefore === undefined ? ISSUED : opts.notBefore, applicationIds: [], expiryThresholds: own };
  const step = (opts.stepHours ?? 1) * H;
  let state = opts.start;
  const sent: Sent[] = [];
  for (let t = notAfter - (opts.fromHoursLeft ?? lifetimeDays * 24) * H; t <= notAfter + DAY_MS; t += step) {
    const d = decideExpiry(cert, CFG, state, t);
    if (d.due)
      sent.push({
        ruleId: d.due.ruleId,
        threshold: d.due.threshold,
        hoursLeft: (notAfter - t) / H,
        ...(d.due.share ? { percent: d.due.share.percent } : {}),
      });
    if (d.next) state = d.next;
  }
  return { sent, state };
}

describe('thresholds as a share of the lifetime, scanned every hour over the whole lifetime', () => {
  it.each<[string, number, ExpiryThreshold[] | null, Sent[]]>([
    // 33% of 6 days is 47.52 h: the first hourly scan within it is 47 h before expiry, 2 days left
    ['6-day certificate, 33%', 6, ['33%'], [{ ruleId: 2001, threshold: 2, hoursLeft: 47, percent: 33 }]],
    // 10% of 45 days is 4.5 days (108 h)
    ['45-day certificate, 10%', 45, ['10%'], [{ ruleId: 2001, threshold: 5, hoursLeft: 108, percent: 10 }]],
    // 33% of 90 days is 29.7 days (712.8 h), 10% is 9 days
    [
      '90-day certificate, 33% and 10%',
      90,
      ['33%', '10%'],
      [
        { ruleId: 2001, threshold: 30, hoursLeft: 712, percent: 33 },
        { ruleId: 2002, threshold: 9, hoursLeft: 216, percent: 10 },
      ],
    ],
    [
      'the order written does not change the ids',
      90,
      ['10%', '33%'],
      [
        { ruleId: 2001, threshold: 30, hoursLeft: 712, percent: 33 },
        { ruleId: 2002, threshold: 9, hoursLeft: 216, percent: 10 },
      ],
    ],
    [
      'days and shares mixed: 14 days and 10% of 90 days',
      90,
      [14, '10%'],
      [
        { ruleId: 1001, threshold: 14, hoursLeft: 336 },
        { ruleId: 2001, threshold: 9, hoursLeft: 216, percent: 10 },
      ],
    ],
    [
      '3 days and 33% of 6 days',
      6,
      [3, '33%'],
      [
        { ruleId: 1001, threshold: 3, hoursLeft: 72 },
        { ruleId: 2001, threshold: 2, hoursLeft: 47, percent: 33 },
      ],
    ],
    ['1% of a 6-day certificate: 1.44 h', 6, ['1%'], [{ ruleId: 2001, threshold: 1, hoursLeft: 1, percent: 1 }]],
    [
      '99% of a 6-day certificate: the first scan after issuance',
      6,
      ['99%'],
      [{ ruleId: 2001, threshold: 6, hoursLeft: 142, percent: 99 }],
    ],
    // the company's 30/14/7 on a 6-day certificate: all crossed at issuance, one event for the nearest
    ['no own thresholds: the company rules fire at issuance', 6, null, [{ ruleId: 3, threshold: 7, hoursLeft: 144 }]],
  ])('%s', (_name, days, own, want) => {
    expect(follow(days, own).sent).toEqual(want);
  });

  it('a 400-day certificate with 99%: a share is at most 3650 days like any threshold (it never exceeds the lifetime anyway)', () => {
    expect(follow(400, ['99%'], { stepHours: 24 }).sent).toEqual([{ ruleId: 2001, threshold: 396, hoursLeft: 396 * 24, percent: 99 }]);
    const century = follow(36_500, ['99%'], { stepHours: 24, fromHoursLeft: 3_700 * 24 }).sent;
    expect(century).toEqual([{ ruleId: 2001, threshold: 3650, hoursLeft: 3650 * 24, percent: 99 }]);
  });

  it('without a lifetime (no notBefore, or notBefore not before notAfter) a share has nothing to be a share of: the company rules apply', () => {
    expect(follow(6, ['33%'], { notBefore: null }).sent).toEqual([{ ruleId: 3, threshold: 7, hoursLeft: 144 }]);
    expect(follow(6, ['33%'], { notBefore: ISSUED + 7 * DAY_MS }).sent).toEqual([{ ruleId: 3, threshold: 7, hoursLeft: 144 }]);
    // days written next to the share still apply alone
    expect(follow(6, [3, '33%'], { notBefore: null }).sent).toEqual([{ ruleId: 1001, threshold: 3, hoursLeft: 72 }]);
  });

  it('catch-up: first seen 12 h before expiry with 33% and 10% (both passed): one event, for the nearest', () => {
    expect(follow(6, ['33%', '10%'], { fromHoursLeft: 12 }).sent).toEqual([{ ruleId: 2002, threshold: 1, hoursLeft: 12, percent: 10 }]);
  });

  it('the annotation changed from days to shares: a point already notified is not notified again', () => {
    // notified at 3 days (72 h) of a 6-day certificate; then "50%" (72 h) is satisfied, "33%" (47.52 h) is not yet
    const days = follow(6, [3], { fromHoursLeft: 80 });
    expect(days.sent.map((s) => [s.ruleId, s.hoursLeft])).toEqual([[1001, 72]]);
    expect(follow(6, ['50%'], { fromHoursLeft: 70, start: days.state }).sent).toEqual([]);
    expect(follow(6, ['33%'], { fromHoursLeft: 70, start: days.state }).sent).toEqual([
      { ruleId: 2001, threshold: 2, hoursLeft: 47, percent: 33 },
    ]);
  });

  it('marks written before shares existed (no leftMs) still decide day rules as they did', () => {
    const notAfter = ISSUED + 40 * DAY_MS;
    const old: ExpiryState = { notAfter, marks: [{ ruleId: 1, threshold: 30, daysLeft: 14, emitted: true }] };
    // 14 days left was marked: rule 2 (14) is satisfied, rule 3 (7) is not yet crossed
    expect(decideExpiry({ notAfter, applicationIds: [] }, CFG, old, notAfter - 10 * DAY_MS)).toEqual({ skipped: 'none-crossed' });
    expect(decideExpiry({ notAfter, applicationIds: [] }, CFG, old, notAfter - 7 * DAY_MS).due).toEqual({
      ruleId: 3,
      threshold: 7,
      daysLeft: 7,
    });
    expect(decodeMarks([{ ruleId: 1, threshold: 1, daysLeft: 1, leftMs: 'x', emitted: true }])).toEqual([]);
    expect(decodeMarks([{ ruleId: 2001, threshold: 2, daysLeft: 2, leftMs: 47 * H, emitted: true }])).toHaveLength(1);
  });
});

describe('the expiration event of a share', () => {
  const row = (over: Partial<ExpiryInventoryRow> = {}): ExpiryInventoryRow => ({
    clusterId: 'c-1',
    clusterName: 'prod-eu',
    namespace: 'mesh',
    secretName: 'mtls',
    certificateName: 'mtls',
    serial: '0A1B2C',
    issuer: 'CN=Mesh CA',
    commonName: 'svc.mesh',
    notBefore: ISSUED,
    notAfter: ISSUED + 6 * DAY_MS,
    applicationIds: [],
    dnsNames: ['svc.mesh'],
    ignored: false,
    expiryThresholds: ['33%'],
    runbookUrl: null,
    ...over,
  });

  it('carries the spec fields (threshold in days, ruleId 2001) and thresholdPercent; the message names the share', () => {
    const [c] = groupCertificates([row()]);
    const now = c!.notAfter - 47 * H;
    const d = decideExpiry(c!, CFG, undefined, now);
    const e = expiryEvent(c!, d.due!, now);
    expect(validateEvent(e)).toEqual({ ok: true, event: e });
    expect(e.data).toMatchObject({
      ruleId: 2001,
      threshold: 2,
      thresholdPercent: 33,
      daysUntilExpiry: 1, // 47 h left: whole days rounded down
      name: 'Certificate expiring in 1 day',
    });
    expect(String(e.data['message'])).toContain('Threshold 2 days (33% of a lifetime of 6 days, rule 2001).');
  });

  it('a day rule carries no thresholdPercent', () => {
    const [c] = groupCertificates([row({ expiryThresholds: [3] })]);
    const now = c!.notAfter - 47 * H;
    const e = expiryEvent(c!, decideExpiry(c!, CFG, undefined, now).due!, now);
    expect(e.data['thresholdPercent']).toBeUndefined();
    expect(String(e.data['message'])).toContain('Threshold 3 days (rule 1001).');
  });

  it('places agree on notBefore; the lifetime comes from the certificate, whichever place has it', () => {
    const [c] = groupCertificates([row({ notBefore: null }), row({ clusterId: 'c-2' })]);
    expect(c!.notBefore).toBe(ISSUED);
  });
});
