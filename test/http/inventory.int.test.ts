/**
 * The inventory API through a real `serve` (SQLite and PostgreSQL): POST /v1/inventory's protocol (snapshot in
 * chunks, deltas, duplicates, gaps, new epochs), scopes, tenancy, GraphQL listing and pagination, CSV export.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import type { CertificateFacts, InventoryReport } from '../../src/model/inventory.js';
import type { ServingEndpointFacts } from '../../src/model/serving.js';
import { COMPANY_A, KEY_A as KEY_ADMIN, KEY_B, startTestService, type StoreKind, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

const AGENT = 'agent-key-company-a-0123456789';
const READ = 'read-key-company-a-01234567890';
const DAY = 86_400_000;

export function facts(namespace: string, secretName: string, over: Partial<CertificateFacts> = {}): CertificateFacts {
  return {
    namespace,
    secretName,
    certificateName: secretName,
    certificateUid: randomUUID(),
    serial: randomUUID().replace(/-/g, '').toUpperCase(),
    notBefore: new Date(Date.now() - 10 * DAY).toISOString(),
    notAfter: new Date(Date.now() + 30 * DAY).toISOString(),
    subject: `CN=${secretName}.example.com`,
    commonName: `${secretName}.example.com`,
    dnsNames: [`${secretName}.example.com`],
    issuer: 'CN=Example CA, O=Example',
    issuerRef: { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
    ready: { status: 'True', reason: 'Ready' },
    applicationIds: [],
    labels: { app: secretName },
    chainNotAfter: new Date(Date.now() + 300 * DAY).toISOString(),
    ...over,
  };
}

/** An endpoint of a certificate (docs/serving.md), probed a minute ago unless it says otherwise. */
export function endpoint(
  host: string,
  status: ServingEndpointFacts['status'],
  over: Partial<ServingEndpointFacts> = {},
): ServingEndpointFacts {
  const probed = status !== 'notProbed' && status !== 'pending';
  return {
    host,
    address: status === 'notProbed' ? null : `${host}:443`,
    source: { kind: 'Ingress', namespace: 'web', name: 'shop' },
    status,
    ...(status === 'notProbed' ? { reason: 'no address: no probe-address annotation and no load balancer' } : {}),
    servedSerial: probed ? 'C0FFEE' : null,
    servedNotAfter: probed ? new Date(Date.now() + 20 * DAY).toISOString() : null,
    checkedAt: probed ? new Date(Date.now() - 60_000).toISOString() : null,
    ...over,
  };
}

export function report(
  cluster: { id: string; name: string },
  epoch: string,
  seq: number,
  over: Partial<InventoryReport> = {},
): InventoryReport {
  return { protocol: 1, cluster, agentVersion: '0.1.0', epoch, seq, kind: 'delta', upserts: [], deletes: [], ...over };
}

describe.each<StoreKind>(['sqlite', 'postgres'])('inventory API (%s)', (kind) => {
  let svc: TestService;
  beforeAll(async () => {
    const f = join(mkdtempSync(join(tmpdir(), 'cmn-inv-')), 'keys.yaml');
    writeFileSync(
      f,
      [
        'keys:',
        `  - { key: ${AGENT}, companyId: ${COMPANY_A}, scope: agent }`,
        `  - { key: ${READ}, companyId: ${COMPANY_A}, scope: read }`,
        '',
      ].join('\n'),
    );
    svc = await startTestService(kind, ['--api-keys-file', f, ...limitsFile({ deliveryWorkers: 0, maxClustersPerCompany: 20 })]);
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
  });

  const post = async (body: unknown, key = AGENT) => {
    const r = await svc.rest('/v1/inventory', {
      key,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      status: r.status,
      body: (await r.json()) as Record<string, unknown> & { errors?: { code: string; field?: string; message: string }[] },
    };
  };
  const gql = async (query: string, variables: Record<string, unknown> = {}, key = READ) => {
    const r = await svc.rest('/graphql', {
      key,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- GraphQL JSON
    return { status: r.status, json: (await r.json()) as any };
  };
  const certsOf = async (clusterId: string, key = READ): Promise<{ namespace: string; secretName: string; serial: string | null }[]> => {
    const r = await gql(
      `query($c: UUID) { certificates(filter: { clusterId: $c }, first: 500) { nodes { namespace secretName serial } } }`,
      { c: clusterId },
      key,
    );
    expect(r.json.errors).toBeUndefined();
    return r.json.data.certificates.nodes;
  };
  const clusterOf = async (id: string, key = READ) => {
    const r = await gql(`{ clusters { nodes { id name lastSeenAt certificateCount agentVersion silent snapshotComplete } } }`, {}, key);
    expect(r.json.errors).toBeUndefined();
    return (
      r.json.data.clusters.nodes as { id: string; certificateCount: number; silent: boolean; snapshotComplete: boolean; name: string }[]
    ).find((c) => c.id === id);
  };

  it('a snapshot in 3 chunks, deltas, a harmless duplicate replay, a gap refused, a new epoch removing vanished rows', async () => {
    const cluster = { id: randomUUID(), name: `prod-${kind}` };
    const e1 = randomUUID();
    const items = Array.from({ length: 9 }, (_, i) => facts('web', `tls-${i}`));
    const chunk = (seq: number, final: boolean) =>
      report(cluster, e1, seq, { kind: 'snapshot', ...(final ? { final: true } : {}), upserts: items.slice((seq - 1) * 3, seq * 3) });
    expect((await post(chunk(1, false))).body).toEqual({ status: 'applied', clusterId: cluster.id, epoch: e1, seq: 1 });
    // until the final chunk the cluster is incomplete
    expect((await clusterOf(cluster.id))?.snapshotComplete).toBe(false);
    expect((await post(chunk(2, false))).status).toBe(200);
    expect((await post(chunk(3, true))).body.status).toBe('applied');
    expect(await clusterOf(cluster.id)).toMatchObject({ name: cluster.name, certificateCount: 9, snapshotComplete: true, silent: false });
    expect((await certsOf(cluster.id)).length).toBe(9);

    // deltas: change one, delete one, add one
    const changed = { ...items[0]!, serial: 'ABCDEF01' };
    const d4 = report(cluster, e1, 4, {
      upserts: [changed, facts('api', 'new-one')],
      deletes: [{ namespace: 'web', secretName: 'tls-1' }],
    });
    expect((await post(d4)).body.status).toBe('applied');
    let certs = await certsOf(cluster.id);
    expect(certs.length).toBe(9);
    expect(certs.find((c) => c.secretName === 'tls-0')?.serial).toBe('ABCDEF01');
    expect(certs.some((c) => c.secretName === 'tls-1')).toBe(false);

    // a replay of an applied report (and of an older one, with other content) changes nothing
    const before = await certsOf(cluster.id);
    expect((await post(d4)).body).toEqual({ status: 'duplicate', clusterId: cluster.id, epoch: e1, seq: 4 });
    expect((await post(report(cluster, e1, 2, { kind: 'snapshot', upserts: [facts('web', 'ghost')] }))).body.status).toBe('duplicate');
    expect(await certsOf(cluster.id)).toEqual(before);
    expect((await clusterOf(cluster.id))?.certificateCount).toBe(9);

    // a gap: 409 RESYNC_REQUIRED, nothing written
    const gap = await post(report(cluster, e1, 6, { upserts: [facts('web', 'after-gap')] }));
    expect(gap.status).toBe(409);
    expect(gap.body).toMatchObject({ code: 'RESYNC_REQUIRED', clusterId: cluster.id, epoch: e1, seq: 6 });
    expect(gap.body.errors?.[0]?.code).toBe('RESYNC_REQUIRED');
    expect(await certsOf(cluster.id)).toEqual(before);

    // a new epoch: a full snapshot of what is left; the final report removes the rows it did not see
    const e2 = randomUUID();
    const keep = [changed, items[2]!, facts('api', 'new-one')];
    expect((await post(report(cluster, e2, 1, { kind: 'snapshot', upserts: keep.slice(0, 2) }))).status).toBe(200);
    // during the new sync the old rows stay visible
    expect((await certsOf(cluster.id)).length).toBe(9);
    expect((await post(report(cluster, e2, 2, { kind: 'snapshot', final: true, upserts: keep.slice(2) }))).status).toBe(200);
    certs = await certsOf(cluster.id);
    expect(certs.map((c) => `${c.namespace}/${c.secretName}`).sort()).toEqual(['api/new-one', 'web/tls-0', 'web/tls-2']);
    expect((await clusterOf(cluster.id))?.certificateCount).toBe(3);
    // the old epoch's reports are refused now
    expect((await post(report(cluster, e1, 5))).status).toBe(409);
  });

  it('the same report sent 10 times at once is applied once; the others are duplicates', async () => {
    const cluster = { id: randomUUID(), name: 'racy' };
    const r = report(cluster, randomUUID(), 1, { kind: 'snapshot', final: true, upserts: [facts('r', 'a'), facts('r', 'b')] });
    // past 8 in flight per company a report is refused (429 TOO_MANY_REQUESTS) before it is read; it is sent
    // again, as an agent does after Retry-After
    const send = async (): Promise<Awaited<ReturnType<typeof post>>> => {
      for (;;) {
        const a = await post(r);
        if (a.status !== 429) return a;
        expect(a.body.errors?.[0]?.code).toBe('TOO_MANY_REQUESTS');
        await new Promise((res) => setTimeout(res, 20));
      }
    };
    const answers = await Promise.all(Array.from({ length: 10 }, send));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 10 }, () => 200));
    expect(answers.filter((a) => a.body.status === 'applied')).toHaveLength(1);
    expect(await clusterOf(cluster.id)).toMatchObject({ certificateCount: 2 });
  });

  it('a full report of 1,000 certificates over 1 MiB is applied; a body over 4 MiB is 413', async () => {
    const cluster = { id: randomUUID(), name: 'big' };
    const upserts = Array.from({ length: 1000 }, (_, i) =>
      facts('big', `tls-${i}`, { dnsNames: Array.from({ length: 8 }, (_, j) => `${'n'.repeat(180)}-${i}-${j}.example.com`) }),
    );
    const body = report(cluster, randomUUID(), 1, { kind: 'snapshot', final: true, upserts });
    expect(JSON.stringify(body).length).toBeGreaterThan(1024 * 1024);
    expect((await post(body)).body.status).toBe('applied');
    expect((await clusterOf(cluster.id))?.certificateCount).toBe(1000);
    const huge = await post({ ...body, seq: 2, kind: 'delta', final: undefined, padding: 'x'.repeat(4 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    expect(huge.body.errors?.[0]?.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('scopes: an agent key posts but cannot query; a read key queries but cannot post', async () => {
    const r = await svc.rest('/graphql', {
      key: AGENT,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ clusters { nodes { id } } }' }),
    });
    expect(r.status).toBe(403);
    expect((await svc.rest('/v1/inventory/certificates.csv', { key: AGENT })).status).toBe(403);
    const p = await post(report({ id: randomUUID(), name: 'x' }, randomUUID(), 1, { kind: 'snapshot' }), READ);
    expect(p.status).toBe(403);
    expect(p.body.errors?.[0]?.code).toBe('FORBIDDEN');
    expect((await svc.rest('/v1/inventory/certificates.csv', { key: READ })).status).toBe(200);
  });

  it('validation: 400 naming the path; nothing written', async () => {
    const cluster = { id: randomUUID(), name: 'bad' };
    const bad = report(cluster, randomUUID(), 1, {
      kind: 'snapshot',
      upserts: [facts('web', 'a'), facts('web', 'b'), facts('web', 'c'), facts('web', 'd', { notAfter: '2026-13-01T00:00:00Z' })],
    });
    const r = await post(bad);
    expect(r.status).toBe(400);
    expect(r.body.errors?.map((e) => e.field)).toEqual(['upserts[3].notAfter']);
    expect(r.body.errors?.[0]?.message).toMatch(/^upserts\[3\]\.notAfter must be an RFC 3339 timestamp/);
    expect(await clusterOf(cluster.id)).toBeUndefined();
  });

  it('tenancy: company B sees none of A’s clusters or certificates; the same cluster id is separate per company', async () => {
    const cluster = { id: randomUUID(), name: 'shared-id' };
    expect((await post(report(cluster, randomUUID(), 1, { kind: 'snapshot', final: true, upserts: [facts('a', 'only-a')] }))).status).toBe(
      200,
    );
    expect(await clusterOf(cluster.id, KEY_B)).toBeUndefined();
    expect(await certsOf(cluster.id, KEY_B)).toEqual([]);
    const csv = await (await svc.rest(`/v1/inventory/certificates.csv?clusterId=${cluster.id}`, { key: KEY_B })).text();
    expect(csv.split('\r\n').filter(Boolean).length).toBe(1); // the header only
    // B reporting the same cluster id is B's own cluster; A's rows are untouched
    expect((await post(report(cluster, randomUUID(), 1, { kind: 'snapshot', final: true, upserts: [] }), KEY_B)).status).toBe(200);
    expect((await certsOf(cluster.id)).map((c) => c.secretName)).toEqual(['only-a']);
    expect((await clusterOf(cluster.id, KEY_B))?.certificateCount).toBe(0);
  });

  it('pagination: stable keyset pages in notAfter order, no row twice or missed, nulls last', async () => {
    const cluster = { id: randomUUID(), name: 'paged' };
    const base = Date.now() + 5 * DAY;
    const upserts = Array.from({ length: 23 }, (_, i) =>
      facts('p', `c-${String(i).padStart(2, '0')}`, {
        // ties on notAfter (pairs) and a few without a certificate
        notAfter: i >= 20 ? null : new Date(base + Math.floor(i / 2) * DAY).toISOString(),
        serial: i >= 20 ? null : `0${i}`,
      }),
    );
    expect((await post(report(cluster, randomUUID(), 1, { kind: 'snapshot', final: true, upserts }))).status).toBe(200);
    const seen: { secretName: string; notAfter: string | null }[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const r = await gql(
        `query($c: UUID, $a: String) { certificates(filter: { clusterId: $c }, first: 4, after: $a) { nodes { secretName notAfter daysUntilExpiry } pageInfo { endCursor hasNextPage } } }`,
        { c: cluster.id, a: after },
      );
      expect(r.json.errors).toBeUndefined();
      const page = r.json.data.certificates;
      seen.push(...page.nodes);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen.map((s) => s.secretName)).toEqual(upserts.map((u) => u.secretName));
    expect(seen.slice(20).every((s) => s.notAfter === null)).toBe(true);
    // clusters page by id
    const c1 = await gql(`{ clusters(first: 1) { nodes { id } pageInfo { endCursor hasNextPage } } }`);
    expect(c1.json.data.clusters.pageInfo.hasNextPage).toBe(true);
    const c2 = await gql(`query($a: String) { clusters(first: 500, after: $a) { nodes { id } } }`, {
      a: c1.json.data.clusters.pageInfo.endCursor,
    });
    const ids = c2.json.data.clusters.nodes.map((n: { id: string }) => n.id);
    expect(ids).not.toContain(c1.json.data.clusters.nodes[0].id);
    expect([...ids].sort()).toEqual(ids);
    // a cursor that is not ours
    const bad = await gql(`{ certificates(after: "bm90IGEgY3Vyc29y") { nodes { serial } } }`);
    expect(bad.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  it('filters: expiringWithinDays (expired included), health, applicationId, namespace', async () => {
    const cluster = { id: randomUUID(), name: 'filters' };
    const upserts = [
      facts('f', 'expired', { notAfter: new Date(Date.now() - 2 * DAY + 3_600_000).toISOString() }),
      facts('f', 'soon', {
        notAfter: new Date(Date.now() + 3 * DAY + 3_600_000).toISOString(),
        ready: { status: 'False', reason: 'Failed' },
      }),
      facts('g', 'later', { applicationIds: ['app-1', 'app-2'] }),
      facts('g', 'unmanaged', { ready: undefined, certificateName: undefined, certificateUid: undefined, notAfter: null, serial: null }),
    ];
    expect((await post(report(cluster, randomUUID(), 1, { kind: 'snapshot', final: true, upserts }))).status).toBe(200);
    const names = async (filter: Record<string, unknown>) => {
      const r = await gql(`query($f: CertificateFilter) { certificates(filter: $f) { nodes { secretName daysUntilExpiry health } } }`, {
        f: { clusterId: cluster.id, ...filter },
      });
      expect(r.json.errors).toBeUndefined();
      return r.json.data.certificates.nodes as { secretName: string; daysUntilExpiry: number | null; health: string }[];
    };
    const within = await names({ expiringWithinDays: 7 });
    expect(within.map((n) => n.secretName)).toEqual(['expired', 'soon']);
    expect(within.map((n) => n.daysUntilExpiry)).toEqual([-2, 3]);
    // one rule for days left: 'soon' shows 3 days left (3 d 1 h), so it is within 3 days
    expect((await names({ expiringWithinDays: 3 })).map((n) => n.secretName)).toEqual(['expired', 'soon']);
    expect((await names({ expiringWithinDays: 2 })).map((n) => n.secretName)).toEqual(['expired']);
    expect((await names({ health: 'NOT_READY' })).map((n) => n.secretName)).toEqual(['soon']);
    expect((await names({ health: 'UNKNOWN' })).map((n) => n.secretName)).toEqual(['unmanaged']);
    expect((await names({ applicationId: 'app-2' })).map((n) => n.secretName)).toEqual(['later']);
    expect((await names({ namespace: 'g' })).map((n) => n.secretName)).toEqual(['later', 'unmanaged']);
    const tooFar = await gql(`{ certificates(filter: { expiringWithinDays: 4000 }) { nodes { serial } } }`);
    expect(tooFar.json.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'filter.expiringWithinDays' });
  });

  it('served truth: each certificate lists its endpoints worst first; servingStatus and servingProblem filter; a delta that turns them ok clears it', async () => {
    const cluster = { id: randomUUID(), name: 'served' };
    const e = randomUUID();
    const shop = [
      endpoint('shop.example', 'ok'),
      endpoint('www.shop.example', 'stale', { source: { kind: 'Gateway', namespace: 'infra', name: 'edge' } }),
      endpoint('*.shop.example', 'notProbed'),
    ];
    const upserts = [
      facts('web', 'shop', { serving: shop }),
      facts('web', 'api', { serving: [endpoint('api.example', 'ok')] }),
      facts('web', 'wrong', { serving: [endpoint('wrong.example', 'mismatch')] }),
      facts('web', 'quiet'),
    ];
    expect((await post(report(cluster, e, 1, { kind: 'snapshot', final: true, upserts }))).status).toBe(200);
    const list = async (filter: Record<string, unknown> = {}, first = 32) => {
      const r = await gql(
        `query($f: CertificateFilter, $n: Int) { certificates(filter: $f, first: 10) { nodes { secretName servingStatus servingEndpointCount
           serving(first: $n) { host address status reason servedSerial servedNotAfter checkedAt source { kind namespace name } } } } }`,
        { f: { clusterId: cluster.id, ...filter }, n: first },
      );
      expect(r.json.errors).toBeUndefined();
      // by name: the rows' notAfter differ by the milliseconds between their facts
      return (r.json.data.certificates.nodes as Served[]).sort((a, b) => a.secretName.localeCompare(b.secretName));
    };
    type Served = {
      secretName: string;
      servingStatus: string | null;
      servingEndpointCount: number;
      serving: Record<string, unknown>[];
    };
    const all = await list();
    expect(all.map((c) => [c.secretName, c.servingStatus, c.servingEndpointCount])).toEqual([
      ['api', 'OK', 1],
      ['quiet', null, 0],
      ['shop', 'STALE', 3],
      ['wrong', 'MISMATCH', 1],
    ]);
    const s = all.find((c) => c.secretName === 'shop')!;
    // worst first, every field as reported
    expect(s.serving).toEqual([
      { ...shop[1], status: 'STALE', reason: null, source: { kind: 'Gateway', namespace: 'infra', name: 'edge' } },
      { ...shop[2], status: 'NOT_PROBED' },
      { ...shop[0], status: 'OK', reason: null },
    ]);
    expect(all.find((c) => c.secretName === 'quiet')!.serving).toEqual([]);
    expect((await list({}, 1)).find((c) => c.secretName === 'shop')!.serving.map((x) => x.host)).toEqual(['www.shop.example']);
    const names = async (filter: Record<string, unknown>) => (await list(filter)).map((c) => c.secretName);
    expect(await names({ servingStatus: 'STALE' })).toEqual(['shop']);
    expect(await names({ servingStatus: 'NOT_PROBED' })).toEqual([]);
    expect(await names({ servingProblem: true })).toEqual(['shop', 'wrong']);
    expect(await names({ servingProblem: false })).toEqual(['api']);

    // the consumer reloaded: the agent's delta reports the endpoint ok
    const reloaded = [shop[0]!, { ...shop[1]!, status: 'ok' as const }, shop[2]!];
    expect((await post(report(cluster, e, 2, { upserts: [facts('web', 'shop', { serving: reloaded })] }))).status).toBe(200);
    expect(await names({ servingProblem: true })).toEqual(['wrong']);
    expect(await names({ servingStatus: 'NOT_PROBED' })).toEqual(['shop']);

    // refused with where and what
    const bad = await post(
      report(cluster, e, 3, { upserts: [facts('web', 'x', { serving: [endpoint('x.example', 'ok', { address: 'x.example:99999' })] })] }),
    );
    expect(bad.status).toBe(400);
    expect(bad.body.errors![0]).toMatchObject({
      field: 'upserts[0].serving[0].address',
      message: expect.stringMatching(/port is 1 to 65535/),
    });
    const tooMany = await gql(`{ certificates { nodes { serving(first: 33) { host } } } }`);
    expect(tooMany.json.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'first' });
    const unknown = await gql(`{ certificates(filter: { servingStatus: FINE }) { nodes { serial } } }`);
    expect(unknown.json.errors[0].message).toMatch(/ServingStatus/);
  });

  it('CSV: header, RFC 4180 quoting, formula injection neutralized, same filters', async () => {
    const cluster = { id: randomUUID(), name: 'csv,"quoted"' };
    const upserts = [
      facts('csv', 'formula', { subject: '=HYPERLINK("http://evil.example","x")', labels: { a: '+1', b: 'say "hi", ok' } }),
      facts('csv', 'plain', { subject: '@SUM(A1)', commonName: '-2+3', applicationIds: ['a;b', 'c'] }),
    ];
    expect((await post(report(cluster, randomUUID(), 1, { kind: 'snapshot', final: true, upserts }))).status).toBe(200);
    const r = await svc.rest(`/v1/inventory/certificates.csv?clusterId=${cluster.id}`, { key: READ });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = await r.text();
    const lines = text.split('\r\n');
    expect(lines[0]).toMatch(/^clusterId,clusterName,namespace,secretName,/);
    expect(text).toContain(`"csv,""quoted"""`);
    expect(text).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
    expect(text).toContain(`,'@SUM(A1),'-2+3,`);
    expect(text).toContain(`"{""a"":""+1"",""b"":""say \\""hi\\"", ok""}"`);
    expect(lines.filter(Boolean).length).toBe(3);
    const head = await svc.rest(`/v1/inventory/certificates.csv?clusterId=${cluster.id}`, { key: READ, method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(await head.text()).toBe('');
    const twice = await svc.rest(`/v1/inventory/certificates.csv?health=READY&health=UNKNOWN`, { key: READ });
    expect(twice.status).toBe(400);
    const bad = await svc.rest(`/v1/inventory/certificates.csv?clusterid=x`, { key: READ });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { errors: { field: string }[] }).errors[0]!.field).toBe('clusterid');
  });

  it('CSV: the served truth (worst status, endpoint count, the endpoints with a problem) and its filters', async () => {
    const cluster = { id: randomUUID(), name: 'csv-served' };
    const upserts = [
      facts('csv', 'shop', {
        serving: [
          endpoint('shop.example', 'ok'),
          endpoint('old.shop.example', 'stale'),
          endpoint('gone.shop.example', 'unreachable', { reason: '=cmd|calc' }),
          endpoint('shop.example', 'expired', { address: '[2001:db8::1]:443' }),
        ],
      }),
      facts('csv', 'fine', { serving: [endpoint('fine.example', 'ok'), endpoint('*.fine.example', 'notProbed')] }),
      facts('csv', 'quiet'),
    ];
    expect((await post(report(cluster, randomUUID(), 1, { kind: 'snapshot', final: true, upserts }))).status).toBe(200);
    const csv = async (query: string) => {
      const r = await svc.rest(`/v1/inventory/certificates.csv?clusterId=${cluster.id}${query}`, { key: READ });
      expect(r.status).toBe(200);
      const [header, ...rows] = (await r.text()).split('\r\n').filter(Boolean);
      const cols = header!.split(',');
      const at = (name: string) => cols.indexOf(name);
      return rows
        .map((line) => [...line.matchAll(/("(?:[^"]|"")*"|[^,]*)(?:,|$)/g)].map((m) => m[1]!).slice(0, cols.length))
        .map((cells) => [
          cells[at('secretName')],
          cells[at('servingStatus')],
          cells[at('servingEndpointCount')],
          cells[at('servingProblems')],
        ])
        .sort((a, b) => a[0]!.localeCompare(b[0]!));
    };
    expect(await csv('')).toEqual([
      ['fine', 'NOT_PROBED', '2', ''],
      ['quiet', '', '0', ''],
      ['shop', 'EXPIRED', '4', 'shop.example=EXPIRED; old.shop.example=STALE; gone.shop.example=UNREACHABLE'],
    ]);
    expect((await csv('&servingProblem=true')).map((r) => r[0])).toEqual(['shop']);
    expect((await csv('&servingProblem=false')).map((r) => r[0])).toEqual(['fine']);
    expect((await csv('&servingStatus=NOT_PROBED')).map((r) => r[0])).toEqual(['fine']);
    for (const [q, field] of [
      ['servingProblem=yes', 'servingProblem'],
      ['servingStatus=stale', 'servingStatus'],
    ]) {
      const bad = await svc.rest(`/v1/inventory/certificates.csv?${q}`, { key: READ });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { errors: { field: string }[] }).errors[0]!.field).toBe(field);
    }
  });

  it('one certificate in two clusters (same issuer and serial) is listed with both places', async () => {
    const one = { id: randomUUID(), name: 'east' };
    const two = { id: randomUUID(), name: 'west' };
    const serial = `5E${Date.now().toString(16).toUpperCase()}`;
    const copy = (ns: string) => facts(ns, 'wildcard', { serial, issuer: 'CN=Shared Issuer' });
    expect((await post(report(one, randomUUID(), 1, { kind: 'snapshot', final: true, upserts: [copy('a')] }))).status).toBe(200);
    expect((await post(report(two, randomUUID(), 1, { kind: 'snapshot', final: true, upserts: [copy('b')] }))).status).toBe(200);
    const r = await gql(
      `query($c: UUID) { certificates(filter: { clusterId: $c }) { nodes { serial places { clusterId clusterName namespace secretName } } } }`,
      { c: one.id },
    );
    expect(r.json.errors).toBeUndefined();
    const places = r.json.data.certificates.nodes[0].places as { clusterName: string; namespace: string }[];
    expect(places.map((p) => `${p.clusterName}/${p.namespace}`).sort()).toEqual(['east/a', 'west/b']);
  });

  it('metrics: the clusters gauge counts reporting clusters, with no per-cluster label', async () => {
    const text = await (await svc.rest('/metrics', { key: null })).text();
    const reporting = /^certmgr_notify_clusters\{state="reporting"\} (\d+)$/m.exec(text);
    expect(Number(reporting?.[1])).toBeGreaterThan(0);
    expect(text).toMatch(/^certmgr_notify_clusters\{state="silent"\} 0$/m);
  });

  it('deleteClusters: a cluster and its certificates go; an unknown id deletes nothing; read and agent keys are refused', async () => {
    const keep = { id: randomUUID(), name: 'keep' };
    const gone = { id: randomUUID(), name: 'gone' };
    for (const c of [keep, gone])
      expect(
        (await post(report(c, randomUUID(), 1, { kind: 'snapshot', final: true, upserts: [facts('web', `${c.name}-tls`)] }))).status,
      ).toBe(200);
    const del = (ids: string[], key?: string) => gql(`mutation($ids: [UUID!]!) { deleteClusters(ids: $ids) { ids } }`, { ids }, key);
    for (const key of [READ, AGENT]) {
      const r = await del([gone.id], key);
      expect(r.status).toBe(403);
    }
    const missing = randomUUID();
    const refused = await del([gone.id, missing], KEY_ADMIN);
    expect(refused.json.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(refused.json.errors?.[0]?.message).toContain(missing);
    expect(await clusterOf(gone.id)).toBeDefined();
    const ok = await del([gone.id], KEY_ADMIN);
    expect(ok.json.errors).toBeUndefined();
    expect(ok.json.data.deleteClusters.ids).toEqual([gone.id]);
    expect(await clusterOf(gone.id)).toBeUndefined();
    expect(await certsOf(gone.id)).toEqual([]);
    expect(await certsOf(keep.id)).toHaveLength(1);
    // its agent, still running, is told to resync (unknown epoch) and re-creates it with a full snapshot
    const again = await post(report(gone, randomUUID(), 2));
    expect(again.status).toBe(409);
  });

  it('quota: one cluster more than maxClustersPerCompany is refused with QUOTA_EXCEEDED, nothing written', async () => {
    // company B has used 1 of its 20 (tenancy test) at most: fill it up
    const made: string[] = [];
    for (let i = 0; i < 21; i++) {
      const c = { id: randomUUID(), name: `q-${i}` };
      const r = await post(report(c, randomUUID(), 1, { kind: 'snapshot', final: true, upserts: [facts('q', `s-${i}`)] }), KEY_B);
      if (r.status !== 200) {
        expect(r.status).toBe(429);
        expect(r.body.errors?.[0]).toMatchObject({ code: 'QUOTA_EXCEEDED', quota: 'maxClustersPerCompany', limit: 20 });
        expect(await clusterOf(c.id, KEY_B)).toBeUndefined();
        break;
      }
      made.push(c.id);
    }
    expect(made.length).toBeLessThan(21);
  });
});

describe('silent clusters and the certificates quota through serve (sqlite)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService('sqlite', [
      ...limitsFile({ deliveryWorkers: 0, clusterSilenceAfter: '1ms', maxCertificatesPerCompany: 3 }),
    ]);
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
  });

  it('a cluster not heard from for clusterSilenceAfter is silent in GraphQL and the gauge; its next report logs its return', async () => {
    const cluster = { id: randomUUID(), name: 'quiet' };
    const epoch = randomUUID();
    const post = (seq: number, kind: 'snapshot' | 'delta') =>
      svc.rest('/v1/inventory', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(report(cluster, epoch, seq, { kind, ...(kind === 'snapshot' ? { final: true } : {}) })),
      });
    expect((await post(1, 'snapshot')).status).toBe(200);
    // 1 ms of silence has passed by the time the query runs (it follows the report's answer)
    await new Promise((r) => setTimeout(r, 5));
    const q = await svc.gql().request<{ clusters: { nodes: { id: string; silent: boolean }[] } }>(`{ clusters { nodes { id silent } } }`);
    expect(q.clusters.nodes.find((c) => c.id === cluster.id)?.silent).toBe(true);
    const text = await (await svc.rest('/metrics', { key: null })).text();
    expect(text).toMatch(/^certmgr_notify_clusters\{state="silent"\} 1$/m);
    expect((await post(2, 'delta')).status).toBe(200);
    expect(svc.logs.some((l) => l.includes('cluster reporting again after silence') && l.includes(cluster.id))).toBe(true);
  });

  it('through serve: the leader accepts one evt.healthstatus.certmgr-agent.notready for a router on the family, the next report one .active', async () => {
    const cluster = { id: randomUUID(), name: 'agent-events' };
    const epoch = randomUUID();
    const gqlc = svc.gql();
    const integ = await gqlc.request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
      name: 'pager for agents',
      integrationKey: 'ik-0123456789abcdef',
    });
    // the company opts in with a router on the family (filtered to this test's cluster: the other tests' clusters fall silent too)
    await gqlc.request(ops.CreateNotificationRouter, {
      details: { name: 'silent agents', eventTypeId: 'certmgr-agent-health-notification-config' },
      filterConfig: { advancedFilterExpression: `data.clusterId == '${cluster.id}'` },
      integrationConfig: { integrationId: integ.createIncidentMgmtIntegration.id },
    });
    const post = (seq: number, kind: 'snapshot' | 'delta') =>
      svc.rest('/v1/inventory', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(report(cluster, epoch, seq, { kind, ...(kind === 'snapshot' ? { final: true } : {}) })),
      });
    const types = async (): Promise<string[]> => {
      const r = await gqlc.request<{ deliveries: { nodes: { routerName: string; createdAt: string; event: { type: string } }[] } }>(
        `{ deliveries { nodes { routerName createdAt event { type } } } }`,
      );
      return r.deliveries.nodes
        .filter((d) => d.routerName === 'silent agents')
        .sort((x, y) => x.createdAt.localeCompare(y.createdAt))
        .map((d) => d.event.type);
    };
    const until = async (what: string, ok: (t: string[]) => boolean): Promise<string[]> => {
      for (let i = 0; i < 300; i++) {
        const t = await types();
        if (ok(t)) return t;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`timed out waiting for ${what}: ${JSON.stringify(await types())}`);
    };
    expect((await post(1, 'snapshot')).status).toBe(200);
    // the leader checks every second (1 ms of silence): the cluster is marked once, however often it checks
    await until('the .notready', (t) => t.length > 0);
    await new Promise((r) => setTimeout(r, 1_500)); // at least one more check
    expect(await types()).toEqual(['evt.healthstatus.certmgr-agent.notready']);
    expect((await post(2, 'delta')).status).toBe(200);
    const after = await until('the .active', (t) => t.includes('evt.healthstatus.certmgr-agent.active'));
    expect(after.slice(0, 2)).toEqual(['evt.healthstatus.certmgr-agent.notready', 'evt.healthstatus.certmgr-agent.active']);
  });

  it('deleting a silent cluster resolves its .notready with one .active (ClusterDeleted)', async () => {
    const cluster = { id: randomUUID(), name: 'decommissioned' };
    const gqlc = svc.gql();
    const integ = await gqlc.request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
      name: 'pager for deleted agents',
      integrationKey: 'ik-0123456789abcdef',
    });
    await gqlc.request(ops.CreateNotificationRouter, {
      details: { name: 'deleted agents', eventTypeId: 'certmgr-agent-health-notification-config' },
      filterConfig: { advancedFilterExpression: `data.clusterId == '${cluster.id}'` },
      integrationConfig: { integrationId: integ.createIncidentMgmtIntegration.id },
    });
    const r = await svc.rest('/v1/inventory', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(report(cluster, randomUUID(), 1, { kind: 'snapshot', final: true })),
    });
    expect(r.status).toBe(200);
    const events = async () =>
      (
        await gqlc.request<{ deliveries: { nodes: { routerName: string; createdAt: string; event: { type: string } }[] } }>(
          `{ deliveries { nodes { routerName createdAt event { type } } } }`,
        )
      ).deliveries.nodes
        .filter((d) => d.routerName === 'deleted agents')
        .sort((x, y) => x.createdAt.localeCompare(y.createdAt))
        .map((d) => d.event.type);
    for (let i = 0; i < 300 && (await events()).length === 0; i++) await new Promise((res) => setTimeout(res, 50));
    expect(await events()).toEqual(['evt.healthstatus.certmgr-agent.notready']);
    await gqlc.request(`mutation($ids: [UUID!]!) { deleteClusters(ids: $ids) { ids } }`, { ids: [cluster.id] });
    // accepted in the delete's transaction: there when the mutation answers
    expect(await events()).toEqual(['evt.healthstatus.certmgr-agent.notready', 'evt.healthstatus.certmgr-agent.active']);
  });

  it('a report that would take the company past maxCertificatesPerCompany is refused whole (429 QUOTA_EXCEEDED)', async () => {
    const cluster = { id: randomUUID(), name: 'full' };
    const epoch = randomUUID();
    const send = (seq: number, over: Partial<InventoryReport>) =>
      svc.rest('/v1/inventory', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(report(cluster, epoch, seq, over)),
      });
    const three = [facts('q', 'a'), facts('q', 'b'), facts('q', 'c')];
    expect((await send(1, { kind: 'snapshot', final: true, upserts: three })).status).toBe(200);
    const over = await send(2, { upserts: [facts('q', 'd'), { ...three[0]!, serial: 'FF' }] });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('300');
    const body = (await over.json()) as { errors: Record<string, unknown>[] };
    expect(body.errors[0]).toMatchObject({ code: 'QUOTA_EXCEEDED', quota: 'maxCertificatesPerCompany', limit: 3 });
    // nothing of it was applied: the same seq, replacing one and adding one after a delete, goes through
    const q = `{ certificates { nodes { secretName serial } } }`;
    const before = await svc.gql().request<{ certificates: { nodes: { secretName: string; serial: string }[] } }>(q);
    expect(before.certificates.nodes.find((n) => n.secretName === 'a')?.serial).toBe(three[0]!.serial);
    expect((await send(2, { upserts: [facts('q', 'd')], deletes: [{ namespace: 'q', secretName: 'b' }] })).status).toBe(200);
  });
});
