/** Health, readiness, metrics and request-scoped JSON logs. */
import { asAny } from '../support/any.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MONITORING_CONFIG_PATH } from '../../src/client/operations.js';
import { KEY_A, startTestService, type TestService } from '../support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite');
});
afterAll(async () => {
  await svc?.close();
});

describe('operations endpoints', () => {
  it('/healthz and /readyz need no key', async () => {
    const h = await fetch(`${svc.url}/healthz`);
    expect(h.status).toBe(200);
    expect(await h.json().then(asAny)).toEqual({ status: 'ok' });
    const r = await fetch(`${svc.url}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json().then(asAny)).toEqual({ status: 'ready' });
  });

  it('/metrics exposes Prometheus text with request counters', async () => {
    await svc.rest(MONITORING_CONFIG_PATH);
    const m = await (await fetch(`${svc.url}/metrics`)).text();
    expect(m).toMatch(
      /certmgr_notify_http_requests_total\{method="GET",route="\/outagedetection\/v1\/inventorymonitoringconfig\/:type",status="200"\} \d+/,
    );
    expect(m).toContain('certmgr_notify_http_request_duration_seconds_bucket');
    expect(m).toContain('certmgr_notify_process_cpu_seconds_total');
  });

  it('logs JSON lines with a request id, echoes it, and never logs the key', async () => {
    const res = await svc.rest(MONITORING_CONFIG_PATH, { headers: { 'x-request-id': 'req-abc-123' } });
    expect(res.headers.get('x-request-id')).toBe('req-abc-123');
    const gen = await svc.rest(MONITORING_CONFIG_PATH);
    expect(gen.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const lines = svc.logs
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const line = lines.find((l) => l.requestId === 'req-abc-123' && l.msg === 'request');
    expect(line).toMatchObject({ method: 'GET', path: MONITORING_CONFIG_PATH, status: 200 });
    expect(svc.logs.join('')).not.toContain(KEY_A);
  });

  it('/readyz reports 503 when the store is gone', async () => {
    const other = await startTestService('sqlite');
    await other.store.close();
    const r = await fetch(`${other.url}/readyz`);
    expect(r.status).toBe(503);
    await other.close().catch(() => undefined);
  });
});
