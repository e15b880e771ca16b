import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateEvent } from '../../src/events/schemas.js';
import { agentActiveEvent, agentSilentEvent, startSilenceWatch, type SilenceWatch } from '../../src/inventory/silence.js';
import { createRoutingMetrics } from '../../src/routing/metrics.js';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { cluster } from '../store/contract-inventory.js';

describe('silence watch (real SQLite store, clock passed in)', () => {
  let store: Store;
  let watch: SilenceWatch | undefined;
  beforeEach(async () => {
    store = await openStore('sqlite::memory:');
    await store.migrate();
  });
  afterEach(async () => {
    await watch?.stop();
    await store.close();
  });

  it('marks and logs each cluster once when it falls silent, accepting one event for it', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _e, cb) {
          lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
          cb();
        },
      }),
    );
    let t = 10_000;
    const quiet = cluster('co-a', { lastSeenAt: 9_000 });
    const busy = cluster('co-b', { lastSeenAt: 9_900 });
    await store.putCluster(quiet);
    await store.putCluster(busy);
    const ingest = { snapshots: new RoutingSnapshots(store), metrics: createRoutingMetrics(new Registry()), log };
    watch = startSilenceWatch({ store, ingest, log, silenceAfterMs: 1_000, now: () => t });
    expect(await watch.check()).toBe(0); // t=10000: quiet has been silent for exactly 1000 ms: not more
    t = 10_500; // quiet (9000) has been silent for 1500 ms now
    expect(await watch.check()).toBe(1);
    t = 10_950;
    expect(await watch.check()).toBe(1); // busy (9900) fell silent at 10900
    t = 20_000;
    expect(await watch.check()).toBe(0); // both marked already
    const warned = lines.filter((l) => l.msg === 'cluster silent: no inventory report within clusterSilenceAfter (--limits-file)');
    expect(warned.map((l) => [l.companyId, l.clusterId])).toEqual([
      ['co-a', quiet.id],
      ['co-b', busy.id],
    ]);
    expect((await store.lockCluster('co-a', quiet.id))?.silentSince).toBe(10_000);
    expect((await store.lockCluster('co-b', busy.id))?.silentSince).toBe(10_900);
    // the event was accepted with the mark (no router: no delivery)
    const ev = await store.getEvent('co-a', String(warned[0]?.eventId));
    expect(ev).toMatchObject({
      type: 'evt.healthstatus.certmgr-agent.notready',
      data: { clusterId: quiet.id, statusReason: 'AgentSilent' },
    });
    expect(warned[0]?.deliveries).toBe(0);
  });
});

describe('agent events (pure builders)', () => {
  const c = cluster('co', { name: 'prod-eu', agentVersion: '1.4.0', lastSeenAt: Date.parse('2025-03-16T04:00:00.25Z') });
  it('.notready: the spec-like fields, valid against the schema', () => {
    const e = agentSilentEvent(c, c.lastSeenAt + 900_000, 900_000);
    expect(validateEvent(e)).toMatchObject({ ok: true });
    expect(e.data).toMatchObject({
      clusterId: c.id,
      clusterName: 'prod-eu',
      lastSeenAt: '2025-03-16T04:00:00.250Z',
      statusTransition: '2025-03-16T04:15:00.250Z',
      statusReason: 'AgentSilent',
      agentVersion: '1.4.0',
    });
    expect(e.data.statusMessage).toContain('0h15m0s');
  });
  it('.active: unhealthyDuration in the spec format', () => {
    const now = Date.parse('2025-03-16T06:15:00Z');
    const e = agentActiveEvent(
      { clusterId: c.id, clusterName: 'prod-eu', agentVersion: '1.4.1', lastSeenAt: now },
      now,
      7_199_750,
      'AgentReporting',
    );
    expect(validateEvent(e)).toMatchObject({ ok: true });
    expect(e.data).toMatchObject({
      statusTransition: '2025-03-16T06:15:00Z',
      unhealthyDuration: '1h59m59.75s',
      statusReason: 'AgentReporting',
    });
  });
});
