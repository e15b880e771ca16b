/**
 * Streamed LISTs against the REAL kube-apiserver v1.20.2 + etcd with its watch cache on (as in production): the
 * informer's first list asks for resourceVersion=0 and gets every object in ONE response from the cache, whatever
 * the limit, read item by item (TLS Secrets in protobuf, Certificates in JSON); after an apiserver restart the
 * relist asks for the last resourceVersion seen without a limit (the cache again). The case of an apiserver that
 * paginates (no watch cache) is in informer-pages.int.test.ts. A relist by metadata (names and resourceVersions, then
 * a GET of each changed object) keeps what did not change and reads only what did. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to
 * skip.
 */
import { CoreV1Api, CustomObjectsApi, Watch, type KubeConfig, type KubernetesObject, type V1Secret } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tlsSecretFacts, type TlsSecretFacts } from '../../src/emitter/inventory/facts.js';
import { certManagerFacts } from '../../src/emitter/informers.js';
import type { CertManagerObject } from '../../src/emitter/health/observe.js';
import { KubeClient, collectionPath } from '../../src/kube/client.js';
import { ResilientInformer, type ListPage } from '../../src/kube/informer.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { selfSigned } from '../emitter/fixtures.js';
import { ensureKubeBinaries, ensureNamespace, startKubeEnv, type KubeEnv } from '../support/kube.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const NS = 'streamed';
const TLS = 300;
const CERTS = 120;
const PAGE = 50;
const SECRETS = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };
const CERTIFICATES = { group: 'cert-manager.io', version: 'v1', plural: 'certificates', kind: 'Certificate', namespaced: true };
const SEL = 'type=kubernetes.io/tls';
const log = pino({ level: 'silent' });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A real Watch the test can blind (events dropped, as while a connection hangs) and then cut (its end reported as a
 * broken connection, once): what the informer then lists again are the changes it did not see.
 */
class BlindableWatch extends Watch {
  blind = false;
  private end: ((err?: unknown) => void) | undefined;
  constructor(kc: KubeConfig) {
    super(kc);
  }
  override async watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    cb: (phase: string, obj: unknown, raw?: unknown) => void,
    done: (err?: unknown) => void,
  ): Promise<AbortController> {
    let ended = false;
    const once = (err?: unknown): void => {
      if (ended) return;
      ended = true;
      done(err);
    };
    this.end = once;
    return super.watch(path, query, (phase, obj, raw) => void (this.blind || cb(phase, obj, raw)), once);
  }
  cut(): void {
    this.blind = false;
    this.end?.(Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } }));
  }
}

function createCertificate(custom: CustomObjectsApi, name: string, secretName: string, annotations?: Record<string, string>) {
  return custom.createNamespacedCustomObject({
    group: 'cert-manager.io',
    version: 'v1',
    plural: 'certificates',
    namespace: NS,
    body: {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name, ...(annotations ? { annotations } : {}) },
      spec: { secretName, dnsNames: [`${name}.example.com`], issuerRef: { name: 'ca', kind: 'Issuer' } },
    },
  });
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  for (const end = Date.now() + ms; !ok(); await sleep(25)) if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
}

describe.skipIf(skip)('informer: streamed LIST from the watch cache (real apiserver)', () => {
  let env: KubeEnv;
  let kube: KubeClient;
  const informers: ResilientInformer<never>[] = [];
  const cert = selfSigned({ cn: 'stream.example.com', dns: ['stream.example.com'], days: 30, serial: '0x4321' });
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const tlsBody = (name: string): V1Secret => ({
    metadata: { name, labels: { app: name } },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': b64(cert.pem), 'tls.key': b64(cert.keyPem) },
  });

  beforeAll(async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv({ watchCache: true });
    const kc = env.kubeConfig();
    kube = new KubeClient(kc);
    await ensureNamespace(kc, NS);
    await installCertManagerCrds(kc);
    const core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const jobs: (() => Promise<unknown>)[] = [
      ...Array.from({ length: TLS }, (_, i) => () => core.createNamespacedSecret({ namespace: NS, body: tlsBody(`tls-${i}`) })),
      ...Array.from(
        { length: 20 },
        (_, i) => () => core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: `opaque-${i}` }, data: { x: b64('y') } } }),
      ),
      ...Array.from(
        { length: CERTS },
        (_, i) => () => createCertificate(custom, `c-${i}`, `tls-${i}`, { 'notify.certmgr.io/x': 'é "q" \\ 😀' }),
      ),
    ];
    let next = 0;
    await Promise.all(
      Array.from(
        { length: 16 },
        async () =>
          void (await (async () => {
            while (next < jobs.length) await jobs[next++]!();
          })()),
      ),
    );
  }, 10 * 60_000);

  afterAll(async () => {
    for (const i of informers) await i.stop();
    await env?.stop();
  });

  it('Certificates (JSON): one streamed response, the facts of every one, escapes and multibyte text intact', async () => {
    const calls: ListPage[] = [];
    const inf = new ResilientInformer<CertManagerObject>({
      name: 'certificates',
      kc: env.kubeConfig(),
      path: collectionPath(CERTIFICATES, NS),
      list: (page, each) => {
        calls.push(page);
        return kube.list<CertManagerObject>(CERTIFICATES, NS, page, each);
      },
      streamed: true,
      pageSize: PAGE,
      transform: certManagerFacts,
      log,
    });
    informers.push(inf as unknown as ResilientInformer<never>);
    await inf.start();
    await inf.synced;
    expect(calls).toEqual([{ limit: PAGE, resourceVersion: '0' }]);
    expect(inf.stats.pages).toBe(1);
    expect(inf.list()).toHaveLength(CERTS);
    const c = inf.get('c-7', NS)!;
    expect(c.metadata?.annotations).toEqual({ 'notify.certmgr.io/x': 'é "q" \\ 😀' });
    expect(c.spec).toMatchObject({ secretName: 'tls-7', dnsNames: ['c-7.example.com'] });
  });

  it('TLS Secrets (protobuf): one response from the cache, every one cached as facts; after a restart, a relist from the last resourceVersion', async () => {
    const calls: ListPage[] = [];
    const inf = new ResilientInformer<TlsSecretFacts, V1Secret>({
      name: 'tls-secret-facts',
      kc: env.kubeConfig(),
      path: collectionPath(SECRETS, NS),
      list: (page, each) => {
        calls.push(page);
        return kube.listSecrets(NS, page, SEL, ['tls.crt'], each);
      },
      streamed: true,
      relistAfterError: true,
      fieldSelector: SEL,
      pageSize: PAGE,
      transform: tlsSecretFacts,
      backoff: { baseMs: 50, maxMs: 200, jitter: 0 },
      log,
    });
    informers.push(inf as unknown as ResilientInformer<never>);
    await inf.start();
    await inf.synced;
    expect(calls).toEqual([{ limit: PAGE, resourceVersion: '0' }]);
    expect(inf.stats.pages).toBe(1); // the cache ignores the limit: all in one response
    expect(inf.list()).toHaveLength(TLS);
    expect(inf.get('tls-42', NS)).toMatchObject({
      chain: { serial: '4321', commonName: 'stream.example.com' },
      metadata: { labels: { app: 'tls-42' } },
    });
    expect(JSON.stringify(inf.list())).not.toContain(b64(cert.keyPem).slice(0, 40));
    // the same facts as the paginated consistent list
    const paged = await kube.listSecrets(NS, { limit: PAGE }, SEL, ['tls.crt']);
    expect(paged.metadata?.['continue' as never]).toBeTruthy();
    for (const s of paged.items) expect(inf.get(s.metadata!.name!, NS)?.metadata.resourceVersion).toBe(s.metadata?.resourceVersion);

    // a Secret created while the apiserver is down: the watch breaks, the relist reads from the last version seen
    const seen = inf.stats.lists;
    await env.restartApiServer({ downMs: 200 });
    await kube.core.createNamespacedSecret({ namespace: NS, body: tlsBody('tls-after') });
    for (let i = 0; i < 800 && !inf.get('tls-after', NS); i++) await sleep(25);
    expect(inf.get('tls-after', NS)).toMatchObject({ chain: { serial: '4321' } });
    expect(inf.stats.lists).toBeGreaterThan(seen);
    const relist = calls[1]!;
    expect(relist.limit).toBeUndefined(); // a limit with a resourceVersion other than 0 would read etcd
    expect(Number(relist.resourceVersion)).toBeGreaterThan(0);
    expect(inf.list()).toHaveLength(TLS + 1);
  });

  it('a relist from a resourceVersion the apiserver has not reached (504) falls back to the paginated list from etcd', async () => {
    // what the informer does on that answer, with the real answer: a list from a resourceVersion far ahead
    const err = await kube.listSecrets(NS, { resourceVersion: '999999999' }, SEL, ['tls.crt'], () => {}).catch((e: unknown) => e);
    expect((err as { code?: number }).code).toBe(504);
  });

  /** An informer with `relistByMetadata` over `watch`, and what it asked the apiserver for. */
  function metadataRelisting<T extends KubernetesObject, R extends KubernetesObject>(o: {
    name: string;
    path: string;
    list: (page: ListPage, each?: (item: R) => void) => Promise<{ items: R[] }>;
    listMetadata: (page: ListPage, each: (item: KubernetesObject) => void) => Promise<unknown>;
    get: (name: string) => Promise<R | undefined>;
    transform: (obj: R) => T;
    fieldSelector?: string;
  }) {
    const watch = new BlindableWatch(env.kubeConfig());
    const calls = { lists: 0, metadataLists: 0, gets: [] as string[] };
    const inf = new ResilientInformer<T, R>({
      name: o.name,
      kc: env.kubeConfig(),
      path: o.path,
      list: (page, each) => (calls.lists++, o.list(page, each) as never),
      relistByMetadata: {
        list: (page, each) => (calls.metadataLists++, o.listMetadata(page, each) as never),
        get: (name) => (calls.gets.push(name), o.get(name)),
      },
      streamed: true,
      relistAfterError: true,
      transform: o.transform,
      ...(o.fieldSelector ? { fieldSelector: o.fieldSelector } : {}),
      watch,
      backoff: { baseMs: 50, maxMs: 200, jitter: 0 },
      log,
    });
    informers.push(inf as unknown as ResilientInformer<never>);
    return { inf, watch, calls };
  }

  it('Certificates: a relist by metadata keeps the unchanged objects as cached, reads the changed and new ones, drops the deleted', async () => {
    const t = metadataRelisting<CertManagerObject, CertManagerObject>({
      name: 'certificates',
      path: collectionPath(CERTIFICATES, NS),
      list: (page, each) => kube.list<CertManagerObject>(CERTIFICATES, NS, page, each),
      listMetadata: (page, each) => kube.listMetadata(CERTIFICATES, NS, page, undefined, each),
      get: (name) => kube.getJson<CertManagerObject>(CERTIFICATES, name, NS),
      transform: certManagerFacts,
    });
    await t.inf.start();
    await t.inf.synced;
    const kept = t.inf.get('c-1', NS);
    expect(kept).toBeDefined();
    // unseen by the informer: one changed, one deleted, one created
    t.watch.blind = true;
    await kube.mergePatch(CERTIFICATES, 'c-2', NS, { metadata: { annotations: { 'notify.certmgr.io/team': 'blue' } } });
    await kube.custom.deleteNamespacedCustomObject({
      group: 'cert-manager.io',
      version: 'v1',
      plural: 'certificates',
      namespace: NS,
      name: 'c-3',
    });
    await createCertificate(kube.custom, 'c-new', 'tls-new');
    t.watch.cut();
    await until('the relist', () => t.inf.stats.lists === 2);
    expect(t.calls).toEqual({ lists: 1, metadataLists: 1, gets: expect.arrayContaining(['c-2', 'c-new']) as never });
    expect(t.calls.gets).toHaveLength(2);
    expect(t.inf.stats).toMatchObject({ metadataRelists: 1, relistGets: 2 });
    expect(t.inf.get('c-1', NS)).toBe(kept); // not read, not transformed again
    expect(t.inf.get('c-2', NS)?.metadata?.annotations).toMatchObject({ 'notify.certmgr.io/team': 'blue' });
    expect(t.inf.get('c-3', NS)).toBeUndefined();
    expect(t.inf.get('c-new', NS)?.spec).toMatchObject({ secretName: 'tls-new' });
    expect(t.inf.list()).toHaveLength(CERTS);
    // and it watches on from the relist: a later change arrives
    await kube.mergePatch(CERTIFICATES, 'c-1', NS, { metadata: { annotations: { 'notify.certmgr.io/team': 'red' } } });
    await until('the watched change', () => t.inf.get('c-1', NS)?.metadata?.annotations?.['notify.certmgr.io/team'] === 'red');
  });

  it('TLS Secrets: a relist by metadata reads only the changed Secret, parses its new certificate, never a private key', async () => {
    const t = metadataRelisting<TlsSecretFacts, V1Secret>({
      name: 'tls-secret-facts',
      path: collectionPath(SECRETS, NS),
      list: (page, each) => kube.listSecrets(NS, page, SEL, ['tls.crt'], each),
      listMetadata: (page, each) => kube.listMetadata(SECRETS, NS, page, SEL, each),
      get: (name) => kube.getSecretJson(NS, name, ['tls.crt']),
      transform: tlsSecretFacts,
      fieldSelector: SEL,
    });
    await t.inf.start();
    await t.inf.synced;
    const count = t.inf.list().length;
    const kept = t.inf.get('tls-1', NS);
    const renewed = selfSigned({ cn: 'renewed.example.com', days: 60, serial: '0x9876' });
    t.watch.blind = true;
    await kube.core.replaceNamespacedSecret({
      namespace: NS,
      name: 'tls-5',
      body: {
        metadata: { name: 'tls-5' },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(renewed.pem), 'tls.key': b64(renewed.keyPem) },
      },
    });
    // not a TLS Secret: the field selector leaves it out of the metadata list too
    await kube.core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'opaque-new' }, data: { x: b64('y') } } });
    t.watch.cut();
    await until('the relist', () => t.inf.stats.lists === 2);
    expect(t.calls).toEqual({ lists: 1, metadataLists: 1, gets: ['tls-5'] });
    expect(t.inf.get('tls-1', NS)).toBe(kept);
    expect(t.inf.get('tls-5', NS)).toMatchObject({ chain: { serial: '9876', commonName: 'renewed.example.com' } });
    expect(t.inf.get('opaque-new', NS)).toBeUndefined();
    expect(t.inf.list()).toHaveLength(count);
    expect(JSON.stringify(t.inf.list())).not.toContain(b64(renewed.keyPem).slice(0, 40));
  });
});
