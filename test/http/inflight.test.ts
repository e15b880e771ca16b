/**
 * Inventory reports in flight are bounded per company and in all (src/http/inflight.ts): the table of the pure
 * limiter, then the real service holding four slow reports of one company.
 */
import { request, type ClientRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INVENTORY_INFLIGHT, InflightLimiter } from '../../src/http/inflight.js';
import { KEY_A, KEY_B, startTestService, type TestService } from '../support/service.js';

describe('InflightLimiter', () => {
  it('grants up to the per-company limit, then refuses that company only', () => {
    const l = new InflightLimiter({ perCompany: 2, total: 3 });
    const a1 = l.acquire('a');
    const a2 = l.acquire('a');
    const a3 = l.acquire('a');
    expect([a1.ok, a2.ok, a3.ok]).toEqual([true, true, false]);
    expect(a3.ok ? '' : a3.reason).toBe('2 requests of this company are in flight (limit 2)');
    const b1 = l.acquire('b');
    expect(b1.ok).toBe(true);
    const c1 = l.acquire('c');
    expect(c1.ok ? '' : c1.reason).toBe('3 requests are in flight (limit 3)');
    expect(l.inFlight).toBe(3);
  });

  it('a release frees the slot once, however often it is called', () => {
    const l = new InflightLimiter({ perCompany: 1, total: 1 });
    const a = l.acquire('a');
    if (!a.ok) throw new Error('refused');
    a.release();
    a.release();
    expect(l.inFlight).toBe(0);
    expect(l.acquire('a').ok).toBe(true);
    expect(l.acquire('b').ok).toBe(false);
  });
});

describe('POST /v1/inventory in flight (real service)', () => {
  let svc: TestService;
  const held: ClientRequest[] = [];
  beforeAll(async () => {
    svc = await startTestService('sqlite');
  });
  afterAll(async () => {
    for (const r of held) r.destroy();
    await svc?.close();
  });

  /** A report whose body never ends: it holds its slot while the server reads. */
  const hold = (key: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const r = request(`${svc.url}/v1/inventory`, {
        method: 'POST',
        headers: { 'svc-api-key': key, 'content-type': 'application/json', 'content-length': '100000' },
      });
      r.on('error', () => {}); // destroyed at the end
      r.write('{"protocol":1,', (e) => (e ? reject(e) : resolve()));
      held.push(r);
    });

  const post = (key: string) =>
    svc.rest('/v1/inventory', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: '{}' });

  it(`a company's report past ${INVENTORY_INFLIGHT.perCompany} in flight gets 429 with Retry-After; another company still posts`, async () => {
    for (let i = 0; i < INVENTORY_INFLIGHT.perCompany; i++) await hold(KEY_A);
    // the held requests reach the server's handler in turn; poll until the limit answers (no timing assumed)
    let refused: Response | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const r = await post(KEY_A);
      if (r.status === 429) refused = r;
      else await new Promise((res) => setTimeout(res, 25));
    }
    expect(refused?.status).toBe(429);
    expect(refused?.headers.get('retry-after')).toBe('1');
    const body = (await refused!.json()) as { errors: { code: string; message: string }[] };
    expect(body.errors[0]?.code).toBe('TOO_MANY_REQUESTS');
    expect(body.errors[0]?.message).toContain(`(limit ${INVENTORY_INFLIGHT.perCompany})`);
    // company B is not held up by A's slots: its (invalid) report is read and refused for its content
    const b = await post(KEY_B);
    expect(b.status).toBe(400);
    // A's slots come back when its requests end
    for (const r of held.splice(0)) r.destroy();
    let after = 429;
    for (let i = 0; i < 200 && after === 429; i++) {
      after = (await post(KEY_A)).status;
      if (after === 429) await new Promise((res) => setTimeout(res, 25));
    }
    expect(after).toBe(400);
  });
});
