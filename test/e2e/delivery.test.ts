/**
 * End to end through the real `serve` process on SQLite and PostgreSQL: events → routers → integrations at
 * real loopback receivers. Incident trigger/resolve share a dedup_key; webhook signatures verify with the
 * standard verifier; 400 is dead-lettered and visible; a receiver down for a while then back gets everything;
 * and a SIGKILL during a burst loses nothing (at-least-once: repeats carry the same webhook-id).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { certificateResourceNotReady, issuerActive, issuerNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { randomSchema } from '../support/postgres.js';
import { testSecretKeyFile } from '../support/service.js';
import { startServiceProcess, waitFor, type ServiceProcess } from './service-process.js';
import { limitsFile } from '../support/limits.js';

const KEY = 'e2e-key-0123456789abcdef';
const SECRET = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');

function storeArg(kind: 'sqlite' | 'postgres'): string {
  if (kind === 'sqlite') return `sqlite:${join(mkdtempSync(join(tmpdir(), 'cmn-e2e-')), 'store.db')}`;
  const u = new URL(process.env.DATABASE_URL!);
  u.searchParams.set('schema', randomSchema('t_e2e'));
  return u.toString();
}

describe.each(['sqlite', 'postgres'] as const)('delivery through the service process on %s', (kind) => {
  let webhook: Receiver;
  let pager: Receiver;
  let svc: ServiceProcess;
  let store: string;
  const procs: ServiceProcess[] = [];
  const start = async () => {
    // The webhook receiver is on loopback, which the egress policy refuses unless allowed.
    const p = await startServiceProcess(
      [
        '--store',
        store,
        ...(kind === 'postgres' ? ['--secret-key-file', testSecretKeyFile()] : []),
        '--incident-events-url',
        pager.url,
        '--egress-allow',
        '127.0.0.1/32',

        ...limitsFile({ deliveryRetryBase: '50ms', deliveryTimeout: '2s' }),
      ],
      KEY,
    );
    procs.push(p);
    return p;
  };
  let webhookId: string;
  let pagerId: string;

  beforeAll(async () => {
    webhook = await startReceiver();
    pager = await startReceiver((_r, res) => {
      res.statusCode = 202;
      res.end('{"status":"success"}');
    });
    store = storeArg(kind);
    svc = await start();
    const w = await svc
      .gql()
      .request<{ createWebhookIntegration: { id: string } }>(
        `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
        { i: { name: 'hook', url: `${webhook.url}/hook`, signingSecret: SECRET } },
      );
    webhookId = w.createWebhookIntegration.id;
    const p = await svc.gql().request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
      name: 'pager',
      integrationKey: 'R0UTINGKEY-e2e-0123456789',
    });
    pagerId = p.createIncidentMgmtIntegration.id;
    for (const [name, eventTypeId, integrationId] of [
      ['issuers to pager', 'certmgr-issuer-health-notification-config', pagerId],
      ['certificates to webhook', 'certmgr-cert-resource-health-notification-config', webhookId],
    ] as const) {
      await svc.gql().request(ops.CreateNotificationRouter, {
        details: { name, eventTypeId },
        filterConfig: { advancedFilterExpression: '' },
        integrationConfig: { integrationId },
      });
    }
  });
  afterEach(() => {
    webhook.handle((_r, res) => res.end('ok'));
  });
  afterAll(async () => {
    for (const p of procs) await p.kill();
    await webhook?.close();
    await pager?.close();
  });

  it('incident trigger then resolve share a dedup_key', async () => {
    pager.requests.length = 0;
    await svc.postEvents([issuerNotReady({ issuerName: 'ca-issuer' })]);
    await waitFor('trigger', () => pager.requests.length >= 1);
    await svc.postEvents([issuerActive({ issuerName: 'ca-issuer' })]);
    await waitFor('resolve', () => pager.requests.length >= 2);
    const [t, r] = pager.requests.map((q) => JSON.parse(q.body));
    expect(pager.requests[0]!.path).toBe('/v2/enqueue');
    expect(t).toMatchObject({ event_action: 'trigger', routing_key: 'R0UTINGKEY-e2e-0123456789' });
    expect(r).toMatchObject({ event_action: 'resolve' });
    expect(r.dedup_key).toBe(t.dedup_key);
  });

  it('webhook deliveries verify with the Standard Webhooks verifier', async () => {
    webhook.requests.length = 0;
    await svc.postEvents([certificateResourceNotReady()]);
    const req = await waitFor('webhook', () => webhook.requests[0]);
    const payload = new Webhook(SECRET).verify(req.body, {
      'webhook-id': String(req.headers['webhook-id']),
      'webhook-timestamp': String(req.headers['webhook-timestamp']),
      'webhook-signature': String(req.headers['webhook-signature']),
    }) as { specversion: string; data: { version: string } };
    expect(payload.specversion).toBe('1.0');
    expect(payload.data.version).toBe('v1');
  });

  it('a receiver down for a while then back gets every notification', async () => {
    webhook.requests.length = 0;
    let up = false;
    webhook.handle((_r, res) => {
      res.statusCode = up ? 200 : 503;
      res.end();
    });
    const accepted = await svc.postEvents(
      Array.from({ length: 10 }, (_, i) => certificateResourceNotReady({ certificateName: `down-${i}` })),
    );
    await waitFor('retries while down', () => webhook.requests.length >= 20);
    up = true;
    const ids = new Set<string>();
    await waitFor('all delivered', () => {
      for (const r of webhook.requests) if (r.headers['webhook-id'] && webhook.requests.length) ids.add(String(r.headers['webhook-id']));
      return ids.size >= accepted.length;
    });
    const d = await svc
      .gql()
      .request<{ deliveries: { nodes: { status: string; attempts: number }[] } }>(
        `query($i: UUID!) { deliveries(filter: { integrationId: $i }, first: 10) { nodes { status attempts } } }`,
        { i: webhookId },
      );
    await waitFor('DELIVERED in the store', async () => {
      const q = await svc
        .gql()
        .request<{ deliveries: { nodes: { status: string }[] } }>(
          `query($i: UUID!) { deliveries(filter: { integrationId: $i, status: PENDING }) { nodes { status } } }`,
          { i: webhookId },
        );
      return q.deliveries.nodes.length === 0;
    });
    expect(d.deliveries.nodes.some((n) => n.attempts > 1)).toBe(true);
  });

  it('a 400 is dead-lettered at once and visible through the API', async () => {
    webhook.handle((_r, res) => {
      res.statusCode = 400;
      res.end('{"error":"bad payload"}');
    });
    const [ev] = await svc.postEvents([certificateResourceNotReady({ certificateName: 'rejected' })]);
    const dead = await waitFor('dead letter', async () => {
      const q = await svc
        .gql()
        .request<{ deliveries: { nodes: { status: string; attempts: number; lastStatusCode: number; lastError: string }[] } }>(
          `query($e: UUID!) { deliveries(filter: { eventId: $e, status: DEAD }) { nodes { status attempts lastStatusCode lastError } } }`,
          { e: ev!.id },
        );
      return q.deliveries.nodes[0];
    });
    expect(dead).toMatchObject({ status: 'DEAD', attempts: 1, lastStatusCode: 400 });
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metrics).toMatch(/certmgr_notify_delivery_dead_letters_total\{integration_type="WEBHOOK"\} [1-9]/);
  });

  it('testIntegration sends now and returns the receiver answer', async () => {
    webhook.handle((_r, res) => {
      res.statusCode = 204;
      res.end();
    });
    const r = await svc
      .gql()
      .request<{ testIntegration: { outcome: string; statusCode: number } }>(
        `mutation($id: UUID!) { testIntegration(id: $id) { outcome statusCode error latencyMs } }`,
        { id: webhookId },
      );
    expect(r.testIntegration).toMatchObject({ outcome: 'delivered', statusCode: 204 });
  });

  it('SIGKILL during a burst, then restart: every accepted notification arrives at least once, repeats keep their id', async () => {
    webhook.requests.length = 0;
    let n = 0;
    // slow receiver so the kill lands mid-burst
    webhook.handle((_r, res) => {
      n++;
      setTimeout(() => {
        res.statusCode = 200;
        res.end();
      }, 20);
    });
    const accepted = [];
    for (let b = 0; b < 4; b++)
      accepted.push(
        ...(await svc.postEvents(
          Array.from({ length: 50 }, (_, i) => certificateResourceNotReady({ certificateName: `burst-${b}-${i}` })),
        )),
      );
    const expected = accepted.reduce((s, e) => s + e.deliveries, 0);
    expect(expected).toBe(200);
    await waitFor('part of the burst', () => n >= 40, 30_000, 5);
    await svc.kill('SIGKILL');
    const seenAtKill = new Set(webhook.requests.map((r) => String(r.headers['webhook-id']))).size;
    expect(seenAtKill).toBeLessThan(expected);
    svc = await start();
    const bodies = new Map<string, string>();
    await waitFor(
      'every delivery id',
      () => {
        for (const r of webhook.requests) {
          const id = String(r.headers['webhook-id']);
          const prev = bodies.get(id);
          // a redelivery is recognisable: same webhook-id, same CloudEvents id, same body
          if (prev !== undefined) expect(r.body).toBe(prev);
          else bodies.set(id, r.body);
        }
        return bodies.size >= expected;
      },
      60_000,
    );
    // every one of the burst's deliveries is DELIVERED in the store
    await waitFor(
      'store drained',
      async () => {
        const q = await svc
          .gql()
          .request<{ deliveries: { nodes: unknown[] } }>(
            `query($i: UUID!) { deliveries(filter: { integrationId: $i, status: PENDING }) { nodes { id } } }`,
            { i: webhookId },
          );
        const f = await svc
          .gql()
          .request<{ deliveries: { nodes: unknown[] } }>(
            `query($i: UUID!) { deliveries(filter: { integrationId: $i, status: IN_FLIGHT }) { nodes { id } } }`,
            { i: webhookId },
          );
        return q.deliveries.nodes.length === 0 && f.deliveries.nodes.length === 0;
      },
      60_000,
    );
    expect(bodies.size).toBe(expected);
  });
});
