/**
 * Fast recovery across a real SIGKILL: a worker process holding claims with a one-hour lease is
 * killed; restarted under the same instance id it sends them at once. (Under another id they would wait for
 * the hour: see recovery.int.test.ts.) SQLite file and PostgreSQL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createWebhookIntegration, ENGINES, seedDeliveries, startReceiver, waitFor } from './support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./crash-child.ts', import.meta.url));
const HOUR = 3_600_000;

function startChild(location: { url: string; schema?: string }, instanceId: string): ChildProcess {
  const proc = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '--import', 'tsx', CHILD], {
    cwd: ROOT,
    env: {
      ...process.env,
      STORE_URL: location.url,
      STORE_SCHEMA: location.schema ?? '',
      LEASE_MS: String(HOUR),
      ATTEMPT_TIMEOUT_MS: '30000',
      INSTANCE_ID: instanceId,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  proc.stderr!.resume();
  return proc;
}

describe.each(ENGINES.map((make) => [make().name, make] as const))('restart under the same instance id (%s)', (_name, makeEngine) => {
  const engine = makeEngine();
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await engine.cleanup();
  });

  it('SIGKILL while sends hang, restart: the claims are sent at once, not after their one-hour lease', async () => {
    const store = await engine.open();
    let answering = false;
    const rx = await startReceiver({ handler: (_h, res) => (answering ? res.end('ok') : undefined) }); // hang until told
    try {
      const A = `company-${randomUUID()}`;
      const integ = await createWebhookIntegration(store, A, rx.url);
      const seeded = await seedDeliveries(store, integ, 5);
      const instanceId = `pod-${randomUUID()}`;
      const first = startChild(engine.location(), instanceId);
      children.push(first);
      await waitFor('all five in flight at the receiver', () => new Set(rx.hits.map((h) => h.id)).size === 5, 30_000);
      const exited = new Promise((r) => first.once('exit', r));
      first.kill('SIGKILL');
      await exited;
      const held = await store.listDeliveries(A, { limit: 10 });
      expect(held.every((d) => d.status === 'IN_FLIGHT' && d.claimedBy === instanceId && d.leaseUntil! > Date.now() + HOUR / 2)).toBe(true);

      answering = true;
      children.push(startChild(engine.location(), instanceId));
      const done = await waitFor(
        'all delivered after the restart',
        async () => {
          const rs = await store.listDeliveries(A, { limit: 10 });
          return rs.every((d) => d.status === 'DELIVERED') ? rs : undefined;
        },
        30_000,
      );
      expect(done.map((d) => d.id).sort()).toEqual(seeded.map((d) => d.id).sort());
      // delivered well inside the lease the dead process held
      for (const d of done) expect(d.deliveredAt!).toBeLessThan(held.find((h) => h.id === d.id)!.leaseUntil!);
    } finally {
      await rx.close();
      await store.close();
    }
  });
});
