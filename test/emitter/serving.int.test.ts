/**
 * The emitter's serving part wired end to end on a REAL kube-apiserver: an Ingress whose probe-address
 * annotation points at a loopback TLS server, its TLS Secret, and a loopback hub stand-in receiving the
 * inventory. The Secret's row carries the endpoint's verdict; the server switching to a foreign certificate is
 * a delta with `mismatch`. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSecureContext, createServer, type SecureContext, type Server } from 'node:tls';
import { CoreV1Api, NetworkingV1Api, type KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmitter, type RunningEmitter } from '../../src/emitter/index.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import type { InventoryReport } from '../../src/model/inventory.js';
import type { ServingEndpointFacts } from '../../src/model/serving.js';
import { ensureKubeBinaries, ensureNamespace, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { selfSigned, TEST_EMITTER_BACKOFFS, type SelfSigned } from './fixtures.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const CLUSTER_ID = '5c0ffee0-0000-4000-8000-000000000028';

describe.skipIf(skip)('emitter: serving probes (real apiserver, loopback endpoint and hub)', () => {
  let env: KubeEnv;
  let kc: KubeConfig;
  let tls: Server;
  let hub: HttpServer;
  let hubUrl: string;
  let emitter: RunningEmitter | undefined;
  let current: SelfSigned;
  let foreign: SelfSigned;
  const reports: InventoryReport[] = [];
  const serves = new Map<string, SecureContext>();

  beforeAll(async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv();
    kc = env.kubeConfig();
    await installCertManagerCrds(kc);
    await ensureNamespace(kc, 'shop');
    current = selfSigned({ cn: 'web.example.com', dns: ['web.example.com'], days: 90 });
    foreign = selfSigned({ cn: 'ingress.local', dns: ['ingress.local'], days: 90 });
    tls = createServer({ key: foreign.keyPem, cert: foreign.pem, SNICallback: (name, cb) => cb(null, serves.get(name)) });
    tls.on('tlsClientError', () => {});
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    hub = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const r = JSON.parse(body) as InventoryReport;
        reports.push(r);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 'applied', clusterId: r.cluster.id, epoch: r.epoch, seq: r.seq }));
      });
    });
    await new Promise<void>((r) => hub.listen(0, '127.0.0.1', r));
    hubUrl = `http://127.0.0.1:${(hub.address() as AddressInfo).port}`;
  }, 10 * 60_000);

  afterAll(async () => {
    await emitter?.stop();
    await new Promise((r) => tls?.close(r));
    hub?.closeAllConnections();
    await new Promise((r) => hub?.close(r));
    await env?.stop();
  });

  /** the latest serving facts reported for shop/web-tls */
  const servingOf = (): ServingEndpointFacts[] | undefined =>
    reports
      .flatMap((r) => r.upserts)
      .filter((u) => u.namespace === 'shop' && u.secretName === 'web-tls')
      .at(-1)?.serving;

  it('the Secret’s row carries its endpoint’s verdict, and a change of what is served is a delta', async () => {
    serves.set('web.example.com', createSecureContext({ key: current.keyPem, cert: current.pem }));
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: 'shop',
      body: {
        metadata: { name: 'web-tls' },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': Buffer.from(current.pem).toString('base64'), 'tls.key': Buffer.from(current.keyPem).toString('base64') },
      },
    });
    const address = `127.0.0.1:${(tls.address() as AddressInfo).port}`;
    await kc.makeApiClient(NetworkingV1Api).createNamespacedIngress({
      namespace: 'shop',
      body: {
        metadata: { name: 'web', annotations: { 'notify.certmgr.io/probe-address': address } },
        spec: {
          tls: [{ hosts: ['web.example.com'], secretName: 'web-tls' }],
          rules: [
            {
              host: 'web.example.com',
              http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] },
            },
          ],
        },
      },
    });
    emitter = await startEmitter({
      logger: pino({ level: process.env['DBG'] ? 'debug' : 'silent' }),
      kubeConfig: kc,
      serviceUrl: hubUrl,
      apiKey: 'agent-key-0123456789',
      clusterId: CLUSTER_ID,
      clusterName: 'serving-test',
      stateNamespace: 'default',
      health: false,
      inventoryBatchMs: 50,
      servingProbeIntervalMs: 500,
      // the certificate was just made: no reload grace, or the first verdicts would wait for it
      servingProbe: { reloadGraceMs: 0 },
      ...TEST_EMITTER_BACKOFFS,
    });
    await emitter.whenRunning();

    await waitFor('an ok endpoint in the inventory', () => servingOf()?.[0]?.status === 'ok');
    expect(servingOf()).toEqual([
      {
        host: 'web.example.com',
        address,
        source: { kind: 'Ingress', namespace: 'shop', name: 'web' },
        status: 'ok',
        servedSerial: current.serial.toUpperCase(),
        servedNotAfter: expect.stringMatching(/Z$/),
        checkedAt: expect.stringMatching(/Z$/),
      },
    ]);
    expect(emitter.stats().serving).toMatchObject({ endpoints: 1 });

    serves.set('web.example.com', createSecureContext({ key: foreign.keyPem, cert: foreign.pem }));
    await waitFor('a mismatch delta', () => servingOf()?.[0]?.status === 'mismatch');
    expect(servingOf()![0]).toMatchObject({ servedSerial: foreign.serial.toUpperCase() });
    expect(reports.at(-1)!.kind).toBe('delta');
  });
});
