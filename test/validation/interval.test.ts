import { describe, expect, it } from 'vitest';
import { formatInterval, parseInterval } from '../../src/validation/interval.js';

describe('parseInterval', () => {
  it.each([
    ['0s', 0],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['7d', 604_800_000],
    ['1d2h3m4s', 93_784_000],
  ])('%s = %d ms', (v, ms) => expect(parseInterval(v)).toBe(ms));

  it.each(['', '5', 'm', '5ms', '1m1h', '-5m', '5 m', '1.5h', 'P1D', '5M'])('refuses %j', (v) => expect(parseInterval(v)).toBeUndefined());
});

describe('formatInterval', () => {
  it.each([
    [0, '0s'],
    [30_000, '30s'],
    [90_000, '1m30s'],
    [5_400_000, '1h30m'],
    [604_800_000, '7d'],
  ])('%d ms = %s', (ms, v) => expect(formatInterval(ms)).toBe(v));

  it('round-trips', () => {
    for (const v of ['1s', '59s', '4h', '1d1s', '90d']) expect(formatInterval(parseInterval(v)!)).toBe(v);
  });
});
