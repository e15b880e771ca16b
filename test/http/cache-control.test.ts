/** Every answer behind the API key (REST, GraphQL, events, inventory, refusals) carries Cache-Control: no-store. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite');
});
afterAll(async () => {
  await svc.close();
});

const gql = (query: string, key?: string | null) =>
  svc.rest('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
    ...(key !== undefined ? { key } : {}),
  });

describe('Cache-Control on authenticated answers', () => {
  it.each<[string, () => Promise<Response>, number]>([
    ['REST GET monitoring configuration (none yet)', () => svc.rest('/outagedetection/v1/inventorymonitoringconfig'), 404],
    ['REST CSV export', () => svc.rest('/v1/inventory/certificates.csv'), 200],
    ['GraphQL query', () => gql('{ integrations { totalCount } }'), 200],
    ['GraphQL mutation refused', () => gql('mutation { deleteIntegrations(ids: ["x"]) }'), 200],
    ['GraphQL without a key', () => gql('{ integrations { totalCount } }', null), 401],
    ['REST with a wrong key', () => svc.rest('/outagedetection/v1/inventorymonitoringconfig', { key: 'wrong-key-0123456789' }), 401],
    [
      'POST /v1/events refused',
      () => svc.rest('/v1/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
      400,
    ],
  ])('%s: no-store', async (_what, send, status) => {
    const res = await send();
    await res.arrayBuffer();
    expect(res.status).toBe(status);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('unauthenticated endpoints are left alone', async () => {
    const res = await svc.rest('/healthz', { key: null });
    await res.arrayBuffer();
    expect(res.headers.get('cache-control')).toBeNull();
  });
});
