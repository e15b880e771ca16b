/**
 * Per-resource policy on the hub's expiry evaluation (docs/annotations.md, docs/expiry.md "Rule ids"): a
 * certificate's own thresholds and their rule ids, ignored places, and the event's optional fields. Table tests.
 */
import { describe, expect, it } from 'vitest';
import { validateEvent } from '../../src/events/schemas.js';
import { certificateRulesOf, rulesOf, type MonitoringConfigInput } from '../../src/model/monitoring.js';
import { groupCertificates } from '../../src/expiry/certificates.js';
import { DAY_MS, decideExpiry, expiryRulesOf, type ExpiryState } from '../../src/expiry/decide.js';
import { expiryEvent } from '../../src/expiry/message.js';
import type { ExpiryInventoryRow } from '../../src/store/types.js';

const NOW = Date.parse('2026-11-12T06:00:00Z');
const CFG: MonitoringConfigInput = { enabled: true, thresholds: [30, 14, 7], applicationIds: [], includeUnassignedCertificates: true };
const NOT_AFTER = NOW + 40 * DAY_MS;
/** the scan at `left` days before notAfter */
const at = (left: number) => NOT_AFTER - left * DAY_MS;

type Cert = { notAfter: number; applicationIds: string[]; ignored?: boolean; expiryThresholds?: number[] | null };

/** Scans at each [days left, thresholds] step, carrying the marks the store would keep; the ruleIds emitted. */
function timeline(steps: [left: number, own: number[] | null][], config = CFG, start?: ExpiryState) {
  let state = start;
  const emitted: string[] = [];
  for (const [left, own] of steps) {
    const c: Cert = { notAfter: NOT_AFTER, applicationIds: [], expiryThresholds: own };
    const d = decideExpiry(c, config, state, at(left));
    if (d.due) emitted.push(`${d.due.ruleId}@${d.due.threshold}`);
    if (d.next) state = d.next;
  }
  return emitted;
}

describe('rule ids', () => {
  it.each<[number[], [number, number][]]>([
    [
      [7, 3, 1],
      [
        [1001, 7],
        [1002, 3],
        [1003, 1],
      ],
    ],
    [
      [1, 7, 3],
      [
        [1001, 7],
        [1002, 3],
        [1003, 1],
      ],
    ], // the order written does not matter
    [[30], [[1001, 30]]],
    [
      [7, 7, 3],
      [
        [1001, 7],
        [1002, 3],
      ],
    ],
    [[], []],
  ])('own thresholds %j → %j', (thresholds, rules) => {
    expect(certificateRulesOf(thresholds).map((r) => [r.ruleId, r.threshold])).toEqual(rules);
  });

  it('the company rules keep 1..3 by position; own rules never collide with them', () => {
    expect(rulesOf([30, 14, 7]).map((r) => r.ruleId)).toEqual([1, 2, 3]);
    expect(expiryRulesOf({ expiryThresholds: null }, CFG)).toEqual(rulesOf(CFG.thresholds));
    expect(expiryRulesOf({}, CFG)).toEqual(rulesOf(CFG.thresholds));
    expect(expiryRulesOf({ expiryThresholds: [3] }, CFG)).toEqual([{ ruleId: 1001, threshold: 3 }]);
  });
});

describe('decideExpiry with own thresholds', () => {
  it.each<[string, [number, number[] | null][], string[]]>([
    [
      'own thresholds replace the company’s',
      [
        [30, [7, 3, 1]],
        [14, [7, 3, 1]],
        [7, [7, 3, 1]],
        [3, [7, 3, 1]],
        [1, [7, 3, 1]],
      ],
      ['1001@7', '1002@3', '1003@1'],
    ],
    [
      'first seen late: one event for the most urgent, the rest covered',
      [
        [2, [7, 3, 1]],
        [2, [7, 3, 1]],
        [1, [7, 3, 1]],
      ],
      ['1002@3', '1003@1'],
    ],
    [
      'company rules: 1..3 as before',
      [
        [30, null],
        [14, null],
        [7, null],
      ],
      ['1@30', '2@14', '3@7'],
    ],
    [
      'annotation added after the company’s 30-day notice',
      [
        [28, null],
        [10, [7]],
        [7, [7]],
        [6, [7]],
      ],
      ['1@30', '1001@7'],
    ],
    [
      'annotation removed after its 7-day notice: the company’s 30/14/7 are passed already',
      [
        [6, [7]],
        [6, null],
        [5, null],
        [1, null],
      ],
      ['1001@7'],
    ],
    [
      'annotation changed 7,3,1 → 14,7,3: passed thresholds are not repeated, a new lower one fires',
      [
        [6, [7, 3, 1]],
        [5, [14, 7, 3]],
        [3, [14, 7, 3]],
        [1, [14, 7, 3]],
      ],
      ['1001@7', '1003@3'],
    ],
    [
      'annotation lowered to a threshold not yet reached',
      [
        [20, [30]],
        [12, [10]],
        [10, [10]],
      ],
      ['1001@30', '1001@10'],
    ],
  ])('%s', (_name, steps, emitted) => {
    expect(timeline(steps)).toEqual(emitted);
  });

  it('whether a certificate is monitored still follows the configuration', () => {
    const c: Cert = { notAfter: NOW + 2 * DAY_MS, applicationIds: ['app-9'], expiryThresholds: [3] };
    expect(decideExpiry(c, { ...CFG, includeUnassignedCertificates: false, applicationIds: ['app-1'] }, undefined, NOW)).toEqual({
      skipped: 'unmonitored',
    });
    expect(decideExpiry(c, { ...CFG, enabled: false }, undefined, NOW)).toEqual({ skipped: 'disabled' });
    expect(decideExpiry(c, CFG, undefined, NOW).due).toEqual({ ruleId: 1001, threshold: 3, daysLeft: 2 });
  });

  it('an ignored certificate: no event, marks kept; un-ignored later, only what is still due fires', () => {
    const c: Cert = { notAfter: NOW + 5 * DAY_MS, applicationIds: [], ignored: true };
    expect(decideExpiry(c, CFG, undefined, NOW)).toEqual({ skipped: 'ignored' });
    const state: ExpiryState = { notAfter: c.notAfter, marks: [{ ruleId: 1, threshold: 30, daysLeft: 29, emitted: true }] };
    expect(decideExpiry(c, CFG, state, NOW)).toEqual({ skipped: 'ignored' });
    expect(decideExpiry({ ...c, ignored: false }, CFG, state, NOW).due).toEqual({ ruleId: 3, threshold: 7, daysLeft: 5 });
  });
});

const row = (over: Partial<ExpiryInventoryRow> = {}): ExpiryInventoryRow => ({
  clusterId: 'c-1',
  clusterName: 'prod-eu',
  namespace: 'shop',
  secretName: 'web-tls',
  certificateName: 'web',
  serial: '0A1B2C',
  issuer: 'CN=R3',
  commonName: 'shop.example.com',
  notAfter: NOW + 5 * DAY_MS,
  applicationIds: [],
  dnsNames: ['shop.example.com'],
  ignored: false,
  expiryThresholds: null,
  runbookUrl: null,
  ...over,
});

describe('groupCertificates with per-resource policy', () => {
  it.each<
    [
      string,
      ExpiryInventoryRow[],
      { ignored: boolean; places: string[]; thresholds: number[] | null; runbook: string | null; apps: string[] },
    ]
  >([
    ['no policy', [row()], { ignored: false, places: ['c-1/web-tls'], thresholds: null, runbook: null, apps: [] }],
    [
      'every place ignored: ignored',
      [row({ ignored: true }), row({ clusterId: 'c-2', ignored: true })],
      { ignored: true, places: ['c-1/web-tls', 'c-2/web-tls'], thresholds: null, runbook: null, apps: [] },
    ],
    [
      'one place ignored: the others count, without its applications or policy',
      [
        row({ clusterId: 'c-0', ignored: true, applicationIds: ['app-x'], expiryThresholds: [1], runbookUrl: 'https://x.example/' }),
        row({ clusterId: 'c-2', applicationIds: ['app-2'], expiryThresholds: [3] }),
        row({ applicationIds: ['app-1'], runbookUrl: 'https://wiki.example/tls' }),
      ],
      {
        ignored: false,
        places: ['c-1/web-tls', 'c-2/web-tls'],
        thresholds: [3],
        runbook: 'https://wiki.example/tls',
        apps: ['app-1', 'app-2'],
      },
    ],
    [
      'places disagree: the first place (cluster, namespace, Secret order) with thresholds wins',
      [row({ clusterId: 'c-2', clusterName: 'z', expiryThresholds: [3] }), row({ clusterName: 'a', expiryThresholds: [7, 1] })],
      { ignored: false, places: ['c-1/web-tls', 'c-2/web-tls'], thresholds: [7, 1], runbook: null, apps: [] },
    ],
  ])('%s', (_name, rows, want) => {
    const [c, more] = groupCertificates(rows);
    expect(more).toBeUndefined();
    expect({
      ignored: c!.ignored,
      places: c!.places.map((p) => `${p.clusterId}/${p.secretName}`),
      thresholds: c!.expiryThresholds,
      runbook: c!.runbookUrl,
      apps: c!.applicationIds,
    }).toEqual(want);
  });

  it('DNS names: the union over the places counted, in place order, at most 100', () => {
    const [c] = groupCertificates([
      row({ dnsNames: ['a.example', 'b.example'] }),
      row({ clusterId: 'c-2', dnsNames: ['b.example', 'c.example'] }),
    ]);
    expect(c!.dnsNames).toEqual(['a.example', 'b.example', 'c.example']);
    const many = Array.from({ length: 100 }, (_, i) => `n${i}.example`);
    const [d] = groupCertificates([row({ dnsNames: many }), row({ clusterId: 'c-2', dnsNames: ['extra.example'] })]);
    expect(d!.dnsNames).toHaveLength(100);
  });
});

describe('expiryEvent: the hub’s optional fields', () => {
  it('runbookUrl, the first place, notAfter, days until expiry and DNS names; the event is valid', () => {
    const [c] = groupCertificates([row({ runbookUrl: 'https://wiki.example.com/runbooks/tls?team=shop', expiryThresholds: [7, 3, 1] })]);
    const e = expiryEvent(c!, { ruleId: 1001, threshold: 7, daysLeft: 5 }, NOW);
    expect(validateEvent(e)).toEqual({ ok: true, event: e });
    expect(e.data).toMatchObject({
      ruleId: 1001,
      threshold: 7,
      runbookUrl: 'https://wiki.example.com/runbooks/tls?team=shop',
      certificateName: 'web',
      namespace: 'shop',
      clusterName: 'prod-eu',
      notAfter: '2026-11-17T06:00:00.000Z',
      daysUntilExpiry: 5,
      dnsNames: ['shop.example.com'],
    });
    expect(String(e.data['message'])).toContain('(rule 1001)');
  });

  it('no Certificate: the Secret names it; unknown cluster name and no runbook: absent; expired: negative days', () => {
    const [c] = groupCertificates([row({ certificateName: null, clusterName: null, notAfter: NOW - 3 * DAY_MS + 1 })]);
    const e = expiryEvent(c!, { ruleId: 3, threshold: 7, daysLeft: -2 }, NOW);
    expect(validateEvent(e).ok).toBe(true);
    expect(e.data['certificateName']).toBe('web-tls');
    expect(e.data['daysUntilExpiry']).toBe(-2);
    expect(e.data).not.toHaveProperty('clusterName');
    expect(e.data).not.toHaveProperty('runbookUrl');
  });
});
