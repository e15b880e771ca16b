import { describe, expect, it } from 'vitest';
import { defaultMonitoringConfig, isMonitored, monitoringConfigId, rulesOf } from '../../src/model/monitoring.js';

describe('isMonitored (spec combinations table)', () => {
  const cfg = (applicationIds: string[], includeUnassignedCertificates: boolean, enabled = true) => ({
    enabled,
    applicationIds,
    includeUnassignedCertificates,
  });
  it.each([
    // applicationIds, includeUnassigned, certificate's apps, monitored
    [[], true, ['a'], true],
    [[], true, [], true],
    [[], false, ['a'], true],
    [[], false, [], false],
    [['a'], true, ['a'], true],
    [['a'], true, ['b'], false],
    [['a'], true, [], true],
    [['a'], false, ['a'], true],
    [['a'], false, ['b'], false],
    [['a'], false, [], false],
    [['a'], false, ['b', 'a'], true],
  ] as [string[], boolean, string[], boolean][])('apps=%j unassigned=%s cert=%j -> %s', (apps, unassigned, cert, want) => {
    expect(isMonitored(cfg(apps, unassigned), cert)).toBe(want);
  });
  it('nothing is monitored when disabled', () => {
    expect(isMonitored(cfg([], true, false), ['a'])).toBe(false);
    expect(isMonitored(cfg([], true, false), [])).toBe(false);
  });
});

describe('monitoring config ids and rules', () => {
  it('derives a stable, valid, per-company UUID', () => {
    const a = monitoringConfigId('11111111-1111-4111-8111-111111111111');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(monitoringConfigId('11111111-1111-4111-8111-111111111111')).toBe(a);
    expect(monitoringConfigId('22222222-2222-4222-8222-222222222222')).not.toBe(a);
    expect(defaultMonitoringConfig('x').thresholds).toEqual([30, 14, 7]);
  });
  it('numbers rules by 1-based threshold position', () => {
    expect(rulesOf([60, 5])).toEqual([
      { ruleId: 1, threshold: 60 },
      { ruleId: 2, threshold: 5 },
    ]);
    expect(rulesOf([])).toEqual([]);
  });
});
