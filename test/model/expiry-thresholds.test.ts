/** A certificate's own thresholds as days and shares of the lifetime: entries, order, rules, scan range. Table tests. */
import { describe, expect, it } from 'vitest';
import {
  isExpiryThreshold,
  lifetimeOf,
  ownRulesOf,
  ownThresholdMaxDays,
  sortThresholds,
  type ExpiryThreshold,
} from '../../src/model/expiry-thresholds.js';

const DAY = 86_400_000;

describe('entries', () => {
  it.each<[unknown, boolean]>([
    [1, true],
    [3650, true],
    ['1%', true],
    ['99%', true],
    [0, false],
    [3651, false],
    [1.5, false],
    ['0%', false],
    ['100%', false],
    ['033%', false], // stored and sent in the canonical form only
    ['33.3%', false],
    ['33', false],
    [null, false],
  ])('%j → %s', (v, ok) => {
    expect(isExpiryThreshold(v)).toBe(ok);
  });

  it('sorted: days from the largest down, then shares from the largest down, each once', () => {
    expect(sortThresholds(['10%', 3, '33%', 14, '10%'])).toEqual([14, 3, '33%', '10%']);
  });
});

describe('ownRulesOf: rule ids 1001.. for days, 2001.. for shares', () => {
  it.each<[string, ExpiryThreshold[], number | null, [number, number, number | undefined][]]>([
    ['33% of 6 days: 47.52 h, 2 days in the event', ['33%'], 6 * DAY, [[2001, 2, 47.52 * 3_600_000]]],
    ['10% of 45 days: 4.5 days', ['10%'], 45 * DAY, [[2001, 5, 4.5 * DAY]]],
    [
      '33% and 10% of 90 days',
      ['10%', '33%'],
      90 * DAY,
      [
        [2001, 30, 29.7 * DAY],
        [2002, 9, 9 * DAY],
      ],
    ],
    [
      'mixed: days keep 1001.., shares 2001..',
      [14, '10%', 3],
      90 * DAY,
      [
        [1001, 14, undefined],
        [1002, 3, undefined],
        [2001, 9, 9 * DAY],
      ],
    ],
    ['a share of no lifetime: no rule', ['33%'], null, []],
    ['days without a lifetime still count', [7, '33%'], null, [[1001, 7, undefined]]],
    ['at most 3650 days', ['99%'], 100 * 365 * DAY, [[2001, 3650, 3650 * DAY]]],
  ])('%s', (_name, own, lifetime, want) => {
    expect(ownRulesOf(own, lifetime).map((r) => [r.ruleId, r.threshold, r.share?.ms])).toEqual(want);
  });

  it('lifetime: notAfter − notBefore, only when positive and known', () => {
    expect(lifetimeOf(0, 6 * DAY)).toBe(6 * DAY);
    expect(lifetimeOf(null, 6 * DAY)).toBeNull();
    expect(lifetimeOf(6 * DAY, 6 * DAY)).toBeNull();
    expect(lifetimeOf(7 * DAY, 6 * DAY)).toBeNull();
  });

  it("the scan range of a row (expiry_threshold_max): its largest rule in whole days; null when it has none (the company's apply)", () => {
    expect(ownThresholdMaxDays(['33%'], 0, 6 * DAY)).toBe(2);
    expect(ownThresholdMaxDays(['10%'], 0, 400 * DAY)).toBe(40);
    expect(ownThresholdMaxDays([3, '10%'], 0, 400 * DAY)).toBe(40);
    expect(ownThresholdMaxDays([90, '10%'], 0, 400 * DAY)).toBe(90);
    expect(ownThresholdMaxDays(['33%'], null, 6 * DAY)).toBeNull();
    expect(ownThresholdMaxDays(null, 0, 6 * DAY)).toBeNull();
    expect(ownThresholdMaxDays([7, 3], null, null)).toBe(7);
  });
});
