/**
 * Crash test: a worker in a child process is SIGKILLed in the middle of a burst of 300 deliveries
 * to a webhook receiver in this process, then restarted. Every delivery must arrive at least once,
 * a repeat must carry the same webhook-id (and the same body), and the store must end all DELIVERED.
 * Runs on a SQLite file and on PostgreSQL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.js';
import { createWebhookIntegration, ENGINES, type Hit, seedDeliveries, startReceiver, waitFor, WHSEC } from './support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./crash-child.ts', import.meta.url));
const TOTAL = 300;
const KILL_AT = 100;
// 3 × (attempt timeout + the 1 s grace an attempt that ignores its abort gets): the worker's default
const LEASE_MS = 6_000;

interface Child {
  proc: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

function startChild(location: { url: string; schema?: string }): Child {
  const proc = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '--import', 'tsx', CHILD], {
    cwd: ROOT,
    env: {
      ...process.env,
      STORE_URL: location.url,
      STORE_SCHEMA: location.schema ?? '',
      LEASE_MS: String(LEASE_MS),
      ATTEMPT_TIMEOUT_MS: '1000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
  proc.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { proc, exited, stderr: () => err };
}

describe.each(ENGINES.map((make) => [make().name, make] as const))('crash during a burst (%s)', (_name, makeEngine) => {
  const engine = makeEngine();
  const children: Child[] = [];
  afterAll(async () => {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    await engine.cleanup();
  });

  it('SIGKILL mid-burst, restart: every delivery arrives at least once, repeats carry the same id, all DELIVERED', async () => {
    const store: Store = await engine.open();
    let first: Child | undefined;
    let killed = false;
    /** Requests received but never answered: their outcome cannot have been recorded. */
    const held: string[] = [];
    // Phase 1: answer 200 until the KILL_AT-th request; that one and every later one are never
    // answered, and the worker is SIGKILLed right then (with those requests in flight).
    const rx = await startReceiver({
      handler: (hit, res) => {
        if (rx.hits.length < KILL_AT) return void res.end('ok');
        held.push(hit.id);
        if (!killed) {
          killed = true;
          first!.proc.kill('SIGKILL');
        }
        // hold: no answer; the connection dies with the child
      },
    });
    try {
      const A = `company-${randomUUID()}`;
      const integ = await createWebhookIntegration(store, A, rx.url);
      const seeded = await seedDeliveries(store, integ, TOTAL / 5, 5);
      expect(seeded).toHaveLength(TOTAL);

      first = startChild(engine.location());
      children.push(first);
      const exit1 = await first.exited;
      expect(exit1, first.stderr()).toEqual({ code: null, signal: 'SIGKILL' });

      const mid = await store.listDeliveries(A, { limit: 1000 });
      const midCount = (s: string) => mid.filter((d) => d.status === s).length;
      expect(midCount('DELIVERED')).toBeGreaterThan(0);
      expect(midCount('DELIVERED')).toBeLessThan(TOTAL);
      // (On PostgreSQL an outcome the child sent just before dying may still commit after this read.)
      expect(held.length).toBeGreaterThanOrEqual(1); // at least the KILL_AT-th request
      for (const id of held) expect(mid.find((d) => d.id === id)?.status).toBe('IN_FLIGHT'); // sent, never recorded

      // Phase 2: the receiver works again; a new process takes over (after the old leases expire).
      rx.handle((_hit, res) => res.end('ok'));
      const second = startChild(engine.location());
      children.push(second);
      await waitFor(
        'every delivery DELIVERED',
        async () => {
          const rs = await store.listDeliveries(A, { limit: 1000 });
          return rs.length === TOTAL && rs.every((d) => d.status === 'DELIVERED') ? rs : undefined;
        },
        30_000,
        50,
      );
      second.proc.kill('SIGTERM');
      expect(await second.exited, second.stderr()).toEqual({ code: 0, signal: null });

      // Every accepted delivery arrived at least once.
      const byId = new Map<string, Hit[]>();
      for (const h of rx.hits) byId.set(h.id, [...(byId.get(h.id) ?? []), h]);
      for (const d of seeded) expect(byId.get(d.id)?.length ?? 0, d.id).toBeGreaterThanOrEqual(1);
      expect([...byId.keys()].sort()).toEqual(seeded.map((d) => d.id).sort());

      // Repeats exist (the requests in flight at the kill) and are recognisable: same webhook-id,
      // same body (CloudEvents id = webhook-id), each validly signed.
      const repeated = [...byId.entries()].filter(([, hs]) => hs.length > 1);
      expect(repeated.length).toBeGreaterThanOrEqual(1);
      for (const id of held) expect(byId.get(id)!.length).toBeGreaterThanOrEqual(2);
      for (const [id, hs] of repeated) {
        for (const h of hs) {
          expect(h.headers['webhook-id']).toBe(id);
          expect(h.body).toBe(hs[0]!.body);
        }
      }
      for (const h of rx.hits) {
        const ce = new Webhook(WHSEC).verify(h.body, h.headers as Record<string, string>) as { id: string };
        expect(ce.id).toBe(h.id);
      }

      const final = await store.listDeliveries(A, { limit: 1000 });
      expect(final.every((d) => d.status === 'DELIVERED' && d.leaseUntil === null && d.deliveredAt !== null)).toBe(true);
      // The killed attempts were counted: those deliveries took a second attempt.
      for (const id of held) expect(final.find((d) => d.id === id)!.attempts).toBeGreaterThanOrEqual(2);
      const stats = await store.deliveryStats();
      expect(stats).toEqual({ PENDING: 0, IN_FLIGHT: 0, DEAD: 0 });
    } finally {
      await rx.close();
      await store.close();
    }
  });
});
