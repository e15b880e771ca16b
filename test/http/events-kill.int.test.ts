/**
 * POST /v1/events on SQLite commits the ingestion at synchronous=NORMAL and fdatasyncs the write-ahead log on the
 * thread pool before the 202 (docs/reliability.md, "Durability of an accepted event"). What the emitter was
 * answered 202 must survive a crash: the real `serve` process accepts events (single ones and a batch) and is
 * SIGKILLed right after the last 202, with no later commit, close or checkpoint; a new process on the same file
 * has every accepted event with its delivery. (An OS crash cannot be staged here: the fdatasync is what covers it.)
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { certificateResourceNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import type { ServiceProcess } from '../e2e/service-process.js';
import { freshStore, startServe } from '../faults/support.js';

interface Row {
  id: string;
  event: { id: string } | null;
}

describe('SQLite: events answered 202 survive kill -9 of the serve process', () => {
  const procs: ServiceProcess[] = [];
  let receiver: Receiver | undefined;
  afterAll(async () => {
    for (const p of procs) await p.kill();
    await receiver?.close();
  });

  it('every accepted event (single posts and a batch) is in the store after SIGKILL and a restart, with its delivery', async () => {
    // the receiver never answers: the deliveries stay in flight, so nothing but the ingestion wrote them
    receiver = await startReceiver(() => undefined);
    const store = freshStore('sqlite');
    const instance = 'ingest-kill';
    let svc = await startServe('sqlite', store, instance);
    procs.push(svc);
    const w = await svc
      .gql()
      .request<{ createWebhookIntegration: { id: string } }>(
        `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
        { i: { name: 'ingest-kill', url: `${receiver.url}/hook` } },
      );
    await svc.gql().request(ops.CreateNotificationRouter, {
      details: { name: 'certificates', eventTypeId: 'certmgr-cert-resource-health-notification-config' },
      filterConfig: { advancedFilterExpression: '' },
      integrationConfig: { integrationId: w.createWebhookIntegration.id },
    });

    const accepted: string[] = [];
    for (let i = 0; i < 20; i++) {
      const [e] = await svc.postEvents([certificateResourceNotReady({ certificateName: `single-${i}` })]);
      expect(e!.deliveries).toBe(1);
      accepted.push(e!.id);
    }
    const batch = await svc.postEvents(
      Array.from({ length: 50 }, (_, i) => certificateResourceNotReady({ certificateName: `batch-${i}` })),
    );
    accepted.push(...batch.map((e) => e.id));
    // right after the last 202, nothing awaited in between
    const killed = svc.kill('SIGKILL');
    await killed;
    expect(svc.proc.signalCode).toBe('SIGKILL');

    svc = await startServe('sqlite', store, instance);
    procs.push(svc);
    const r = await svc
      .gql()
      .request<{ deliveries: { nodes: Row[] } }>(
        'query($i: UUID) { deliveries(filter: { integrationId: $i }, first: 500) { nodes { id event { id } } } }',
        { i: w.createWebhookIntegration.id },
      );
    const perEvent = new Map<string, number>();
    for (const n of r.deliveries.nodes) if (n.event) perEvent.set(n.event.id, (perEvent.get(n.event.id) ?? 0) + 1);
    for (const id of accepted) expect(perEvent.get(id), `event ${id}`).toBe(1);
    expect(perEvent.size).toBe(accepted.length);
  }, 120_000);
});
