/**
 * The scanner as `serve` runs it (src/main.ts): started with the service, every expiryScanInterval, its
 * events routed and delivered by the same process; stopped by close(). In-process service on SQLite.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { DAY_MS } from '../../src/expiry/decide.js';
import { createWebhookIntegration, type Receiver, startReceiver, waitFor } from '../delivery/support.js';
import { COMPANY_A, startTestService, type TestService } from '../support/service.js';
import { insertCluster, upsertInventory } from './inventory.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';
import { limitsFile } from '../support/limits.js';

describe('serve runs the expiry scanner', () => {
  let svc: TestService | undefined;
  let rx: Receiver | undefined;
  afterEach(async () => {
    await svc?.close();
    await rx?.close();
  });

  it('inventory rows reported after the start are evaluated at the next interval and delivered once', async () => {
    svc = await startTestService('sqlite', [...limitsFile({ expiryScanInterval: '1s', deliveryRetryBase: '20ms' })]);
    rx = await startReceiver();
    const integ = await createWebhookIntegration(svc.store, COMPANY_A, rx.url);
    const now = Date.now();
    await svc.store.createRouter({
      id: randomUUID(),
      companyId: COMPANY_A,
      name: 'expirations',
      eventTypeId: 'cert-expiry-ext-notification-config',
      enabled: true,
      filter: 'data.ruleId == 3',
      integrationId: integ.id,
      templateId: null,
      generation: 'ROUTER',
      ...ROUTER_POLICY_DEFAULTS,
      managedBy: null,
      createdAt: now,
      updatedAt: now,
    });
    await insertCluster(svc.store, COMPANY_A, 'c-1', 'prod');
    await upsertInventory(svc.store, COMPANY_A, [
      { clusterId: 'c-1', namespace: 'shop', secretName: 'web', serial: '0A', notAfter: now + 5 * DAY_MS + 60_000 },
    ]);
    const hit = await waitFor('the expiration notification', () => rx!.hits[0]);
    const body = JSON.parse(hit.body) as { type: string; data: { expiration: { ruleId: number }; message: string } };
    expect(body.type).toBe('io.certmgr.notify.evt.policy.expiringcertificates.failed');
    expect(body.data.expiration.ruleId).toBe(3);
    expect(body.data.message).toContain('Secret shop/web, cluster prod.');
    // two more scans: nothing repeated
    const scans = () => svc!.logs.filter((l) => l.includes('expiry scan done')).length;
    const seen = scans();
    await waitFor('two more scans', () => scans() >= seen + 2);
    expect(await svc.store.listDeliveries(COMPANY_A, {})).toHaveLength(1);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metrics).toMatch(/certmgr_notify_expiry_company_scans_total\{outcome="scanned"\} [1-9]/);
    expect(metrics).toMatch(/certmgr_notify_expiry_last_scan_timestamp_seconds [1-9]/);
  });
});
