import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { metricsFor, reportIsSync } from '../../src/emitter/metrics.js';

describe('emitter heartbeat (certmgr_notify_emitter_last_sync_timestamp_seconds)', () => {
  it.each([
    ['applied', true],
    ['duplicate', true],
    ['resync', false],
    ['unsupported', false],
    ['rejected', false],
    ['throttled', false],
    ['retry', false],
  ] as const)('outcome %s advances it: %s', (outcome, want) => {
    expect(reportIsSync(outcome)).toBe(want);
  });

  it('is 0 until the hub accepts a report, then the time of the last accepted one; a refused report leaves it', async () => {
    const registry = new Registry();
    const m = metricsFor(registry);
    const value = async () =>
      (await registry.getSingleMetric('certmgr_notify_emitter_last_sync_timestamp_seconds')!.get()).values[0]?.value;
    expect(await value()).toBe(0);
    m.inventory.report('delta', 'retry');
    expect(await value()).toBe(0);
    const before = Date.now() / 1000;
    m.inventory.report('delta', 'applied');
    const synced = (await value())!;
    expect(synced).toBeGreaterThanOrEqual(Math.floor(before));
    m.inventory.report('delta', 'rejected');
    expect(await value()).toBe(synced);
  });
});
