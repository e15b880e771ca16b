/**
 * The root-cause reader over an in-memory API (the real apiserver path is in health-rootcause.int.test.ts): which
 * objects it picks, that it reads by owner within bounds, and that a 403 turns root causes off, said once.
 */
import { describe, expect, it } from 'vitest';
import type { CertManagerObject } from '../../../src/emitter/health/observe.js';
import {
  REVISION_ANNOTATION,
  RootCauseReader,
  orderNameOf,
  type IssuanceObject,
  type ListQuery,
  type RootCauseApi,
  type RootCausePlural,
} from '../../../src/emitter/rootcause/reader.js';
import { captureLogger } from '../../operator/support.js';

const NS = 'api';
const CERT_UID = '11111111-1111-4111-8111-111111111111';
const SELF_CHECK = "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'";

const owner = (kind: string, name: string, uid: string) => [
  {
    apiVersion: kind === 'Order' ? 'acme.cert-manager.io/v1' : 'cert-manager.io/v1',
    kind,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  },
];

const cert = (over: Partial<CertManagerObject['status']> = {}): CertManagerObject => ({
  apiVersion: 'cert-manager.io/v1',
  kind: 'Certificate',
  metadata: { name: 'api-tls', namespace: NS, uid: CERT_UID, labels: { team: 'api' } },
  status: { revision: 1, ...over },
});

function request(name: string, revision: string, uid: string, over: Partial<IssuanceObject> = {}): IssuanceObject {
  return {
    apiVersion: 'cert-manager.io/v1',
    kind: 'CertificateRequest',
    metadata: {
      name,
      namespace: NS,
      uid,
      labels: { team: 'api' },
      annotations: { 'cert-manager.io/certificate-name': 'api-tls', [REVISION_ANNOTATION]: revision },
      ownerReferences: owner('Certificate', 'api-tls', CERT_UID),
      creationTimestamp: '2026-12-01T10:00:00Z' as unknown as Date,
    },
    status: {
      conditions: [
        {
          type: 'Approved',
          status: 'True',
          reason: 'cert-manager.io',
          message: 'Certificate request has been approved by cert-manager.io',
        },
        {
          type: 'Ready',
          status: 'False',
          reason: 'Pending',
          message: `Waiting on certificate issuance from order ${NS}/${name}-2976254157: "pending"`,
        },
      ],
    },
    ...over,
  };
}

const order = (crName: string, crUid: string, uid: string): IssuanceObject => ({
  apiVersion: 'acme.cert-manager.io/v1',
  kind: 'Order',
  metadata: {
    name: `${crName}-2976254157`,
    namespace: NS,
    uid,
    labels: { team: 'api' },
    ownerReferences: owner('CertificateRequest', crName, crUid),
  },
  status: { state: 'pending' },
});

const challenge = (orderName: string, orderUid: string, reason: string): IssuanceObject => ({
  apiVersion: 'acme.cert-manager.io/v1',
  kind: 'Challenge',
  metadata: {
    name: `${orderName}-1825524577`,
    namespace: NS,
    uid: 'c0000000-0000-4000-8000-000000000001',
    ownerReferences: owner('Order', orderName, orderUid),
  },
  spec: { type: 'HTTP-01', dnsName: 'api.example.com' },
  status: { presented: true, processing: true, state: 'pending', reason },
});

/** An API over lists of objects, paging like the apiserver (continue = next index), recording every call. */
function fakeApi(objects: Record<RootCausePlural, IssuanceObject[]>, deny: RootCausePlural[] = []) {
  const calls: string[] = [];
  const forbidden = (plural: RootCausePlural) => Object.assign(new Error('forbidden'), { code: 403, plural });
  const api: RootCauseApi = {
    list(plural, namespace, q: ListQuery) {
      calls.push(`list ${plural} ${q.labelSelector ?? '-'} ${q.continue ?? 0}`);
      if (deny.includes(plural)) return Promise.reject(forbidden(plural));
      const sel = Object.fromEntries(
        (q.labelSelector ?? '')
          .split(',')
          .filter(Boolean)
          .map((kv) => kv.split('=')),
      );
      const all = objects[plural].filter(
        (o) => o.metadata?.namespace === namespace && Object.entries(sel).every(([k, v]) => o.metadata?.labels?.[k] === v),
      );
      const from = Number(q.continue ?? 0);
      const items = all.slice(from, from + q.limit);
      return Promise.resolve({ items, ...(from + q.limit < all.length ? { continue: String(from + q.limit) } : {}) });
    },
    get(plural, namespace, name) {
      if (plural === 'certificates') return Promise.resolve(objects.certificates.find((o) => o.metadata?.name === name));
      calls.push(`get ${plural} ${name}`);
      if (deny.includes(plural)) return Promise.reject(forbidden(plural));
      return Promise.resolve(objects[plural].find((o) => o.metadata?.namespace === namespace && o.metadata?.name === name));
    },
  };
  return { api, calls };
}

function sample12() {
  const cr = request('api-tls-1', '2', 'r0000000-0000-4000-8000-000000000002');
  const old = request('api-tls-0', '1', 'r0000000-0000-4000-8000-000000000001');
  old.status!.conditions = [{ type: 'Ready', status: 'True', reason: 'Issued', message: 'Certificate fetched from issuer successfully' }];
  const other = request('other-1', '2', 'r0000000-0000-4000-8000-000000000003', {});
  other.metadata!.ownerReferences = owner('Certificate', 'other', '22222222-2222-4222-8222-222222222222');
  const o = order('api-tls-1', cr.metadata!.uid!, 'o0000000-0000-4000-8000-000000000001');
  const decoy = order('api-tls-0', old.metadata!.uid!, 'o0000000-0000-4000-8000-000000000002');
  return {
    certificates: [cert() as IssuanceObject],
    certificaterequests: [other, old, cr],
    orders: [decoy, o],
    challenges: [
      challenge(decoy.metadata!.name!, decoy.metadata!.uid!, 'Error presenting challenge: secret "x" not found'),
      challenge(o.metadata!.name!, o.metadata!.uid!, SELF_CHECK),
    ],
  };
}

describe('RootCauseReader', () => {
  it('finds the Challenge three objects down: the request of revision+1 the Certificate owns, its Order, its Challenge', async () => {
    const { api, calls } = fakeApi(sample12());
    // the informer's copy has neither labels nor revision: the reader reads the Certificate again
    const rc = await new RootCauseReader({ api, log: captureLogger().logger }).find({ metadata: { namespace: NS, name: 'api-tls' } });
    expect(rc).toMatchObject({
      class: 'http-self-check',
      message: SELF_CHECK,
      resource: 'Challenge api/api-tls-1-2976254157-1825524577 (HTTP-01 api.example.com)',
    });
    // by label within the namespace; the Order by the name the request gives; Challenges by owner
    expect(calls).toEqual(['list certificaterequests team=api 0', 'get orders api-tls-1-2976254157', 'list challenges - 0']);
  });

  it('reads no Order for a request that names none (not ACME)', async () => {
    const objs = sample12();
    objs.certificaterequests[2]!.status!.conditions = [
      {
        type: 'Ready',
        status: 'False',
        reason: 'Failed',
        message: 'Vault failed to sign certificate: Code: 403. Errors: * permission denied',
      },
    ];
    const { api, calls } = fakeApi(objs);
    const rc = await new RootCauseReader({ api, log: captureLogger().logger }).find(cert());
    expect(rc).toMatchObject({ class: 'credentials', resource: 'CertificateRequest api/api-tls-1' });
    expect(calls).toEqual(['list certificaterequests team=api 0']);
  });

  it('reads at most maxPages pages of a kind', async () => {
    const objs = sample12();
    const many = Array.from({ length: 50 }, (_, i) => {
      const r = request(`filler-${i}`, '2', `f0000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
      r.metadata!.ownerReferences = owner('Certificate', 'other', '33333333-3333-4333-8333-333333333333');
      return r;
    });
    objs.certificaterequests = [...many, ...objs.certificaterequests];
    const { api, calls } = fakeApi(objs);
    const rc = await new RootCauseReader({ api, log: captureLogger().logger, pageSize: 10, maxPages: 3 }).find(cert());
    expect(rc).toBeUndefined();
    expect(calls.filter((c) => c.startsWith('list certificaterequests'))).toHaveLength(3);
  });

  it('without RBAC for orders: no root cause, said once in the log, not asked again until forbiddenRetryMs', async () => {
    const { api, calls } = fakeApi(sample12(), ['orders']);
    const logs = captureLogger();
    let now = 0;
    const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
    const reader = new RootCauseReader({ api, log: logs.logger, clock, forbiddenRetryMs: 60_000 });
    expect(await reader.find(cert())).toBeUndefined();
    expect(await reader.find(cert())).toBeUndefined();
    expect(calls).toHaveLength(2); // the second lookup asked nothing
    now = 61_000;
    expect(await reader.find(cert())).toBeUndefined();
    expect(calls).toHaveLength(4);
    const told = logs.lines.filter((l) => l.includes('root causes are off'));
    expect(told).toHaveLength(1);
    expect(JSON.parse(told[0]!)).toMatchObject({ level: 40, resource: 'orders.acme.cert-manager.io' });
  });

  it('another failure (5xx, timeout) costs only this lookup', async () => {
    const { api } = fakeApi(sample12());
    let fail = true;
    const flaky: RootCauseApi = {
      list: (...a) => (fail ? Promise.reject(Object.assign(new Error('boom'), { code: 500 })) : api.list(...a)),
      get: (...a) => api.get(...a),
    };
    const reader = new RootCauseReader({ api: flaky, log: captureLogger().logger });
    expect(await reader.find(cert())).toBeUndefined();
    fail = false;
    expect(await reader.find(cert())).toMatchObject({ class: 'http-self-check' });
  });

  it('gives up when no slot frees within the deadline', async () => {
    const { api } = fakeApi(sample12());
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow: RootCauseApi = { list: async (...a) => (await held, api.list(...a)), get: (...a) => api.get(...a) };
    const reader = new RootCauseReader({ api: slow, log: captureLogger().logger, concurrency: 1, timeoutMs: 50 });
    const first = reader.find(cert());
    expect(await reader.find(cert())).toBeUndefined();
    release();
    await first;
  });
});

describe('orderNameOf', () => {
  it.each([
    ['Waiting on certificate issuance from order api/api-tls-1-2976254157: "pending"', 'api-tls-1-2976254157'],
    ['Created Order resource api/api-tls-1-2976254157', 'api-tls-1-2976254157'],
    ['Failed to wait for order resource "api-tls-1-2976254157" to become ready', 'api-tls-1-2976254157'],
    ['Waiting for order-controller to add certificate data to Order api/api-tls-1-2976254157', 'api-tls-1-2976254157'],
    ['Waiting on certificate issuance from order other/api-tls-1-2976254157: "pending"', undefined],
    ['Certificate fetched from issuer successfully', undefined],
  ])('%s', (message, name) => {
    expect(orderNameOf(message, 'api')).toBe(name);
  });
});
