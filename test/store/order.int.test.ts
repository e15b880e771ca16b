/**
 * Order per key in the store, on SQLite and PostgreSQL: the claim hands out only the head of
 * each (integration, key), supersede() is the atomic fence, and both agree with the pure rules
 * (src/delivery/order.ts) on random histories (fast-check model test).
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { orderVerdict, type KeyDelivery, type OrderMode } from '../../src/delivery/order.js';
import type { DeliveryStatus, NewDelivery, Store } from '../../src/store/types.js';
import { MIGRATIONS, runMigrations } from '../../src/store/migrations.js';
import { openStore } from '../../src/store/index.js';
import { toPgPlaceholders, type SqlDb } from '../../src/store/sqldb.js';
import { DatabaseSync } from 'node:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { ENGINES, type Engine } from '../delivery/support.js';
import { eventRecord } from './contract.js';

const LEASE = 60_000;

describe.each(ENGINES.map((make) => [make().name, make] as const))('order per key on %s', (_name, makeEngine) => {
  let engine: Engine;
  let store: Store;
  beforeAll(() => {
    engine = makeEngine();
  });
  afterAll(async () => {
    await engine.cleanup();
  });
  beforeEach(async () => {
    store = await engine.open();
  });
  afterEach(async () => {
    await store.close();
  });

  const t0 = Date.now();
  /** One event and one delivery per call, with the given order fields. */
  async function add(
    companyId: string,
    integrationId: string,
    orderKey: string | null,
    orderAt: number,
    orderSeq = orderAt * 1000,
  ): Promise<NewDelivery> {
    const ev = eventRecord(companyId, { receivedAt: t0 });
    const d: NewDelivery = {
      id: randomUUID(),
      companyId,
      eventId: ev.id,
      routerId: randomUUID(),
      routerName: 'r',
      integrationId,
      createdAt: t0,
      orderKey,
      orderAt,
      orderSeq,
    };
    await store.transaction(async (tx) => {
      await tx.insertEvent(ev);
      await tx.insertDeliveries([d]);
    });
    return d;
  }
  const claimIds = async (now = t0 + 1) => (await store.claimDeliveries(now, 1000, LEASE)).map((c) => c.id).sort();
  const status = async (companyId: string, id: string) =>
    (await store.listDeliveries(companyId, { limit: 1000 })).find((d) => d.id === id)!;

  it('claims only the oldest open delivery of a key; other keys, integrations and unordered rows are not held up', async () => {
    const A = randomUUID();
    const i1 = randomUUID();
    const i2 = randomUUID();
    const newer = await add(A, i1, 'k1', 2_000);
    const older = await add(A, i1, 'k1', 1_000); // accepted later, but the older event: goes first
    const otherKey = await add(A, i1, 'k2', 5_000);
    const otherIntegration = await add(A, i2, 'k1', 3_000);
    const u1 = await add(A, i1, null, 1);
    const u2 = await add(A, i1, null, 1);
    expect(await claimIds()).toEqual([older.id, otherKey.id, otherIntegration.id, u1.id, u2.id].sort());
    // the head is in flight: its key stays blocked, nothing else is left
    expect(await claimIds()).toEqual([]);
    expect(await store.markDelivered(older.id, 1, t0 + 2, 200)).toBe(true);
    expect(await claimIds(t0 + 3)).toEqual([newer.id]);
  });

  it('parking: blocked rows leave the due range and come back when their head finishes, or at the lease end at the latest', async () => {
    const A = randomUUID();
    const i = randomUUID();
    const ds = [];
    for (let n = 0; n < 5; n++) ds.push(await add(A, i, 'k', 1_000 + n));
    expect(await claimIds()).toEqual([ds[0]!.id]);
    const parked = (await store.listDeliveries(A, { limit: 10 })).filter((d) => d.status === 'PENDING');
    expect(parked.map((d) => d.nextAttemptAt)).toEqual(parked.map(() => t0 + 1 + LEASE));
    expect(await store.oldestPendingAge(t0 + 2)).toBe(0); // parked rows are not overdue work
    // the head finishes: the next one is due at once (not at the lease end)
    expect(await store.markDead(ds[0]!.id, 1, t0 + 5, 'x', 400)).toBe(true);
    expect(await claimIds(t0 + 5)).toEqual([ds[1]!.id]);
    // a head that never reports back: its followers are looked at again at the lease end, still in order
    expect(await claimIds(t0 + 5 + LEASE)).toEqual([ds[1]!.id]);
  });

  it('a dead head lets the next one go; a retrying head (not due) keeps its key blocked', async () => {
    const A = randomUUID();
    const i = randomUUID();
    const a = await add(A, i, 'k', 1_000);
    const b = await add(A, i, 'k', 2_000);
    const c = await add(A, i, 'k', 3_000);
    expect(await claimIds()).toEqual([a.id]);
    expect(await store.markRetry(a.id, 1, t0 + 10_000, 'HTTP 503', 503, t0 + 2)).toBe(true);
    expect(await claimIds(t0 + 5)).toEqual([]);
    expect(await claimIds(t0 + 10_000)).toEqual([a.id]);
    expect(await store.markDead(a.id, 2, t0 + 10_001, 'gave up', 400)).toBe(true);
    expect(await claimIds(t0 + 10_002)).toEqual([b.id]);
    expect((await status(A, c.id)).status).toBe('PENDING');
  });

  it("an expired claim is the key's head again (crash recovery keeps the order)", async () => {
    const A = randomUUID();
    const i = randomUUID();
    const a = await add(A, i, 'k', 1_000);
    await add(A, i, 'k', 2_000);
    expect(await claimIds()).toEqual([a.id]);
    expect(await claimIds(t0 + LEASE + 2)).toEqual([a.id]);
  });

  it('supersede, incident mode: any newer one makes the claimed delivery SUPERSEDED, attempt not counted, fenced', async () => {
    const A = randomUUID();
    const i = randomUUID();
    const a = await add(A, i, 'k', 1_000);
    const b = await add(A, i, 'k', 2_000);
    const [claimed] = await store.claimDeliveries(t0 + 1, 10, LEASE);
    expect(claimed!.id).toBe(a.id);
    expect(await store.supersede(a.id, claimed!.attempts + 1, t0 + 2, 'supersede')).toBe(false); // not our attempt
    expect(await store.supersede(a.id, claimed!.attempts, t0 + 2, 'supersede')).toBe(true);
    const row = await status(A, a.id);
    expect(row).toMatchObject({ status: 'SUPERSEDED', attempts: 0, leaseUntil: null });
    expect(await store.listDeliveries(A, { status: 'SUPERSEDED' })).toHaveLength(1);
    // terminal: the fence no longer applies, the newer one is the head now
    expect(await store.markDelivered(a.id, claimed!.attempts, t0 + 3, 202)).toBe(false);
    expect(await claimIds(t0 + 3)).toEqual([b.id]);
    expect(await store.supersede(b.id, 1, t0 + 4, 'supersede')).toBe(false); // the newest is never superseded
    expect(await store.deliveryStats()).toEqual({ PENDING: 0, IN_FLIGHT: 1, DEAD: 0 });
  });

  it('supersede, in-order mode: only a newer one already sent (late arrival) supersedes', async () => {
    const A = randomUUID();
    const i = randomUUID();
    const a = await add(A, i, 'k', 1_000);
    await add(A, i, 'k', 2_000);
    await claimIds();
    expect(await store.supersede(a.id, 1, t0 + 2, 'in-order')).toBe(false);
    expect(await store.markDelivered(a.id, 1, t0 + 3, 200)).toBe(true);
    const [next] = await store.claimDeliveries(t0 + 4, 10, LEASE);
    expect(await store.markDelivered(next!.id, 1, t0 + 5, 200)).toBe(true);
    const late = await add(A, i, 'k', 1_500); // an older event accepted after the newer one was sent
    expect(await claimIds(t0 + 6)).toEqual([late.id]);
    expect(await store.supersede(late.id, 1, t0 + 7, 'in-order')).toBe(true);
    expect((await status(A, late.id)).status).toBe('SUPERSEDED');
  });

  it('concurrent claims never hand out two deliveries of one key', async () => {
    const A = randomUUID();
    const i = randomUUID();
    for (let n = 0; n < 4; n++) for (const key of ['a', 'b', 'c']) await add(A, i, key, 1_000 + n);
    const batches = await Promise.all(Array.from({ length: 6 }, () => store.claimDeliveries(t0 + 1, 2, LEASE)));
    const keys = batches.flat().map((d) => d.orderKey);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe(3);
  });

  it('model test: claims and supersede() agree with orderVerdict on random histories', async () => {
    type Step = { kind: 'delivered' | 'dead' | 'retry' | 'keep' | 'supersede'; mode: OrderMode };
    const arbDelivery = fc.record({
      key: fc.constantFrom('k1', 'k2'),
      at: fc.integer({ min: 1, max: 4 }),
      seq: fc.integer({ min: 0, max: 2 }),
    });
    const arbStep = fc.record({
      kind: fc.constantFrom<Step['kind']>('delivered', 'dead', 'retry', 'keep', 'supersede'),
      mode: fc.constantFrom<OrderMode>('supersede', 'in-order'),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbDelivery, { minLength: 1, maxLength: 7 }),
        fc.array(arbStep, { minLength: 4, maxLength: 20 }),
        async (spec, steps) => {
          const A = randomUUID();
          const i = randomUUID();
          const model = new Map<string, KeyDelivery & { key: string; attempts: number }>();
          for (const s of spec) {
            const d = await add(A, i, s.key, s.at, s.seq);
            model.set(d.id, { id: d.id, key: s.key, orderAt: s.at, orderSeq: s.seq, status: 'PENDING', attempts: 0 });
          }
          const verdict = (id: string, mode: OrderMode) => {
            const self = model.get(id)!;
            return orderVerdict(
              mode,
              self,
              [...model.values()].filter((o) => o.key === self.key && o.id !== id),
            );
          };
          let now = t0 + 1;
          let s = 0;
          for (let round = 0; round < 6; round++) {
            const expected = [...model.values()]
              .filter((d) => d.status === 'PENDING' && verdict(d.id, 'in-order') !== 'wait')
              .map((d) => d.id);
            // (the store is shared by the runs: leftovers of earlier runs, other integrations, are not this model's)
            const claimed = (await store.claimDeliveries(now, 1000, LEASE)).filter((c) => model.has(c.id));
            expect(claimed.map((c) => c.id).sort()).toEqual(expected.sort());
            for (const c of claimed) {
              const m = model.get(c.id)!;
              m.status = 'IN_FLIGHT';
              m.attempts = c.attempts;
            }
            for (const c of claimed) {
              const step = steps[s++ % steps.length]!;
              const m = model.get(c.id)!;
              const was: DeliveryStatus = m.status;
              switch (step.kind) {
                case 'delivered':
                  expect(await store.markDelivered(c.id, m.attempts, now, 200)).toBe(true);
                  m.status = 'DELIVERED';
                  break;
                case 'dead':
                  expect(await store.markDead(c.id, m.attempts, now, 'x', 400)).toBe(true);
                  m.status = 'DEAD';
                  break;
                case 'retry':
                  expect(await store.markRetry(c.id, m.attempts, now, 'x', 503, now)).toBe(true);
                  m.status = 'PENDING';
                  break;
                case 'supersede': {
                  m.status = 'PENDING'; // the verdict looks at the others only
                  const want = verdict(c.id, step.mode) === 'superseded';
                  m.status = was;
                  expect(await store.supersede(c.id, m.attempts, now, step.mode)).toBe(want);
                  if (want) m.status = 'SUPERSEDED';
                  break;
                }
                case 'keep':
                  break;
              }
            }
            now += 1;
          }
          const rows = await store.listDeliveries(A, { limit: 1000 });
          for (const r of rows) expect(r.status).toBe(model.get(r.id)!.status);
        },
      ),
      { numRuns: 25 },
    );
  });
});

/** A store at migration 2, with queued rows, upgraded in place. */
describe('migration 3 upgrades a populated outbox', () => {
  const v2 = MIGRATIONS.filter((m) => m.version <= 2);
  const seed = async (db: SqlDb) => {
    await runMigrations(db, v2);
    await db.run(`INSERT INTO events (id, company_id, type, data, received_at) VALUES ('e1', 'c1', 't', '{}', 1000)`);
    for (const [id, status, lease] of [
      ['d1', 'PENDING', null],
      ['d2', 'IN_FLIGHT', 5000],
      ['d3', 'DEAD', null],
    ] as const) {
      await db.run(
        `INSERT INTO deliveries (id, company_id, event_id, router_id, router_name, integration_id, status, attempts, next_attempt_at,
           lease_until, created_at, updated_at) VALUES (?, 'c1', 'e1', ?, 'r', 'i1', ?, 1, 1000, ?, 1000, 1000)`,
        [id, `r-${id}`, status, lease],
      );
    }
  };
  const check = async (store: Store) => {
    await store.migrate();
    const rows = await store.listDeliveries('c1', { limit: 10 });
    expect(rows.map((r) => [r.id, r.status, r.orderKey, r.orderAt, r.orderSeq]).sort()).toEqual([
      ['d1', 'PENDING', null, 1000, 1_000_000],
      ['d2', 'IN_FLIGHT', null, 1000, 1_000_000],
      ['d3', 'DEAD', null, 1000, 1_000_000],
    ]);
    // unordered rows claim as before (the expired claim included)
    expect((await store.claimDeliveries(6000, 10, 1000)).map((d) => d.id).sort()).toEqual(['d1', 'd2']);
  };

  it('on SQLite (table rebuilt: rows, constraints and indexes kept)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-mig3-'));
    try {
      const path = join(dir, 'v2.db');
      const raw = new DatabaseSync(path);
      raw.exec('PRAGMA foreign_keys = ON');
      const db: SqlDb = {
        dialect: 'sqlite',
        all: async (sql, p = []) => raw.prepare(sql).all(...(p as never[])) as Record<string, unknown>[],
        get: async (sql, p = []) => raw.prepare(sql).get(...(p as never[])) as Record<string, unknown> | undefined,
        run: async (sql, p = []) => Number(raw.prepare(sql).run(...(p as never[])).changes),
      };
      raw.exec('BEGIN');
      await seed(db);
      raw.exec('COMMIT');
      raw.close();
      const store = await openStore(`sqlite:${path}`);
      try {
        await check(store);
        const idx = (
          await (async () => {
            const r = new DatabaseSync(path);
            const names = r
              .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'deliveries' AND sql IS NOT NULL`)
              .all()
              .map((x) => x['name']);
            r.close();
            return names;
          })()
        ).sort();
        expect(idx).toEqual(
          [
            'deliveries_claim_idx',
            'deliveries_company_created_idx',
            'deliveries_company_integration_idx',
            'deliveries_claimed_by_idx',
            'deliveries_dead_idx',
            // migration 13: (event, router) unique except for reminders
            'deliveries_event_router_idx',
            'deliveries_order_idx',
            'deliveries_order_open_idx',
            // migration 16: the list filters by status and by event
            'deliveries_company_status_idx',
            'deliveries_company_event_idx',
          ].sort(),
        );
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('on PostgreSQL', async () => {
    const url = testDatabaseUrl();
    const schema = randomSchema('t_mig3');
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`SET search_path TO "${schema}"`);
      const db: SqlDb = {
        dialect: 'postgres',
        all: async (sql, p = []) => (await client.query(toPgPlaceholders(sql), p as unknown[])).rows,
        get: async (sql, p = []) => (await client.query(toPgPlaceholders(sql), p as unknown[])).rows[0],
        run: async (sql, p = []) => (await client.query(toPgPlaceholders(sql), p as unknown[])).rowCount ?? 0,
      };
      await client.query('BEGIN');
      await seed(db);
      await client.query('COMMIT');
      const store = await openStore(url, { schema });
      try {
        await check(store);
      } finally {
        await store.close();
      }
    } finally {
      await client.end();
      await dropSchema(url, schema);
    }
  });
});
