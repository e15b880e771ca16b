import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/validation/duration.js';

describe('parseDuration (Go-style: h, m, s, ms)', () => {
  it.each([
    ['0', 0],
    ['500ms', 500],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['24h', 86_400_000],
    ['1h30m', 5_400_000],
    ['1m30s500ms', 90_500],
    ['1.5s', 1_500],
    ['1.1s', 1_100],
    ['0s', 0],
  ])('%s → %d ms', (v, ms) => {
    expect(parseDuration(v)).toBe(ms);
  });

  it.each(['', '5', '5000', '1d', '5 m', '-1s', 'm', '1.5', 's5', '1ns', '0.5ms', '1e3s', 'x'.repeat(100)])('%j is not a duration', (v) => {
    expect(parseDuration(v)).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [500, '500ms'],
    [1_500, '1s500ms'],
    [90_000, '1m30s'],
    [86_400_000, '24h'],
  ])('%d ms → %s', (ms, s) => {
    expect(formatDuration(ms)).toBe(s);
    expect(parseDuration(s)).toBe(ms);
  });
});
