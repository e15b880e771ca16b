import { describe, expect, it } from 'vitest';
import { byWorst, isServingProblem, servingAddressProblem, worstServingStatus } from '../../src/inventory/serving.js';
import { SERVING_REASONS, SERVING_SEVERITY, SERVING_STATUSES, type ServingStatus } from '../../src/model/serving.js';

const of = (...statuses: ServingStatus[]) => statuses.map((status) => ({ status }));

describe('worstServingStatus', () => {
  it.each<[ServingStatus[] | null, ServingStatus | null]>([
    [null, null],
    [[], null],
    [['ok'], 'ok'],
    [['ok', 'notProbed'], 'notProbed'],
    [['notProbed', 'pending', 'ok'], 'pending'],
    [['pending', 'unreachable'], 'unreachable'],
    [['ok', 'stale', 'unreachable'], 'stale'],
    [['stale', 'mismatch'], 'mismatch'],
    [['ok', 'mismatch', 'expired', 'stale'], 'expired'],
  ])('%j → %j', (statuses, worst) => {
    expect(worstServingStatus(statuses === null ? null : of(...statuses))).toBe(worst);
  });

  it('ranks every status once, the problems before the rest', () => {
    expect([...SERVING_SEVERITY].sort()).toEqual([...SERVING_STATUSES].sort());
    const problems = SERVING_SEVERITY.filter((s) => isServingProblem(s));
    expect(problems.sort()).toEqual(Object.keys(SERVING_REASONS).sort());
    expect(SERVING_SEVERITY.slice(0, problems.length).every((s) => isServingProblem(s))).toBe(true);
    expect(isServingProblem(null)).toBe(false);
  });
});

describe('byWorst', () => {
  it('orders worst first, keeping the agent order within a status', () => {
    const eps = [
      { status: 'ok' as const, host: 'a' },
      { status: 'stale' as const, host: 'b' },
      { status: 'ok' as const, host: 'c' },
      { status: 'expired' as const, host: 'd' },
      { status: 'stale' as const, host: 'e' },
    ];
    expect(byWorst(eps).map((e) => e.host)).toEqual(['d', 'b', 'e', 'a', 'c']);
    expect(eps[0]!.host).toBe('a'); // not sorted in place
  });
});

describe('servingAddressProblem', () => {
  it.each([
    ['203.0.113.7:443', true],
    ['shop.example.com:8443', true],
    ['lb.example.:443', true],
    ['[2001:db8::1]:443', true],
    ['[::ffff:203.0.113.7]:1', true],
    ['a_b.example:65535', true],
    ['203.0.113.7', false],
    ['203.0.113.7:', false],
    [':443', false],
    ['a.example:0', false],
    ['a.example:65536', false],
    ['a.example:+443', false],
    ['[2001:db8::1]', false],
    ['[203.0.113.7]:443', false],
    ['2001:db8::1:443', false],
    ['a..example:443', false],
    ['-a.example:443', false],
    ['a example:443', false],
    ['user@a.example:443', false],
    ['a.example:443/path', false],
  ])('%j acceptable: %j', (v, ok) => {
    expect(servingAddressProblem(v) === undefined).toBe(ok);
  });
});
