/** The composition root's wiring of serve's limits file into the emitter. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadServeConfig } from '../src/config.js';
import { LIMITS, type LimitKey } from '../src/limits.js';
import { emitterLimits } from '../src/main.js';

/** Each limits key whose help names the emitter, a value other than its default, and the emitter option it sets. */
const EMITTER_KEYS: [LimitKey, string, keyof ReturnType<typeof emitterLimits>, number][] = [
  ['healthGracePeriod', '1m', 'gracePeriodMs', 60_000],
  ['healthUnknownGracePeriod', '2m', 'unknownGracePeriodMs', 120_000],
  ['healthIssuingGracePeriod', '3m', 'issuingGracePeriodMs', 180_000],
  ['healthRenewalOverdueGrace', '2h', 'renewalOverdueGraceMs', 7_200_000],
  ['servingProbeInterval', '0', 'servingProbeIntervalMs', 0],
  ['resyncPeriod', '1m', 'resyncMs', 60_000],
  ['maxPendingEvents', '50', 'maxPendingEvents', 50],
];

function kubeOptionsWith(yaml: string) {
  const f = join(mkdtempSync(join(tmpdir(), 'cmn-limits-')), 'limits.yaml');
  writeFileSync(f, yaml);
  return loadServeConfig(['--limits-file', f], {}).kubeOptions;
}

describe("serve's emitter takes the limits file's emitter keys", () => {
  it.each(EMITTER_KEYS)('%s: %s → %s %d', (key, value, option, want) => {
    expect(emitterLimits(kubeOptionsWith(`${key}: ${value}\n`))[option]).toBe(want);
  });

  it('every key whose help names the emitter is wired', () => {
    const named = LIMITS.filter((l) => /^(emitter|operator and emitter):/.test(l.help)).map((l) => l.key);
    expect(EMITTER_KEYS.map(([key]) => key).sort()).toEqual([...named].sort());
  });
});
