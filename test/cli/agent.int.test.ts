/**
 * `certmgr-notify agent` as a real process against the REAL kube-apiserver v1.20.2 + etcd (cert-manager CRDs)
 * and a loopback hub stand-in: /readyz is 503 until the hub accepts the first inventory report; the snapshot
 * carries the X.509 facts of the cluster's TLS Secrets joined with their Certificates and never any key
 * material; an Issuer going not ready is posted as `.notready` with the cluster's identity; SIGTERM exits 0.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InventoryReport } from '../../src/model/inventory.js';
import { selfSigned } from '../emitter/fixtures.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { applyManifest, ensureKubeBinaries, ensureNamespace, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const BIN = join(import.meta.dirname, '../../bin/certmgr-notify.js');
const KEY = 'cmn_agent_key_0123456789abcdef';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const b64 = (s: string): string => Buffer.from(s).toString('base64');

interface HubRequest {
  path: string;
  key: string | undefined;
  body: string;
  /** answered 503 (the hub "down") */
  refused?: boolean;
}

describe.skipIf(skip)('certmgr-notify agent (real process, real apiserver, loopback hub)', () => {
  let env: KubeEnv;
  let kc: KubeConfig;
  let hub: Server;
  let hubUrl: string;
  const requests: HubRequest[] = [];
  const hubState = { acceptInventory: false, eventsDown: false };
  let proc: ChildProcess | undefined;
  let out = '';
  let agentUrl: string;
  let kubeSystemUid: string;
  const web = selfSigned({ cn: 'web.example.com', dns: ['web.example.com', 'www.example.com'], days: 40, serial: '0x0BADC0DE' });
  const intermediate = selfSigned({ cn: 'Intermediate', days: 20 });

  beforeAll(async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv();
    kc = env.kubeConfig();
    await installCertManagerCrds(kc);
    for (const ns of ['certmgr-notify', 'team-a', 'shop']) await ensureNamespace(kc, ns);
    const core = kc.makeApiClient(CoreV1Api);
    kubeSystemUid = (await core.readNamespace({ name: 'kube-system' })).metadata!.uid!;
    const cert = (await applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'web', namespace: 'shop', annotations: { 'notify.certmgr.io/application-ids': 'shop-frontend' } },
      spec: {
        secretName: 'web-tls',
        dnsNames: ['web.example.com'],
        issuerRef: { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
      },
    } as never)) as { metadata: { uid: string } };
    certUid = cert.metadata.uid;
    await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
      {
        group: 'cert-manager.io',
        version: 'v1',
        plural: 'certificates',
        namespace: 'shop',
        name: 'web',
        body: {
          status: {
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                reason: 'Ready',
                message: 'up to date',
                lastTransitionTime: '2026-01-01T00:00:00Z',
                observedGeneration: 1,
              },
            ],
          },
        },
      },
      mergePatch,
    );
    await core.createNamespacedSecret({
      namespace: 'shop',
      body: {
        metadata: { name: 'web-tls', labels: { team: 'shop' }, annotations: { 'cert-manager.io/certificate-name': 'web' } },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(web.pem + intermediate.pem), 'tls.key': b64(web.keyPem), 'ca.crt': b64(intermediate.pem) },
      },
    });
    await core.createNamespacedSecret({
      namespace: 'team-a',
      body: { metadata: { name: 'not-issued-yet' }, type: 'kubernetes.io/tls', data: { 'tls.crt': '', 'tls.key': '' } },
    });

    hub = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        requests.push({ path: req.url ?? '', key: req.headers['svc-api-key'] as string | undefined, body });
        if (req.url === '/v1/events') {
          if (hubState.eventsDown) {
            requests.at(-1)!.refused = true;
            return void res.writeHead(503).end();
          }
          const events = JSON.parse(body) as unknown[];
          res.writeHead(202, { 'content-type': 'application/json' });
          return void res.end(JSON.stringify({ events: events.map((_, i) => ({ id: `e${requests.length}-${i}`, deliveries: 0 })) }));
        }
        if (req.url === '/v1/inventory') {
          if (!hubState.acceptInventory)
            return void res
              .writeHead(503, { 'content-type': 'application/json' })
              .end('{"errors":[{"code":"UNAVAILABLE","message":"starting"}]}');
          const r = JSON.parse(body) as InventoryReport;
          res.writeHead(200, { 'content-type': 'application/json' });
          return void res.end(JSON.stringify({ status: 'applied', clusterId: r.cluster.id, epoch: r.epoch, seq: r.seq }));
        }
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => hub.listen(0, '127.0.0.1', r));
    hubUrl = `http://127.0.0.1:${(hub.address() as AddressInfo).port}`;

    const dir = mkdtempSync(join(tmpdir(), 'cmn-agent-'));
    const keyFile = join(dir, 'api-key');
    writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
    proc = spawn(
      process.execPath,
      [
        BIN,
        'agent',
        '--hub-url',
        hubUrl,
        '--api-key-file',
        keyFile,
        '--cluster-name',
        'test-cluster',
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--health-grace-period',
        '1s',
      ],
      {
        cwd: dir,
        env: {
          ...process.env,
          KUBECONFIG: env.kubeconfigPath,
          CERTMGR_NOTIFY_STATE_NAMESPACE: 'certmgr-notify',
          CERTMGR_NOTIFY_INSTANCE_ID: 'agent-test-0',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    proc.stdout!.on('data', (d) => (out += d));
    proc.stderr!.on('data', (d) => (out += d));
    agentUrl = await waitFor(
      'agent listening',
      async () => {
        const line = out.split('\n').find((l) => l.includes('"listening"'));
        return line ? (JSON.parse(line) as { url: string }).url : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
  }, 10 * 60_000);
  let certUid = '';

  afterAll(async () => {
    proc?.kill('SIGKILL');
    hub?.closeAllConnections();
    await new Promise((r) => hub?.close(r));
    await env?.stop();
  });

  const inventory = (): InventoryReport[] =>
    requests.filter((r) => r.path === '/v1/inventory').map((r) => JSON.parse(r.body) as InventoryReport);

  it('/readyz is 503 while the hub refuses inventory reports, 200 once it accepts one; /healthz is 200 throughout', async () => {
    await waitFor('a refused inventory report', async () => (inventory().length > 0 ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    const notReady = await fetch(`${agentUrl}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({ status: 'not ready' });
    expect((await fetch(`${agentUrl}/healthz`)).status).toBe(200);
    hubState.acceptInventory = true;
    await waitFor('ready', async () => ((await fetch(`${agentUrl}/readyz`)).status === 200 ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
  });

  it('the snapshot: facts from the real X.509 joined with the Certificate, the agent key, and no key material anywhere', async () => {
    const snap = inventory().find((r) => r.kind === 'snapshot' && r.final === true)!;
    expect(snap).toMatchObject({ protocol: 1, cluster: { id: kubeSystemUid, name: 'test-cluster' }, seq: 1, deletes: [] });
    const x = new X509Certificate(web.pem);
    const byName = new Map(snap.upserts.map((u) => [`${u.namespace}/${u.secretName}`, u]));
    expect(byName.get('shop/web-tls')).toEqual({
      namespace: 'shop',
      secretName: 'web-tls',
      certificateName: 'web',
      certificateUid: certUid,
      serial: '0BADC0DE',
      notBefore: x.validFromDate.toISOString(),
      notAfter: x.validToDate.toISOString(),
      subject: 'O=Example Corp, CN=web.example.com',
      commonName: 'web.example.com',
      dnsNames: ['web.example.com', 'www.example.com'],
      issuer: 'O=Example Corp, CN=web.example.com',
      issuerRef: { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
      ready: { status: 'True', reason: 'Ready' },
      applicationIds: ['shop-frontend'],
      labels: { team: 'shop' },
      chainNotAfter: new X509Certificate(intermediate.pem).validToDate.toISOString(),
    });
    expect(byName.get('team-a/not-issued-yet')).toMatchObject({ serial: null, notAfter: null, dnsNames: [] });
    for (const r of requests) {
      expect(r.key).toBe(KEY);
      expect(r.body).not.toContain('PRIVATE KEY');
      expect(r.body).not.toContain(b64(web.keyPem).slice(0, 40));
      expect(r.body).not.toContain(b64(web.pem).slice(0, 40));
    }
    expect(out).not.toContain(KEY);
  });

  it('an Issuer going not ready: .notready posted with the cluster identity after the grace period', async () => {
    const issuer = (await applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: 'acme', namespace: 'team-a' },
      spec: { acme: { server: 'https://acme.example/directory' } },
    } as never)) as { metadata: { uid: string } };
    await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
      {
        group: 'cert-manager.io',
        version: 'v1',
        plural: 'issuers',
        namespace: 'team-a',
        name: 'acme',
        body: {
          status: {
            conditions: [
              {
                type: 'Ready',
                status: 'False',
                reason: 'ErrRegisterACMEAccount',
                message: 'no',
                lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
                observedGeneration: 1,
              },
            ],
          },
        },
      },
      mergePatch,
    );
    const event = await waitFor(
      '.notready posted',
      async () =>
        requests
          .filter((r) => r.path === '/v1/events')
          .flatMap((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> }[])
          .find((e) => e.data['issuerName'] === 'acme'),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(event.type).toBe('evt.healthstatus.certmgr-issuer.notready');
    expect(event.data).toMatchObject({
      clusterId: kubeSystemUid,
      clusterName: 'test-cluster',
      namespace: 'team-a',
      resourceId: issuer.metadata.uid,
      statusReason: 'ErrRegisterACMEAccount',
    });
  });

  it('a hub outage: the .notready waits (pending, failures counted), the resource recovers meanwhile; when the hub is back both go out, in order', async () => {
    hubState.eventsDown = true;
    const custom = kc.makeApiClient(CustomObjectsApi);
    await applyManifest(kc, {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: 'flappy', namespace: 'team-a' },
      spec: { acme: { server: 'https://acme.example/directory' } },
    } as never);
    const setReady = (status: 'True' | 'False', reason: string) =>
      custom.patchNamespacedCustomObjectStatus(
        {
          group: 'cert-manager.io',
          version: 'v1',
          plural: 'issuers',
          namespace: 'team-a',
          name: 'flappy',
          body: {
            status: {
              conditions: [
                {
                  type: 'Ready',
                  status,
                  reason,
                  message: reason,
                  lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
                  observedGeneration: 1,
                },
              ],
            },
          },
        },
        mergePatch,
      );
    await setReady('False', 'ErrRegisterACMEAccount');
    const metric = async (name: string): Promise<number> => {
      const text = await (await fetch(`${agentUrl}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(name));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    await waitFor('the .notready waiting', async () => ((await metric('certmgr_notify_emitter_pending_events')) >= 1 ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await waitFor(
      'failed attempts counted',
      async () => ((await metric('certmgr_notify_emitter_send_failures_total')) >= 2 ? true : undefined),
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    await setReady('True', 'ACMEAccountRegistered');
    hubState.eventsDown = false;
    const flappy = () =>
      requests
        .filter((r) => r.path === '/v1/events' && !r.refused)
        .flatMap((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> }[])
        .filter((e) => e.data['issuerName'] === 'flappy')
        .map((e) => e.type.split('.').pop());
    await waitFor('both events', async () => (flappy().length >= 2 ? true : undefined), { timeoutMs: 60_000, intervalMs: 100 });
    expect(flappy()).toEqual(['notready', 'active']);
    expect(await metric('certmgr_notify_emitter_pending_events')).toBe(0);
    expect(await metric('certmgr_notify_emitter_dropped_events_total')).toBe(0);
  });

  it('/metrics has the inventory and informer page counters; anything else is 404; SIGTERM exits 0', async () => {
    const text = await (await fetch(`${agentUrl}/metrics`)).text();
    expect(text).toMatch(/certmgr_notify_inventory_reports_total\{kind="snapshot",outcome="applied"\} [1-9]/);
    expect(text).toMatch(/certmgr_notify_informer_list_pages_total\{informer="tls-secret-facts"\} [1-9]/);
    expect(text).toContain('certmgr_notify_emitter_pending_events');
    expect(text).toMatch(/certmgr_notify_agent_leader 1/);
    expect((await fetch(`${agentUrl}/v1/events`)).status).toBe(404);
    const exited = new Promise<number>((r) => proc!.on('exit', (c) => r(c ?? -1)));
    proc!.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toContain('emitter stopped');
  });
});
