import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { randomUUID } from 'node:crypto';
import { open as openFile, type FileHandle } from 'node:fs/promises';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { eventRecord, integration, newDelivery, router, storeContract } from './contract.js';
import { inventoryContract } from './contract-inventory.js';
import { policyContract } from './contract-policy.js';
import { reminderContract } from './contract-reminders.js';
import { templatesContract } from './contract-templates.js';
import { silencesContract } from './contract-silences.js';
import { groupsContract } from './contract-groups.js';
import { consoleContract } from './contract-console.js';

const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-sqlite-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

storeContract('sqlite::memory:', () => openStore('sqlite::memory:'));
inventoryContract('sqlite::memory:', () => openStore('sqlite::memory:'));
policyContract('sqlite::memory:', () => openStore('sqlite::memory:'));
reminderContract('sqlite::memory:', () => openStore('sqlite::memory:'));
reminderContract('sqlite file', () => openStore(`sqlite:${join(dir, `reminders-${randomUUID()}.db`)}`));
templatesContract('sqlite::memory:', () => openStore('sqlite::memory:'));
silencesContract('sqlite::memory:', () => openStore('sqlite::memory:'));
groupsContract('sqlite::memory:', () => openStore('sqlite::memory:'));
consoleContract('sqlite::memory:', () => openStore('sqlite::memory:'));
storeContract('sqlite file', () => openStore(`sqlite:${join(dir, `contract-${randomUUID()}.db`)}`));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SQLite specifics', () => {
  it('creates parent directories; the file persists across close and reopen', async () => {
    const path = join(dir, 'nested', 'deeper', 'store.db');
    const A = randomUUID();
    const s1 = await openStore(`sqlite:${path}`);
    await s1.migrate();
    const i = await s1.createIntegration(integration(A));
    const r = await s1.createRouter(router(A, i.id));
    await s1.close();
    expect(existsSync(path)).toBe(true);

    const s2 = await openStore(`sqlite:${path}`);
    await s2.migrate(); // no-op on an existing, migrated file
    expect(await s2.getIntegration(A, i.id)).toEqual(i);
    expect(await s2.listRouters(A)).toEqual([r]);
    await s2.close();

    // The pragmas that persist in the file: WAL journal.
    const raw = new DatabaseSync(path);
    expect(raw.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    expect(raw.prepare('SELECT version FROM schema_migrations ORDER BY version').all()).toEqual(
      MIGRATIONS.map((m) => ({ version: m.version })),
    );
    raw.close();
  });

  it('concurrent transactions do not interleave (read-modify-write keeps every increment)', async () => {
    const store = await openStore('sqlite::memory:');
    await store.migrate();
    const A = randomUUID();
    const counter = await store.createIntegration(integration(A, { config: { n: 0 } }));
    let active = 0;
    let maxActive = 0;
    const N = 25;
    await Promise.all(
      Array.from({ length: N }, (_, k) =>
        store.transaction(async (tx) => {
          active++;
          maxActive = Math.max(maxActive, active);
          const cur = await tx.getIntegration(A, counter.id);
          await sleep(k % 3); // yield to the event loop between read and write
          await tx.updateIntegration(A, counter.id, { config: { n: (cur!.config['n'] as number) + 1 } }, Date.now());
          active--;
        }),
      ),
    );
    expect(maxActive).toBe(1);
    expect((await store.getIntegration(A, counter.id))!.config).toEqual({ n: N });
    await store.close();
  });

  it('operations outside a transaction wait for the running one and see its commit', async () => {
    const store = await openStore('sqlite::memory:');
    await store.migrate();
    const A = randomUUID();
    const order: string[] = [];
    let created!: string;
    const tx = store.transaction(async (t) => {
      created = (await t.createIntegration(integration(A))).id;
      order.push('tx wrote');
      await sleep(30);
      order.push('tx done');
    });
    await sleep(5); // the transaction is now running
    const list = store.listIntegrations(A).then((l) => {
      order.push('list');
      return l;
    });
    await tx;
    const seen = await list;
    expect(order).toEqual(['tx wrote', 'tx done', 'list']);
    expect(seen.map((i) => i.id)).toEqual([created]);
    await store.close();
  });

  it('a second store on the same file sees committed writes', async () => {
    const path = join(dir, 'shared.db');
    const s1 = await openStore(`sqlite:${path}`);
    const s2 = await openStore(`sqlite:${path}`);
    await Promise.all([s1.migrate(), s2.migrate()]);
    const A = randomUUID();
    const i = await s1.createIntegration(integration(A));
    expect(await s2.getIntegration(A, i.id)).toEqual(i);
    await s1.close();
    await s2.close();
  });
});

describe('durability level per write (synchronous: 1 = NORMAL, 2 = FULL)', () => {
  /**
   * A store on a new file whose connection reports each statement it runs with its own PRAGMA synchronous read
   * just before (sqlite-thread.ts onStatement): the level its commit (autocommit or COMMIT) is made at.
   */
  function recordLevels() {
    const seen: { sql: string; level: number }[] = [];
    const levels = (re: RegExp) => [...new Set(seen.filter((s) => re.test(s.sql)).map((s) => s.level))];
    const path = join(dir, `sync-${randomUUID()}.db`);
    const open = () => openSqliteStore(path, { onStatement: (sql, level) => seen.push({ sql: sql.replace(/\s+/g, ' ').trim(), level }) });
    return { seen, levels, open, path };
  }

  const CLAIM = /^UPDATE deliveries SET status = 'IN_FLIGHT'/;

  it("the worker's writes (claims, grouped outcomes) commit at NORMAL; ingestion and everything else at FULL", async () => {
    const { seen, levels, open } = recordLevels();
    const store = await open();
    await store.migrate();
    const A = randomUUID();
    const ev = eventRecord(A);
    await store.transaction(async (tx) => {
      await tx.insertEvent(ev);
      await tx.insertDeliveries([newDelivery(ev), newDelivery(ev)]);
    });
    const ingestion = seen.length;
    const claimed = await store.claimDeliveries(Date.now() + 1000, 10, 60_000, 'pod-a');
    const during = seen.splice(ingestion);
    expect(claimed).toHaveLength(2);
    const [d1, d2] = claimed;
    expect(await store.recordOutcomes([{ id: d1!.id, attemptNo: 1, statusCode: 200, kind: 'delivered' }], Date.now())).toEqual([true]);
    const grouped = seen.splice(ingestion);
    expect(await store.markDelivered(d2!.id, 1, Date.now(), 200)).toBe(true);
    await store.close();

    // every statement of the claim ran at NORMAL, its claiming UPDATE and its COMMIT among them
    expect(during.some((s) => CLAIM.test(s.sql))).toBe(true);
    expect(during.some((s) => /^COMMIT/.test(s.sql))).toBe(true);
    expect([...new Set(during.map((s) => s.level))]).toEqual([1]);
    // the grouped outcome too (the worker's path); markDelivered (one row, outside the worker) stays FULL
    expect(grouped.some((s) => /delivered_at = CASE/.test(s.sql))).toBe(true);
    expect([...new Set(grouped.map((s) => s.level))]).toEqual([1]);
    // everything else at FULL: migrations, ingestion, markDelivered
    expect(levels(/^INSERT INTO events/)).toEqual([2]);
    expect(levels(/^INSERT INTO deliveries/)).toEqual([2]);
    expect(levels(/^COMMIT/)).toEqual([2]);
    expect(levels(/delivered_at = CASE/)).toEqual([2]);
    expect([...new Set(seen.map((s) => s.level))]).toEqual([2]);
  });

  it('a claim that hands out a delivery whose key has an older delivery is made durable before it returns (order survives a power loss)', async () => {
    const { seen, open } = recordLevels();
    // every fdatasync of a file (the WAL's, here), in the order of the statements
    const probe = await openFile(join(dir, `probe-${randomUUID()}`), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync(this: FileHandle): Promise<void> };
    await probe.close();
    const real = proto.datasync;
    // the sync waits for a gate while `gated`: the claim must not return before it is done
    let gated = false;
    let release: () => void = () => {};
    const datasync = vi.spyOn(proto, 'datasync').mockImplementation(async function (this: FileHandle) {
      seen.push({ sql: 'FDATASYNC', level: 0 });
      if (gated) await new Promise<void>((r) => (release = r));
      return real.call(this);
    });
    const store = await open();
    await store.migrate();
    const A = randomUUID();
    const integrationId = randomUUID();
    const t = Date.now();
    const [e1, e2] = [eventRecord(A), eventRecord(A)];
    const keyed = (ev: typeof e1, seq: number) => newDelivery(ev, { integrationId, orderKey: 'issuer/a', orderAt: t, orderSeq: seq });
    await store.transaction(async (tx) => {
      await tx.insertEvents([e1, e2]);
      await tx.insertDeliveries([keyed(e1, 1), keyed(e2, 2)]);
    });
    const claimSteps = (from: number) =>
      seen
        .slice(from)
        .filter((s) => CLAIM.test(s.sql) || /^(COMMIT|ROLLBACK|FDATASYNC)/.test(s.sql))
        .map((s) => [s.sql.split(' ')[0], s.level]);
    // the head: no older delivery of its key, so NORMAL and no sync
    let from = seen.length;
    const [first] = await store.claimDeliveries(t + 1000, 10, 60_000);
    expect(claimSteps(from)).toEqual([
      ['UPDATE', 1],
      ['COMMIT', 1],
    ]);
    expect(await store.recordOutcomes([{ id: first!.id, attemptNo: 1, statusCode: 200, kind: 'delivered' }], t + 1000)).toEqual([true]);
    // the next one of the key: committed at NORMAL, then the WAL is synced before the claim returns, so the older
    // one's outcome (committed at NORMAL) is on disk before this one can be sent
    from = seen.length;
    gated = true;
    let returned = false;
    const claiming = store.claimDeliveries(t + 2000, 10, 60_000).then((r) => ((returned = true), r));
    await vi.waitFor(() => expect(seen.slice(from).some((s) => s.sql === 'FDATASYNC')).toBe(true));
    await new Promise((r) => setTimeout(r, 50));
    expect(returned).toBe(false); // committed, not yet synced: nothing handed out
    gated = false;
    release();
    const [second] = await claiming;
    expect(second?.orderSeq).toBe(2);
    expect(claimSteps(from)).toEqual([
      ['UPDATE', 1],
      ['COMMIT', 1],
      ['FDATASYNC', 0],
    ]);
    await store.close();
    datasync.mockRestore();
  });

  it('a claim that fails still puts the connection back to FULL', async () => {
    const { seen, levels, open, path } = recordLevels();
    const store = await open();
    await store.migrate();
    const ev = eventRecord(randomUUID());
    await store.insertEvent(ev);
    await store.insertDeliveries([newDelivery(ev)]);
    // the claim's statements name this index (INDEXED BY): without it the first of them fails
    const raw = new DatabaseSync(path);
    raw.exec('DROP INDEX deliveries_claim_idx');
    raw.close();
    const from = seen.length;
    await expect(store.claimDeliveries(Date.now() + 1000, 10, 60_000)).rejects.toThrow(/no such index: deliveries_claim_idx/);
    const claim = seen.slice(from);
    await store.insertEvent(eventRecord(ev.companyId));
    await store.close();
    // the claim began at NORMAL, failed at its first statement, and was rolled back; the next write is at FULL
    // (the temp table of claimed ids, then the park, which names the index too; nothing after it ran)
    expect(claim.map((s) => s.sql.split(' ')[0])).toEqual(['BEGIN', 'CREATE', 'DELETE', 'UPDATE', 'ROLLBACK']);
    expect([...new Set(claim.map((s) => s.level))]).toEqual([1]);
    expect(levels(/^INSERT INTO events/)).toEqual([2]);
  });
});

describe('migration 5 (monitoring_configs.manager) on a store written before it', () => {
  it('keeps the record, unmanaged, and the first manager write claims it', async () => {
    const path = join(dir, `pre-v5-${randomUUID()}.db`);
    const raw = new DatabaseSync(path);
    raw.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    for (const m of MIGRATIONS.filter((x) => x.version <= 4)) {
      for (const stmt of m.up.sqlite) raw.exec(stmt);
      raw.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name);
    }
    raw.prepare(`INSERT INTO monitoring_configs VALUES ('cfg-1', 'company-1', 1, '[45]', '[]', 1, 1700000000000)`).run();
    raw.close();

    const store = await openStore(`sqlite:${path}`);
    await store.migrate();
    const legacy = await store.getMonitoringConfig('company-1');
    expect(legacy).toEqual({
      id: 'cfg-1',
      companyId: 'company-1',
      enabled: true,
      thresholds: [45],
      applicationIds: [],
      includeUnassignedCertificates: true,
      updatedAt: 1700000000000,
    });
    const claimed = await store.putMonitoringConfigIf({ ...legacy!, manager: 'k8s:MonitoringConfig//default@c1' }, null);
    expect(claimed?.manager).toBe('k8s:MonitoringConfig//default@c1');
    await store.close();
  });
});

describe('SQLite claim: integrations', () => {
  it('an integration record that does not decode fails only its own rows: they come without it (the worker reads it and says why)', async () => {
    const path = join(dir, `bad-int-${randomUUID()}.db`);
    const store = await openSqliteStore(path);
    await store.migrate();
    const A = randomUUID();
    const [good, bad] = [await store.createIntegration(integration(A)), await store.createIntegration(integration(A))];
    const ev = eventRecord(A);
    const t = Date.now();
    const [dGood, dBad] = [
      newDelivery(ev, { integrationId: good.id, createdAt: t - 2 }),
      newDelivery(ev, { integrationId: bad.id, createdAt: t - 1 }),
    ];
    await store.transaction(async (tx) => {
      await tx.insertEvent(ev);
      await tx.insertDeliveries([dGood!, dBad!]);
    });
    const raw = new DatabaseSync(path);
    raw.prepare('UPDATE integrations SET config = ? WHERE id = ?').run('{not json', bad.id);
    raw.close();
    const claimed = await store.claimDeliveries(t + 1000, 10, 60_000);
    expect(claimed.map((c) => c.id)).toEqual([dGood!.id, dBad!.id]);
    expect(claimed[0]!.integration).toEqual(good);
    expect(claimed[1]!.integration).toBeUndefined();
    await store.close();
  });
});

describe('SQLite claim plan', () => {
  it("the claim's SELECT reads its temp table of ids first, then each delivery and event by key (no scan of deliveries)", async () => {
    const seen: string[] = [];
    const path = join(dir, `plan-${randomUUID()}.db`);
    const store = await openSqliteStore(path, { onStatement: (sql) => seen.push(sql.replace(/\s+/g, ' ').trim()) });
    await store.migrate();
    const ev = eventRecord(randomUUID());
    await store.transaction(async (tx) => {
      await tx.insertEvent(ev);
      await tx.insertDeliveries(Array.from({ length: 200 }, () => newDelivery(ev)));
    });
    expect(await store.claimDeliveries(Date.now() + 1000, 16, 60_000)).toHaveLength(16);
    await store.close();
    const select = seen.find((s) => s.startsWith('SELECT d.id'))!;
    const raw = new DatabaseSync(path);
    raw.exec('CREATE TEMP TABLE claim_batch (id TEXT PRIMARY KEY)');
    const plan = (raw.prepare(`EXPLAIN QUERY PLAN ${select}`).all() as { detail: string }[]).map((r) => r.detail);
    raw.close();
    expect(plan[0]).toMatch(/^SCAN c\b/);
    expect(plan.filter((d) => /^SCAN (d|e)\b/.test(d))).toEqual([]);
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH d USING INDEX .*\(id=\?\)/));
  });
});
