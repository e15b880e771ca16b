import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { DAY_MS } from '../../src/expiry/decide.js';
import { daysLeftBounds, daysLeftBuckets, registerCertificateExpiryGauge } from '../../src/inventory/metrics.js';
import type { Store } from '../../src/store/types.js';

const NOW = 1_800_000_000_000;

describe('certificates by days left', () => {
  it('bounds: the latest notAfter of days left −1 (expired), 7, 14 and 30 (whole days, rounded down)', () => {
    expect(daysLeftBounds(NOW)).toEqual([NOW - 1, NOW + 8 * DAY_MS - 1, NOW + 15 * DAY_MS - 1, NOW + 31 * DAY_MS - 1]);
  });

  /** The rows' notAfter values bucketed as the SQL does (count at or before each bound), then split. */
  const bucketsOf = (notAfters: number[]) => {
    const bounds = daysLeftBounds(NOW);
    return daysLeftBuckets(
      bounds.map((b) => notAfters.filter((n) => n <= b).length),
      notAfters.length,
    );
  };
  it.each([
    { name: 'none', rows: [], want: { expired: 0, '0-7': 0, '8-14': 0, '15-30': 0, '31+': 0 } },
    { name: 'expired 1 ms ago', rows: [NOW - 1], want: { expired: 1, '0-7': 0, '8-14': 0, '15-30': 0, '31+': 0 } },
    { name: 'expiring exactly now: 0 days left', rows: [NOW], want: { expired: 0, '0-7': 1, '8-14': 0, '15-30': 0, '31+': 0 } },
    { name: '1 ms left: 0 days left', rows: [NOW + 1], want: { expired: 0, '0-7': 1, '8-14': 0, '15-30': 0, '31+': 0 } },
    {
      name: '8 days less 1 ms: 7 days (rounded down), 0-7; 8 days exactly: 8-14',
      rows: [NOW + 8 * DAY_MS - 1, NOW + 8 * DAY_MS],
      want: { expired: 0, '0-7': 1, '8-14': 1, '15-30': 0, '31+': 0 },
    },
    {
      name: 'one in each',
      rows: [NOW - 5 * DAY_MS, NOW + 3 * DAY_MS, NOW + 10 * DAY_MS, NOW + 30 * DAY_MS, NOW + 31 * DAY_MS],
      want: { expired: 1, '0-7': 1, '8-14': 1, '15-30': 1, '31+': 1 },
    },
  ])('$name', ({ rows, want }) => {
    expect(bucketsOf(rows)).toEqual(want);
  });

  it('never negative: inconsistent sums clamp to 0', () => {
    expect(daysLeftBuckets([5, 3, 3, 3], 2)).toEqual({ expired: 5, '0-7': 0, '8-14': 0, '15-30': 0, '31+': 0 });
    expect(daysLeftBuckets([], 0)).toEqual({ expired: 0, '0-7': 0, '8-14': 0, '15-30': 0, '31+': 0 });
  });

  it('the gauge queries the store at most once per maxAge and keeps the last values when the store fails', async () => {
    let calls = 0;
    let fail = false;
    let now = NOW;
    const store = {
      inventoryNotAfterCounts: (bounds: readonly number[]) => {
        calls++;
        if (fail) return Promise.reject(new Error('down'));
        expect(bounds).toEqual(daysLeftBounds(now));
        return Promise.resolve({ atOrBefore: [1, 3, 3, 4], total: 10 });
      },
    } as unknown as Store;
    const registry = new Registry();
    registerCertificateExpiryGauge(registry, store, () => now, pino({ level: 'silent' }), 60_000);
    const scrape = async () => (await registry.getSingleMetricAsString('certmgr_notify_inventory_certificates_by_days_left')).split('\n');
    expect(await scrape()).toEqual(
      expect.arrayContaining([
        'certmgr_notify_inventory_certificates_by_days_left{days_left="expired"} 1',
        'certmgr_notify_inventory_certificates_by_days_left{days_left="0-7"} 2',
        'certmgr_notify_inventory_certificates_by_days_left{days_left="8-14"} 0',
        'certmgr_notify_inventory_certificates_by_days_left{days_left="15-30"} 1',
        'certmgr_notify_inventory_certificates_by_days_left{days_left="31+"} 6',
      ]),
    );
    now += 59_999;
    await scrape();
    expect(calls).toBe(1);
    now += 1;
    fail = true;
    expect(await scrape()).toContain('certmgr_notify_inventory_certificates_by_days_left{days_left="31+"} 6');
    expect(calls).toBe(2);
  });
});
