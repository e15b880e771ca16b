/**
 * The chain's weakest link against real stores (SQLite file, PostgreSQL), a real delivery worker and a loopback
 * webhook receiver: a `ca` Issuer's root that expires before three certificates it signed is reported once,
 * naming them; a root outliving its certificates stays silent; a leaf whose chain intermediate expires first is
 * reported; reruns and a restarted scanner repeat nothing; a renewed CA still outlived is reported again.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { DAY_MS } from '../../src/expiry/decide.js';
import { ExpiryScanner } from '../../src/expiry/scanner.js';
import { WEAK_LINK_RULE_ID } from '../../src/expiry/weak-link.js';
import { realClock, type Clock } from '../../src/runtime/timers.js';
import type { SqlDb } from '../../src/store/sqldb.js';
import type { Store } from '../../src/store/types.js';
import { captureLog, createWebhookIntegration, ENGINES, type Engine, type Receiver, startReceiver, waitFor } from '../delivery/support.js';
import { expiryScanner, routeExpirations, startExpiryWorker } from './harness.js';
import { insertCluster, upsertInventory, type InventoryRow } from './inventory.js';

// in the past: the scanner's clock also dates the deliveries, which the worker (real time) must find due
const T0 = Date.parse('2020-01-01T06:00:00Z');
const ROOT_DN = 'CN=Internal Root CA, O=Example';
const INTER_DN = 'CN=Internal Issuing CA, O=Example';

/** The columns the inventory stand-in does not write: the leaf's subject and the chain's earliest notAfter. */
async function setChain(store: Store, company: string, secretName: string, subject: string | null, chainNotAfter: number | null) {
  const db = (store as unknown as { autoDb(): SqlDb }).autoDb();
  await db.run(`UPDATE inventory_certificates SET subject = ?, chain_not_after = ? WHERE company_id = ? AND secret_name = ?`, [
    subject,
    chainNotAfter,
    company,
    secretName,
  ]);
}

interface Hit {
  data: { message: string; expiration: { ruleId: number } };
}

describe.each(ENGINES.map((make) => [make().name, make] as const))('CA expiring before its certificates on %s', (_name, makeEngine) => {
  let engine: Engine;
  let store: Store;
  let rx: Receiver;
  let worker: DeliveryWorker;
  let now = T0;
  let company: string;
  const clock: Clock = { ...realClock, now: () => now };
  const log = captureLog('info');

  beforeAll(() => {
    engine = makeEngine();
  });
  afterAll(async () => {
    await engine.cleanup();
  });
  beforeEach(async () => {
    store = await engine.open();
    rx = await startReceiver();
    company = randomUUID();
    now = T0;
    const integ = await createWebhookIntegration(store, company, rx.url);
    await routeExpirations(store, company, integ.id, { name: 'CA outlived', filter: `data.ruleId == ${WEAK_LINK_RULE_ID}`, at: T0 });
    await insertCluster(store, company, 'c-eu', 'prod-eu');
    worker = startExpiryWorker(store, log.logger);
  });
  afterEach(async () => {
    await worker.stop(1_000);
    await rx.close();
    await store.close();
  });

  function scanner(): ExpiryScanner {
    return expiryScanner(store, worker, log.logger, clock, { minGapMs: 0 });
  }

  const cert = (secretName: string, days: number, over: Partial<InventoryRow> = {}): InventoryRow => ({
    clusterId: 'c-eu',
    namespace: 'shop',
    secretName,
    certificateName: secretName,
    serial: `AA${secretName.replace(/\W/g, '').toUpperCase()}`,
    notAfter: T0 + days * DAY_MS,
    issuer: ROOT_DN,
    ...over,
  });
  /** the `ca` Issuer's Secret: a self-signed root */
  async function root(days: number, serial = 'CA01'): Promise<void> {
    await upsertInventory(store, company, [cert('root-ca', days, { namespace: 'cert-manager', serial, commonName: 'Internal Root CA' })]);
    await setChain(store, company, 'root-ca', ROOT_DN, T0 + days * DAY_MS);
  }

  async function delivered(n: number): Promise<Hit[]> {
    expect((await store.listDeliveries(company, { limit: 100 })).length).toBe(n);
    await waitFor(`${n} deliveries`, async () =>
      (await store.listDeliveries(company, { limit: 100 })).every((d) => d.status === 'DELIVERED'),
    );
    expect(rx.hits).toHaveLength(n);
    return rx.hits.map((h) => JSON.parse(h.body) as Hit);
  }

  it('a root expiring before 3 of its certificates: one report naming them; reruns and a restart: nothing more', async () => {
    await root(200); // beyond every expiry threshold: only this rule speaks
    await upsertInventory(store, company, [cert('a', 300), cert('b', 365), cert('c', 400), cert('d', 100)]);
    const [report] = await scanner().scanOnce();
    expect(report).toMatchObject({ events: 1 });
    const [hit] = await delivered(1);
    expect(hit!.data.expiration.ruleId).toBe(WEAK_LINK_RULE_ID);
    expect(hit!.data.message).toContain('CA certificate cert-manager/root-ca (id ');
    expect(hit!.data.message).toContain('before 3 certificates it signed');
    expect(hit!.data.message).toMatch(/Certificate shop\/c, .*; Certificate shop\/b, .*; Certificate shop\/a, /);
    expect(hit!.data.message).not.toContain('shop/d');
    const [d] = await store.listDeliveries(company, { limit: 1 });
    expect((await store.getEvent(company, d!.eventId))?.data).toMatchObject({
      ruleId: WEAK_LINK_RULE_ID,
      threshold: 0,
      certificateName: 'root-ca',
      outlivingCount: 3,
      outlivingCertificates: ['prod-eu/shop/c', 'prod-eu/shop/b', 'prod-eu/shop/a'],
      daysUntilExpiry: 200,
    });

    now += 3_600_000;
    expect((await scanner().scanOnce())[0]).toMatchObject({ events: 0 });
    await upsertInventory(store, company, [cert('e', 500)]); // one more outliving certificate: the same condition
    now += 3_600_000;
    expect((await scanner().scanOnce())[0]).toMatchObject({ events: 0 });

    // the CA is renewed with the same DN, still before e: a new condition, reported again
    await root(450, 'CA02');
    now += 3_600_000;
    expect((await scanner().scanOnce())[0]).toMatchObject({ events: 1 });
    const hits = await delivered(2);
    expect(hits[1]!.data.message).toContain('before 1 certificate it signed');
    expect(hits[1]!.data.message).toContain('Certificate shop/e');
  });

  it('a root outliving every certificate it signed: silent', async () => {
    await root(800);
    await upsertInventory(store, company, [cert('a', 300), cert('b', 365)]);
    expect((await scanner().scanOnce())[0]).toMatchObject({ events: 0 });
    expect(await store.listDeliveries(company, { limit: 10 })).toHaveLength(0);
  });

  it('a leaf whose chain intermediate expires before it: reported once', async () => {
    await upsertInventory(store, company, [cert('api', 300, { issuer: INTER_DN }), cert('web', 300, { issuer: INTER_DN })]);
    await setChain(store, company, 'api', 'CN=api', T0 + 120 * DAY_MS);
    await setChain(store, company, 'web', 'CN=web', T0 + 300 * DAY_MS); // its chain outlives it
    expect((await scanner().scanOnce())[0]).toMatchObject({ events: 1 });
    const [hit] = await delivered(1);
    expect(hit!.data.message).toContain(`A CA certificate in the tls.crt chain of certificates issued by ${INTER_DN}`);
    expect(hit!.data.message).toContain('Certificate shop/api');
    expect(hit!.data.message).not.toContain('shop/web');
    now += 3_600_000;
    expect((await scanner().scanOnce())[0]).toMatchObject({ events: 0 });
  });
});
