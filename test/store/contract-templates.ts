/**
 * The Store contract for notification templates (migration 10): run against both engines by sqlite.test.ts
 * and postgres.int.test.ts. Company ids are fresh per test.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store, TemplateRecord } from '../../src/store/types.js';
import { integration, router } from './contract.js';

function template(companyId: string, over: Partial<TemplateRecord> = {}): TemplateRecord {
  return {
    id: randomUUID(),
    companyId,
    name: 'ops',
    parts: { default: { title: '{{ title }} ✓', text: 'line 1\nline 2 «{{ cluster.name }}»' }, SLACK: { text: '*{{ summary }}*' } },
    managedBy: null,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    ...over,
  };
}

export function templatesContract(name: string, makeStore: () => Promise<Store>): void {
  describe(`Store contract, templates: ${name}`, () => {
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

    it('create, get, list, scoped by company; parts round-trip exactly', async () => {
      const t1 = template(A);
      const t2 = template(A, { name: 'second', createdAt: t1.createdAt + 1, managedBy: 'operator:ns/x' });
      const other = template(B);
      expect(await store.createTemplate(t1)).toEqual(t1);
      await store.createTemplate(t2);
      await store.createTemplate(other);
      expect(await store.getTemplate(A, t1.id)).toEqual(t1);
      expect(await store.getTemplate(B, t1.id)).toBeNull();
      expect((await store.listTemplates(A)).map((t) => t.id)).toEqual([t1.id, t2.id]);
      expect(await store.countForQuota('templates', A)).toBe(2);
      expect(await store.existingIds('templates', B, [t1.id, other.id])).toEqual([other.id]);
    });

    it('update: only the given fields, updated_at; another company sees not found', async () => {
      const t = await store.createTemplate(template(A));
      expect(await store.updateTemplate(B, t.id, { name: 'x' }, 5)).toBeNull();
      const parts = { TEAMS: { title: 'T' } };
      const u = await store.updateTemplate(A, t.id, { parts, managedBy: 'm' }, t.updatedAt + 10);
      expect(u).toEqual({ ...t, parts, managedBy: 'm', updatedAt: t.updatedAt + 10 });
      expect(await store.updateTemplate(A, t.id, { managedBy: null }, t.updatedAt + 11)).toMatchObject({ managedBy: null, name: 'ops' });
    });

    it('routers by template, the router → template join, delete by ids', async () => {
      const t = await store.createTemplate(template(A));
      const unused = await store.createTemplate(template(A));
      const i = await store.createIntegration(integration(A));
      const r = await store.createRouter(router(A, i.id, { templateId: t.id }));
      const plain = await store.createRouter(router(A, i.id));
      expect((await store.listRoutersByTemplate(A, [t.id, unused.id])).map((x) => x.id)).toEqual([r.id]);
      expect((await store.listRoutersByTemplate(A, [unused.id, t.id, 'no-such-template'])).map((x) => x.id)).toEqual([r.id]);
      expect(await store.listRoutersByTemplate(B, [t.id])).toEqual([]);
      expect(await store.getRouterTemplate(A, r.id)).toEqual(t);
      expect(await store.getRouterTemplate(A, plain.id)).toBeNull();
      expect(await store.getRouterTemplate(B, r.id)).toBeNull();
      await store.transaction(async (tx) => {
        expect(await tx.getRouterTemplate(A, r.id)).toEqual(t);
      });
      expect(await store.deleteTemplates(B, [unused.id])).toEqual([]);
      expect(await store.deleteTemplates(A, [unused.id, unused.id, randomUUID()])).toEqual([unused.id]);
      expect(await store.getTemplate(A, unused.id)).toBeNull();
    });
  });
}
