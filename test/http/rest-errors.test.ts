/** REST rejections: each names the field, returns the error body shape, and changes nothing. */
import { asAny } from '../support/any.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MONITORING_CONFIG_PATH as P } from '../../src/client/operations.js';
import { startTestService, type TestService } from '../support/service.js';

const valid = () => ({
  inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
  enabled: true,
  thresholds: [30, 14, 7],
  applicationIds: [],
  includeUnassignedCertificates: true,
});

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite');
});
afterAll(async () => {
  await svc?.close();
});

const put = (body: unknown, headers: Record<string, string> = { 'Content-Type': 'application/json' }) =>
  svc.rest(P, { method: 'PUT', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });

describe('PUT validation', () => {
  const F = 'inventoryMonitoringConfiguration';
  const cases: [string, (c: Record<string, unknown>) => unknown, string, RegExp][] = [
    ['more than 3 thresholds', (c) => ({ ...c, thresholds: [30, 14, 7, 1] }), `${F}.thresholds`, /at most 3/],
    ['non-integer threshold', (c) => ({ ...c, thresholds: [1.5] }), `${F}.thresholds[0]`, /integer/],
    ['string threshold', (c) => ({ ...c, thresholds: ['30'] }), `${F}.thresholds[0]`, /integer/],
    ['zero threshold', (c) => ({ ...c, thresholds: [0] }), `${F}.thresholds[0]`, /greater than 0/],
    ['negative threshold', (c) => ({ ...c, thresholds: [-3] }), `${F}.thresholds[0]`, /greater than 0/],
    ['threshold over 3650', (c) => ({ ...c, thresholds: [3651] }), `${F}.thresholds[0]`, /at most 3650/],
    ['duplicate thresholds', (c) => ({ ...c, thresholds: [30, 30] }), `${F}.thresholds[1]`, /duplicate/],
    ['thresholds not an array', (c) => ({ ...c, thresholds: 30 }), `${F}.thresholds`, /array/],
    [
      'wrong configuration type',
      (c) => ({ ...c, inventoryMonitoringConfigurationType: 'CERTIFICATE_ISSUANCE' }),
      `${F}.inventoryMonitoringConfigurationType`,
      /CERTIFICATE_EXPIRATION/,
    ],
    ['enabled not boolean', (c) => ({ ...c, enabled: 'yes' }), `${F}.enabled`, /boolean/],
    ['includeUnassigned not boolean', (c) => ({ ...c, includeUnassignedCertificates: 1 }), `${F}.includeUnassignedCertificates`, /boolean/],
    ['applicationIds not array', (c) => ({ ...c, applicationIds: 'app-1' }), `${F}.applicationIds`, /array/],
    ['applicationIds element not string', (c) => ({ ...c, applicationIds: [7] }), `${F}.applicationIds[0]`, /string/],
    ['missing enabled', ({ enabled: _e, ...c }) => c, `${F}.enabled`, /required/],
    ['missing thresholds', ({ thresholds: _t, ...c }) => c, `${F}.thresholds`, /required/],
    ['missing applicationIds', ({ applicationIds: _a, ...c }) => c, `${F}.applicationIds`, /required/],
    [
      'missing includeUnassignedCertificates',
      ({ includeUnassignedCertificates: _i, ...c }) => c,
      `${F}.includeUnassignedCertificates`,
      /required/,
    ],
    ['missing type', ({ inventoryMonitoringConfigurationType: _t, ...c }) => c, `${F}.inventoryMonitoringConfigurationType`, /required/],
    ['unknown field', (c) => ({ ...c, treshold: [1] }), `${F}.treshold`, /unknown field/],
  ];
  it.each(cases)('rejects %s with 400 naming the field, changing nothing', async (_name, mutate, field, msg) => {
    const before = await (await svc.rest(P)).json().then(asAny);
    const res = await put({ [F]: mutate(valid()) });
    expect(res.status).toBe(400);
    const body = await res.json().then(asAny);
    expect(body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'BAD_USER_INPUT', field })]));
    expect(body.errors.find((e: { field: string }) => e.field === field).message).toMatch(msg);
    expect(await (await svc.rest(P)).json().then(asAny)).toEqual(before);
  });

  it('rejects a body without the wrapper object', async () => {
    const res = await put(valid());
    expect(res.status).toBe(400);
    const body = await res.json().then(asAny);
    expect(body.errors.map((e: { field: string }) => e.field)).toContain('inventoryMonitoringConfiguration');
  });
});

describe('HTTP-level errors', () => {
  it('400 on malformed JSON', async () => {
    const res = await put('{"inventoryMonitoringConfiguration": {');
    expect(res.status).toBe(400);
    expect((await res.json().then(asAny)).errors[0]).toMatchObject({ code: 'MALFORMED_JSON' });
  });
  it('401 on a missing or wrong key', async () => {
    const r1 = await svc.rest(P, { key: null });
    expect(r1.status).toBe(401);
    expect((await r1.json().then(asAny)).errors[0]).toMatchObject({
      code: 'UNAUTHENTICATED',
      message: expect.stringContaining('svc-api-key'),
    });
    const r2 = await svc.rest(P, { key: 'not-a-valid-key-0000' });
    expect(r2.status).toBe(401);
  });
  it('404 on other configuration types and unknown paths', async () => {
    const r1 = await svc.rest('/outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_ISSUANCE');
    expect(r1.status).toBe(404);
    expect((await r1.json().then(asAny)).errors[0].code).toBe('NOT_FOUND');
    const r2 = await svc.rest('/nope');
    expect(r2.status).toBe(404);
  });
  it('405 with Allow on other methods', async () => {
    const res = await svc.rest(P, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, PUT');
    expect((await res.json().then(asAny)).errors[0].code).toBe('METHOD_NOT_ALLOWED');
    const g = await svc.rest('/graphql', { method: 'GET' });
    expect(g.status).toBe(405);
  });
  it('413 on a body over 1 MiB', async () => {
    const big = JSON.stringify({ inventoryMonitoringConfiguration: { ...valid(), pad: 'x'.repeat(1024 * 1024 + 10) } });
    const res = await put(big);
    expect(res.status).toBe(413);
    expect((await res.json().then(asAny)).errors[0].code).toBe('PAYLOAD_TOO_LARGE');
  });
  it('415 on a non-JSON body', async () => {
    const res = await put('enabled=true', { 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(415);
    expect((await res.json().then(asAny)).errors[0].code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const g = await svc.rest('/graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: '{ integrations { nodes { id } } }',
    });
    expect(g.status).toBe(415);
  });
});
