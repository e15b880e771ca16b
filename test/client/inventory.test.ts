/** InventoryClient: how each answer of POST /v1/inventory is classified (what the reporter then does is its own test). */
import { describe, expect, it } from 'vitest';
import { InventoryClient, retryAfterMs, type InventoryOutcome } from '../../src/client/inventory.js';
import { INVENTORY_PROTOCOL, RESYNC_REQUIRED, type InventoryReport } from '../../src/model/inventory.js';

const REPORT: InventoryReport = {
  protocol: INVENTORY_PROTOCOL,
  cluster: { id: '6f1c2b3a-1111-4c2d-9e8f-0a1b2c3d4e5f', name: 'prod' },
  agentVersion: 'test',
  epoch: '0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5',
  seq: 7,
  kind: 'delta',
  upserts: [],
  deletes: [],
};

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

async function outcome(res: () => Response | Promise<Response>): Promise<InventoryOutcome> {
  const client = new InventoryClient({ url: 'http://hub', apiKey: 'k', fetch: (async () => res()) as typeof fetch });
  return client.post(REPORT);
}

describe('InventoryClient.post', () => {
  it.each<[string, () => Response | Promise<Response>, InventoryOutcome]>([
    [
      '200 applied',
      () => json(200, { status: 'applied', clusterId: REPORT.cluster.id, epoch: REPORT.epoch, seq: 7 }),
      { kind: 'applied', ack: { status: 'applied', clusterId: REPORT.cluster.id, epoch: REPORT.epoch, seq: 7 } },
    ],
    [
      '200 duplicate',
      () => json(200, { status: 'duplicate', clusterId: REPORT.cluster.id, epoch: REPORT.epoch, seq: 7 }),
      { kind: 'duplicate', ack: { status: 'duplicate', clusterId: REPORT.cluster.id, epoch: REPORT.epoch, seq: 7 } },
    ],
    [
      '409 RESYNC_REQUIRED (the hub’s body)',
      () =>
        json(409, {
          code: RESYNC_REQUIRED,
          message: 'resync required: gap',
          errors: [{ code: RESYNC_REQUIRED, message: 'resync required: gap' }],
        }),
      { kind: 'resync', message: 'resync required: gap' },
    ],
    [
      '429 QUOTA_EXCEEDED with Retry-After seconds: throttled, not a resync',
      () =>
        json(
          429,
          { errors: [{ code: 'QUOTA_EXCEEDED', message: 'the company holds 100000 certificates, the most it may' }] },
          { 'retry-after': '300' },
        ),
      {
        kind: 'throttled',
        code: 'QUOTA_EXCEEDED',
        message: 'the company holds 100000 certificates, the most it may',
        retryAfterMs: 300_000,
      },
    ],
    [
      '429 without a body or Retry-After',
      () => new Response('', { status: 429 }),
      { kind: 'throttled', code: 'TOO_MANY_REQUESTS', message: 'HTTP 429' },
    ],
    ['404: an older hub', () => new Response('', { status: 404 }), { kind: 'unsupported' }],
    [
      '400 names the field',
      () => json(400, { errors: [{ code: 'BAD_USER_INPUT', field: 'upserts[0].serial', message: 'too long' }] }),
      { kind: 'rejected', status: 400, message: 'upserts[0].serial: too long' },
    ],
    ['413', () => new Response('', { status: 413 }), { kind: 'rejected', status: 413, message: 'HTTP 413' }],
    [
      '503 with Retry-After',
      () => new Response('', { status: 503, headers: { 'retry-after': '5' } }),
      { kind: 'retry', reason: 'HTTP 503 HTTP 503', retryAfterMs: 5_000 },
    ],
    [
      'network error',
      () => Promise.reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } })),
      { kind: 'retry', reason: 'network ECONNREFUSED' },
    ],
  ])('%s', async (_name, res, want) => {
    expect(await outcome(res)).toEqual(want);
  });
});

describe('retryAfterMs', () => {
  const NOW = Date.parse('2026-11-26T12:00:00Z');
  it.each<[string | null, number | undefined]>([
    [null, undefined],
    ['', undefined],
    ['0', undefined],
    ['300', 300_000],
    [' 7 ', 7_000],
    ['86400', 15 * 60_000], // capped
    ['Thu, 26 Nov 2026 12:01:00 GMT', 60_000], // an HTTP-date
    ['Thu, 26 Nov 2026 11:59:00 GMT', undefined], // in the past
    ['-5', undefined],
    ['soon', undefined],
  ])('%j → %s', (header, want) => {
    expect(retryAfterMs(header, NOW)).toBe(want);
  });
});
