/**
 * The certificates page's expiry timeline: how many certificates expire in each coming week. Pure (unit-tested
 * in test/console/timeline.test.ts); buckets come from daysUntilExpiry, which the hub computes, so no clock here.
 */
export interface TimelineBucket {
  label: string;
  count: number;
  /** expired: already past notAfter; week: days [from, from+6]; later: beyond the last week shown. */
  kind: 'expired' | 'week' | 'later';
}

export function expiryTimeline(days: readonly (number | null | undefined)[], weeks = 12): TimelineBucket[] {
  const buckets: TimelineBucket[] = [{ label: 'expired', count: 0, kind: 'expired' }];
  for (let w = 0; w < weeks; w++) buckets.push({ label: `${w * 7}–${w * 7 + 6} days`, count: 0, kind: 'week' });
  const later: TimelineBucket = { label: `${weeks * 7}+ days`, count: 0, kind: 'later' };
  buckets.push(later);
  for (const d of days) {
    if (d === null || d === undefined) continue;
    if (d < 0) buckets[0]!.count++;
    else if (d >= weeks * 7) later.count++;
    else buckets[1 + Math.floor(d / 7)]!.count++;
  }
  return buckets;
}
