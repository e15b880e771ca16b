/**
 * The hub's expiry scanner against real stores (SQLite file, PostgreSQL), a real delivery worker and a real
 * loopback webhook receiver: inventory rows in → exactly one delivered event per threshold crossed; reruns,
 * restarts and two scanners at once repeat nothing; catch-up after downtime sends one event, for the nearest.
 * Time is the scanner's Clock, set by the test.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { DAY_MS } from '../../src/expiry/decide.js';
import { ExpiryScanner } from '../../src/expiry/scanner.js';
import { defaultMonitoringConfig } from '../../src/model/monitoring.js';
import { realClock, type Clock } from '../../src/runtime/timers.js';
import { openStore } from '../../src/store/index.js';
import type { Store, StoreOps } from '../../src/store/types.js';
import { captureLog, createWebhookIntegration, ENGINES, type Engine, type Receiver, startReceiver, waitFor } from '../delivery/support.js';
import { expiryScanner, routeExpirations, startExpiryWorker } from './harness.js';
import { insertCluster, upsertInventory, type InventoryRow } from './inventory.js';

// in the past: the scanner's clock also dates the deliveries, which the worker (real time) must find due
const T0 = Date.parse('2020-01-01T06:00:00Z');
const H = 3_600_000;

interface Sent {
  ruleId: number;
  threshold: number;
  message: string;
}

describe.each(ENGINES.map((make) => [make().name, make] as const))('ExpiryScanner on %s', (_name, makeEngine) => {
  let engine: Engine;
  let store: Store;
  let extraStores: Store[] = [];
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
    await routeExpirations(store, company, integ.id, { name: 'all expirations', filter: '', at: T0 });
    await insertCluster(store, company, 'c-eu', 'prod-eu');
    await insertCluster(store, company, 'c-us', 'prod-us');
    worker = startExpiryWorker(store, log.logger);
  });
  afterEach(async () => {
    await worker.stop(1_000);
    await rx.close();
    for (const s of extraStores) await s.close();
    extraStores = [];
    await store.close();
  });

  /** Scanners scan every 60 s: a company scanned less than 30 s before (scanner clock) is skipped as recent. */
  function scanner(on: Store = store, pageSize = 1000, minGapMs?: number): ExpiryScanner {
    return expiryScanner(on, worker, log.logger, clock, { pageSize, ...(minGapMs !== undefined ? { minGapMs } : {}) });
  }

  const cert = (secretName: string, daysLeft: number, over: Partial<InventoryRow> = {}): InventoryRow => ({
    clusterId: 'c-eu',
    namespace: 'shop',
    secretName,
    certificateName: secretName,
    serial: `AA${secretName.replace(/\W/g, '').toUpperCase()}`,
    notAfter: T0 + daysLeft * DAY_MS,
    ...over,
  });

  const accepted = async () => (await store.listDeliveries(company, { limit: 1000 })).length;
  /** Every scan is awaited before: what was accepted is final. Waits until it is delivered; expects exactly `n`. */
  async function delivered(n: number): Promise<Sent[]> {
    expect(await accepted()).toBe(n);
    await waitFor(`${n} deliveries`, async () => {
      const ds = await store.listDeliveries(company, { limit: 1000 });
      return ds.every((d) => d.status === 'DELIVERED');
    });
    expect(rx.hits).toHaveLength(n);
    return rx.hits.map((h) => {
      const { data } = JSON.parse(h.body) as { data: { message: string; expiration: { ruleId: number; threshold: number } } };
      return { ruleId: data.expiration.ruleId, threshold: data.expiration.threshold, message: data.message };
    });
  }

  it('inventory rows → one delivered event per certificate and crossed threshold; a rerun and a restart repeat nothing', async () => {
    await upsertInventory(store, company, [
      cert('in-20-days', 20), // rule 1 (30)
      cert('in-5-days', 5), // rules 1-3 crossed: one event, rule 3 (7)
      cert('in-40-days', 40), // nothing yet
      cert('no-cert', 1, { serial: null, notAfter: null }),
    ]);
    const s = scanner();
    const [report] = await s.scanOnce();
    expect(report).toMatchObject({ companyId: company, events: 2, certificates: 2 });
    const sent = await delivered(2);
    expect(sent.map((e) => [e.ruleId, e.threshold]).sort()).toEqual([
      [1, 30],
      [3, 7],
    ]);
    const five = sent.find((e) => e.ruleId === 3)!;
    expect(five.message).toContain('Certificate shop/in-5-days (id ');
    expect(five.message).toContain('serial number AAIN5DAYS, issuer CN=Test CA, O=Example');
    expect(five.message).toContain('expires in 5 days (5 days until expiration); valid until 2020-01-06T06:00:00.000Z');

    now += H;
    expect((await s.scanOnce())[0]).toMatchObject({ certificates: 2, events: 0 }); // rerun
    now += H;
    expect((await scanner().scanOnce())[0]).toMatchObject({ certificates: 2, events: 0 }); // restarted: the state is in the store
    expect(await accepted()).toBe(2);

    // 14 days later: in-20-days crosses 14 (rule 2), in-40-days crosses 30 (rule 1); in-5-days has expired, nothing new
    now = T0 + 10 * DAY_MS;
    await scanner().scanOnce();
    const later = await delivered(4);
    expect(
      later
        .slice(2)
        .map((e) => e.ruleId)
        .sort(),
    ).toEqual([1, 2]);
  });

  it('own thresholds (annotation): rule ids 1001.., the scan range widens to them; ignored certificates: nothing', async () => {
    await upsertInventory(store, company, [
      cert('plain', 20), // the company's 30/14/7
      cert('own-far', 60, { expiryThresholds: [90, 45], runbookUrl: 'https://wiki.example.com/rb' }), // beyond the company's 30 days
      cert('own-short', 10, { expiryThresholds: [3] }), // within the company's range, but its own 3 days are not reached
      cert('muted', 5, { ignored: true }),
    ]);
    await scanner().scanOnce();
    const first = await delivered(2);
    expect(first.map((e) => [e.ruleId, e.threshold]).sort()).toEqual([
      [1, 30],
      [1001, 90],
    ]);
    const far = JSON.parse(rx.hits.find((h) => h.body.includes('own-far'))!.body) as { data: { message: string } };
    expect(far.data.message).toContain('Threshold 90 days (rule 1001)');
    const stored = (await store.listDeliveries(company, { limit: 10 })).map((d) => d.eventId);
    const events = await Promise.all(stored.map((id) => store.getEvent(company, id)));
    expect(events.map((e) => e?.data['runbookUrl']).filter(Boolean)).toEqual(['https://wiki.example.com/rb']);
    expect(events.find((e) => e?.data['ruleId'] === 1001)?.data).toMatchObject({ daysUntilExpiry: 60, certificateName: 'own-far' });

    now = T0 + 8 * DAY_MS; // plain 12 days (rule 2), own-short 2 days (1001 = 3), own-far 52 (45 not yet)
    await scanner().scanOnce();
    expect(
      (await delivered(4))
        .slice(2)
        .map((e) => [e.ruleId, e.threshold])
        .sort(),
    ).toEqual([
      [1001, 3],
      [2, 14],
    ]);
    now = T0 + 16 * DAY_MS; // own-far 44 days: 1002 (45); plain 4 days: rule 3; muted expired: still nothing
    await scanner().scanOnce();
    expect(
      (await delivered(6))
        .slice(4)
        .map((e) => [e.ruleId, e.threshold])
        .sort(),
    ).toEqual([
      [1002, 45],
      [3, 7],
    ]);
    expect(rx.hits.some((h) => h.body.includes('muted'))).toBe(false);
  });

  it('the same serial in two clusters: one event, listing both places', async () => {
    await upsertInventory(store, company, [cert('web', 5), cert('web', 5, { clusterId: 'c-us', namespace: 'edge' })]);
    await scanner().scanOnce();
    const [e] = await delivered(1);
    expect(e!.message).toContain(
      'Served from 2 places: Secret shop/web, Certificate shop/web, cluster prod-eu; Secret edge/web, Certificate edge/web, cluster prod-us.',
    );
  });

  it('catch-up: the scanner off while two thresholds passed → one event, for the nearest', async () => {
    await upsertInventory(store, company, [cert('web', 20)]);
    await scanner().scanOnce();
    expect((await delivered(1)).map((e) => e.ruleId)).toEqual([1]);
    now = T0 + 15 * DAY_MS; // 5 days left: 14 and 7 passed while off
    await scanner().scanOnce();
    expect((await delivered(2)).map((e) => e.ruleId)).toEqual([1, 3]);
  });

  it('disabled configuration or unmonitored certificates: nothing; enabling later notifies once', async () => {
    await upsertInventory(store, company, [cert('web', 5), cert('app', 5, { applicationIds: ['app-9'] })]);
    await store.putMonitoringConfig({ ...defaultMonitoringConfig(company, T0), enabled: false });
    const [r] = await scanner().scanOnce();
    expect(r).toMatchObject({ skipped: 'disabled', events: 0 });
    await store.putMonitoringConfig({
      ...defaultMonitoringConfig(company, T0 + 1),
      applicationIds: ['app-1'],
      includeUnassignedCertificates: false,
    });
    expect((await scanner().scanOnce())[0]).toMatchObject({ certificates: 2, events: 0 });
    expect(await accepted()).toBe(0);
    await store.putMonitoringConfig({
      ...defaultMonitoringConfig(company, T0 + 2),
      applicationIds: ['app-9'],
      includeUnassignedCertificates: false,
    });
    now += H;
    await scanner().scanOnce();
    now += H;
    await scanner().scanOnce();
    const [e] = await delivered(1);
    expect(e!.message).toContain('application app-9');
  });

  it('pages: many certificates over small pages, copies sharing a notAfter never split: one event each', async () => {
    const rows: InventoryRow[] = [];
    for (let i = 0; i < 120; i++) {
      // two copies per certificate, one notAfter each: pages of 7 rows end between copies
      const c = { ...cert(`s${i}`, 5), notAfter: T0 + 5 * DAY_MS + i * 60_000 };
      rows.push(c, { ...c, clusterId: 'c-us' });
    }
    await upsertInventory(store, company, rows);
    const [r] = await scanner(store, 7).scanOnce();
    expect(r).toMatchObject({ rows: 240, certificates: 120, events: 120 });
    const sent = await delivered(120);
    expect(sent.every((e) => e.message.includes('Served from 2 places'))).toBe(true);
  });

  it('a page whose marks cannot be written accepts none of its events; the next scan sends each once', async () => {
    await upsertInventory(store, company, [cert('a', 5), cert('b', 20)]);
    let failures = 1;
    // the store as the scanner sees it, except that writing marks fails once (as a crash before COMMIT would)
    const failing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop !== 'transaction') return Reflect.get(target, prop, receiver) as unknown;
        return <T>(fn: (tx: StoreOps) => Promise<T>) =>
          target.transaction((tx) =>
            fn({
              ...tx,
              putExpiryMarks: async (recs) => {
                if (failures-- > 0) throw new Error('disk full');
                return tx.putExpiryMarks(recs);
              },
            }),
          );
      },
    });
    const [r] = await scanner(failing).scanOnce();
    expect(r).toBeUndefined(); // the company's scan failed (logged), nothing reported
    expect(await accepted()).toBe(0);
    now += H;
    await scanner(failing).scanOnce();
    expect((await delivered(2)).map((e) => e.ruleId).sort()).toEqual([1, 3]);
  });

  it('failover: two scanners on their own connections scanning at once send each event once', async () => {
    const rows: InventoryRow[] = Array.from({ length: 200 }, (_, i) => cert(`s${i}`, 5 + (i % 13) / 10));
    await upsertInventory(store, company, rows);
    const { url, schema } = engine.location();
    const other = await openStore(url, schema ? { schema } : {});
    extraStores.push(other);
    // no minimum gap: both scan every time, so the per-company lock is what keeps them apart
    const a = scanner(store, 10, 0);
    const b = scanner(other, 10, 0);
    for (let round = 0; round < 3; round++) await Promise.all([a.scanOnce(), b.scanOnce(), a.scanOnce(), b.scanOnce()]);
    const sent = await delivered(200);
    expect(new Set(sent.map((e) => e.message)).size).toBe(200);
  });

  it('replicas on their own timers: the first to start takes the company for half an interval, the other skips it', async () => {
    await upsertInventory(store, company, [cert('web', 5)]);
    const { url, schema } = engine.location();
    const other = await openStore(url, schema ? { schema } : {});
    extraStores.push(other);
    expect((await scanner(store).scanOnce())[0]).toMatchObject({ companyId: company, events: 1 });
    now += 29_000;
    expect((await scanner(other).scanOnce())[0]).toMatchObject({ companyId: company, skipped: 'recent' });
    now += 1_000;
    expect((await scanner(other).scanOnce())[0]).toMatchObject({ companyId: company, events: 0, certificates: 1 });
    expect(await delivered(1)).toHaveLength(1);
  });
});
