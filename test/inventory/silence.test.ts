import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSilenceWatch, type SilenceWatch } from '../../src/inventory/silence.js';
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

  it('logs one warn line per cluster when it falls silent, then none for it', async () => {
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
    await store.putCluster(cluster('co-a', { id: 'c-quiet', lastSeenAt: 9_000 }));
    await store.putCluster(cluster('co-b', { id: 'c-busy', lastSeenAt: 9_900 }));
    watch = startSilenceWatch({ store, log, silenceAfterMs: 1_000, now: () => t });
    expect(await watch.check()).toBe(0); // t=10000: window [9000, 9000)
    t = 10_500; // c-quiet (9000) has been silent for 1500 ms now
    expect(await watch.check()).toBe(1);
    t = 10_950;
    expect(await watch.check()).toBe(1); // c-busy (9900) fell silent at 10900
    t = 20_000;
    expect(await watch.check()).toBe(0); // both logged once already
    const warned = lines.filter((l) => l.msg === 'cluster silent: no inventory report within --cluster-silence-after');
    expect(warned.map((l) => [l.companyId, l.clusterId])).toEqual([
      ['co-a', 'c-quiet'],
      ['co-b', 'c-busy'],
    ]);
  });
});
