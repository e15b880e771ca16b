/**
 * Thresholds as a share of the lifetime, end to end on real stores (SQLite file, PostgreSQL): real X.509
 * certificates (openssl) in TLS Secrets annotated `notify.certmgr.io/expiry-thresholds`, turned into facts by the
 * agent's own code, validated and applied as the hub applies `POST /v1/inventory`, scanned by the hub's expiry
 * scanner and delivered by the delivery worker to a loopback webhook. Time is the scanner's and worker's Clock.
 */
import { randomUUID, X509Certificate } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { EXPIRY_THRESHOLDS_ANNOTATION } from '../../src/emitter/policy.js';
import { certificateFactsOf, tlsSecretFacts } from '../../src/emitter/inventory/facts.js';
import { DAY_MS } from '../../src/expiry/decide.js';
import { validateInventoryReport } from '../../src/inventory/validate.js';
import type { InventoryReport } from '../../src/model/inventory.js';
import { realClock, type Clock } from '../../src/runtime/timers.js';
import { serviceContext } from '../../src/service/context.js';
import { applyInventoryReport } from '../../src/service/inventory.js';
import type { Store } from '../../src/store/types.js';
import { captureLog, createWebhookIntegration, ENGINES, type Engine, type Receiver, startReceiver, waitFor } from '../delivery/support.js';
import { selfSigned } from '../emitter/fixtures.js';
import { expiryScanner, routeExpirations, startExpiryWorker } from './harness.js';

const H = 3_600_000;
const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** A real certificate of `days` in a TLS Secret with the annotation, as a cluster holds it. */
function tlsSecret(name: string, days: number, thresholds: string): { secret: V1Secret; notBefore: number; notAfter: number } {
  const cert = selfSigned({ cn: `${name}.mesh.example`, days });
  const x = new X509Certificate(cert.pem);
  return {
    secret: {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name, namespace: 'mesh', annotations: { [EXPIRY_THRESHOLDS_ANNOTATION]: thresholds } },
      data: { 'tls.crt': b64(cert.pem), 'tls.key': b64(cert.keyPem) },
    },
    notBefore: x.validFromDate.getTime(),
    notAfter: x.validToDate.getTime(),
  };
}

const mtls = tlsSecret('mtls', 6, '33%'); // warned 47.52 h before expiry
const api = tlsSecret('api', 45, '10%'); // 4.5 days before expiry
const yearly = tlsSecret('yearly', 400, '10%'); // 40 days: beyond the company's 30, the scan range widens to it

interface Sent {
  name: string;
  ruleId: number;
  threshold: number;
  thresholdPercent?: number;
  daysUntilExpiry?: number | undefined;
}

describe.each(ENGINES.map((make) => [make().name, make] as const))(
  'shares of the lifetime, agent facts to webhook, on %s',
  (_n, makeEngine) => {
    let engine: Engine;
    let store: Store;
    let rx: Receiver;
    let worker: DeliveryWorker;
    let company: string;
    let now = mtls.notBefore;
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
      now = mtls.notBefore + H;
      const integ = await createWebhookIntegration(store, company, rx.url);
      await routeExpirations(store, company, integ.id, { name: 'all expirations', filter: '', at: now });
      worker = startExpiryWorker(store, log.logger, () => now);
    });
    afterEach(async () => {
      await worker.stop(1_000);
      await rx.close();
      await store.close();
    });

    const scan = () => expiryScanner(store, worker, log.logger, clock, { pageSize: 1000, minGapMs: 0 }).scanOnce();

    /** What was accepted (every scan is awaited before), once delivered to the webhook; exactly `n`. */
    async function delivered(n: number): Promise<Sent[]> {
      const deliveries = await store.listDeliveries(company, { limit: 100 });
      expect(deliveries).toHaveLength(n);
      await waitFor(`${n} deliveries`, async () =>
        (await store.listDeliveries(company, { limit: 100 })).every((d) => d.status === 'DELIVERED'),
      );
      expect(rx.hits).toHaveLength(n);
      const events = await Promise.all(deliveries.map((d) => store.getEvent(company, d.eventId)));
      return events
        .map((e) => e!.data as unknown as Sent & { certificateName: string })
        .map(({ certificateName, ruleId, threshold, thresholdPercent, daysUntilExpiry }) => ({
          name: certificateName,
          ruleId,
          threshold,
          ...(thresholdPercent !== undefined ? { thresholdPercent } : {}),
          daysUntilExpiry,
        }))
        .sort((a, b) => a.name.localeCompare(b.name));
    }

    it('a 6-day certificate with 33% is warned 2 days before expiry, once; certificates not at their share stay silent', async () => {
      const report: InventoryReport = {
        protocol: 1,
        cluster: { id: randomUUID(), name: 'prod-eu' },
        agentVersion: 'test',
        epoch: randomUUID(),
        seq: 1,
        kind: 'snapshot',
        final: true,
        upserts: [mtls, api, yearly].map((s) => certificateFactsOf(tlsSecretFacts(s.secret), undefined)),
        deletes: [],
      };
      expect(report.upserts.map((u) => u.expiryThresholds)).toEqual([['33%'], ['10%'], ['10%']]);
      const v = validateInventoryReport(report);
      expect(v.ok).toBe(true);
      if (!v.ok) return;
      await applyInventoryReport(serviceContext(store, company, { now: () => now }), v.report);
      // the scan range of the company's own thresholds: 10% of 400 days, in days
      expect(await store.maxOwnExpiryThreshold(company)).toBe(40);

      // an hour after issuance: the company's 30/14/7 would have fired for all three; their own shares are not reached
      expect((await scan())[0]).toMatchObject({ events: 0 });
      now = mtls.notAfter - 49 * H; // 2 h before 33% of 6 days
      expect((await scan())[0]).toMatchObject({ events: 0 });
      expect(await delivered(0)).toEqual([]);

      now = mtls.notAfter - 47 * H; // within 33% (47.52 h): warned; api (about 41 days left) and yearly stay silent
      expect((await scan())[0]).toMatchObject({ events: 1 });
      expect(await delivered(1)).toEqual([{ name: 'mtls', ruleId: 2001, threshold: 2, thresholdPercent: 33, daysUntilExpiry: 1 }]);
      expect(JSON.parse(rx.hits[0]!.body)).toMatchObject({ data: { expiration: { ruleId: 2001, threshold: 2 } } });
      expect(JSON.parse(rx.hits[0]!.body).data.message).toContain('Threshold 2 days (33% of a lifetime of 6 days, rule 2001)');
      now += H;
      expect((await scan())[0]).toMatchObject({ events: 0 }); // once per threshold and certificate

      now = api.notAfter - 4.4 * DAY_MS; // 10% of 45 days is 4.5 days
      await scan();
      now = yearly.notAfter - 39 * DAY_MS; // 10% of 400 days is 40 days: in range although beyond the company's 30
      await scan();
      now += H;
      await scan();
      expect(await delivered(3)).toEqual([
        { name: 'api', ruleId: 2001, threshold: 5, thresholdPercent: 10, daysUntilExpiry: 4 },
        { name: 'mtls', ruleId: 2001, threshold: 2, thresholdPercent: 33, daysUntilExpiry: 1 },
        { name: 'yearly', ruleId: 2001, threshold: 40, thresholdPercent: 10, daysUntilExpiry: 39 },
      ]);
    });
  },
);
