/**
 * The Store contract: one suite, run against every engine (sqlite.test.ts, postgres.test.ts).
 *
 * makeStore must return an open, not yet migrated store. It may share its database with other
 * tests (the PostgreSQL file uses one schema per file), so every test works with fresh random
 * company ids and never assumes the tables are empty.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreConstraintError, StoreError } from '../../src/store/errors.js';
import type {
  IntegrationPatch,
  IntegrationRecord,
  MonitoringConfigRecord,
  RouterRecord,
  Store,
} from '../../src/store/types.js';

let clock = 1_700_000_000_000;
const now = () => (clock += 1000);

export function integration(companyId: string, over: Partial<IntegrationRecord> = {}): IntegrationRecord {
  const t = now();
  return {
    id: randomUUID(),
    companyId,
    name: `webhook ${t}`,
    type: 'WEBHOOK',
    enabled: true,
    config: { recipients: ['ops@example.com'], nested: { a: [1, 2, { b: null }] }, unicode: 'zürich ✓' },
    secrets: { url: 'https://hooks.example.com/abc', signingSecret: 'whsec_x' },
    managedBy: null,
    createdAt: t,
    updatedAt: t,
    ...over,
  };
}

export function router(companyId: string, integrationId: string, over: Partial<RouterRecord> = {}): RouterRecord {
  const t = now();
  return {
    id: randomUUID(),
    companyId,
    name: `router ${t}`,
    eventTypeId: 'certmgr-issuer-health-notification-config',
    enabled: true,
    filter: '',
    integrationId,
    templateId: null,
    generation: 'ROUTER',
    managedBy: null,
    createdAt: t,
    updatedAt: t,
    ...over,
  };
}

function monitoringConfig(companyId: string, over: Partial<MonitoringConfigRecord> = {}): MonitoringConfigRecord {
  return {
    id: randomUUID(),
    companyId,
    enabled: true,
    thresholds: [30, 14, 7, 1],
    applicationIds: [randomUUID()],
    includeUnassignedCertificates: false,
    updatedAt: now(),
    ...over,
  };
}

class Boom extends Error {}

export function storeContract(name: string, makeStore: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    let A: string;
    let B: string;

    beforeEach(async () => {
      store = await makeStore();
      await store.migrate();
      A = `company-a-${randomUUID()}`;
      B = `company-b-${randomUUID()}`;
    });

    afterEach(async () => {
      await store.close();
    });

    describe('monitoring configs', () => {
      it('is null until put, then round-trips every field', async () => {
        expect(await store.getMonitoringConfig(A)).toBeNull();
        const rec = monitoringConfig(A, { enabled: false, thresholds: [], applicationIds: [] });
        expect(await store.putMonitoringConfig(rec)).toEqual(rec);
        expect(await store.getMonitoringConfig(A)).toEqual(rec);
      });

      it('put replaces the company’s single config and keeps its id', async () => {
        const first = await store.putMonitoringConfig(monitoringConfig(A));
        const second = monitoringConfig(A, { includeUnassignedCertificates: true, thresholds: [60] });
        const stored = await store.putMonitoringConfig(second);
        expect(stored).toEqual({ ...second, id: first.id });
        expect(await store.getMonitoringConfig(A)).toEqual(stored);
      });

      it('is scoped by company', async () => {
        const a = await store.putMonitoringConfig(monitoringConfig(A));
        expect(await store.getMonitoringConfig(B)).toBeNull();
        const b = await store.putMonitoringConfig(monitoringConfig(B, { enabled: false }));
        expect(await store.getMonitoringConfig(A)).toEqual(a);
        expect(await store.getMonitoringConfig(B)).toEqual(b);
      });
    });

    describe('integrations', () => {
      it('create, get, list (in creation order), update, delete', async () => {
        const i1 = integration(A, { type: 'EMAIL', managedBy: 'operator:ns/one' });
        const i2 = integration(A, { type: 'SLACK', enabled: false });
        expect(await store.createIntegration(i1)).toEqual(i1);
        expect(await store.createIntegration(i2)).toEqual(i2);
        expect(await store.getIntegration(A, i1.id)).toEqual(i1);
        expect(await store.listIntegrations(A)).toEqual([i1, i2]);

        const t = now();
        const updated = await store.updateIntegration(
          A,
          i1.id,
          { name: 'renamed', enabled: false, config: { x: 1 }, managedBy: null },
          t,
        );
        const expected = { ...i1, name: 'renamed', enabled: false, config: { x: 1 }, managedBy: null, updatedAt: t };
        expect(updated).toEqual(expected);
        expect(await store.getIntegration(A, i1.id)).toEqual(expected);

        // A partial patch leaves the other fields alone.
        const t2 = now();
        const u2 = await store.updateIntegration(A, i2.id, { secrets: { key: 'k2' } }, t2);
        expect(u2).toEqual({ ...i2, secrets: { key: 'k2' }, updatedAt: t2 });

        expect(await store.deleteIntegrations(A, [i1.id, randomUUID(), i1.id])).toEqual([i1.id]);
        expect(await store.getIntegration(A, i1.id)).toBeNull();
        expect(await store.listIntegrations(A)).toEqual([u2]);
        expect(await store.deleteIntegrations(A, [])).toEqual([]);
      });

      it('update and get of a missing id return null', async () => {
        expect(await store.getIntegration(A, randomUUID())).toBeNull();
        expect(await store.updateIntegration(A, randomUUID(), { name: 'x' }, now())).toBeNull();
      });

      it('an empty patch only touches updatedAt', async () => {
        const i = await store.createIntegration(integration(A));
        const t = now();
        expect(await store.updateIntegration(A, i.id, {}, t)).toEqual({ ...i, updatedAt: t });
      });

      it('a patch cannot move a record to another company or change its id', async () => {
        const i = await store.createIntegration(integration(A));
        const sneaky = { name: 'n', companyId: B, id: 'other', createdAt: 1 } as IntegrationPatch;
        const t = now();
        expect(await store.updateIntegration(A, i.id, sneaky, t)).toEqual({ ...i, name: 'n', updatedAt: t });
        expect(await store.listIntegrations(B)).toEqual([]);
      });

      it('a duplicate id is a unique constraint error', async () => {
        const i = await store.createIntegration(integration(A));
        const err = await store.createIntegration(integration(A, { id: i.id })).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreConstraintError);
        expect((err as StoreConstraintError).constraint).toBe('unique');
      });

      it('the store generates an id when given an empty one', async () => {
        const i = await store.createIntegration(integration(A, { id: '' }));
        expect(i.id).toMatch(/^[0-9a-f-]{36}$/);
        expect(await store.getIntegration(A, i.id)).toEqual(i);
      });
    });

    describe('routers', () => {
      it('create, get, list, list by integration, update, delete', async () => {
        const i1 = await store.createIntegration(integration(A));
        const i2 = await store.createIntegration(integration(A));
        const r1 = router(A, i1.id, { filter: 'data.issuer.name == "x"', templateId: 'tpl-1' });
        const r2 = router(A, i2.id, {
          eventTypeId: 'cert-expiry-ext-notification-config',
          generation: 'ROUTING_CONFIGURATION',
          managedBy: 'operator:ns/r2',
          enabled: false,
        });
        const r3 = router(A, i1.id);
        for (const r of [r1, r2, r3]) expect(await store.createRouter(r)).toEqual(r);

        expect(await store.getRouter(A, r1.id)).toEqual(r1);
        expect(await store.listRouters(A)).toEqual([r1, r2, r3]);
        expect(await store.listRoutersByIntegration(A, [i1.id])).toEqual([r1, r3]);
        expect(await store.listRoutersByIntegration(A, [i2.id, i1.id, i2.id])).toEqual([r1, r2, r3]);
        expect(await store.listRoutersByIntegration(A, [])).toEqual([]);

        const t = now();
        const u1 = await store.updateRouter(
          A,
          r1.id,
          {
            name: 'renamed',
            integrationId: i2.id,
            templateId: null,
            filter: '',
            eventTypeId: 'certmgr-cert-resource-health-notification-config',
            enabled: false,
          },
          t,
        );
        const expected: RouterRecord = {
          ...r1,
          name: 'renamed',
          integrationId: i2.id,
          templateId: null,
          filter: '',
          eventTypeId: 'certmgr-cert-resource-health-notification-config',
          enabled: false,
          updatedAt: t,
        };
        expect(u1).toEqual(expected);
        expect(await store.getRouter(A, r1.id)).toEqual(expected);
        expect(await store.listRoutersByIntegration(A, [i1.id])).toEqual([r3]);

        expect(await store.deleteRouters(A, [r1.id, r3.id, randomUUID()])).toEqual([r1.id, r3.id]);
        expect(await store.listRouters(A)).toEqual([r2]);
        expect(await store.updateRouter(A, r1.id, { name: 'gone' }, now())).toBeNull();
      });

      it('a router must reference an existing integration of its own company', async () => {
        const bInt = await store.createIntegration(integration(B));
        for (const integrationId of [randomUUID(), bInt.id]) {
          const err = await store.createRouter(router(A, integrationId)).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(StoreConstraintError);
          expect((err as StoreConstraintError).constraint).toBe('foreign_key');
        }
        const aInt = await store.createIntegration(integration(A));
        const r = await store.createRouter(router(A, aInt.id));
        const err = await store.updateRouter(A, r.id, { integrationId: bInt.id }, now()).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreConstraintError);
        expect(await store.getRouter(A, r.id)).toEqual(r);
      });
    });

    describe('company scoping', () => {
      it('company B cannot see, update or delete company A’s records', async () => {
        const i = await store.createIntegration(integration(A));
        const r = await store.createRouter(router(A, i.id));

        expect(await store.getIntegration(B, i.id)).toBeNull();
        expect(await store.getRouter(B, r.id)).toBeNull();
        expect(await store.listIntegrations(B)).toEqual([]);
        expect(await store.listRouters(B)).toEqual([]);
        expect(await store.listRoutersByIntegration(B, [i.id])).toEqual([]);

        expect(await store.updateIntegration(B, i.id, { name: 'pwned' }, now())).toBeNull();
        expect(await store.updateRouter(B, r.id, { name: 'pwned' }, now())).toBeNull();
        expect(await store.deleteRouters(B, [r.id])).toEqual([]);
        expect(await store.deleteIntegrations(B, [i.id])).toEqual([]);

        expect(await store.getIntegration(A, i.id)).toEqual(i);
        expect(await store.getRouter(A, r.id)).toEqual(r);
      });
    });

    describe('foreign key: integrations used by routers', () => {
      it('deleting an integration a router uses fails and deletes nothing', async () => {
        const used = await store.createIntegration(integration(A));
        const unused = await store.createIntegration(integration(A));
        const r = await store.createRouter(router(A, used.id));

        const err = await store.deleteIntegrations(A, [unused.id, used.id]).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreConstraintError);
        expect((err as StoreConstraintError).constraint).toBe('foreign_key');
        expect(await store.listIntegrations(A)).toEqual([used, unused]);

        expect(await store.deleteRouters(A, [r.id])).toEqual([r.id]);
        expect(await store.deleteIntegrations(A, [used.id, unused.id])).toEqual([used.id, unused.id]);
        expect(await store.listIntegrations(A)).toEqual([]);
      });
    });

    describe('transactions', () => {
      it('commits everything and returns the callback’s value', async () => {
        const result = await store.transaction(async (tx) => {
          const i = await tx.createIntegration(integration(A));
          const r = await tx.createRouter(router(A, i.id));
          expect(await tx.getRouter(A, r.id)).toEqual(r); // sees its own writes
          return { i, r };
        });
        expect(await store.getIntegration(A, result.i.id)).toEqual(result.i);
        expect(await store.getRouter(A, result.r.id)).toEqual(result.r);
      });

      it('a throw midway rolls everything back and rethrows the same error', async () => {
        const before = await store.createIntegration(integration(A));
        const boom = new Boom('midway');
        const ids: string[] = [];
        const err = await store
          .transaction(async (tx) => {
            const i = await tx.createIntegration(integration(A));
            ids.push(i.id);
            ids.push((await tx.createRouter(router(A, i.id))).id);
            await tx.updateIntegration(A, before.id, { name: 'changed in tx' }, now());
            await tx.putMonitoringConfig(monitoringConfig(A));
            throw boom;
          })
          .catch((e: unknown) => e);
        expect(err).toBe(boom);
        expect(await store.getIntegration(A, ids[0]!)).toBeNull();
        expect(await store.getRouter(A, ids[1]!)).toBeNull();
        expect(await store.getIntegration(A, before.id)).toEqual(before);
        expect(await store.getMonitoringConfig(A)).toBeNull();
        expect(await store.listIntegrations(A)).toEqual([before]);
      });

      it('a failing statement rolls back the earlier ones', async () => {
        const used = await store.createIntegration(integration(A));
        await store.createRouter(router(A, used.id));
        const err = await store
          .transaction(async (tx) => {
            await tx.createIntegration(integration(A, { name: 'in tx' }));
            await tx.deleteIntegrations(A, [used.id]); // FK violation
          })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreConstraintError);
        expect((await store.listIntegrations(A)).map((i) => i.id)).toEqual([used.id]);
      });

      it('the store is usable after a rollback', async () => {
        await expect(
          store.transaction(async () => {
            throw new Boom();
          }),
        ).rejects.toBeInstanceOf(Boom);
        const i = await store.transaction((tx) => tx.createIntegration(integration(A)));
        expect(await store.getIntegration(A, i.id)).toEqual(i);
      });

      it('concurrent transactions all commit', async () => {
        const created = await Promise.all(
          Array.from({ length: 8 }, () =>
            store.transaction(async (tx) => {
              const i = await tx.createIntegration(integration(A));
              await tx.createRouter(router(A, i.id));
              return i.id;
            }),
          ),
        );
        expect((await store.listIntegrations(A)).map((i) => i.id).sort()).toEqual([...created].sort());
        expect(await store.listRouters(A)).toHaveLength(8);
      });

      it('using the store instead of the tx ops inside a transaction throws (and rolls back)', async () => {
        const err = await store
          .transaction(async (tx) => {
            await tx.createIntegration(integration(A));
            await store.listIntegrations(A);
          })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreError);
        expect(String(err)).toMatch(/inside store\.transaction/);
        await expect(store.transaction(() => store.transaction(async () => 1))).rejects.toBeInstanceOf(StoreError);
        expect(await store.listIntegrations(A)).toEqual([]);
      });

      it('tx ops cannot be used after the transaction finished', async () => {
        const tx = await store.transaction(async (tx) => tx);
        await expect(tx.listIntegrations(A)).rejects.toThrow(/after the transaction finished/);
      });
    });

    describe('migrations and lifecycle', () => {
      it('migrate again is a no-op that keeps the data', async () => {
        const i = await store.createIntegration(integration(A));
        await store.migrate();
        await Promise.all([store.migrate(), store.migrate()]);
        expect(await store.listIntegrations(A)).toEqual([i]);
      });

      it('ping works; operations after close fail', async () => {
        await store.ping();
        const closing = await makeStore();
        await closing.close();
        await closing.close(); // idempotent
        await expect(closing.ping()).rejects.toThrow();
        await expect(closing.listIntegrations(A)).rejects.toThrow();
      });
    });
  });
}
