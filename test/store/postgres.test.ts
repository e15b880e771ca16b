import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { integration, storeContract } from './contract.js';

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

describe('PostgreSQL specifics', () => {
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
      expect(rows).toEqual([{ version: 1, n: '1' }]); // plain pg client: int8 stays a string
    } finally {
      await client.end();
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

  it('rejects an invalid schema name', async () => {
    await expect(openStore(url, { schema: 'x; DROP TABLE y' })).rejects.toThrow(/invalid schema name/);
  });
});
