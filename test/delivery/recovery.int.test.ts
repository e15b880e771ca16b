/**
 * Fast recovery: claims carry the worker's instance id; a worker starting under the id of a
 * process that died takes its claims back at once (no lease wait), other ids wait for the lease, and a
 * graceful stop hands back what it still holds. Real stores, a real loopback receiver.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { instanceIdOf, ConfigError, loadServeConfig } from '../../src/config.js';
import { DeliveryWorker, type DeliveryWorkerDeps } from '../../src/delivery/worker.js';
import { createNotifier, Notifiers } from '../../src/integrations/index.js';
import { integrationOptions } from '../../src/integrations/types.js';
import type { Store } from '../../src/store/types.js';
import {
  captureLog,
  createWebhookIntegration,
  ENGINES,
  type Engine,
  LOOPBACK_EGRESS,
  type Receiver,
  seedDeliveries,
  startReceiver,
  waitFor,
} from './support.js';

const HOUR = 3_600_000;

describe('instanceIdOf / --instance-id', () => {
  it.each([
    ['pod name', 'certmgr-notify-7d9f8-abcde', 'certmgr-notify-7d9f8-abcde'],
    ['default: the hostname', undefined, 'node-1.example'],
  ])('%s', (_what, v, want) => {
    expect(instanceIdOf(v, () => 'node-1.example')).toBe(want);
  });
  it.each([
    ['empty', ''],
    ['space', 'a b'],
    ['control', 'a\nb'],
    ['too long', 'x'.repeat(254)],
  ])('refuses %s', (_what, v) => {
    expect(() => instanceIdOf(v)).toThrow(ConfigError);
  });
  it('flag and environment variable', () => {
    expect(loadServeConfig(['--instance-id', 'pod-a'], {}).instanceId).toBe('pod-a');
    expect(loadServeConfig([], { CERTMGR_NOTIFY_INSTANCE_ID: 'pod-b' }).instanceId).toBe('pod-b');
  });
});

describe.each(ENGINES.map((make) => [make().name, make] as const))('fast recovery on %s', (_name, makeEngine) => {
  let engine: Engine;
  let store: Store;
  let rx: Receiver;
  const workers: DeliveryWorker[] = [];
  beforeAll(() => {
    engine = makeEngine();
  });
  afterAll(async () => {
    await engine.cleanup();
  });
  beforeEach(async () => {
    store = await engine.open();
    rx = await startReceiver();
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop(1_000);
    await rx.close();
    await store.close();
  });

  function worker(instanceId: string | undefined, over: Partial<DeliveryWorkerDeps> = {}): DeliveryWorker {
    const w = new DeliveryWorker({
      store,
      notifiers: new Notifiers((type) =>
        createNotifier(type, integrationOptions({ timeoutMs: 2_000, userAgent: 't', egress: LOOPBACK_EGRESS })),
      ),
      logger: captureLog().logger,
      ...(instanceId ? { instanceId } : {}),
      options: { pollIntervalMs: 20, attemptTimeoutMs: 2_000, leaseMs: HOUR },
      ...over,
    });
    workers.push(w);
    return w;
  }
  const rowsOf = async (companyId: string) => store.listDeliveries(companyId, { limit: 100 });

  it('claims name their owner; releaseClaims hands back only that owner’s, due at once, attempts kept', async () => {
    const A = `company-${randomUUID()}`;
    const integ = await createWebhookIntegration(store, A, rx.url);
    await seedDeliveries(store, integ, 4);
    const now = Date.now();
    const mine = await store.claimDeliveries(now, 2, HOUR, 'pod-a');
    const theirs = await store.claimDeliveries(now, 2, HOUR, 'pod-b');
    expect(mine.map((d) => d.claimedBy)).toEqual(['pod-a', 'pod-a']);
    expect(await store.releaseClaims('pod-a', now + 1, true)).toBe(2);
    const rows = new Map((await rowsOf(A)).map((d) => [d.id, d]));
    for (const d of mine)
      expect(rows.get(d.id)).toMatchObject({
        status: 'PENDING',
        nextAttemptAt: now + 1,
        attempts: 1,
        leaseUntil: null,
        abandonedClaims: 1,
      });
    for (const d of theirs) expect(rows.get(d.id)).toMatchObject({ status: 'IN_FLIGHT', claimedBy: 'pod-b' });
    // the released ones are claimable again now; the other owner's are not (lease)
    expect((await store.claimDeliveries(now + 2, 10, HOUR)).map((d) => d.id).sort()).toEqual(mine.map((d) => d.id).sort());
    // a stale outcome of the dead process's attempt no longer applies
    expect(await store.markDelivered(mine[0]!.id, mine[0]!.attempts, now + 3, 200)).toBe(false);
  });

  it('a restart under the same instance id resends what the dead process had in flight at once; another id waits for the lease', async () => {
    const A = `company-${randomUUID()}`;
    const integ = await createWebhookIntegration(store, A, rx.url);
    const [held] = await seedDeliveries(store, integ, 1);
    // the process "pod-a" claimed it (an hour's lease) and was killed before recording anything
    await store.claimDeliveries(Date.now(), 10, HOUR, 'pod-a');
    // another replica sends new work but leaves pod-a's claim alone
    const other = worker('pod-b');
    other.start();
    const [sentinel] = await seedDeliveries(store, integ, 1);
    other.kick();
    await waitFor('the new delivery sent by pod-b', async () =>
      (await rowsOf(A)).find((d) => d.id === sentinel!.id)?.status === 'DELIVERED' ? true : undefined,
    );
    expect((await rowsOf(A)).find((d) => d.id === held!.id)).toMatchObject({ status: 'IN_FLIGHT', claimedBy: 'pod-a' });
    expect(rx.hits.some((h) => h.id === held!.id)).toBe(false);
    // pod-a restarts: its claim is sent now, not after the hour
    worker('pod-a').start();
    const done = await waitFor('the held delivery sent', async () =>
      (await rowsOf(A)).find((d) => d.id === held!.id && d.status === 'DELIVERED'),
    );
    expect(done.deliveredAt!).toBeLessThan(done.createdAt + HOUR);
    expect(rx.hits.filter((h) => h.id === held!.id)).toHaveLength(1);
  });

  it('a graceful stop hands back the claims it could not finish (no lease wait for the next process)', async () => {
    const A = `company-${randomUUID()}`;
    const integ = await createWebhookIntegration(store, A, rx.url);
    await seedDeliveries(store, integ, 3);
    // the store cannot load the integration: the worker leaves its claims (retaken after their lease)
    const w = worker('pod-c', { getIntegration: async () => Promise.reject(new Error('store unreachable')) });
    w.start();
    await waitFor('all claimed', async () => ((await rowsOf(A)).every((d) => d.status === 'IN_FLIGHT') ? true : undefined));
    await w.stop();
    const after = await rowsOf(A);
    expect(after.map((d) => d.status)).toEqual(['PENDING', 'PENDING', 'PENDING']);
    // and a successor (another id) sends them at once
    worker('pod-d').start();
    await waitFor('delivered by the successor', async () => ((await rowsOf(A)).every((d) => d.status === 'DELIVERED') ? true : undefined));
  });
});
