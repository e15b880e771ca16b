/**
 * Paginated LIST against the REAL kube-apiserver v1.20.2 + etcd: thousands of TLS Secrets (and other Secrets the
 * field selector leaves out) listed in small pages, each page reduced to parsed facts before the next is read
 * (no data key reaches the cache); an expired continue token (etcd compacted between two pages) restarts the
 * list. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tlsSecretFacts, type TlsSecretFacts } from '../../src/emitter/inventory/facts.js';
import { KubeClient, collectionPath } from '../../src/kube/client.js';
import { ResilientInformer, type ListPage } from '../../src/kube/informer.js';
import { selfSigned } from '../emitter/fixtures.js';
import { compactEtcd, ensureKubeBinaries, ensureNamespace, startKubeEnv, type KubeEnv } from '../support/kube.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const NS = 'many';
const TLS = 2000;
const OTHER = 150;
const PAGE = 100;
const SECRETS = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };
const log = pino({ level: 'silent' });

describe.skipIf(skip)('informer: paginated LIST (real apiserver)', () => {
  let env: KubeEnv;
  let kube: KubeClient;
  const informers: ResilientInformer<TlsSecretFacts, V1Secret>[] = [];
  const cert = selfSigned({ cn: 'many.example.com', dns: ['many.example.com'], days: 30, serial: '0x1234' });
  const b64 = (s: string): string => Buffer.from(s).toString('base64');

  beforeAll(async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv();
    const kc = env.kubeConfig();
    kube = new KubeClient(kc);
    await ensureNamespace(kc, NS);
    const core = kc.makeApiClient(CoreV1Api);
    const bodies: V1Secret[] = [
      ...Array.from({ length: TLS }, (_, i) => ({
        metadata: { name: `tls-${String(i).padStart(5, '0')}`, labels: { n: String(i) } },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(cert.pem), 'tls.key': b64(cert.keyPem) },
      })),
      ...Array.from({ length: OTHER }, (_, i) => ({ metadata: { name: `opaque-${i}` }, type: 'Opaque', data: { x: b64('y') } })),
    ];
    // 16 writers: a few seconds on the shared 2 cores
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < bodies.length) await core.createNamespacedSecret({ namespace: NS, body: bodies[next++]! });
      }),
    );
  }, 10 * 60_000);

  afterAll(async () => {
    for (const i of informers) await i.stop();
    await env?.stop();
  });

  function informer(list: (page: ListPage) => Promise<{ items: V1Secret[] }>): ResilientInformer<TlsSecretFacts, V1Secret> {
    const fieldSelector = 'type=kubernetes.io/tls';
    const inf = new ResilientInformer<TlsSecretFacts, V1Secret>({
      name: 'tls-secret-facts',
      kc: env.kubeConfig(),
      path: collectionPath(SECRETS, NS),
      list: list as never,
      fieldSelector,
      pageSize: PAGE,
      transform: tlsSecretFacts,
      log,
    });
    informers.push(inf);
    return inf;
  }

  it(`${TLS} TLS Secrets in pages of ${PAGE}: every one cached as facts, no data key, the others filtered out`, async () => {
    let pages = 0;
    const inf = new ResilientInformer<TlsSecretFacts, V1Secret>({
      name: 'tls-secret-facts',
      kc: env.kubeConfig(),
      path: collectionPath(SECRETS, NS),
      list: (page) => kube.listSecrets(NS, page, 'type=kubernetes.io/tls', ['tls.crt']),
      fieldSelector: 'type=kubernetes.io/tls',
      pageSize: PAGE,
      onListPage: () => pages++,
      transform: tlsSecretFacts,
      log,
    });
    informers.push(inf);
    await inf.start();
    await inf.synced;
    expect(inf.list()).toHaveLength(TLS);
    expect(inf.stats.pages).toBe(TLS / PAGE);
    expect(pages).toBe(TLS / PAGE);
    expect(inf.stats.listRestarts).toBe(0);
    const one = inf.get('tls-00042', NS)!;
    expect(one.chain).toMatchObject({ serial: '1234', commonName: 'many.example.com' });
    expect(one.metadata.labels).toEqual({ n: '42' });
    const text = JSON.stringify(inf.list());
    expect(text).not.toContain('PRIVATE KEY');
    expect(text).not.toContain(b64(cert.keyPem).slice(0, 40));
    expect(inf.list().some((s) => 'data' in s)).toBe(false);

    // the watch resumes from the list's revision: a new Secret arrives through it, transformed too
    await kube.core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'tls-late' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(cert.pem), 'tls.key': b64(cert.keyPem) } },
    });
    for (let i = 0; i < 400 && !inf.get('tls-late', NS); i++) await new Promise((r) => setTimeout(r, 25));
    expect(inf.get('tls-late', NS)).toMatchObject({ chain: { serial: '1234' } });
    expect(JSON.stringify(inf.get('tls-late', NS))).not.toContain(b64(cert.keyPem).slice(0, 40));
    expect(inf.stats.lists).toBe(1);
  });

  it('a page read as protobuf (keepData) holds what the JSON page holds of the fields read, and no other data key', async () => {
    const sel = 'type=kubernetes.io/tls';
    const json = await kube.listSecrets(NS, { limit: 50 }, sel);
    const proto = await kube.listSecrets(NS, { limit: 50 }, sel, ['tls.crt']);
    const read = (s: V1Secret) => ({
      name: s.metadata?.name,
      namespace: s.metadata?.namespace,
      uid: s.metadata?.uid,
      resourceVersion: s.metadata?.resourceVersion,
      labels: s.metadata?.labels,
      annotations: s.metadata?.annotations,
      type: s.type,
      crt: s.data?.['tls.crt'],
    });
    expect(proto.items).toHaveLength(50);
    expect(proto.items.map(read)).toEqual(json.items.map(read));
    for (const s of proto.items) expect(Object.keys(s.data ?? {})).toEqual(['tls.crt']);
    expect(JSON.stringify(proto)).not.toContain(b64(cert.keyPem).slice(0, 40));
    const cont = (l: { metadata?: object }) => (l.metadata as { continue?: string; resourceVersion?: string } | undefined) ?? {};
    expect(cont(proto).continue).toBeTruthy(); // raw: `continue`, not client-node's `_continue`
    expect(cont(proto).resourceVersion).toMatch(/^\d+$/);
    // the protobuf continue token goes on where the page ended
    const next = await kube.listSecrets(NS, { limit: 50, continue: cont(proto).continue! }, sel, ['tls.crt']);
    expect(next.items[0]?.metadata?.name).toBe(json.items.length === 50 ? `tls-${String(50).padStart(5, '0')}` : undefined);
  });

  it('an expired continue token (etcd compacted between two pages: 410) starts the list over; the result is complete', async () => {
    let calls = 0;
    let compacted = false;
    const inf = informer(async (page) => {
      calls++;
      // protobuf, as the emitter lists: its 410 is a protobuf Status
      const res = await kube.listSecrets(NS, page, 'type=kubernetes.io/tls', ['tls.crt']);
      if (!compacted) {
        // after the first page: a write moves the revision on, and compaction drops the list's revision
        compacted = true;
        await kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'bump' }, data: { a: 'b' } } });
        await compactEtcd(env);
      }
      return res;
    });
    await inf.start();
    await inf.synced;
    expect(inf.stats.listRestarts).toBe(1);
    expect(inf.list()).toHaveLength(TLS + 1); // with tls-late from the first case
    // the first page, the 410 on the second, then a whole list
    expect(calls).toBe(2 + Math.ceil((TLS + 1) / PAGE));
  });
});
