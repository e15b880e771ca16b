/**
 * shareKubeDispatchers (src/kube/dispatcher.ts) against real TLS servers, HTTP/1.1 and HTTP/2 (the apiserver
 * speaks both; undici picks h2 over ALPN): client-node's requests share keep-alive connections instead of one
 * each; a watch keeps a connection of its own; and a pooled connection that goes silent (the half-open case: no
 * FIN, no RST) fails the request within the deadline and is replaced, so the next request goes through.
 */
import { createServer as createH1Server, type Server } from 'node:https';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCacheListPath, isWatchPath, shareKubeDispatchers } from '../../src/kube/dispatcher.js';
import { createTestCa, type TestCa } from '../admission/tls.js';
import { startTcpProxy, type TcpProxy } from '../operator/tcp-proxy.js';

describe('isWatchPath', () => {
  it.each([
    ['/api/v1/configmaps?watch=true', true],
    ['/api/v1/namespaces/a/configmaps?resourceVersion=5&watch=true&allowWatchBookmarks=true', true],
    ['/api/v1/configmaps?watch=1', true],
    ['/api/v1/configmaps?watch=false', false],
    ['/api/v1/configmaps?limit=500', false],
    ['/api/v1/namespaces/watch=true/configmaps', false],
    ['/api/v1/configmaps?nowatch=true', false],
  ])('%s → %s', (path, want) => expect(isWatchPath(path)).toBe(want));
});

describe('isCacheListPath', () => {
  it.each([
    ['/apis/cert-manager.io/v1/certificates?resourceVersion=123', true],
    ['/api/v1/secrets?limit=1000&resourceVersion=0&fieldSelector=type%3Dkubernetes.io%2Ftls', true],
    ['/api/v1/secrets?limit=1000&continue=abc', false],
    ['/api/v1/secrets?limit=1000', false],
    ['/api/v1/secrets?resourceVersion=&limit=5', false],
    ['/api/v1/configmaps?resourceVersion=5&watch=true', false],
    ['/api/v1/namespaces/a/secrets/b', false],
  ])('%s → %s', (path, want) => expect(isCacheListPath(path)).toBe(want));
});

type Req = IncomingMessage | Http2ServerRequest;

let ca: TestCa;
let tls: { cert: string; key: string };
beforeAll(async () => {
  ca = await createTestCa();
  tls = await ca.issue();
});

describe.each(['HTTP/1.1', 'HTTP/2'] as const)('shared kube dispatchers over %s', (proto) => {
  let server: Server | Http2SecureServer;
  const sockets: TLSSocket[] = [];
  let hang = false;
  let url = '';
  let proxy: TcpProxy;

  const handle = (req: Req, res: ServerResponse): void => {
    if (isWatchPath(req.url ?? '')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'w', resourceVersion: '1' } } }) + '\n');
      setTimeout(() => res.end(), 50);
      return;
    }
    if (req.url?.startsWith('/api/v1/namespaces/default/configmaps?')) {
      // a list the apiserver is slow to answer (its watch cache refilling after a restart)
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '9' }, items: [] }));
      }, 1_500);
      return;
    }
    if (hang) {
      // every open connection goes silent both ways (no answer, not even to an HTTP/2 PING); new ones pass
      proxy.blackhole();
      hang = false;
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default' } }));
  };

  beforeAll(async () => {
    server =
      proto === 'HTTP/1.1'
        ? createH1Server({ cert: tls.cert, key: tls.key }, handle)
        : // the compatibility API's response has the same writeHead/write/end as ServerResponse
          createSecureServer({ cert: tls.cert, key: tls.key, allowHTTP1: false }, (req, res) =>
            handle(req, res as unknown as ServerResponse),
          );
    server.on('secureConnection', (s: TLSSocket) => sockets.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const a = server.address();
    url = `https://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
    proxy = await startTcpProxy(url);
  });
  afterAll(async () => {
    await proxy.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const kubeConfig = (server = url): KubeConfig => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server, caData: Buffer.from(ca.caPem).toString('base64'), skipTLSVerify: false }],
      users: [{ name: 'u', token: 'test-token' }],
      contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
      currentContext: 'ctx',
    });
    return kc;
  };
  const read = (api: CoreV1Api) => api.readNamespacedConfigMap({ namespace: 'default', name: 'x' });

  it('without it, client-node connects once per request (the behaviour this replaces)', async () => {
    const api = kubeConfig().makeApiClient(CoreV1Api);
    const before = sockets.length;
    for (let i = 0; i < 3; i++) await read(api);
    expect(sockets.length - before).toBe(3);
  });

  it('requests share keep-alive connections; a watch gets its own', async () => {
    const kc = kubeConfig();
    shareKubeDispatchers(kc, 2_000);
    shareKubeDispatchers(kc, 2_000); // idempotent
    const api = kc.makeApiClient(CoreV1Api);
    const before = sockets.length;
    for (let i = 0; i < 10; i++) expect((await read(api)).metadata?.name).toBe('x');
    // HTTP/1.1: undici may open a second one while the first is being released; HTTP/2: one session
    const pooled = sockets.length - before;
    expect(pooled).toBeLessThanOrEqual(proto === 'HTTP/2' ? 1 : 2);
    const events: string[] = [];
    await new Promise<void>((resolve, reject) => {
      void new Watch(kc)
        .watch(
          '/api/v1/configmaps',
          {},
          (type) => events.push(type),
          (err) => (err ? reject(err as Error) : resolve()),
        )
        .catch(reject);
    });
    expect(events).toEqual(['ADDED']);
    expect(sockets.length - before).toBe(pooled + 1);
    await read(api);
    expect(sockets.length - before).toBe(pooled + 1);
  });

  it('a list from the watch cache waits for its headers past the pooled deadline, on a connection of its own', async () => {
    const kc = kubeConfig();
    shareKubeDispatchers(kc, 500, 5_000);
    const api = kc.makeApiClient(CoreV1Api);
    await read(api);
    const before = sockets.length;
    const list = await api.listNamespacedConfigMap({ namespace: 'default', resourceVersion: '5' });
    expect(list.metadata?.resourceVersion).toBe('9');
    expect(sockets.length - before).toBe(1);
    // the same slow answer to a pooled request (a page from etcd) is given up at the deadline
    await expect(api.listNamespacedConfigMap({ namespace: 'default', limit: 5 })).rejects.toThrow();
  });

  it('pooled connections gone half-open (no FIN, no RST) fail their request at the deadline and are replaced', async () => {
    const kc = kubeConfig(proxy.url);
    shareKubeDispatchers(kc, 500);
    const api = kc.makeApiClient(CoreV1Api);
    await read(api);
    hang = true;
    await expect(read(api)).rejects.toThrow();
    const dead = proxy.accepted; // every connection so far is blackholed
    // each dead pooled connection costs at most one failed request (HTTP/1.1 may hold two), then a new one serves
    let failed = 1;
    for (;;) {
      try {
        expect((await read(api)).metadata?.name).toBe('x');
        break;
      } catch {
        failed++;
      }
      expect(failed).toBeLessThanOrEqual(dead);
    }
    expect(proxy.accepted).toBeGreaterThan(dead);
  });
});
