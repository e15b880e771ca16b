/**
 * Inventory gauges computed at scrape time from the store (every replica answers the same): certificates by
 * days left. The labels are a small fixed set; the query is one scan of the inventory table, so its result is
 * kept for `maxAgeMs` (a scrape every few seconds must not rescan 100k rows each time).
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { latestNotAfterWithin } from '../model/days-left.js';
import type { InventoryOps } from '../store/types.js';

/** Upper bounds (days left, inclusive) of the finite buckets, after `expired` (−1); the last bucket is open. */
const BUCKET_DAYS = [7, 14, 30] as const;
const DAYS_LEFT_BUCKETS = ['expired', '0-7', '8-14', '15-30', '31+'] as const;
type DaysLeftBucket = (typeof DAYS_LEFT_BUCKETS)[number];

/** The notAfter bounds to count at or before: the latest of days left −1 (expired), then 7, 14, 30. */
export function daysLeftBounds(now: number): number[] {
  return [-1, ...BUCKET_DAYS].map((d) => latestNotAfterWithin(d, now));
}

/**
 * Disjoint buckets from the cumulative counts of `daysLeftBounds` (days left as src/model/days-left.ts counts
 * them, rounded down: 7 days 23 h left is 7, bucket 0-7; 8 days is bucket 8-14). Negative differences (rows
 * changing between the sums of one query cannot happen, but a broken engine could) clamp to 0.
 */
export function daysLeftBuckets(atOrBefore: readonly number[], total: number): Record<DaysLeftBucket, number> {
  const at = (i: number) => atOrBefore[i] ?? 0;
  const diff = (a: number, b: number) => Math.max(0, a - b);
  return {
    expired: at(0),
    '0-7': diff(at(1), at(0)),
    '8-14': diff(at(2), at(1)),
    '15-30': diff(at(3), at(2)),
    '31+': diff(total, at(3)),
  };
}

export function registerCertificateExpiryGauge(
  registry: Registry,
  store: InventoryOps,
  now: () => number,
  log: Logger,
  maxAgeMs = 60_000,
): void {
  let cached: { at: number; buckets: Record<DaysLeftBucket, number> } | undefined;
  new Gauge({
    name: 'certmgr_notify_inventory_certificates_by_days_left',
    help: 'Inventory certificates (one per TLS Secret and cluster, all companies) by whole days left until notAfter (rounded down): expired, 0-7, 8-14, 15-30, 31+',
    labelNames: ['days_left'],
    registers: [registry],
    async collect() {
      const t = now();
      try {
        if (!cached || t - cached.at >= maxAgeMs) {
          const c = await store.inventoryNotAfterCounts(daysLeftBounds(t));
          cached = { at: t, buckets: daysLeftBuckets(c.atOrBefore, c.total) };
        }
        for (const b of DAYS_LEFT_BUCKETS) this.set({ days_left: b }, cached.buckets[b]);
      } catch (err) {
        log.debug({ err }, 'certificate expiry gauge: store unavailable; keeping the last values');
      }
    },
  });
}
