/**
 * Fault: a crash during groupWait loses nothing. `serve` (the built bundle, a child process) accepts 50 failing
 * certificates of one issuer for a grouped router (202: their group members are committed), is SIGKILLed before the
 * group's first notification, and restarts on the same store: the group's ONE notification is delivered, once.
 * SQLite file and PostgreSQL.
 */
import { afterAll, describe, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { certificateResourceNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { waitFor, type ServiceProcess } from '../e2e/service-process.js';
import { allDeliveries, freshStore, startServe } from '../faults/support.js';

describe.concurrent('a crash during groupWait', () => {
  const procs: ServiceProcess[] = [];
  const receivers: Receiver[] = [];
  afterAll(async () => {
    for (const p of procs) await p.kill();
    for (const r of receivers) await r.close();
  });

  for (const kind of ['sqlite', 'postgres'] as const)
    it(`on ${kind}: SIGKILL after the events were accepted, restart: one grouped notification, delivered once`, async ({ expect }) => {
      const hook = await startReceiver();
      receivers.push(hook);
      const store = freshStore(kind);
      const instance = `grouping-crash-${kind}`;
      let svc = await startServe(kind, store, instance);
      procs.push(svc);
      const { createWebhookIntegration: w } = await svc
        .gql()
        .request<{ createWebhookIntegration: { id: string } }>(
          `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
          {
            i: { name: 'hook', url: `${hook.url}/hook` },
          },
        );
      await svc.gql().request(ops.CreateNotificationRouter, {
        details: { name: 'certs', eventTypeId: 'certmgr-cert-resource-health-notification-config' },
        filterConfig: { advancedFilterExpression: '' },
        integrationConfig: { integrationId: w.id },
        // long enough that the kill below comes first; short enough for the test
        policyConfig: { groupBy: ['data.issuerName'], groupWait: '6s', groupInterval: '1s' },
      });
      const events = Array.from({ length: 50 }, (_, i) =>
        certificateResourceNotReady({
          issuerName: 'broken-ca',
          certificateName: `cert-${i}`,
          statusTransition: new Date(Date.now() - 1000 + i).toISOString(),
        }),
      );
      const accepted = await svc.postEvents(events);
      expect(accepted).toHaveLength(50);
      expect(accepted.every((e) => e.deliveries === 0)).toBe(true); // grouped: members, no delivery row yet
      await svc.kill('SIGKILL');
      expect(hook.requests).toHaveLength(0); // killed inside the group's wait

      svc = await startServe(kind, store, instance);
      procs.push(svc);
      const rows = await waitFor(
        'the group notification delivered',
        async () => {
          const ds = await allDeliveries(svc, w.id);
          return ds.length > 0 && ds.every((d) => d.status === 'DELIVERED') ? ds : null;
        },
        60_000,
        100,
      );
      expect(rows).toHaveLength(1);
      expect(hook.requests).toHaveLength(1);
      expect(hook.requests[0]!.headers['webhook-id']).toBe(rows[0]!.id);
      // and nothing more is written for the group: a second flush pass finds nothing changed
      await new Promise((r) => setTimeout(r, 2_500));
      expect(await allDeliveries(svc, w.id)).toHaveLength(1);
      expect(hook.requests).toHaveLength(1);
    });
});
