/**
 * Error messages that quote input are bounded: graphql-js echoes a bad variable value in
 * full, REST messages quote path segments. A 100 KB value must not come back (nor reach the log) in full.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ERROR_MESSAGE_CHARS } from '../../src/http/errors.js';
import { MONITORING_CONFIG_PATH as P } from '../../src/client/operations.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite');
});
afterAll(async () => {
  await svc?.close();
});

const HUGE = 'x'.repeat(100_000);
const codePoints = (s: string) => [...s].length;

async function graphql(query: string, variables?: Record<string, unknown>) {
  const res = await svc.rest('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as { errors?: { message: string; extensions?: Record<string, unknown> }[] } };
}

describe('GraphQL error messages are bounded', () => {
  it('a 100 KB non-UUID variable is not echoed back in full', async () => {
    const r = await graphql('mutation($ids: [UUID!]!) { deleteIntegrations(ids: $ids) { ids } }', { ids: [HUGE] });
    const e = r.body.errors![0]!;
    expect(e.extensions?.code).toBe('BAD_USER_INPUT');
    expect(e.message).toMatch(/^Variable "\$ids" got invalid value/);
    expect(codePoints(e.message)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
    // the value is not quoted at all (variable-redaction.test.ts), so nothing of it is left to cut
    expect(e.message).not.toContain(HUGE.slice(0, 32));
    expect(r.text.length).toBeLessThan(5_000);
  });

  it('a huge string literal in the document is not echoed back either', async () => {
    const r = await graphql(`mutation { deleteIntegrations(ids: ["${HUGE}"]) { ids } }`);
    expect(r.text.length).toBeLessThan(5_000);
    for (const e of r.body.errors!) expect(codePoints(e.message)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
  });

  it('a value of astral characters is cut on a code-point boundary (no lone surrogate)', async () => {
    const r = await graphql('mutation($ids: [UUID!]!) { deleteIntegrations(ids: $ids) { ids } }', { ids: ['😀'.repeat(50_000)] });
    const m = r.body.errors![0]!.message;
    expect(codePoints(m)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
    expect(/\p{Cs}/u.test(m)).toBe(false); // no lone surrogate
  });

  it('the log does not carry the value either', async () => {
    const marker = 'logmarker'.repeat(10_000);
    svc.logs.length = 0;
    await graphql('mutation($ids: [UUID!]!) { deleteIntegrations(ids: $ids) { ids } }', { ids: [marker] });
    expect(svc.logs.join('').length).toBeLessThan(20_000);
  });
});

describe('REST error messages are bounded', () => {
  it('an unknown 10 KB configuration type is not echoed back in full', async () => {
    const res = await svc.rest(`${P.replace(/\/[^/]*$/, '')}/${'T'.repeat(10_000)}`);
    expect(res.status).toBe(404);
    const body = (await res.json()) as { errors: { code: string; message: string }[] };
    expect(body.errors[0]!.code).toBe('NOT_FOUND');
    expect(codePoints(body.errors[0]!.message)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
  });

  it('an unknown 10 KB path is neither echoed back nor logged in full', async () => {
    svc.logs.length = 0;
    const res = await svc.rest(`/${'p'.repeat(10_000)}`);
    expect(res.status).toBe(404);
    const body = (await res.json()) as { errors: { message: string }[] };
    expect(codePoints(body.errors[0]!.message)).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
    await new Promise((r) => setImmediate(r));
    const line = svc.logs.find((l) => l.includes('"msg":"request"'));
    expect(line).toBeDefined();
    expect(line!.length).toBeLessThan(2_000);
  });
});
