import { describe, expect, it } from 'vitest';
import { expiryTimeline } from '../../src/console/timeline.js';

describe('expiryTimeline', () => {
  it('counts expired, each week and later; certificates without a date are left out', () => {
    const b = expiryTimeline([-3, -1, 0, 6, 7, 13, 20, 27, 28, 400, null, undefined], 4);
    expect(b.map((x) => [x.label, x.count, x.kind])).toEqual([
      ['expired', 2, 'expired'],
      ['0–6 days', 2, 'week'],
      ['7–13 days', 2, 'week'],
      ['14–20 days', 1, 'week'],
      ['21–27 days', 1, 'week'],
      ['28+ days', 2, 'later'],
    ]);
  });
  it('shows every bucket even when empty (12 weeks by default)', () => {
    const b = expiryTimeline([]);
    expect(b).toHaveLength(14);
    expect(b.every((x) => x.count === 0)).toBe(true);
  });
});
