/**
 * The issue-11 integration types (OPSGENIE, GOOGLE_CHAT, DISCORD, GENERIC_WEBHOOK) through the real delivery
 * worker and stores (SQLite file, PostgreSQL) against loopback receivers that check each vendor's request shape:
 * delivered on 2xx; retried on 429 (the vendor's retry hint honoured: Retry-After, Discord's body retry_after)
 * and 5xx until delivered; dead at once on a 4xx. Assertions are on recorded outcomes and order facts.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../../src/delivery/worker.js';
import type { EventType } from '../../src/events/families.js';
import { createNotifier, Notifiers } from '../../src/integrations/index.js';
import { integrationOptions } from '../../src/integrations/types.js';
import type { DeliveryRecord, EventRecord, IntegrationRecord, IntegrationType, Store } from '../../src/store/types.js';
import { EVENTS } from '../integrations/helpers.js';
import { captureLog, ENGINES, type Engine, type Hit, LOOPBACK_EGRESS, type Receiver, startReceiver, waitFor } from './support.js';

const FAST: Partial<DeliveryWorkerOptions> = { pollIntervalMs: 20, baseDelayMs: 20, maxDelayMs: 200, attemptTimeoutMs: 2_000 };
const OPSGENIE_KEY = 'og-key-5f1e2d3c4b5a69788796a5b4';
const TOKEN = 'hook-t0ken-s3cret';

interface TypeCase {
  type: 'OPSGENIE' | 'GOOGLE_CHAT' | 'DISCORD' | 'GENERIC_WEBHOOK';
  secrets: (base: string) => Record<string, string>;
  /** The vendor's success status. */
  ok: number;
  /** Throws unless the request has the vendor's documented shape. */
  check: (hit: Hit) => void;
  /** A 429 in the vendor's own form and the delay it asks for (ms). */
  tooMany: (res: ServerResponse) => void;
  retryAfterMs: number;
}

const json = (h: Hit) => JSON.parse(h.body) as Record<string, unknown>;

const CASES: TypeCase[] = [
  {
    type: 'OPSGENIE',
    secrets: () => ({ apiKey: OPSGENIE_KEY }),
    ok: 202,
    check: (h) => {
      expect(h.path).toBe('/v2/alerts');
      expect(h.headers['authorization']).toBe(`GenieKey ${OPSGENIE_KEY}`);
      expect(json(h)).toMatchObject({ message: expect.any(String), alias: expect.stringMatching(/^certmgr:issuer:/), priority: 'P1' });
    },
    tooMany: (res) => res.writeHead(429, { 'retry-after': '1' }).end('{"message":"Rate limit exceeded"}'),
    retryAfterMs: 1000,
  },
  {
    type: 'GOOGLE_CHAT',
    secrets: (base) => ({ webhookUrl: `${base}/v1/spaces/S/messages?key=k&token=${TOKEN}` }),
    ok: 200,
    check: (h) => {
      expect(new URL(h.path, 'http://x').searchParams.get('messageReplyOption')).toBe('REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD');
      const b = json(h);
      expect(b).toMatchObject({ text: expect.any(String), thread: { threadKey: expect.stringMatching(/^certmgr:issuer:/) } });
      expect(b['cardsV2']).toHaveLength(1);
    },
    tooMany: (res) => res.writeHead(429, { 'retry-after': '1' }).end('{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}'),
    retryAfterMs: 1000,
  },
  {
    type: 'DISCORD',
    secrets: (base) => ({ webhookUrl: `${base}/api/webhooks/1/${TOKEN}` }),
    ok: 200,
    check: (h) => {
      expect(h.path).toBe(`/api/webhooks/1/${TOKEN}?wait=true`);
      const b = json(h);
      expect(b).toMatchObject({ content: expect.any(String), allowed_mentions: { parse: [] } });
      expect(b['embeds']).toHaveLength(1);
    },
    // Discord's own form: the delay in the JSON body (seconds, fractional), no Retry-After header
    tooMany: (res) =>
      res
        .writeHead(429, { 'content-type': 'application/json' })
        .end('{"message":"You are being rate limited.","retry_after":1.2,"global":false}'),
    retryAfterMs: 1200,
  },
  {
    type: 'GENERIC_WEBHOOK',
    secrets: (base) => ({ url: `${base}/in?token=${TOKEN}`, headers: JSON.stringify([['Authorization', 'Bearer abc-123']]) }),
    ok: 204,
    check: (h) => {
      expect(h.headers['content-type']).toBe('application/json');
      expect(h.headers['authorization']).toBe('Bearer abc-123');
      expect(h.headers['webhook-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(json(h)).toMatchObject({ version: 'v1', kind: 'issuer', state: 'unhealthy' });
    },
    tooMany: (res) => res.writeHead(429, { 'retry-after': '1' }).end(),
    retryAfterMs: 1000,
  },
];

describe.each(ENGINES.map((make) => [make().name, make] as const))(
  'new integration types through the worker on %s',
  (_name, makeEngine) => {
    let engine: Engine;
    let store: Store;
    let rx: Receiver | undefined;
    let worker: DeliveryWorker | undefined;

    beforeAll(() => {
      engine = makeEngine();
    });
    afterAll(async () => {
      await engine.cleanup();
    });
    beforeEach(async () => {
      store = await engine.open();
    });
    afterEach(async () => {
      await worker?.stop(1_000);
      worker = undefined;
      await rx?.close();
      rx = undefined;
      await store.close();
    });

    function startWorker(base: string): void {
      const log = captureLog();
      worker = new DeliveryWorker({
        store,
        notifiers: new Notifiers((type) =>
          createNotifier(
            type,
            integrationOptions({ timeoutMs: 2_000, userAgent: 'certmgr-notify-test', egress: LOOPBACK_EGRESS, opsgenieApiUrl: base }),
          ),
        ),
        logger: log.logger,
        options: FAST,
      });
      worker.start();
    }

    async function seed(
      type: IntegrationType,
      secrets: Record<string, string>,
      eventType: EventType,
    ): Promise<{ companyId: string; id: string }> {
      const t = Date.now();
      const companyId = `company-${randomUUID()}`;
      const integ: IntegrationRecord = await store.createIntegration({
        id: randomUUID(),
        companyId,
        name: `${type} integration`,
        type,
        enabled: true,
        config: {},
        secrets,
        managedBy: null,
        createdAt: t,
        updatedAt: t,
      });
      const ev: EventRecord = { id: randomUUID(), companyId, type: eventType, data: EVENTS[eventType].data, receivedAt: t };
      const id = randomUUID();
      await store.transaction(async (tx) => {
        await tx.insertEvent(ev);
        await tx.insertDeliveries([
          { id, companyId, eventId: ev.id, routerId: randomUUID(), routerName: 'prod issuers', integrationId: integ.id, createdAt: t },
        ]);
      });
      return { companyId, id };
    }

    const settled = (companyId: string, status: DeliveryRecord['status']) => async () => {
      const [d] = await store.listDeliveries(companyId, { limit: 10 });
      return d && d.status === status ? d : undefined;
    };

    it.each(CASES)('$type: delivered on its success status, in the documented shape', async (c) => {
      rx = await startReceiver({ handler: (_h, res) => res.writeHead(c.ok).end(c.ok === 204 ? undefined : '{}') });
      const { companyId } = await seed(c.type, c.secrets(rx.url), 'evt.healthstatus.certmgr-issuer.notready');
      startWorker(rx.url);
      const d = await waitFor('delivered', settled(companyId, 'DELIVERED'));
      expect(d).toMatchObject({ attempts: 1, lastStatusCode: c.ok, lastError: null });
      expect(rx.hits).toHaveLength(1);
      c.check(rx.hits[0]!);
    });

    it.each(CASES)('$type: 429 (its retry hint honoured), then 503, then delivered', async (c) => {
      let n = 0;
      rx = await startReceiver({
        handler: (_h, res) => {
          n++;
          if (n === 1) c.tooMany(res);
          else if (n === 2) res.writeHead(503).end();
          else res.writeHead(c.ok).end();
        },
      });
      const { companyId } = await seed(c.type, c.secrets(rx.url), 'evt.healthstatus.certmgr-issuer.notready');
      startWorker(rx.url);
      const limited = await waitFor('the 429 recorded', async () => {
        const [d] = await store.listDeliveries(companyId, { limit: 10 });
        return d && d.lastStatusCode === 429 ? d : undefined;
      });
      expect(limited.status).toBe('PENDING');
      expect(limited.lastError).toBe('HTTP 429 Too Many Requests');
      expect(limited.nextAttemptAt).toBeGreaterThanOrEqual(rx.hits[0]!.at + c.retryAfterMs);

      const d = await waitFor('delivered', settled(companyId, 'DELIVERED'), 20_000);
      expect(d).toMatchObject({ attempts: 3, lastStatusCode: c.ok, lastError: null });
      expect(rx.hits).toHaveLength(3);
      expect(rx.hits[1]!.at).toBeGreaterThanOrEqual(rx.hits[0]!.at + c.retryAfterMs);
      for (const h of rx.hits) c.check(h);
    });

    it.each(CASES)('$type: a 4xx is dead at once, never retried, the secret not in the error', async (c) => {
      rx = await startReceiver({ handler: (h, res) => res.writeHead(400).end(`bad request at ${h.path}`) });
      const { companyId } = await seed(c.type, c.secrets(rx.url), 'evt.healthstatus.certmgr-issuer.notready');
      startWorker(rx.url);
      const d = await waitFor('dead', settled(companyId, 'DEAD'));
      expect(d).toMatchObject({ attempts: 1, lastStatusCode: 400, lastError: 'HTTP 400 Bad Request', deliveredAt: null });
      expect(rx.hits).toHaveLength(1);
      expect(JSON.stringify(d)).not.toContain(TOKEN);
      expect(JSON.stringify(d)).not.toContain(OPSGENIE_KEY);
    });

    it('OPSGENIE: a recovery closes by alias; a close of an unknown alias (404) is delivered', async () => {
      rx = await startReceiver({ handler: (_h, res) => res.writeHead(404).end('{"message":"Alert does not exist"}') });
      const { companyId } = await seed('OPSGENIE', { apiKey: OPSGENIE_KEY }, 'evt.healthstatus.certmgr-issuer.active');
      startWorker(rx.url);
      const d = await waitFor('delivered', settled(companyId, 'DELIVERED'));
      expect(d).toMatchObject({ attempts: 1, lastStatusCode: 404 });
      expect(rx.hits[0]!.path).toMatch(/^\/v2\/alerts\/certmgr%3Aissuer%3A[^/]+\/close\?identifierType=alias$/);
    });
  },
);
