import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LIMITS, LimitsError, formatLimit, limitOf, loadLimitsFile, parseLimits } from '../src/limits.js';
import { DEFAULT_QUOTAS } from '../src/service/quotas.js';

const W = '--limits-file l.yaml';

describe('parseLimits', () => {
  it.each([
    [
      'durations as Go writes them',
      { deliveryTimeout: '500ms', deliveryMaxAge: '24h', requestTimeout: '1m30s' },
      { deliveryTimeout: 500, deliveryMaxAge: 86_400_000, requestTimeout: 90_000 },
    ],
    ['counts', { maxRoutersPerCompany: 3, deliveryWorkers: 0 }, { maxRoutersPerCompany: 3, deliveryWorkers: 0 }],
    ['0 turns serving probes off', { servingProbeInterval: 0 }, { servingProbeInterval: 0 }],
    ["'0' too", { servingProbeInterval: '0' }, { servingProbeInterval: 0 }],
    ['a zero grace', { healthGracePeriod: '0s' }, { healthGracePeriod: 0 }],
    ['an empty file', null, {}],
    ['an empty mapping', {}, {}],
  ])('%s', (_what, doc, want) => {
    expect(parseLimits(doc, W)).toEqual(want);
  });

  it.each([
    [
      'an unknown key, with the known ones',
      { maxRouters: 5 },
      "--limits-file l.yaml: unknown key 'maxRouters'; known keys: maxRoutersPerCompany,",
    ],
    [
      'a duration without a unit',
      { deliveryTimeout: 10000 },
      '--limits-file l.yaml: deliveryTimeout must be a duration such as 500ms, 30s, 5m, 1h30m or 24h, got 10000',
    ],
    ['a duration in days', { deliveryMaxAge: '1d' }, "deliveryMaxAge must be a duration such as 500ms, 30s, 5m, 1h30m or 24h, got '1d'"],
    ['a duration out of range', { deliveryTimeout: '1h' }, "--limits-file l.yaml: deliveryTimeout must be between 100ms and 10m, got '1h'"],
    ['a count as a string', { maxRoutersPerCompany: '5' }, "maxRoutersPerCompany must be a whole number (between 1 and 100000), got '5'"],
    ['a fractional count', { logRateBurst: 1.5 }, 'logRateBurst must be a whole number (between 1 and 1000000), got 1.5'],
    ['a count out of range', { maxRoutersPerCompany: 0 }, 'maxRoutersPerCompany must be between 1 and 100000, got 0'],
    [
      'a probe interval below its floor',
      { servingProbeInterval: '1s' },
      "servingProbeInterval must be 0 (off) or between 10s and 24h, got '1s'",
    ],
    ['a list', [1], '--limits-file l.yaml: expected a mapping of limits'],
    ['a scalar', 'deliveryTimeout', '--limits-file l.yaml: expected a mapping of limits'],
  ])('refuses %s', (_what, doc, message) => {
    expect(() => parseLimits(doc, W)).toThrow(LimitsError);
    expect(() => parseLimits(doc, W)).toThrow(message);
  });
});

describe('limits defaults', () => {
  it('the quotas default to the service quotas, each default within its own bounds', () => {
    expect(limitOf({}, 'maxRoutersPerCompany')).toBe(DEFAULT_QUOTAS.maxRoutersPerCompany);
    expect(limitOf({ maxRoutersPerCompany: 7 }, 'maxRoutersPerCompany')).toBe(7);
    expect(limitOf({}, 'deliveryMaxAge')).toBe(86_400_000);
    for (const l of LIMITS) expect(l.default >= l.min && l.default <= l.max, l.key).toBe(true);
  });
});

describe('loadLimitsFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cmn-limits-'));
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  it('reads a YAML file', () => {
    expect(loadLimitsFile(file('ok.yaml', 'maxRoutersPerCompany: 3\ndeliveryTimeout: 5s\n'))).toEqual({
      maxRoutersPerCompany: 3,
      deliveryTimeout: 5_000,
    });
  });

  it('names the file when it is missing or not YAML', () => {
    expect(() => loadLimitsFile(join(dir, 'missing.yaml'))).toThrow(`--limits-file ${join(dir, 'missing.yaml')}: ENOENT`);
    const bad = file('bad.yaml', 'a: [\n');
    expect(() => loadLimitsFile(bad)).toThrow(`--limits-file ${bad}: `);
  });
});

describe('serve --help', () => {
  it('lists every key of the limits file with its default', async () => {
    const { SERVE_USAGE } = await import('../src/cli/usage.js');
    for (const l of LIMITS) expect(SERVE_USAGE).toMatch(new RegExp(`^  ${l.key} +.*\\(default ${formatLimit(l, l.default)}\\)$`, 'm'));
  });
});
