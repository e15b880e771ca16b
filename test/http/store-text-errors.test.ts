/**
 * StoreInvalidTextError (NUL or a lone surrogate refused by the store, on both engines) is the caller's input,
 * not a server fault: REST answers 400 BAD_USER_INPUT and GraphQL BAD_USER_INPUT, naming no value. Validation
 * catches such text before the store today, so a thin store seam makes the real store refuse it (the real
 * store code raises the error; the seam only appends a NUL to the company id of the chosen calls).
 */
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { GraphQLError } from 'graphql';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.js';
import { ApiKeyRing } from '../../src/http/auth.js';
import { formatError } from '../../src/http/graphql/handler.js';
import { MONITORING_CONFIG_PATH } from '../../src/client/operations.js';
import { StoreInvalidTextError } from '../../src/store/errors.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { COMPANY_A, KEY_A } from '../support/service.js';

describe('formatError maps StoreInvalidTextError', () => {
  it('to BAD_USER_INPUT without the store message', () => {
    const err = new StoreInvalidTextError('store: text parameter 3 contains a NUL character (U+0000); not stored');
    const e = formatError(new GraphQLError(err.message, { originalError: err, path: ['createIntegration'] }));
    expect(e.extensions.code).toBe('BAD_USER_INPUT');
    expect(e.message).toMatch(/NUL character or invalid Unicode/);
    expect(e.message).not.toMatch(/parameter/);
  });
});

const SECRET_TEXT = 'sekrit-value';

/** The real store; listed calls get the company id with a NUL appended, so the store refuses them. */
function nulCompanyStore(real: Store, methods: readonly string[]): Store {
  return new Proxy(real, {
    get(target, key) {
      const v = Reflect.get(target, key, target) as unknown;
      if (typeof v !== 'function') return v;
      const f = v as (...a: unknown[]) => unknown;
      if (!methods.includes(String(key))) return f.bind(target);
      return (companyId: string, ...rest: unknown[]) => f.call(target, `${companyId}\u0000${SECRET_TEXT}`, ...rest);
    },
  });
}

let server: Server;
let url: string;
let store: Store;
const logs: string[] = [];
beforeAll(async () => {
  store = await openStore('sqlite::memory:');
  await store.migrate();
  const logger = pino({ level: 'debug' }, new Writable({ write: (c, _e, cb) => (logs.push(String(c)), cb()) }));
  const app = createApp({
    store: nulCompanyStore(store, ['getMonitoringConfig', 'listIntegrations']),
    keys: new ApiKeyRing([{ key: KEY_A, companyId: COMPANY_A }]),
    logger,
    requestTimeoutMs: 30_000,
  });
  server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await store?.close();
});

describe('the API answers a refused text as bad input', () => {
  it('REST: 400 BAD_USER_INPUT, naming no value', async () => {
    const res = await fetch(url + MONITORING_CONFIG_PATH, { headers: { 'svc-api-key': KEY_A } });
    expect(res.status).toBe(400);
    const text = await res.text();
    const body = JSON.parse(text) as { errors: { code: string; message: string }[] };
    expect(body.errors[0]!.code).toBe('BAD_USER_INPUT');
    expect(text).not.toContain(SECRET_TEXT);
    expect(text).not.toMatch(/parameter \d/);
  });

  it('GraphQL: BAD_USER_INPUT, naming no value', async () => {
    const res = await fetch(url + '/graphql', {
      method: 'POST',
      headers: { 'svc-api-key': KEY_A, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ integrations { nodes { id } } }' }),
    });
    const text = await res.text();
    const body = JSON.parse(text) as { errors: { message: string; extensions: { code: string } }[] };
    expect(body.errors[0]!.extensions.code).toBe('BAD_USER_INPUT');
    expect(text).not.toContain(SECRET_TEXT);
  });
});
