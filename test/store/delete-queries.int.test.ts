/**
 * Bulk deletes check existence with ONE query whatever the number of (repeated) ids, on both
 * engines. Counts the store operations the service runs in its transaction (each one is one SQL statement).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteIntegrations } from '../../src/service/integrations.js';
import { serviceContext } from '../../src/service/context.js';
import { deleteRouters } from '../../src/service/routers.js';
import { openStore } from '../../src/store/index.js';
import type { Store, StoreOps } from '../../src/store/types.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { integration, router } from './contract.js';

const schema = randomSchema('t_delq');
afterAll(async () => {
  await dropSchema(testDatabaseUrl(), schema);
});

/** The store, with every tx op call counted by name. */
function counted(store: Store): { store: Store; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const wrap = (ops: StoreOps): StoreOps =>
    new Proxy(ops, {
      get(target, prop, recv) {
        const v = Reflect.get(target, prop, recv);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const proxy = new Proxy(store, {
    get(target, prop, recv) {
      if (prop === 'transaction') return <T>(fn: (tx: StoreOps) => Promise<T>) => target.transaction((tx) => fn(wrap(tx)));
      const v = Reflect.get(target, prop, recv);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { store: proxy, calls };
}

describe.each([
  ['sqlite', () => openStore('sqlite::memory:')],
  ['postgres', () => openStore(testDatabaseUrl(), { schema })],
] as const)('bulk delete queries (%s)', (_kind, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
    await store.migrate();
    return () => store.close();
  });

  it('deleteNotificationRouter: 100 ids, each repeated 200 times: one existence query, one delete', async () => {
    const A = randomUUID();
    const i = await store.createIntegration(integration(A));
    const ids: string[] = [];
    for (let n = 0; n < 100; n++) ids.push((await store.createRouter(router(A, i.id))).id);
    const { store: s, calls } = counted(store);
    const deleted = await deleteRouters(serviceContext(s, A), Array.from({ length: 200 }, () => ids).flat());
    expect(deleted.sort()).toEqual([...ids].sort());
    expect(Object.fromEntries(calls)).toEqual({ existingIds: 1, deleteRouters: 1 });
  });

  it('deleteIntegrations: one existence query, one usage query, one delete; a missing id deletes nothing', async () => {
    const A = randomUUID();
    const ids: string[] = [];
    for (let n = 0; n < 50; n++) ids.push((await store.createIntegration(integration(A))).id);
    const { store: s, calls } = counted(store);
    const missing = randomUUID();
    const err = await deleteIntegrations(serviceContext(s, A), [...ids, missing, ...ids]).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'NOT_FOUND', details: { ids: [missing] } });
    expect(await store.listIntegrations(A)).toHaveLength(50);
    expect(Object.fromEntries(calls)).toEqual({ existingIds: 1 });
    calls.clear();
    expect(await deleteIntegrations(serviceContext(s, A), [...ids, ...ids])).toEqual(ids);
    expect(Object.fromEntries(calls)).toEqual({ existingIds: 1, listRoutersByIntegration: 1, deleteIntegrations: 1 });
  });
});
