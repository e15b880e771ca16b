import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { eventRecord, integration, newDelivery, storeContract } from './contract.js';
import { inventoryContract } from './contract-inventory.js';
import { policyContract } from './contract-policy.js';
import { reminderContract } from './contract-reminders.js';
import { templatesContract } from './contract-templates.js';
import { silencesContract } from './contract-silences.js';
import { groupsContract } from './contract-groups.js';
import { consoleContract } from './contract-console.js';

// Real PostgreSQL (started by test/support/global-setup.ts unless DATABASE_URL is set).
// This file works in its own random schemas and drops them at the end.
const url = testDatabaseUrl();
const schema = randomSchema('t_store');
const extraSchemas: string[] = [];
const newSchema = () => {
  const s = `${schema}_${extraSchemas.length}`;
  extraSchemas.push(s);
  return s;
};

afterAll(async () => {
  for (const s of [schema, ...extraSchemas]) await dropSchema(url, s);
});

storeContract(`postgres (schema ${schema})`, () => openStore(url, { schema }));
inventoryContract(`postgres (schema ${schema})`, () => openStore(url, { schema }));
policyContract(`postgres (schema ${schema})`, () => openStore(url, { schema }));
reminderContract(`postgres (schema ${schema})`, () => openStore(url, { schema }));
templatesContract(`postgres (schema ${schema})`, () => openStore(url, { schema }));
silencesContract(`postgres (schema ${schema})`, () => openStore(url, { schema }));
groupsContract(`postgres (schema ${schema})`, () => openStore(url, { schema }));
consoleContract(`postgres (schema ${schema})`, () => openStore(url, { schema }));

describe('PostgreSQL specifics', () => {
  it('the expiry try-lock: one transaction per company holds it; another gets false at once; free after commit', async () => {
    const s = newSchema();
    const a = await openStore(url, { schema: s });
    const b = await openStore(url, { schema: s });
    try {
      await a.migrate();
      const C = randomUUID();
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const first = a.transaction(async (tx) => {
        expect(await tx.tryLockExpiry(C)).toBe(true);
        locked();
        await held;
      });
      await isLocked;
      expect(await b.transaction((tx) => tx.tryLockExpiry(C))).toBe(false);
      expect(await b.transaction((tx) => tx.tryLockExpiry(randomUUID()))).toBe(true); // another company
      release();
      await first;
      expect(await b.transaction((tx) => tx.tryLockExpiry(C))).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('several stores migrating one fresh schema at once apply each migration once', async () => {
    const s = newSchema();
    const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(url, { schema: s })));
    try {
      await Promise.all(stores.map((st) => st.migrate()));
      const A = randomUUID();
      const i = await stores[0]!.createIntegration(integration(A));
      expect(await stores[3]!.getIntegration(A, i.id)).toEqual(i);
    } finally {
      await Promise.all(stores.map((st) => st.close()));
    }
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT version, count(*) AS n FROM "${s}".schema_migrations GROUP BY version`);
      expect(rows.sort((a, b) => a.version - b.version)).toEqual(MIGRATIONS.map((m) => ({ version: m.version, n: '1' }))); // plain pg client: int8 stays a string
    } finally {
      await client.end();
    }
  });

  it('migration 5 keeps a pre-existing monitoring record, unmanaged and claimable', async () => {
    const s = newSchema();
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA "${s}"`);
      await client.query(`SET search_path TO "${s}"`);
      await client.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
      for (const m of MIGRATIONS.filter((x) => x.version <= 4)) {
        for (const stmt of m.up.postgres) await client.query(stmt);
        await client.query('INSERT INTO schema_migrations VALUES ($1, $2, 0)', [m.version, m.name]);
      }
      await client.query(`INSERT INTO monitoring_configs VALUES ('cfg-1', 'company-1', true, '[45]', '[]', true, 1700000000000)`);
    } finally {
      await client.end();
    }
    const store = await openStore(url, { schema: s });
    try {
      await store.migrate();
      const legacy = await store.getMonitoringConfig('company-1');
      expect(legacy).toMatchObject({ id: 'cfg-1', thresholds: [45], updatedAt: 1700000000000 });
      expect(legacy?.manager).toBeUndefined();
      const claimed = await store.putMonitoringConfigIf({ ...legacy!, manager: 'k8s:MonitoringConfig//default@c1' }, null);
      expect(claimed?.manager).toBe('k8s:MonitoringConfig//default@c1');
    } finally {
      await store.close();
    }
  });

  it('schemas isolate stores from each other', async () => {
    const s1 = await openStore(url, { schema: newSchema() });
    const s2 = await openStore(url, { schema: newSchema() });
    const stores = [s1, s2];
    try {
      await Promise.all(stores.map((st) => st.migrate()));
      const A = randomUUID();
      await s1.createIntegration(integration(A));
      expect(await s1.listIntegrations(A)).toHaveLength(1);
      expect(await s2.listIntegrations(A)).toEqual([]);
    } finally {
      await Promise.all(stores.map((st) => st.close()));
    }
  });

  it('times (BIGINT) come back as numbers', async () => {
    const store = await openStore(url, { schema });
    try {
      await store.migrate();
      const i = await store.createIntegration(integration(randomUUID(), { createdAt: 2 ** 50, updatedAt: 2 ** 50 + 1 }));
      expect(i.createdAt).toBe(2 ** 50);
      expect(typeof i.updatedAt).toBe('number');
    } finally {
      await store.close();
    }
  });

  it('outbox claims from 4 stores (4 pools, like 4 replicas) hand each row out exactly once', async () => {
    const s = newSchema();
    const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(url, { schema: s })));
    try {
      await stores[0]!.migrate();
      const A = randomUUID();
      const t = Date.now();
      const ids: string[] = [];
      for (let e = 0; e < 4; e++) {
        const ev = eventRecord(A, { receivedAt: t - 1000 });
        const ds = Array.from({ length: 100 }, (_, i) => newDelivery(ev, { createdAt: t - 1000 + (i % 3) }));
        ids.push(...ds.map((d) => d.id));
        await stores[e]!.transaction(async (tx) => {
          await tx.insertEvent(ev);
          await tx.insertDeliveries(ds);
        });
      }
      const counts = new Map<string, number>();
      const claimer = async (st: (typeof stores)[number]) => {
        for (;;) {
          const page = await st.claimDeliveries(t, 5, 60_000);
          if (page.length === 0) return;
          for (const c of page) counts.set(c.id, (counts.get(c.id) ?? 0) + 1);
        }
      };
      // Two claimers per store: 8 concurrent transactions.
      await Promise.all(stores.flatMap((st) => [claimer(st), claimer(st)]));
      expect(counts.size).toBe(400);
      for (const id of ids) expect(counts.get(id)).toBe(1);
    } finally {
      await Promise.all(stores.map((st) => st.close()));
    }
  });

  it('claim skips rows another transaction has locked instead of waiting for them', async () => {
    const s = newSchema();
    const store = await openStore(url, { schema: s });
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await store.migrate();
      const A = randomUUID();
      const t = Date.now();
      const ev = eventRecord(A, { receivedAt: t });
      const [d1, d2] = [newDelivery(ev, { createdAt: t - 2 }), newDelivery(ev, { createdAt: t - 1 })];
      await store.transaction(async (tx) => {
        await tx.insertEvent(ev);
        await tx.insertDeliveries([d1!, d2!]);
      });
      await client.query(`SET search_path TO "${s}"`);
      await client.query('BEGIN');
      await client.query('SELECT id FROM deliveries WHERE id = $1 FOR UPDATE', [d1!.id]);
      const page = await store.claimDeliveries(t, 10, 60_000); // would hang without SKIP LOCKED
      expect(page.map((c) => c.id)).toEqual([d2!.id]);
      await client.query('COMMIT');
      expect((await store.claimDeliveries(t, 10, 60_000)).map((c) => c.id)).toEqual([d1!.id]);
    } finally {
      await client.end();
      await store.close();
    }
  });

  it('rejects an invalid schema name', async () => {
    await expect(openStore(url, { schema: 'x; DROP TABLE y' })).rejects.toThrow(/invalid schema name/);
  });
});
