import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Controller } from '../../src/runtime/controller.js';
import type { ReconcileMetrics } from '../../src/runtime/metrics.js';
import { FakeClock, flush } from './fake-clock.js';

const log = pino({ level: 'silent' });

describe('Controller', () => {
  it('resync runs the hook first, enqueues every key, observes reconciles under its name', async () => {
    const clock = new FakeClock();
    const order: string[] = [];
    const observed: string[] = [];
    const metrics: ReconcileMetrics = { observe: (c, r) => void observed.push(`${c}:${r}`) };
    const c = new Controller({
      name: 'health',
      reconcile: async (k) => void order.push(`reconcile ${k}`),
      keys: () => ['a', 'b'],
      resyncMs: 1_000,
      onResync: async () => void order.push('hook'),
      concurrency: 1,
      clock,
      log,
      metrics,
    });
    c.start();
    await clock.advance(1_000);
    await flush();
    expect(order).toEqual(['hook', 'reconcile a', 'reconcile b']);
    expect(observed).toEqual(['health:success', 'health:success']);
    await clock.advance(1_000);
    await flush();
    expect(order).toHaveLength(6);
    await c.stop();
    expect(clock.pending).toBe(0);
  });

  it('a failing hook is logged and the keys are enqueued anyway; nothing after stop', async () => {
    const clock = new FakeClock();
    const seen: string[] = [];
    const c = new Controller({
      name: 'expiry',
      reconcile: async (k) => void seen.push(k),
      keys: () => ['k'],
      resyncMs: 1_000,
      onResync: () => Promise.reject(new Error('config down')),
      concurrency: 1,
      clock,
      log,
    });
    c.start();
    await c.resync();
    await flush();
    expect(seen).toEqual(['k']);
    await c.stop();
    await c.resync();
    await flush();
    expect(seen).toEqual(['k']);
  });
});
