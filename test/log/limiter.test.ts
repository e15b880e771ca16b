/**
 * Logs: per-event and per-delivery log lines are rate-limited per tenant and cause, the
 * rest counted in certmgr_notify_log_suppressed_total{cause} and summarized.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { LOG_SUPPRESSED_METRIC, LogBuckets, LogLimiter, type LogCause } from '../../src/log/limiter.js';
import { issuerNotReady } from '../fixtures/events.js';
import { startReceiver } from '../integrations/helpers.js';
import { KEY_B, startTestService, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

describe('LogBuckets (pure)', () => {
  const F: LogCause = 'filter_evaluation';

  it.each([
    // [what, limits, calls as [tenant, time ms], expected outcomes ('ok' | 'ok+N' | 'drop')]
    [
      'burst then drop',
      { burst: 3, perMinute: 60 },
      [
        ['a', 0],
        ['a', 0],
        ['a', 0],
        ['a', 0],
        ['a', 0],
      ],
      ['ok', 'ok', 'ok', 'drop', 'drop'],
    ],
    [
      'refills at perMinute, reports what it dropped',
      { burst: 1, perMinute: 60 },
      [
        ['a', 0],
        ['a', 10],
        ['a', 500],
        ['a', 1000],
      ],
      ['ok', 'drop', 'drop', 'ok+2'],
    ],
    [
      'never more than burst after a long quiet time',
      { burst: 2, perMinute: 60 },
      [
        ['a', 0],
        ['a', 3_600_000],
        ['a', 3_600_000],
        ['a', 3_600_000],
      ],
      ['ok', 'ok', 'ok', 'drop'],
    ],
    [
      'tenants have their own buckets',
      { burst: 1, perMinute: 1 },
      [
        ['a', 0],
        ['a', 0],
        ['b', 0],
        ['b', 0],
      ],
      ['ok', 'drop', 'ok', 'drop'],
    ],
  ] as const)('%s', (_what, limits, calls, want) => {
    const b = new LogBuckets(limits);
    const got = calls.map(([tenant, at]) => {
      const r = b.take(tenant, F, 'warn', at);
      return r.ok ? (r.suppressed ? `ok+${r.suppressed}` : 'ok') : 'drop';
    });
    expect(got).toEqual(want);
  });

  it('causes have their own buckets', () => {
    const b = new LogBuckets({ burst: 1 });
    expect(b.take('a', 'filter_evaluation', 'warn', 0).ok).toBe(true);
    expect(b.take('a', 'delivery_dead_letter', 'warn', 0).ok).toBe(true);
    expect(b.take('a', 'filter_evaluation', 'warn', 0).ok).toBe(false);
  });

  it('is bounded: hostile tenant ids evict the least recently used key, whose pending count is still drained', () => {
    const b = new LogBuckets({ burst: 1, maxKeys: 100 });
    b.take('victim', F, 'warn', 0);
    b.take('victim', F, 'warn', 0); // dropped: pending 1
    for (let i = 0; i < 10_000; i++) b.take(`t${i}`, F, 'warn', 0);
    expect(b.size).toBe(100);
    expect(b.drain()).toContainEqual({ tenant: 'victim', cause: F, level: 'warn', count: 1 });
    expect(b.drain()).toEqual([]);
  });

  it('rejects nonsense limits', () => {
    expect(() => new LogBuckets({ perMinute: 0 })).toThrow(RangeError);
    expect(() => new LogBuckets({ burst: 0 })).toThrow(RangeError);
  });
});

describe('LogLimiter (shell)', () => {
  function capture() {
    const lines: Record<string, unknown>[] = [];
    const log = pino(
      { level: 'info' },
      new Writable({
        write(c, _e, cb) {
          lines.push(JSON.parse(String(c)) as Record<string, unknown>);
          cb();
        },
      }),
    );
    return { log, lines };
  }

  it('counts dropped lines per cause, writes the summary before the next line and at close; disabled levels cost nothing', async () => {
    const { log, lines } = capture();
    const registry = new Registry();
    let now = 0;
    const lim = new LogLimiter(log, { limits: { burst: 2, perMinute: 60 }, registry, clock: () => now, flushEveryMs: 0 });
    const write = () => {
      if (lim.admit(log, 'warn', 'c1', 'filter_evaluation')) log.warn('x');
    };
    for (let i = 0; i < 10; i++) write();
    expect(lines.filter((l) => l['msg'] === 'x')).toHaveLength(2);
    const metric = async () =>
      (await registry.getSingleMetric(LOG_SUPPRESSED_METRIC)!.get()).values.find((v) => v.labels['cause'] === 'filter_evaluation')?.value;
    expect(await metric()).toBe(8);
    now = 1_000;
    write();
    expect(lines.at(-2)).toMatchObject({
      companyId: 'c1',
      cause: 'filter_evaluation',
      suppressed: 8,
      msg: expect.stringMatching(/^8 similar messages suppressed/),
    });
    expect(lines.at(-1)).toMatchObject({ msg: 'x' });
    write();
    write();
    lim.close();
    expect(lines.at(-1)).toMatchObject({ suppressed: 2, level: 40 });
    // debug is not enabled: no tokens used, nothing counted
    for (let i = 0; i < 100; i++) expect(lim.admit(log, 'debug', 'c2', 'delivery_delivered')).toBe(false);
    expect(
      (await registry.getSingleMetric(LOG_SUPPRESSED_METRIC)!.get()).values.find((v) => v.labels['cause'] === 'delivery_delivered')?.value,
    ).toBe(0);
  });
});

describe('50 always-failing filters × one 1,000-event batch (the real service)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService('sqlite', [...limitsFile({ deliveryWorkers: 0, logRatePerMinute: 1 })]);
  });
  afterAll(async () => {
    await svc?.close();
  });

  async function failingRouters(key: string | undefined, n: number): Promise<void> {
    const { createIncidentMgmtIntegration: integ } = await svc
      .gql(key)
      .request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
        name: 'pager',
        integrationKey: 'ik-0123456789abcdef',
      });
    for (let i = 0; i < n; i++) {
      await svc.gql(key).request(ops.CreateNotificationRouter, {
        details: { name: `failing ${i}`, eventTypeId: 'certmgr-issuer-health-notification-config' },
        // compiles, and fails at evaluation for every event: clusterName is never an integer
        filterConfig: { advancedFilterExpression: `int(data.clusterName) == ${i}` },
        integrationConfig: { integrationId: integ.id },
      });
    }
  }

  const post = (body: unknown, key?: string) =>
    svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      ...(key ? { key } : {}),
    });

  async function metric(name: string, labels: Record<string, string>): Promise<number> {
    const text = await (await fetch(`${svc.url}/metrics`)).text();
    const sel = Object.entries(labels)
      .map(([k, v]) => `${k}="${v}"`)
      .join(',');
    const m = new RegExp(`^${name}\\{${sel}\\} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : NaN;
  }

  it('writes at most the burst of warn lines, counts the rest in the metric, summarizes them, and leaves other tenants their own lines', async () => {
    await failingRouters(undefined, 50);
    await failingRouters(KEY_B, 1);
    const res = await post(Array.from({ length: 1000 }, () => issuerNotReady()));
    expect(res.status).toBe(202);
    const failLines = () => svc.logs.filter((l) => l.includes('filter evaluation failed'));
    const written = failLines().length;
    // burst 20, then 1 a minute (logRatePerMinute 1): at most one more however slow the machine is
    expect(written).toBeGreaterThanOrEqual(20);
    expect(written).toBeLessThanOrEqual(21);
    expect(await metric(LOG_SUPPRESSED_METRIC, { cause: 'filter_evaluation' })).toBe(50_000 - written);
    // the CEL error metric still counts every failure
    expect(await metric('certmgr_notify_cel_evaluation_errors_total', { event_type_id: 'certmgr-issuer-health-notification-config' })).toBe(
      50_000,
    );

    // another tenant is not silenced by the first one's storm
    expect((await post(issuerNotReady(), KEY_B)).status).toBe(202);
    expect(failLines()).toHaveLength(written + 1);
    expect(failLines().at(-1)).toContain('"companyId":"22222222-2222-4222-8222-222222222222"');

    // every dropped line is in a summary by close (the periodic flush) at the latest
    await svc.close();
    const summaries = svc.logs
      .filter((l) => l.includes('similar messages suppressed'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    for (const s of summaries) expect(s).toMatchObject({ cause: 'filter_evaluation', companyId: '11111111-1111-4111-8111-111111111111' });
    expect(summaries.reduce((n, s) => n + (s['suppressed'] as number), 0)).toBe(50_000 - written);
    svc = undefined as unknown as TestService;
  });
});

describe('a tenant whose receiver refuses everything (the real service, delivery worker)', () => {
  it('dead-letter warn lines are bounded per tenant and the rest counted under cause delivery_dead_letter', async () => {
    const receiver = await startReceiver((_r, res) => {
      res.statusCode = 400;
      res.end('no');
    });
    const svc = await startTestService('sqlite', [...limitsFile({ logRateBurst: 5, logRatePerMinute: 1 })]);
    try {
      const { createWebhookIntegration: hook } = await svc
        .gql()
        .request<{ createWebhookIntegration: { id: string } }>(
          `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
          { i: { name: 'hook', url: `${receiver.url}/hook` } },
        );
      await svc.gql().request(ops.CreateNotificationRouter, {
        details: { name: 'all', eventTypeId: 'certmgr-issuer-health-notification-config' },
        filterConfig: { advancedFilterExpression: '' },
        integrationConfig: { integrationId: hook.id },
      });
      const res = await svc.rest('/v1/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(Array.from({ length: 50 }, () => issuerNotReady())),
      });
      expect(res.status).toBe(202);
      const dead = async () =>
        (
          await svc
            .gql()
            .request<{ deliveries: { nodes: unknown[] } }>(`{ deliveries(filter: { status: DEAD }, first: 100) { nodes { id } } }`)
        ).deliveries.nodes.length;
      for (let i = 0; i < 600 && (await dead()) < 50; i++) await new Promise((r) => setTimeout(r, 25));
      expect(await dead()).toBe(50);
      const lines = svc.logs.filter((l) => l.includes('delivery dead-lettered')).length;
      expect(lines).toBeGreaterThanOrEqual(5);
      expect(lines).toBeLessThanOrEqual(6);
      const text = await (await fetch(`${svc.url}/metrics`)).text();
      expect(text).toContain(`${LOG_SUPPRESSED_METRIC}{cause="delivery_dead_letter"} ${50 - lines}`);
    } finally {
      await svc.close();
      await receiver.close();
    }
  });
});
