/**
 * The Store contract: one suite, run against every engine (sqlite.test.ts, postgres.test.ts).
 *
 * makeStore must return an open, not yet migrated store. It may share its database with other
 * tests (the PostgreSQL file uses one schema per file), so every test works with fresh random
 * company ids and never assumes the tables are empty.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreConstraintError, StoreError, StoreInvalidTextError } from '../../src/store/errors.js';
import { insertCluster, upsertInventory, type InventoryRow } from '../expiry/inventory.js';
import type {
  ClaimedDelivery,
  DeliveryRecord,
  EventRecord,
  ExpiryCursor,
  ExpiryInventoryRow,
  IntegrationPatch,
  IntegrationRecord,
  MonitoringConfigRecord,
  NewDelivery,
  RouterRecord,
  Store,
} from '../../src/store/types.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';

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
    ...ROUTER_POLICY_DEFAULTS,
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

export function eventRecord(companyId: string, over: Partial<EventRecord> = {}): EventRecord {
  return {
    id: randomUUID(),
    companyId,
    type: 'evt.healthstatus.certmgr-issuer.notready',
    data: { issuerName: 'le-prod', nested: { list: [1, 'two', null], unicode: 'zürich ✓' } },
    receivedAt: now(),
    ...over,
  };
}

export function newDelivery(ev: EventRecord, over: Partial<NewDelivery> = {}): NewDelivery {
  return {
    id: randomUUID(),
    companyId: ev.companyId,
    eventId: ev.id,
    routerId: randomUUID(),
    routerName: 'prod issuers',
    integrationId: randomUUID(),
    createdAt: ev.receivedAt,
    ...over,
  };
}

/** What insertDeliveries stores for a NewDelivery. */
function pendingRecord(d: NewDelivery): DeliveryRecord {
  return {
    ...d,
    status: 'PENDING',
    attempts: 0,
    abandonedClaims: 0,
    nextAttemptAt: d.createdAt,
    leaseUntil: null,
    lastError: null,
    lastStatusCode: null,
    updatedAt: d.createdAt,
    deliveredAt: null,
    orderKey: d.orderKey ?? null,
    orderAt: d.orderAt ?? d.createdAt,
    orderSeq: d.orderSeq ?? d.createdAt * 1000,
    claimedBy: null,
    reminder: d.reminder ?? false,
    silenceId: null,
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

      it('stores the manager; putMonitoringConfigIf writes only while the manager is the expected one', async () => {
        const m1 = 'k8s:MonitoringConfig//default@c1';
        // no row yet: expecting "no manager" inserts
        const first = await store.putMonitoringConfigIf(monitoringConfig(A, { manager: m1 }), null);
        expect(first?.manager).toBe(m1);
        // a writer that decided on a stale manager changes nothing
        expect(await store.putMonitoringConfigIf(monitoringConfig(A, { enabled: false, manager: 'api' }), null)).toBeNull();
        expect(await store.getMonitoringConfig(A)).toEqual(first);
        const unmanaged = monitoringConfig(A, { thresholds: [7] });
        expect(await store.putMonitoringConfigIf(unmanaged, m1)).toEqual({ ...unmanaged, id: first!.id });
        expect((await store.getMonitoringConfig(A))?.manager).toBeUndefined();
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
        const updated = await store.updateIntegration(A, i1.id, { name: 'renamed', enabled: false, config: { x: 1 }, managedBy: null }, t);
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

      it("an integration's own rate limit: stored, changed, 0 (unlimited) kept, null back to the type's; the claim carries it", async () => {
        const i = await store.createIntegration(integration(A, { type: 'SLACK', rateLimit: { ratePerSec: 0.5, burst: 3 } }));
        expect(i.rateLimit).toEqual({ ratePerSec: 0.5, burst: 3 });
        expect(await store.getIntegration(A, i.id)).toEqual(i);
        const t = now();
        const unlimited = await store.updateIntegration(A, i.id, { rateLimit: { ratePerSec: 0, burst: 1 } }, t);
        expect(unlimited).toEqual({ ...i, rateLimit: { ratePerSec: 0, burst: 1 }, updatedAt: t });
        // a patch without it leaves it alone
        expect((await store.updateIntegration(A, i.id, { name: 'renamed' }, t))?.rateLimit).toEqual({ ratePerSec: 0, burst: 1 });
        const ev = eventRecord(A);
        const d = newDelivery(ev, { integrationId: i.id, createdAt: t });
        await store.transaction(async (tx) => {
          await tx.insertEvent(ev);
          await tx.insertDeliveries([d]);
        });
        const claimed = (await store.claimDeliveries(t + 1, 100, 10_000)).find((c) => c.id === d.id);
        expect(claimed?.integration?.rateLimit).toEqual({ ratePerSec: 0, burst: 1 });
        // null: the type's default again (absent from the record, as for one that never had its own)
        const reset = await store.updateIntegration(A, i.id, { rateLimit: null }, t);
        expect(reset).not.toHaveProperty('rateLimit');
        expect(await store.getIntegration(A, i.id)).toEqual(reset);
        expect(await store.createIntegration(integration(A))).not.toHaveProperty('rateLimit');
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
          ...ROUTER_POLICY_DEFAULTS,
          managedBy: 'operator:ns/r2',
          enabled: false,
        });
        const r3 = router(A, i1.id);
        for (const r of [r1, r2, r3]) expect(await store.createRouter(r)).toEqual(r);

        expect(await store.getRouter(A, r1.id)).toEqual(r1);
        expect(await store.listRouters(A)).toEqual([r1, r2, r3]);
        expect(await store.listRoutersByIntegration(A, [i1.id])).toEqual([r1, r3]);
        expect(await store.listRoutersByIntegration(A, [i2.id, i1.id, i2.id])).toEqual([r1, r2, r3]);
        // three distinct ids: the IN list is padded (a repeated id), the rows and their order the same
        expect(await store.listRoutersByIntegration(A, [i2.id, 'no-such-integration', i1.id])).toEqual([r1, r2, r3]);
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

      it('routingFingerprint changes with every change to routing records, and only then', async () => {
        const fp = () => store.routingFingerprint(A);
        const f0 = await fp();
        expect(await fp()).toBe(f0);
        const i1 = await store.createIntegration(integration(A));
        const f1 = await fp();
        expect(f1).not.toBe(f0);
        const r1 = await store.createRouter(router(A, i1.id));
        const f2 = await fp();
        expect(f2).not.toBe(f1);
        await store.createIntegration(integration(B)); // another company: no change
        expect(await fp()).toBe(f2);
        await store.updateRouter(A, r1.id, { enabled: false }, 5); // an older clock still changes it
        const f3 = await fp();
        expect(f3).not.toBe(f2);
        await store.putMonitoringConfig(monitoringConfig(A));
        const f4 = await fp();
        expect(f4).not.toBe(f3);
        await store.deleteRouters(A, [r1.id]);
        expect(await fp()).not.toBe(f4);
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

    describe('bulk ids and quotas', () => {
      it('existingIds: one query, deduplicated, in request order, scoped by company', async () => {
        const i = await store.createIntegration(integration(A));
        const r1 = await store.createRouter(router(A, i.id));
        const r2 = await store.createRouter(router(A, i.id));
        const other = await store.createIntegration(integration(B));
        const missing = randomUUID();
        expect(await store.existingIds('routers', A, [r2.id, missing, r1.id, r2.id])).toEqual([r2.id, r1.id]);
        expect(await store.existingIds('integrations', A, [other.id, i.id])).toEqual([i.id]);
        expect(await store.existingIds('routers', A, [])).toEqual([]);
      });

      it('countForQuota counts the company’s records only', async () => {
        const i = await store.createIntegration(integration(A));
        await store.createRouter(router(A, i.id));
        await store.createRouter(router(A, i.id));
        await store.createIntegration(integration(B));
        expect(await store.countForQuota('routers', A)).toBe(2);
        expect(await store.countForQuota('integrations', A)).toBe(1);
        expect(await store.countForQuota('routers', B)).toBe(0);
      });

      it('count-then-create in concurrent transactions never overshoots a limit', async () => {
        const limit = 3;
        const results = await Promise.allSettled(
          Array.from({ length: 8 }, () =>
            store.transaction(async (tx) => {
              if ((await tx.countForQuota('integrations', A)) >= limit) throw new Boom('over');
              return tx.createIntegration(integration(A));
            }),
          ),
        );
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(limit);
        expect(await store.listIntegrations(A)).toHaveLength(limit);
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

    describe('outbox: events and deliveries', () => {
      /** Inserts one event with n deliveries in one transaction, the way ingestion does. */
      async function accept(companyId: string, n: number, over: (i: number) => Partial<NewDelivery> = () => ({})) {
        const ev = eventRecord(companyId);
        const ds = Array.from({ length: n }, (_, i) => newDelivery(ev, over(i)));
        await store.transaction(async (tx) => {
          await tx.insertEvent(ev);
          await tx.insertDeliveries(ds);
        });
        return { ev, ds };
      }
      /** Claims everything due (other tests' leftovers too, on a shared schema) and keeps company's rows. */
      async function claimAll(companyId: string, at: number, leaseMs = 10_000) {
        const mine: ClaimedDelivery[] = [];
        for (;;) {
          const page = await store.claimDeliveries(at, 500, leaseMs);
          mine.push(...page.filter((c) => c.companyId === companyId));
          if (page.length < 500) return mine;
        }
      }
      const get = async (companyId: string, id: string) =>
        (await store.listDeliveries(companyId, { limit: 1000 })).find((d) => d.id === id);

      it('insertEvent/insertDeliveries store PENDING rows due at once; getEvent round-trips the JSON', async () => {
        const { ev, ds } = await accept(A, 3);
        expect(await store.getEvent(A, ev.id)).toEqual(ev);
        expect(await store.getEvent(A, randomUUID())).toBeNull();
        const listed = await store.listDeliveries(A, {});
        expect(listed).toHaveLength(3);
        expect(new Set(listed)).toEqual(new Set(ds.map(pendingRecord)));
        await store.insertDeliveries([]); // no-op
      });

      it('insertEvents writes many events in one call, and all or none of them', async () => {
        const evs = Array.from({ length: 7 }, () => eventRecord(A));
        await store.insertEvents(evs);
        for (const ev of evs) expect(await store.getEvent(A, ev.id)).toEqual(ev);
        const fresh = eventRecord(A);
        const err = await store.insertEvents([fresh, evs[0]!]).catch((e: unknown) => e);
        expect((err as StoreConstraintError).constraint).toBe('unique');
        expect(await store.getEvent(A, fresh.id)).toBeNull();
        await store.insertEvents([]); // no-op
      });

      it('outside a transaction too; a second delivery for the same (event, router) is a unique violation', async () => {
        const ev = eventRecord(A);
        await store.insertEvent(ev);
        const d = newDelivery(ev);
        await store.insertDeliveries([d]);
        const err = await store.insertDeliveries([newDelivery(ev, { routerId: d.routerId })]).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreConstraintError);
        expect((err as StoreConstraintError).constraint).toBe('unique');
        const dup = await store.insertEvent(ev).catch((e: unknown) => e);
        expect((dup as StoreConstraintError).constraint).toBe('unique');
      });

      it('a delivery must belong to an existing event of its own company', async () => {
        const evB = eventRecord(B);
        await store.insertEvent(evB);
        for (const d of [newDelivery(eventRecord(A)), { ...newDelivery(evB), companyId: A }]) {
          const err = await store.insertDeliveries([d]).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(StoreConstraintError);
          expect((err as StoreConstraintError).constraint).toBe('foreign_key');
        }
      });

      it('a large batch is inserted whole (chunked statements)', async () => {
        const { ds } = await accept(A, 1203);
        const all: DeliveryRecord[] = [];
        let before: { createdAt: number; id: string } | undefined;
        for (;;) {
          const page = await store.listDeliveries(A, { limit: 500, ...(before ? { before } : {}) });
          all.push(...page);
          if (page.length < 500) break;
          const last = page.at(-1)!;
          before = { createdAt: last.createdAt, id: last.id };
        }
        expect(all.map((d) => d.id).sort()).toEqual(ds.map((d) => d.id).sort());
      });

      it('rollback: a failing delivery insert also undoes the event', async () => {
        const ev = eventRecord(A);
        const good = newDelivery(ev);
        const err = await store
          .transaction(async (tx) => {
            await tx.insertEvent(ev);
            await tx.insertDeliveries([good]);
            await tx.insertDeliveries([newDelivery(eventRecord(A))]); // FK: unknown event
          })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreConstraintError);
        expect(await store.getEvent(A, ev.id)).toBeNull();
        expect(await store.listDeliveries(A, {})).toEqual([]);
        const boom = new Boom();
        const ev2 = eventRecord(A);
        await expect(
          store.transaction(async (tx) => {
            await tx.insertEvent(ev2);
            await tx.insertDeliveries([newDelivery(ev2), newDelivery(ev2)]);
            expect(await tx.listDeliveries(A, { eventId: ev2.id })).toHaveLength(2);
            throw boom;
          }),
        ).rejects.toBe(boom);
        expect(await store.getEvent(A, ev2.id)).toBeNull();
        expect(await store.listDeliveries(A, {})).toEqual([]);
        expect((await claimAll(A, now() + 1e9)).length).toBe(0);
      });

      it('recordOutcomes: several attempts in one call, each fenced on its own and applied as its single method would', async () => {
        const t = now();
        const { ds } = await accept(A, 4, (i) => ({ createdAt: t - 1000 * (4 - i) }));
        const claimed = await claimAll(A, t, 5_000);
        expect(claimed.map((c) => c.id)).toEqual(ds.map((d) => d.id));
        const [a, b, c, d] = claimed as [ClaimedDelivery, ClaimedDelivery, ClaimedDelivery, ClaimedDelivery];
        const applied = await store.recordOutcomes(
          [
            { id: a.id, attemptNo: 1, kind: 'delivered', statusCode: 200 },
            { id: b.id, attemptNo: 1, kind: 'retry', nextAttemptAt: t + 60_000, error: 'HTTP 503\u0000', statusCode: 503 },
            { id: c.id, attemptNo: 1, kind: 'dead', error: 'HTTP 404', statusCode: 404 },
            { id: d.id, attemptNo: 2, kind: 'delivered', statusCode: 200 }, // a stale attempt number: fenced out
          ],
          t + 100,
        );
        expect(applied).toEqual([true, true, true, false]);
        expect(await get(A, a.id)).toMatchObject({
          status: 'DELIVERED',
          deliveredAt: t + 100,
          lastStatusCode: 200,
          lastError: null,
          leaseUntil: null,
        });
        expect(await get(A, b.id)).toMatchObject({
          status: 'PENDING',
          nextAttemptAt: t + 60_000,
          lastError: 'HTTP 503\uFFFD',
          lastStatusCode: 503,
          deliveredAt: null,
        });
        expect(await get(A, c.id)).toMatchObject({
          status: 'DEAD',
          lastError: 'HTTP 404',
          lastStatusCode: 404,
          deliveredAt: null,
          leaseUntil: null,
        });
        expect(await get(A, d.id)).toMatchObject({ status: 'IN_FLIGHT', attempts: 1 });
        // the same outcome again: the row moved on, nothing applies
        expect(await store.recordOutcomes([{ id: a.id, attemptNo: 1, kind: 'dead', error: 'x', statusCode: null }], t + 200)).toEqual([
          false,
        ]);
        expect(await store.recordOutcomes([], t)).toEqual([]);
        expect(await store.supersedeMany([], t)).toEqual([]);
      });

      it("a claim carries each delivery's integration as the claim read it (secrets opened); null once deleted", async () => {
        const t = now();
        const i1 = await store.createIntegration(integration(A));
        const i2 = await store.createIntegration(integration(A));
        const ev = eventRecord(A);
        const [d1, d2, d3] = [
          newDelivery(ev, { integrationId: i1.id, createdAt: t - 3 }),
          newDelivery(ev, { integrationId: i2.id, createdAt: t - 2 }),
          newDelivery(ev, { integrationId: i1.id, createdAt: t - 1 }),
        ];
        await store.transaction(async (tx) => {
          await tx.insertEvent(ev);
          await tx.insertDeliveries([d1!, d2!, d3!]);
        });
        const claimed = await claimAll(A, t);
        expect(claimed.map((c) => c.id)).toEqual([d1!.id, d2!.id, d3!.id]);
        expect(claimed.map((c) => c.integration)).toEqual([i1, i2, i1]);
        expect(claimed[0]!.integration!.secrets).toEqual(i1.secrets);
        // deleted after the event was accepted (the worker dead-letters it): the claim says so
        const ev2 = eventRecord(A);
        const i3 = await store.createIntegration(integration(A));
        await store.transaction(async (tx) => {
          await tx.insertEvent(ev2);
          await tx.insertDeliveries([newDelivery(ev2, { integrationId: i3.id, createdAt: t })]);
        });
        expect(await store.deleteIntegrations(A, [i3.id])).toEqual([i3.id]);
        const [gone] = await claimAll(A, t + 1);
        expect(gone).toMatchObject({ integrationId: i3.id, integration: null });
      });

      it("a late outcome the fence refuses does not make its key's next delivery due (its backoff stands)", async () => {
        const t = now();
        const integrationId = randomUUID();
        const [e1, e2] = [eventRecord(A), eventRecord(A)];
        const keyed = (ev: typeof e1, seq: number) =>
          newDelivery(ev, { integrationId, orderKey: 'k/late', orderAt: t, orderSeq: seq, createdAt: t - 10 });
        const [x, y] = [keyed(e1, 1), keyed(e2, 2)];
        await store.transaction(async (tx) => {
          await tx.insertEvents([e1, e2]);
          await tx.insertDeliveries([x!, y!]);
        });
        // X's first attempt outlives its lease; X is claimed again and delivered by its second attempt
        expect((await claimAll(A, t, 1_000)).map((c) => c.id)).toEqual([x!.id]);
        expect((await claimAll(A, t + 2_000, 60_000)).map((c) => [c.id, c.attempts])).toEqual([[x!.id, 2]]);
        expect(await store.recordOutcomes([{ id: x!.id, attemptNo: 2, kind: 'delivered', statusCode: 200 }], t + 2_100)).toEqual([true]);
        // Y, now the head, fails and backs off for an hour
        expect((await claimAll(A, t + 2_200, 60_000)).map((c) => c.id)).toEqual([y!.id]);
        expect(
          await store.recordOutcomes(
            [{ id: y!.id, attemptNo: 1, kind: 'retry', nextAttemptAt: t + 3_600_000, error: 'x', statusCode: 503 }],
            t + 2_300,
          ),
        ).toEqual([true]);
        // X's first attempt ends late: refused, and Y keeps its backoff
        expect(await store.recordOutcomes([{ id: x!.id, attemptNo: 1, kind: 'delivered', statusCode: 200 }], t + 2_400)).toEqual([false]);
        expect((await get(A, y!.id))?.nextAttemptAt).toBe(t + 3_600_000);
      });

      it('claim takes due rows only, oldest first, up to the limit, joined with the event', async () => {
        const t = now();
        const { ev, ds } = await accept(A, 5, (i) => ({ createdAt: t - 1000 * (5 - i) })); // due, oldest first
        const future = newDelivery(ev, { createdAt: t + 60_000 });
        await store.insertDeliveries([future]);

        const first = await claimAll(A, t, 5_000);
        expect(first.map((c) => c.id)).toEqual(ds.map((d) => d.id));
        for (const [i, c] of first.entries()) {
          expect(c).toEqual({
            ...pendingRecord(ds[i]!),
            status: 'IN_FLIGHT',
            attempts: 1,
            leaseUntil: t + 5_000,
            nextAttemptAt: t + 5_000, // claimable again when the lease ends
            updatedAt: t,
            event: { type: ev.type, data: ev.data, receivedAt: ev.receivedAt },
            newerSent: false,
            integration: null, // these deliveries name no integration of the store
          } satisfies ClaimedDelivery);
          const { event: _e, newerSent: _n, integration: _i, ...rec } = c;
          expect(await get(A, c.id)).toEqual(rec);
        }
        // Claimed rows are not handed out again while their lease holds; the future one is not due.
        expect(await claimAll(A, t + 4_999)).toEqual([]);
        const later = await claimAll(A, t + 60_000 - 1, 60_000);
        expect(later.map((c) => c.id).sort()).toEqual(ds.map((d) => d.id).sort()); // leases expired
        expect(later.every((c) => c.attempts === 2)).toBe(true);
        expect((await claimAll(A, t + 60_000)).map((c) => c.id)).toEqual([future.id]);
      });

      it('claim respects the limit', async () => {
        const t = now();
        await accept(A, 10, (i) => ({ createdAt: t - 10_000 + i }));
        // Other tests' leftovers may also be due on a shared schema: claim in small pages until A's are all out.
        const seen: string[] = [];
        for (let k = 0; k < 1000; k++) {
          const page = await store.claimDeliveries(t, 3, 10_000);
          expect(page.length).toBeLessThanOrEqual(3);
          if (page.length === 0) break;
          seen.push(...page.filter((c) => c.companyId === A).map((c) => c.id));
        }
        expect(seen).toHaveLength(10);
      });

      it('concurrent claimers never get the same row (200 rows, 4 claimers)', async () => {
        const t = now();
        const { ds } = await accept(A, 200, (i) => ({ createdAt: t - 1000 + (i % 7) }));
        const counts = new Map<string, number>();
        const claimer = async () => {
          for (;;) {
            const page = await store.claimDeliveries(t, 7, 60_000);
            if (page.length === 0) return;
            for (const c of page) counts.set(c.id, (counts.get(c.id) ?? 0) + 1);
          }
        };
        await Promise.all([claimer(), claimer(), claimer(), claimer()]);
        for (const d of ds) expect(counts.get(d.id), d.id).toBe(1);
        expect([...counts.values()].every((n) => n === 1)).toBe(true);
      });

      it('lease expiry makes a row claimable again; fencing stops the old holder', async () => {
        const t = now();
        const { ds } = await accept(A, 1, () => ({ createdAt: t }));
        const d = ds[0]!;
        const [c1] = await claimAll(A, t, 1_000);
        expect(c1?.attempts).toBe(1);
        expect(await claimAll(A, t + 999, 1_000)).toEqual([]);
        const [c2] = await claimAll(A, t + 1_000, 1_000); // worker 1 crashed or stalled
        expect(c2?.id).toBe(d.id);
        expect(c2?.attempts).toBe(2);
        expect(c2?.leaseUntil).toBe(t + 2_000);
        expect([c1?.abandonedClaims, c2?.abandonedClaims]).toEqual([0, 0]); // taken again by the same claimer: not abandoned

        // Worker 1 wakes up: every outcome it reports is refused.
        expect(await store.markDelivered(d.id, 1, t + 1_500, 200)).toBe(false);
        expect(await store.markRetry(d.id, 1, t + 9_000, 'HTTP 503', 503, t + 1_500)).toBe(false);
        expect(await store.markDead(d.id, 1, t + 1_500, 'HTTP 400', 400)).toBe(false);
        expect(await store.deferDelivery(d.id, 1, t + 9_000, t + 1_500)).toBe(false);
        expect((await get(A, d.id))?.status).toBe('IN_FLIGHT');

        // Worker 2 holds the current attempt.
        expect(await store.markDelivered(d.id, 2, t + 1_600, 202)).toBe(true);
        expect(await get(A, d.id)).toEqual({
          ...pendingRecord(d),
          status: 'DELIVERED',
          attempts: 2,
          nextAttemptAt: t + 2_000,
          leaseUntil: null,
          lastStatusCode: 202,
          updatedAt: t + 1_600,
          deliveredAt: t + 1_600,
        });
        // Terminal: applied once, never claimed again.
        expect(await store.markDelivered(d.id, 2, t + 1_700, 202)).toBe(false);
        expect(await claimAll(A, t + 1e9)).toEqual([]);
      });

      it('a claim whose lease ran out counts as abandoned when another claimer takes it over, not when its own does', async () => {
        const t = now();
        const { ds } = await accept(A, 1, () => ({ createdAt: t }));
        const d = ds[0]!;
        const mine = (c: ClaimedDelivery[]) => c.filter((x) => x.id === d.id);
        expect(mine(await store.claimDeliveries(t, 10, 1_000, 'pod-a'))[0]?.abandonedClaims).toBe(0);
        expect(mine(await store.claimDeliveries(t + 1_000, 10, 1_000, 'pod-b'))[0]?.abandonedClaims).toBe(1); // pod-a died
        expect(mine(await store.claimDeliveries(t + 2_000, 10, 1_000, 'pod-b'))[0]?.abandonedClaims).toBe(1); // pod-b's own
      });

      it('releaseClaims: taken back at start counts an abandoned claim, a graceful stop does not; a retry by hand clears it', async () => {
        const t = now();
        const { ds } = await accept(A, 1, () => ({ createdAt: t }));
        const d = ds[0]!;
        await store.claimDeliveries(t, 10, 1_000, 'pod-x');
        expect(await store.releaseClaims('pod-x', t + 1, true)).toBe(1);
        expect(await get(A, d.id)).toMatchObject({ status: 'PENDING', abandonedClaims: 1 });
        await store.claimDeliveries(t + 2, 10, 1_000, 'pod-x');
        expect(await store.releaseClaims('pod-x', t + 3, false)).toBe(1);
        expect(await get(A, d.id)).toMatchObject({ status: 'PENDING', abandonedClaims: 1 });
        const [c] = await store.claimDeliveries(t + 4, 10, 1_000, 'pod-x');
        expect(c?.abandonedClaims).toBe(1);
        expect(await store.markDead(d.id, c!.attempts, t + 5, 'POISONED', null)).toBe(true);
        expect(await store.retryDeadDelivery(A, d.id, t + 6)).toMatchObject({ retried: { status: 'PENDING', abandonedClaims: 0 } });
      });

      it('markRetry, deferDelivery and markDead move the row as documented', async () => {
        const t = now();
        const { ds } = await accept(A, 2, () => ({ createdAt: t }));
        const [r, x] = ds as [NewDelivery, NewDelivery];
        await claimAll(A, t, 1_000);

        expect(await store.markDead(x.id, 1, t + 20, 'HTTP 400 Bad Request', 400)).toBe(true);
        expect(await get(A, x.id)).toEqual({
          ...pendingRecord(x),
          status: 'DEAD',
          attempts: 1,
          nextAttemptAt: t + 1_000,
          lastError: 'HTTP 400 Bad Request',
          lastStatusCode: 400,
          updatedAt: t + 20,
        });

        expect(await store.markRetry(r.id, 1, t + 5_000, 'HTTP 503 Service Unavailable', 503, t + 10)).toBe(true);
        expect(await get(A, r.id)).toEqual({
          ...pendingRecord(r),
          attempts: 1,
          nextAttemptAt: t + 5_000,
          lastError: 'HTTP 503 Service Unavailable',
          lastStatusCode: 503,
          updatedAt: t + 10,
        });
        expect(await claimAll(A, t + 4_999)).toEqual([]);
        const [again] = await claimAll(A, t + 5_000, 1_000);
        expect(again?.attempts).toBe(2);

        // Rate-limited: the claim goes back without counting the attempt; the last error stays.
        expect(await store.deferDelivery(r.id, 2, t + 7_000, t + 5_001)).toBe(true);
        expect(await get(A, r.id)).toMatchObject({
          status: 'PENDING',
          attempts: 1,
          nextAttemptAt: t + 7_000,
          leaseUntil: null,
          lastError: 'HTTP 503 Service Unavailable',
          lastStatusCode: 503,
          updatedAt: t + 5_001,
        });
        // Only IN_FLIGHT rows can be marked.
        expect(await store.markDead(r.id, 1, t + 5_002, 'x', null)).toBe(false);
        const [third] = await claimAll(A, t + 1e9, 1_000);
        expect(third?.id).toBe(r.id); // the dead one is never claimed again
      });

      it('an error text quoting a remote server with NUL or a lone surrogate is still recorded (as U+FFFD), alike on both', async () => {
        const t = now();
        const { ds } = await accept(A, 2, () => ({ createdAt: t }));
        const [r, x] = ds as [NewDelivery, NewDelivery];
        await claimAll(A, t, 1_000);
        expect(await store.markRetry(r.id, 1, t + 5_000, '550 bad\u0000mailbox', 550, t + 10)).toBe(true);
        expect(await store.markDead(x.id, 1, t + 20, 'odd \uD800 reply', 400)).toBe(true);
        expect((await get(A, r.id))?.lastError).toBe('550 bad\uFFFDmailbox');
        expect((await get(A, x.id))?.lastError).toBe('odd \uFFFD reply');
      });

      it('listDeliveries: newest first, filters, keyset pagination, limits', async () => {
        const t = now();
        const intX = randomUUID();
        const { ev: e1, ds: d1 } = await accept(A, 4, (i) => ({ createdAt: t + i, integrationId: i % 2 ? intX : randomUUID() }));
        // Same createdAt for all of e2's rows: the id breaks the tie.
        const { ev: e2, ds: d2 } = await accept(A, 5, () => ({ createdAt: t + 100, integrationId: intX }));
        const order = (ds: NewDelivery[]) =>
          [...ds].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((d) => d.id);
        const ids = (ds: DeliveryRecord[]) => ds.map((d) => d.id);

        expect(ids(await store.listDeliveries(A, {}))).toEqual(order([...d1, ...d2]));
        expect(ids(await store.listDeliveries(A, { eventId: e1.id }))).toEqual(order(d1));
        expect(ids(await store.listDeliveries(A, { eventId: e2.id, limit: 2 }))).toEqual(order(d2).slice(0, 2));
        const forX = [...d1, ...d2].filter((d) => d.integrationId === intX);
        expect(ids(await store.listDeliveries(A, { integrationId: intX }))).toEqual(order(forX));

        // Keyset pages of 2 walk the whole list exactly once, across the createdAt tie.
        const walked: string[] = [];
        let before: { createdAt: number; id: string } | undefined;
        for (let k = 0; k < 20; k++) {
          const page = await store.listDeliveries(A, { limit: 2, ...(before ? { before } : {}) });
          walked.push(...ids(page));
          if (page.length < 2) break;
          before = { createdAt: page.at(-1)!.createdAt, id: page.at(-1)!.id };
        }
        expect(walked).toEqual(order([...d1, ...d2]));

        // Status filter, combined with the integration filter.
        await claimAll(A, t + 1e6);
        const dead = d2[0]!;
        expect(await store.markDead(dead.id, 1, t + 1e6, 'HTTP 400', 400)).toBe(true);
        expect(ids(await store.listDeliveries(A, { status: 'DEAD' }))).toEqual([dead.id]);
        expect(ids(await store.listDeliveries(A, { status: 'DEAD', integrationId: intX }))).toEqual([dead.id]);
        expect(await store.listDeliveries(A, { status: 'DEAD', integrationId: randomUUID() })).toEqual([]);
        expect(await store.listDeliveries(A, { status: 'PENDING' })).toEqual([]);
        expect(await store.listDeliveries(A, { status: 'IN_FLIGHT' })).toHaveLength(8);

        // Silly limits are clamped, not errors.
        expect(await store.listDeliveries(A, { limit: 0 })).toHaveLength(1);
        expect(await store.listDeliveries(A, { limit: -5 })).toHaveLength(1);
        expect(await store.listDeliveries(A, { limit: 1e9 })).toHaveLength(9);
      });

      it('is scoped by company', async () => {
        const { ev, ds } = await accept(A, 2);
        expect(await store.getEvent(B, ev.id)).toBeNull();
        expect(await store.listDeliveries(B, {})).toEqual([]);
        expect(await store.listDeliveries(B, { eventId: ev.id })).toEqual([]);
        expect(await store.listDeliveries(B, { integrationId: ds[0]!.integrationId })).toEqual([]);
        expect(await store.listDeliveries(A, {})).toHaveLength(2);
      });

      it('deliveryStats counts by status; oldestPendingAge measures how overdue the queue is', async () => {
        const t = now();
        const before = await store.deliveryStats();
        const { ds } = await accept(A, 4, (i) => ({ createdAt: t - 5_000 + i }));
        const claimed = await claimAll(A, t);
        await store.markDelivered(ds[0]!.id, 1, t, 200);
        await store.markDead(ds[1]!.id, 1, t, 'HTTP 400', 400);
        await store.markRetry(ds[2]!.id, 1, t + 1_000, 'HTTP 503', 503, t);
        expect(claimed).toHaveLength(4);
        const after = await store.deliveryStats();
        // On a shared schema, leftovers of other tests may have been claimed above: compare A's own effect.
        expect(Object.keys(after).sort()).toEqual(['DEAD', 'IN_FLIGHT', 'PENDING']);
        expect(after.DEAD - before.DEAD).toBe(1);
        expect(after.PENDING + after.IN_FLIGHT - before.PENDING - before.IN_FLIGHT).toBe(2);

        expect(await store.oldestPendingAge(0)).toBe(0); // nothing is due at time 0
        expect(await store.oldestPendingAge(t + 1_000)).toBeGreaterThanOrEqual(0);
        expect(await store.oldestPendingAge(t + 4_000)).toBeGreaterThanOrEqual(3_000); // ds[2] due at t+1000
      });
    });

    // PostgreSQL refused a NUL (a masked 500) where SQLite stored it; lone surrogates were
    // silently replaced by U+FFFD on both. Both engines now refuse the same text the same way, writing nothing.
    describe('text the engines cannot store alike', () => {
      const bad: [string, string][] = [
        ['a NUL', 'name\u0000'],
        ['a lone high surrogate', 'name\uD800'],
        ['a lone low surrogate', '\uDC00name'],
      ];

      it.each(bad)('refuses %s in a text column (name, managedBy, id, filter) and writes nothing', async (_what, text) => {
        await expect(store.createIntegration(integration(A, { name: text }))).rejects.toBeInstanceOf(StoreInvalidTextError);
        await expect(store.createIntegration(integration(A, { managedBy: text }))).rejects.toBeInstanceOf(StoreInvalidTextError);
        await expect(store.createIntegration(integration(A, { id: text }))).rejects.toBeInstanceOf(StoreInvalidTextError);
        expect(await store.listIntegrations(A)).toEqual([]);

        const i = await store.createIntegration(integration(A));
        await expect(store.createRouter(router(A, i.id, { name: text }))).rejects.toBeInstanceOf(StoreInvalidTextError);
        await expect(store.createRouter(router(A, i.id, { filter: `data.issuerName == '${text}'` }))).rejects.toBeInstanceOf(
          StoreInvalidTextError,
        );
        await expect(store.updateIntegration(A, i.id, { name: text }, now())).rejects.toBeInstanceOf(StoreInvalidTextError);
        expect(await store.listRouters(A)).toEqual([]);
        expect(await store.getIntegration(A, i.id)).toEqual(i);
        // Reads with such a value fail alike too, instead of PostgreSQL erroring and SQLite answering.
        await expect(store.getIntegration(A, text)).rejects.toBeInstanceOf(StoreInvalidTextError);
      });

      it('a refused value inside a transaction rolls back the earlier writes', async () => {
        await expect(
          store.transaction(async (tx) => {
            await tx.createIntegration(integration(A));
            await tx.createIntegration(integration(A, { name: 'x\u0000' }));
          }),
        ).rejects.toBeInstanceOf(StoreInvalidTextError);
        expect(await store.listIntegrations(A)).toEqual([]);
      });

      it('the message names the parameter, not the value', async () => {
        const err = await store.createIntegration(integration(A, { name: 'secret-ish\u0000value' })).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreError);
        expect((err as Error).message).toMatch(/text parameter \d+ contains a NUL character/);
        expect((err as Error).message).not.toContain('secret-ish');
      });

      it('JSON columns hold such text escaped (\\u0000), so it round-trips alike on both', async () => {
        const ev = eventRecord(A, { data: { statusMessage: 'a\u0000b', odd: '\uD800' } });
        await store.insertEvent(ev);
        expect((await store.getEvent(A, ev.id))?.data).toEqual(ev.data);
        const cfg = await store.putMonitoringConfig(monitoringConfig(A, { applicationIds: ['app\u0000'] }));
        expect((await store.getMonitoringConfig(A))?.applicationIds).toEqual(cfg.applicationIds);
      });

      it('astral characters (surrogate pairs) and other Unicode are stored as they are', async () => {
        const i = await store.createIntegration(integration(A, { name: '😀 Zürich \u202E ✓' }));
        expect((await store.getIntegration(A, i.id))?.name).toBe('😀 Zürich \u202E ✓');
      });
    });

    describe('expiry: inventory by notAfter, marks', () => {
      const DAY = 86_400_000;
      const T0 = 1_800_000_000_000;
      const row = (over: Partial<InventoryRow> & { secretName: string }): InventoryRow => ({
        clusterId: 'c1',
        namespace: 'ns',
        serial: 'AA01',
        notAfter: T0,
        ...over,
      });

      it('lists the rows due by notAfter, in order, scoped, with the cluster name; keyset pages read each row once', async () => {
        await insertCluster(store, A, 'c1', 'prod-eu');
        await upsertInventory(store, A, [
          row({ secretName: 's3', notAfter: T0 + 2 * DAY, applicationIds: ['app-1'] }),
          row({ secretName: 's1', notAfter: T0 }),
          row({ secretName: 's2', notAfter: T0 }),
          row({ clusterId: 'c0', secretName: 's9', notAfter: T0 }),
          row({ secretName: 'late', notAfter: T0 + 40 * DAY }),
          row({ secretName: 'no-cert', serial: null, notAfter: null }),
        ]);
        await upsertInventory(store, B, [row({ secretName: 'other', notAfter: T0 })]);
        const all = await store.listExpiryInventory(A, T0 + 30 * DAY, null, 100);
        expect(all.map((r) => `${r.clusterId}/${r.secretName}`)).toEqual(['c0/s9', 'c1/s1', 'c1/s2', 'c1/s3']);
        expect(all[1]).toEqual({
          clusterId: 'c1',
          clusterName: 'prod-eu',
          namespace: 'ns',
          secretName: 's1',
          certificateName: null,
          serial: 'AA01',
          issuer: 'CN=Test CA, O=Example',
          commonName: null,
          notAfter: T0,
          notBefore: null, // the fixture has none: a share threshold then gives no rule
          applicationIds: [],
          dnsNames: [],
          ignored: false,
          expiryThresholds: null,
          runbookUrl: null,
        });
        expect(all[0]!.clusterName).toBeNull(); // no cluster row
        expect(all[3]!.applicationIds).toEqual(['app-1']);
        // pages of 1 and 2, ties on notAfter included
        for (const size of [1, 2]) {
          const seen: string[] = [];
          let after: ExpiryCursor | null = null;
          for (;;) {
            const page: ExpiryInventoryRow[] = await store.listExpiryInventory(A, T0 + 30 * DAY, after, size);
            seen.push(...page.map((r) => `${r.clusterId}/${r.secretName}`));
            if (page.length < size) break;
            after = page[page.length - 1]!;
          }
          expect(seen).toEqual(all.map((r) => `${r.clusterId}/${r.secretName}`));
        }
      });

      it('lists the companies that reported clusters, keyset', async () => {
        await insertCluster(store, A, 'c1', 'one');
        await insertCluster(store, A, 'c2', 'two');
        await insertCluster(store, B, 'c1', 'one');
        const mine = (ids: string[]) => ids.filter((id) => id === A || id === B);
        const all = await store.listInventoryCompanies(null, 10_000);
        expect(mine(all)).toEqual([A, B].sort());
        const first = [...[A, B].sort()][0]!;
        expect(await store.listInventoryCompanies(first, 10_000)).not.toContain(first);
      });

      it('marks: written, replaced, read by key, scoped by company', async () => {
        const rec = { companyId: A, certKey: 'k1', issuer: 'CN=CA', serial: 'AA01', notAfter: T0, marks: [{ ruleId: 1 }], updatedAt: 1 };
        await store.putExpiryMarks([rec, { ...rec, certKey: 'k2' }]);
        expect(await store.getExpiryMarks(A, ['k1'])).toEqual([rec]);
        await store.transaction(async (tx) => {
          expect(await tx.tryLockExpiry(A)).toBe(true);
          await tx.putExpiryMarks([{ ...rec, notAfter: T0 + DAY, marks: [], updatedAt: 2 }]);
        });
        expect(await store.getExpiryMarks(A, ['k1', 'k1'])).toEqual([{ ...rec, notAfter: T0 + DAY, marks: [], updatedAt: 2 }]);
        expect(await store.getExpiryMarks(B, ['k1', 'k2'])).toEqual([]);
        expect((await store.getExpiryMarks(A, ['k1', 'k2', 'k3'])).map((m) => m.certKey).sort()).toEqual(['k1', 'k2']);
      });

      it('claimExpiryScan: the first claim wins until the gap has passed; per company', async () => {
        expect(await store.claimExpiryScan(A, T0, T0 - 30_000)).toBe(true);
        expect(await store.claimExpiryScan(A, T0 + 29_999, T0 - 1)).toBe(false);
        expect(await store.claimExpiryScan(B, T0 + 1, T0 - 29_999)).toBe(true);
        expect(await store.claimExpiryScan(A, T0 + 30_000, T0)).toBe(true);
        expect(await store.claimExpiryScan(A, T0 + 30_001, T0 + 1)).toBe(false);
        const claims = await Promise.all(Array.from({ length: 4 }, () => store.claimExpiryScan(B, T0 + 60_000, T0 + 30_000)));
        expect(claims.filter(Boolean)).toHaveLength(1);
      });

      it('a failed transaction writes no marks', async () => {
        const rec = { companyId: A, certKey: 'k1', issuer: '', serial: 'AA01', notAfter: T0, marks: [], updatedAt: 1 };
        await expect(
          store.transaction(async (tx) => {
            await tx.putExpiryMarks([rec]);
            throw new Error('boom');
          }),
        ).rejects.toThrow('boom');
        expect(await store.getExpiryMarks(A, ['k1'])).toEqual([]);
      });

      it('stale marks: deleted once past the cut-off and gone from the inventory; kept while still served', async () => {
        await upsertInventory(store, A, [row({ secretName: 's1', serial: 'AA01', notAfter: T0 - 100 * DAY })]);
        await upsertInventory(store, A, [row({ secretName: 's2', serial: 'BB02', notAfter: T0 - 100 * DAY, issuer: null })]);
        const m = (certKey: string, serial: string, notAfter: number, issuer = 'CN=Test CA, O=Example') => ({
          companyId: A,
          certKey,
          issuer,
          serial,
          notAfter,
          marks: [],
          updatedAt: 1,
        });
        await store.putExpiryMarks([
          m('served', 'AA01', T0 - 100 * DAY),
          m('served-null-issuer', 'BB02', T0 - 100 * DAY, ''),
          m('gone', 'CC03', T0 - 100 * DAY),
          m('gone-recent', 'DD04', T0),
        ]);
        await store.putExpiryMarks([{ ...m('gone', 'CC03', T0 - 100 * DAY), companyId: B }]);
        expect(await store.deleteStaleExpiryMarks(A, T0 - 30 * DAY, 100)).toBe(1);
        expect(
          (await store.getExpiryMarks(A, ['served', 'served-null-issuer', 'gone', 'gone-recent'])).map((x) => x.certKey).sort(),
        ).toEqual(['gone-recent', 'served', 'served-null-issuer']);
        expect(await store.getExpiryMarks(B, ['gone'])).toHaveLength(1);
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
