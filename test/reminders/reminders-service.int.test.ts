/**
 * Reminders end to end through the real service (the composition root of `serve`: HTTP API, ingestion, the
 * reminder scanner, the delivery worker) on SQLite and PostgreSQL, to a real loopback webhook receiver. The
 * repeatInterval is the minimum (1 minute); the scanner's and worker's clock is passed in (startService hooks)
 * and moved ahead instead of waiting. No timing assertions: every step waits for an outcome.
 *
 * - a `.notready` is delivered, then reminders arrive (Delivery.reminder true, the same event) while unhealthy;
 * - the `.active` arrives after every reminder of its resource, and none comes after it;
 * - a restart (the same store) keeps the reminder: the next one still comes;
 * - a silence created while unhealthy records the next reminder SILENCED (never sent); after expireSilence they come again.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { GraphQLClient } from 'graphql-request';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { loadServeConfig } from '../../src/config.js';
import { startService, type RunningService } from '../../src/main.js';
import { realClock, type Clock } from '../../src/runtime/timers.js';
import { startReceiver, type Receiver } from '../delivery/support.js';
import { waitFor } from '../e2e/service-process.js';
import { issuerActive, issuerNotReady } from '../fixtures/events.js';
import { randomSchema } from '../support/postgres.js';
import { LOOPBACK_EGRESS_ALLOW, testSecretKeyFile } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

const KEY = 'reminders-key-0123456789abcdef';
const COMPANY = '33333333-3333-4333-8333-333333333333';
const MINUTE = 60_000;

interface Listed {
  id: string;
  reminder: boolean;
  status: string;
  event: { id: string; type: string } | null;
}

function storeArg(kind: 'sqlite' | 'postgres'): string {
  if (kind === 'sqlite') return `sqlite:${join(mkdtempSync(join(tmpdir(), 'cmn-reminders-')), 'store.db')}`;
  const u = new URL(process.env.DATABASE_URL!);
  u.searchParams.set('schema', randomSchema('t_reminders'));
  return u.toString();
}

describe.each(['sqlite', 'postgres'] as const)('reminders through the service on %s', (kind) => {
  let receiver: Receiver;
  let svc: RunningService;
  const store = storeArg(kind);
  // the scanner's and the worker's clock: real time plus what the test moved it ahead
  let ahead = 0;
  const clock: Clock = { now: () => Date.now() + ahead, setTimeout: realClock.setTimeout, clearTimeout: realClock.clearTimeout };
  const sink = new Writable({ write: (_c, _e, cb) => cb() });

  const start = async () => {
    const cfg = loadServeConfig(
      [
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--store',
        store,
        '--kube',
        'off',
        '--incident-events-url',
        'http://127.0.0.1:9',
        ...(kind === 'postgres' ? ['--secret-key-file', testSecretKeyFile()] : []),
        ...LOOPBACK_EGRESS_ALLOW,

        ...limitsFile({ reminderScanInterval: '100ms', deliveryRetryBase: '50ms' }),
      ],
      {},
    );
    cfg.apiKeys = [{ key: KEY, companyId: COMPANY }];
    svc = await startService(cfg, pino({ level: 'info' }, sink), { clock });
  };
  const gql = () => new GraphQLClient(`${svc.url}/graphql`, { headers: { 'svc-api-key': KEY } });
  const post = async (body: unknown) => {
    const res = await fetch(`${svc.url}/v1/events`, {
      method: 'POST',
      headers: { 'svc-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(202);
  };
  const deliveries = async (): Promise<Map<string, Listed>> => {
    const r = await gql().request<{ deliveries: { nodes: Listed[] } }>(
      `query { deliveries(first: 500) { nodes { id reminder status event { id type } } } }`,
    );
    return new Map(r.deliveries.nodes.map((d) => [d.id, d]));
  };
  /** The receiver's requests so far, each with its delivery as the API lists it. */
  const received = async () => {
    const byId = await deliveries();
    return receiver.hits.map((h) => ({ ...h, delivery: byId.get(h.id) }));
  };
  /** The webhook payload's correlationKey ends with the issuer's name (certmgr:issuer:<cluster>:<namespace>:<name>). */
  const issuerOf = (body: string) => (JSON.parse(body) as { data: { correlationKey: string } }).data.correlationKey.split(':').pop();
  const hitsFor = async (issuerName: string) => (await received()).filter((h) => issuerOf(h.body) === issuerName);

  // two unhealthy issuers: A recovers, B stays unhealthy (its reminders show that the scanner ran after A's recovery)
  const A = { resourceId: 'aaaaaaaa-0000-4000-8000-000000000001', issuerName: 'issuer-a' };
  const B = { resourceId: 'bbbbbbbb-0000-4000-8000-000000000002', issuerName: 'issuer-b' };

  beforeAll(async () => {
    receiver = await startReceiver();
    await start();
    const w = await gql().request<{ createWebhookIntegration: { id: string } }>(
      `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
      { i: { name: 'hook', url: `${receiver.url}/hook` } },
    );
    await gql().request(ops.CreateNotificationRouter, {
      details: { name: 'issuers, reminded', eventTypeId: 'certmgr-issuer-health-notification-config' },
      filterConfig: { advancedFilterExpression: '' },
      integrationConfig: { integrationId: w.createWebhookIntegration.id },
      policyConfig: { repeatInterval: '1m' },
    });
  });

  afterAll(async () => {
    await svc?.close();
    await receiver?.close();
  });

  it('a .notready is delivered, then reminders of it arrive marked as reminders while it stays unhealthy', async () => {
    await post([issuerNotReady(A), issuerNotReady({ ...B, statusTransition: '2025-03-14T09:27:00Z' })]);
    const first = await waitFor('both .notready delivered', async () => {
      const hs = await received();
      return hs.length === 2 && hs.every((h) => h.delivery?.status === 'DELIVERED') ? hs : undefined;
    });
    expect(first.map((h) => h.delivery?.reminder)).toEqual([false, false]);
    const eventOf = new Map(first.map((h) => [issuerOf(h.body), h.delivery!.event!.id]));

    for (const n of [1, 2]) {
      ahead += MINUTE + 1_000;
      const hs = await waitFor(`reminder ${n} of A and B`, async () => {
        const [a, b] = [await hitsFor(A.issuerName), await hitsFor(B.issuerName)];
        return a.length === 1 + n && b.length === 1 + n ? { a, b } : undefined;
      });
      for (const [issuerName, list] of [
        [A.issuerName, hs.a],
        [B.issuerName, hs.b],
      ] as const) {
        const last = list[list.length - 1]!;
        expect(last.delivery).toMatchObject({
          reminder: true,
          event: { id: eventOf.get(issuerName), type: 'evt.healthstatus.certmgr-issuer.notready' },
        });
        // a new delivery (its own webhook-id), never a repeat of an earlier one
        expect(new Set(list.map((h) => h.id)).size).toBe(list.length);
      }
    }
  });

  it('reminders stop at the .active, which comes after every reminder of its resource', async () => {
    await post(issuerActive(A));
    await waitFor('the .active of A delivered', async () =>
      (await hitsFor(A.issuerName)).find((h) => h.delivery?.event?.type === 'evt.healthstatus.certmgr-issuer.active'),
    );
    const before = (await hitsFor(B.issuerName)).length;
    // two more intervals: B gets its reminders (so the scanner ran past A's due time), A gets nothing more
    for (const n of [1, 2]) {
      ahead += MINUTE + 1_000;
      await waitFor(`B's reminder after A recovered (${n})`, async () =>
        (await hitsFor(B.issuerName)).length >= before + n ? true : undefined,
      );
    }
    const a = await hitsFor(A.issuerName);
    expect(a.map((h) => [h.delivery?.event?.type, h.delivery?.reminder])).toEqual([
      ['evt.healthstatus.certmgr-issuer.notready', false],
      ['evt.healthstatus.certmgr-issuer.notready', true],
      ['evt.healthstatus.certmgr-issuer.notready', true],
      ['evt.healthstatus.certmgr-issuer.active', false],
    ]);
  });

  it('a restart keeps the reminder: the next one still comes', async () => {
    const before = (await hitsFor(B.issuerName)).length;
    await svc.close();
    await start();
    ahead += MINUTE + 1_000;
    const b = await waitFor('B reminded after the restart', async () => {
      const hs = await hitsFor(B.issuerName);
      return hs.length > before && hs[hs.length - 1]!.delivery?.status === 'DELIVERED' ? hs : undefined;
    });
    expect(b[b.length - 1]!.delivery).toMatchObject({ reminder: true, event: { type: 'evt.healthstatus.certmgr-issuer.notready' } });
    expect((await hitsFor(A.issuerName)).length).toBe(4);
  });

  it('a silence created while B is unhealthy records its next reminder SILENCED (not received); after expireSilence they arrive again', async () => {
    const silencedReminders = async () =>
      (
        await gql().request<{ deliveries: { nodes: (Listed & { silenceId: string | null })[] } }>(
          `{ deliveries(filter: { status: SILENCED }, first: 50) { nodes { id reminder status silenceId event { id type } } } }`,
        )
      ).deliveries.nodes;
    // every earlier reminder delivered: what the receiver saw from here on is what the silence let through
    const before = await waitFor('B settled', async () => {
      const hs = await hitsFor(B.issuerName);
      return hs.every((h) => h.delivery?.status === 'DELIVERED') ? hs.length : undefined;
    });
    const { createSilence: silence } = await gql().request<{ createSilence: { id: string } }>(
      `mutation ($i: CreateSilenceInput!) { createSilence(input: $i) { id } }`,
      {
        i: {
          matcher: `data.issuerName == "${B.issuerName}"`,
          endsAt: new Date(Date.now() + 3_600_000).toISOString(),
          comment: 'issuer B migration',
        },
      },
    );
    ahead += MINUTE + 1_000;
    const [recorded] = await waitFor('B reminder recorded SILENCED', async () => {
      const nodes = await silencedReminders();
      return nodes.length ? nodes : undefined;
    });
    expect(recorded).toMatchObject({ reminder: true, silenceId: silence.id, event: { type: 'evt.healthstatus.certmgr-issuer.notready' } });
    await gql().request(`mutation ($id: UUID!) { expireSilence(id: $id) { id } }`, { id: silence.id });
    ahead += MINUTE + 1_000;
    const b = await waitFor('B reminded after the silence expired', async () => {
      const hs = await hitsFor(B.issuerName);
      // the outcome is written after the receiver answered: wait for it too
      return hs.length > before && hs.at(-1)?.delivery?.status !== 'IN_FLIGHT' ? hs : undefined;
    });
    // the silenced reminder was never sent: exactly one more request, the reminder after the silence
    expect(b).toHaveLength(before + 1);
    expect(b[b.length - 1]!.delivery).toMatchObject({ reminder: true, status: 'DELIVERED' });
    expect(b.map((h) => h.id)).not.toContain(recorded!.id);
    expect(await silencedReminders()).toHaveLength(1);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metrics).toContain('certmgr_notify_notifications_silenced_total{event_type_id="certmgr-issuer-health-notification-config"} 1');
  });
});
