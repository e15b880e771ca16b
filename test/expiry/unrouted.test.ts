/**
 * The expiry scan's observability (docs/observability.md): an expiration event that no enabled router matched
 * counts in certmgr_notify_expiration_events_unrouted_total (the "expiring, nobody told" alert), a matched one
 * does not; the inventory gauge puts the certificate in its days-left bucket. In-process service on SQLite.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { DAY_MS } from '../../src/expiry/decide.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';
import { createWebhookIntegration, startReceiver, waitFor, type Receiver } from '../delivery/support.js';
import { COMPANY_A, COMPANY_B, startTestService, type TestService } from '../support/service.js';
import { insertCluster, upsertInventory } from './inventory.js';
import { limitsFile } from '../support/limits.js';

const sample = (text: string, name: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
};

describe('expiry scan metrics', () => {
  let svc: TestService | undefined;
  let rx: Receiver | undefined;
  afterEach(async () => {
    await svc?.close();
    await rx?.close();
  });

  it('counts expiration events no router matched (company B: a router whose filter misses; A: routed), and buckets certificates by days left', async () => {
    svc = await startTestService('sqlite', [...limitsFile({ expiryScanInterval: '1s', deliveryRetryBase: '20ms' })]);
    rx = await startReceiver();
    const now = Date.now();
    for (const [companyId, filter] of [
      [COMPANY_A, 'true'],
      [COMPANY_B, 'data.ruleId == 1'], // the certificate crosses rule 3 (7 days): this router never sees it
    ] as const) {
      const integ = await createWebhookIntegration(svc.store, companyId, rx.url);
      await svc.store.createRouter({
        id: randomUUID(),
        companyId,
        name: 'expirations',
        eventTypeId: 'cert-expiry-ext-notification-config',
        enabled: true,
        filter,
        integrationId: integ.id,
        templateId: null,
        generation: 'ROUTER',
        ...ROUTER_POLICY_DEFAULTS,
        managedBy: null,
        createdAt: now,
        updatedAt: now,
      });
      await insertCluster(svc.store, companyId, 'c-1', 'prod');
      await upsertInventory(svc.store, companyId, [
        { clusterId: 'c-1', namespace: 'shop', secretName: 'web', serial: '0A', notAfter: now + 5 * DAY_MS + 60_000 },
        { clusterId: 'c-1', namespace: 'shop', secretName: 'old', serial: '0B', notAfter: now - DAY_MS },
        { clusterId: 'c-1', namespace: 'shop', secretName: 'far', serial: '0C', notAfter: now + 90 * DAY_MS },
      ]);
    }
    await waitFor('the routed notification', () => rx!.hits[0]);
    const scans = () => svc!.logs.filter((l) => l.includes('expiry scan done')).length;
    const seen = scans();
    await waitFor('two more scans', () => scans() >= seen + 2);
    const m = await (await fetch(`${svc.url}/metrics`)).text();
    // B: the 5-day certificate (rule 3) and the expired one (rule 3 too, the most urgent crossed) matched nothing
    expect(sample(m, 'certmgr_notify_expiration_events_unrouted_total')).toBe(2);
    expect(await svc.store.listDeliveries(COMPANY_B, {})).toHaveLength(0);
    expect((await svc.store.listDeliveries(COMPANY_A, {})).length).toBeGreaterThan(0);
    expect(sample(m, 'certmgr_notify_inventory_certificates_by_days_left{days_left="expired"}')).toBe(2);
    expect(sample(m, 'certmgr_notify_inventory_certificates_by_days_left{days_left="0-7"}')).toBe(2);
    expect(sample(m, 'certmgr_notify_inventory_certificates_by_days_left{days_left="8-14"}')).toBe(0);
    expect(sample(m, 'certmgr_notify_inventory_certificates_by_days_left{days_left="31+"}')).toBe(2);
  });
});
