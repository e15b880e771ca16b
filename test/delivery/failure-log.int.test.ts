/**
 * Why didn't it arrive? A failing attempt (retry scheduled) is logged at warn with its classified error, the
 * integration's id and type and the attempt number: at most one line per integration per minute, the next line
 * counting the ones left out; never a secret or the URL. A real loopback receiver answering 503, the real webhook
 * notifier, a SQLite store and a pino destination capturing the lines; the worker's clock is moved a minute on.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { createNotifier, Notifiers } from '../../src/integrations/index.js';
import { integrationOptions } from '../../src/integrations/types.js';
import type { Store } from '../../src/store/types.js';
import {
  captureLog,
  createWebhookIntegration,
  ENGINES,
  LOOPBACK_EGRESS,
  seedDeliveries,
  startReceiver,
  URL_TOKEN,
  waitFor,
  WHSEC,
  type CapturedLog,
  type Engine,
  type Receiver,
} from './support.js';

const MESSAGE = 'delivery attempt failed; will retry';

describe('a failing delivery attempt is logged at warn, at most once per integration per minute', () => {
  let engine: Engine;
  let store: Store;
  let rx: Receiver;
  let worker: DeliveryWorker | undefined;
  let log: CapturedLog;
  let skew = 0;

  beforeAll(() => {
    engine = ENGINES[0]!(); // SQLite: the lines do not depend on the store
  });
  afterAll(async () => {
    await engine.cleanup();
  });
  beforeEach(async () => {
    store = await engine.open();
    log = captureLog('info');
    // the receiver is down for good, and echoes what it was sent to (the URL's token must not reach the log)
    rx = await startReceiver({ handler: (h, res) => res.writeHead(503).end(`unavailable: ${h.path}`) });
  });
  afterEach(async () => {
    await worker?.stop(1_000);
    worker = undefined;
    await rx.close();
    await store.close();
  });

  it('one line per integration with the classified error; a minute later one more, counting the attempts left out', async () => {
    const company = `company-${randomUUID()}`;
    const a = await createWebhookIntegration(store, company, rx.url);
    const b = await createWebhookIntegration(store, company, rx.url);
    await seedDeliveries(store, a, 1);
    await seedDeliveries(store, b, 1);
    worker = new DeliveryWorker({
      store,
      notifiers: new Notifiers((type) =>
        createNotifier(type, integrationOptions({ timeoutMs: 2_000, userAgent: 'certmgr-notify-test', egress: LOOPBACK_EGRESS })),
      ),
      logger: log.logger,
      clock: () => Date.now() + skew,
      options: { pollIntervalMs: 20, baseDelayMs: 20, maxDelayMs: 50, attemptTimeoutMs: 2_000 },
    });
    worker.start();

    const attemptsOf = async (integrationId: string) =>
      (await store.listDeliveries(company, { limit: 10 })).find((d) => d.integrationId === integrationId)?.attempts ?? 0;
    const lines = (integrationId: string) => log.lines.filter((l) => l['msg'] === MESSAGE && l['integrationId'] === integrationId);

    await waitFor('both integrations failing again and again', async () => (await attemptsOf(a.id)) >= 4 && (await attemptsOf(b.id)) >= 4);
    for (const i of [a, b]) {
      expect(lines(i.id)).toEqual([
        expect.objectContaining({
          level: 40,
          integrationId: i.id,
          integrationType: 'WEBHOOK',
          companyId: company,
          attempts: 1,
          error: 'HTTP 503 Service Unavailable',
          statusCode: 503,
          nextAttemptAt: expect.any(String),
        }),
      ]);
      expect(lines(i.id)[0]).not.toHaveProperty('suppressed');
    }

    // a minute on (the worker's clock): the next failure of each is logged, with the count of those left out
    skew += 61_000;
    await waitFor('a second line for each integration', () => lines(a.id).length >= 2 && lines(b.id).length >= 2);
    for (const i of [a, b]) {
      const [, second] = lines(i.id);
      const attempts = second!['attempts'] as number;
      // the 4th attempt may still have been in flight when the clock moved on (attempts count at the claim), so
      // the line after the minute is the 4th failure or a later one
      expect(attempts).toBeGreaterThanOrEqual(4);
      // one delivery per integration: every attempt between the two lines was left out
      expect(second).toMatchObject({ level: 40, error: 'HTTP 503 Service Unavailable', suppressed: attempts - 2 });
    }

    const text = log.text();
    for (const secret of [URL_TOKEN, WHSEC, 'http://', '127.0.0.1', '/hook']) expect(text).not.toContain(secret);
    expect(rx.hits.some((h) => h.path.includes(URL_TOKEN))).toBe(true); // the token was in the URL the receiver saw
  });
});
