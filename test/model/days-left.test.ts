/** The one rule for days left (src/model/days-left.ts): whole days remaining, rounded down. */
import { describe, expect, it } from 'vitest';
import { DAY_MS, daysLeftOfPhrase, daysLeftPhrase, daysUntilExpiry, latestNotAfterWithin } from '../../src/model/days-left.js';

const NOW = Date.UTC(2026, 2, 18, 8, 0, 0);
const H = 3_600_000;

describe('daysUntilExpiry', () => {
  it.each([
    ['30 days', 30 * DAY_MS, 30],
    ['9 days 23 h', 9 * DAY_MS + 23 * H, 9],
    ['exactly 7 days', 7 * DAY_MS, 7],
    ['7 days less 1 ms', 7 * DAY_MS - 1, 6],
    ['1 day', DAY_MS, 1],
    ['23 h', 23 * H, 0],
    ['1 ms', 1, 0],
    ['0 (notAfter is now: still valid)', 0, 0],
    ['expired 1 ms ago', -1, -1],
    ['expired 23 h ago', -23 * H, -1],
    ['expired exactly 1 day ago', -DAY_MS, -1],
    ['expired 1 day 1 h ago', -DAY_MS - H, -2],
    ['expired 10 days ago', -10 * DAY_MS, -10],
  ])('%s left → %i', (_what, leftMs, days) => {
    expect(daysUntilExpiry(NOW + leftMs, NOW)).toBe(days);
  });
});

describe('latestNotAfterWithin', () => {
  it.each([-1, 0, 7, 30])('is the latest notAfter with %i days left or fewer', (days) => {
    const bound = latestNotAfterWithin(days, NOW);
    expect(daysUntilExpiry(bound, NOW)).toBe(days);
    expect(daysUntilExpiry(bound + 1, NOW)).toBe(days + 1);
  });
});

describe('daysLeftPhrase', () => {
  it.each([
    [13, 'expires in 13 days'],
    [1, 'expires in 1 day'],
    [0, 'expires in less than a day'],
    [-1, 'expired less than a day ago'],
    [-2, 'expired 1 day ago'],
    [-11, 'expired 10 days ago'],
  ])('%i → %s, read back by daysLeftOfPhrase', (days, phrase) => {
    expect(daysLeftPhrase(days)).toBe(phrase);
    expect(daysLeftOfPhrase(`Certificate x ${phrase}, valid until …`)).toBe(days);
  });

  it.each([
    ['expires today', 0],
    ['EXPIRES IN 5 DAYS', 5],
    ['valid until 2026-04-01', null],
  ])('daysLeftOfPhrase(%s) → %s', (text, days) => {
    expect(daysLeftOfPhrase(text)).toBe(days);
  });
});
