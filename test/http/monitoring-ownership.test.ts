/**
 * ownership across clusters, through the real service: two "clusters" (two manager headers) and the
 * plain API. Another manager's write is 409 CONFLICT naming the current one and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANAGER_HEADER, RELEASE_HEADER } from '../../src/model/manager.js';
import { KEY_B, startTestService, type TestService } from '../support/service.js';

const P = '/outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_EXPIRATION';
const C1 = 'k8s:MonitoringConfig//default@cluster-1';
const C2 = 'k8s:MonitoringConfig//default@cluster-2';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite');
});
afterAll(async () => {
  await svc?.close();
});

const body = (thresholds: number[]) =>
  JSON.stringify({
    inventoryMonitoringConfiguration: {
      inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
      enabled: true,
      thresholds,
      applicationIds: [],
      includeUnassignedCertificates: true,
    },
  });

// KEY_B: a company of its own, so other tests' writes do not interfere
const put = (thresholds: number[], headers: Record<string, string> = {}) =>
  svc.rest(P, { key: KEY_B, method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body: body(thresholds) });
const get = () => svc.rest(P, { key: KEY_B });

describe('monitoring configuration ownership', () => {
  it('claims, refuses another cluster, lets the API take over, and releases only for the manager', async () => {
    // cluster 1 claims the unmanaged record
    let r = await put([30], { [MANAGER_HEADER]: C1 });
    expect(r.status).toBe(200);
    expect(r.headers.get(MANAGER_HEADER)).toBe(C1);

    // cluster 2 is refused with CONFLICT naming cluster 1, and nothing changes
    r = await put([7], { [MANAGER_HEADER]: C2 });
    expect(r.status).toBe(409);
    const err = (await r.json()) as { errors: { code: string; message: string }[] };
    expect(err.errors[0]).toMatchObject({ code: 'CONFLICT', message: `the monitoring configuration is managed by ${C1}` });
    r = await get();
    expect(r.headers.get(MANAGER_HEADER)).toBe(C1);
    expect(((await r.json()) as { configuration: { thresholds: number[] } }).configuration.thresholds).toEqual([30]);

    // a delete in cluster 2 (release) does not reset cluster 1's record either
    expect((await put([30, 7], { [MANAGER_HEADER]: C2, [RELEASE_HEADER]: 'true' })).status).toBe(409);

    // a plain API PUT takes the record over; then cluster 1 is refused too
    r = await put([14]);
    expect(r.status).toBe(200);
    expect(r.headers.get(MANAGER_HEADER)).toBe('api');
    r = await put([30], { [MANAGER_HEADER]: C1 });
    expect(r.status).toBe(409);
    expect(await r.text()).toContain('managed by the API');

    // the API hands it back (release without a manager): the record is unmanaged, and the next operator write claims it
    r = await put([14], { [RELEASE_HEADER]: 'true' });
    expect(r.status).toBe(200);
    expect(r.headers.get(MANAGER_HEADER)).toBeNull();
    expect((await put([7], { [MANAGER_HEADER]: C2 })).headers.get(MANAGER_HEADER)).toBe(C2);

    // the manager's CR is deleted: it writes the defaults and gives the record up
    r = await put([30], { [MANAGER_HEADER]: C2, [RELEASE_HEADER]: 'true' });
    expect(r.status).toBe(200);
    expect(r.headers.get(MANAGER_HEADER)).toBeNull();
    expect((await put([30], { [MANAGER_HEADER]: C1 })).status).toBe(200);
  });

  it('refuses a malformed manager header', async () => {
    const r = await put([30], { [MANAGER_HEADER]: 'cluster 1' });
    expect(r.status).toBe(400);
    expect(await r.text()).toContain(MANAGER_HEADER);
  });
});
