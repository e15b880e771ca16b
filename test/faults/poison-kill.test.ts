/**
 * Fault: a delivery that kills its process. The receiver of one webhook integration SIGKILLs the real `serve`
 * process whenever that integration's request reaches it, so the process dies mid-send, every time it sends it.
 * The test restarts the process (same --instance-id: "the same pod") each time it dies.
 *
 * Outcomes: the process stays up after at most three restarts; the deadly delivery is DEAD with a lastError that
 * starts with POISONED (listed by deliveries(filter: {status: DEAD})), the innocent delivery of the same event
 * is DELIVERED, and certmgr_notify_deliveries_poisoned_total counts one.
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { certificateResourceNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { waitFor, type ServiceProcess } from '../e2e/service-process.js';
import { freshStore, startServe, type Engine } from './support.js';
import { limitsFile } from '../support/limits.js';

const CERT_EVENTS = 'certmgr-cert-resource-health-notification-config';
const MAX_RESTARTS = 3;

interface Row {
  id: string;
  status: string;
  lastError: string | null;
  integrationId: string;
}

async function webhook(svc: ServiceProcess, name: string, url: string): Promise<string> {
  const w = await svc
    .gql()
    .request<{ createWebhookIntegration: { id: string } }>(
      `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
      { i: { name, url } },
    );
  const id = w.createWebhookIntegration.id;
  await svc.gql().request(ops.CreateNotificationRouter, {
    details: { name: `certificates to ${name}`, eventTypeId: CERT_EVENTS },
    filterConfig: { advancedFilterExpression: '' },
    integrationConfig: { integrationId: id },
  });
  return id;
}

async function rows(svc: ServiceProcess): Promise<Row[]> {
  const q = await svc
    .gql()
    .request<{ deliveries: { nodes: Row[] } }>(`{ deliveries(first: 100) { nodes { id status lastError integrationId } } }`);
  return q.deliveries.nodes;
}

describe.each<Engine>(['sqlite', 'postgres'])('a delivery that kills its process (%s)', (engine) => {
  const procs: ServiceProcess[] = [];
  const receivers: Receiver[] = [];
  afterAll(async () => {
    for (const p of procs) await p.kill();
    for (const r of receivers) await r.close();
  });

  it('is dead-lettered as POISONED after two deaths; the process stays up; the innocent one is delivered', async () => {
    const store = freshStore(engine);
    let current: ServiceProcess | undefined;
    let kills = 0;
    let armed = true;
    const receiver = await startReceiver((r, res: ServerResponse) => {
      if (r.path === '/poison' && armed) {
        kills++;
        current?.proc.kill('SIGKILL'); // dies while the delivery is in flight
        return;
      }
      res.end('ok');
    });
    receivers.push(receiver);
    const start = async () => {
      const svc = await startServe(engine, store, `faults-poison-${engine}`, [
        ...limitsFile({ deliveryRetryBase: '50ms', deliveryTimeout: '5s' }),
      ]);
      procs.push(svc);
      current = svc;
      return svc;
    };

    let svc = await start();
    const poison = await webhook(svc, 'poison', `${receiver.url}/poison`);
    const innocent = await webhook(svc, 'innocent', `${receiver.url}/innocent`);
    const [ev] = await svc.postEvents([certificateResourceNotReady({ certificateName: 'deadly' })]);
    expect(ev?.deliveries).toBe(2);

    let restarts = 0;
    let final: Row[] | null = null;
    while (!final) {
      const exited = once(svc.proc, 'exit').then(() => 'exited' as const);
      const settled = waitFor(
        'both deliveries final',
        async () => {
          const all = await rows(svc).catch(() => null);
          return all && all.length === 2 && all.every((d) => d.status === 'DELIVERED' || d.status === 'DEAD') ? all : null;
        },
        60_000,
        100,
      ).catch((err: unknown) => (svc.proc.exitCode === null && svc.proc.signalCode === null ? Promise.reject(err) : null));
      const first = await Promise.race([exited, settled]);
      if (first === 'exited') {
        restarts++;
        expect(restarts, `still dying after ${MAX_RESTARTS} restarts:\n${svc.output()}`).toBeLessThanOrEqual(MAX_RESTARTS);
        svc = await start();
      } else final = first;
    }

    const byIntegration = new Map(final.map((d) => [d.integrationId, d]));
    expect(byIntegration.get(poison)).toMatchObject({ status: 'DEAD', lastError: expect.stringMatching(/^POISONED: /) });
    expect(byIntegration.get(innocent)).toMatchObject({ status: 'DELIVERED' });
    // listed among the dead letters, and counted
    const dead = await svc
      .gql()
      .request<{ deliveries: { nodes: Row[] } }>(
        `{ deliveries(filter: { status: DEAD }, first: 10) { nodes { id status lastError integrationId } } }`,
      );
    expect(dead.deliveries.nodes.map((d) => d.integrationId)).toEqual([poison]);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metrics).toMatch(/^certmgr_notify_deliveries_poisoned_total\{integration_type="WEBHOOK"\} 1$/m);
    // still up, and still delivering (to both, once the receiver no longer kills)
    armed = false;
    await svc.postEvents([certificateResourceNotReady({ certificateName: 'after' })]);
    await waitFor('the next event delivered to both integrations', async () => {
      const all = await rows(svc);
      return all.filter((d) => d.status === 'DELIVERED').length === 3 || null;
    });
    expect(svc.proc.exitCode).toBeNull();
    console.log(
      `[faults] poison (${engine}): ${kills} deaths, ${restarts} restarts, then up; the deadly delivery POISONED, the other DELIVERED`,
    );
  }, 240_000);
});
