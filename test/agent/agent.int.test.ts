/**
 * Two agents (in-process, as two replicas would run) against the REAL kube-apiserver and a loopback hub
 * stand-in: only the Lease holder reports; when it stops, the other takes over with a new epoch and a full
 * snapshot, and becomes ready. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/index.js';
import { loadAgentConfig } from '../../src/config.js';
import type { InventoryReport } from '../../src/model/inventory.js';
import { selfSigned } from '../emitter/fixtures.js';
import { installCertManagerCrds } from '../fixtures/cert-manager-crds.js';
import { ensureKubeBinaries, ensureNamespace, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const log = pino({ level: 'silent' });

describe.skipIf(skip)('agent: two replicas (real apiserver, loopback hub)', () => {
  let env: KubeEnv;
  let hub: Server;
  let hubUrl: string;
  let keyFile: string;
  const reports: InventoryReport[] = [];
  const agents: RunningAgent[] = [];

  beforeAll(async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv();
    const kc = env.kubeConfig();
    await installCertManagerCrds(kc);
    for (const ns of ['certmgr-notify', 'apps']) await ensureNamespace(kc, ns);
    const cert = selfSigned({ cn: 'a.example.com', days: 30 });
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: 'apps',
      body: {
        metadata: { name: 'a-tls' },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': Buffer.from(cert.pem).toString('base64'), 'tls.key': Buffer.from(cert.keyPem).toString('base64') },
      },
    });
    hub = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.url !== '/v1/inventory') return void res.writeHead(202, { 'content-type': 'application/json' }).end('{"events":[]}');
        const r = JSON.parse(body) as InventoryReport;
        reports.push(r);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ status: 'applied', clusterId: r.cluster.id, epoch: r.epoch, seq: r.seq }));
      });
    });
    await new Promise<void>((r) => hub.listen(0, '127.0.0.1', r));
    hubUrl = `http://127.0.0.1:${(hub.address() as AddressInfo).port}`;
    keyFile = join(mkdtempSync(join(tmpdir(), 'cmn-agents-')), 'key');
    writeFileSync(keyFile, 'agent-key-0123456789abcdef\n');
  }, 10 * 60_000);

  afterAll(async () => {
    for (const a of agents) await a.close();
    hub?.closeAllConnections();
    await new Promise((r) => hub?.close(r));
    await env?.stop();
  });

  const start = async (id: string): Promise<RunningAgent> => {
    const cfg = loadAgentConfig(
      ['--hub-url', hubUrl, '--api-key-file', keyFile, '--cluster-name', 'two', '--port', '0', '--host', '127.0.0.1'],
      { CERTMGR_NOTIFY_STATE_NAMESPACE: 'certmgr-notify', CERTMGR_NOTIFY_INSTANCE_ID: id },
    );
    const a = await startAgent(cfg, log, { kubeConfig: env.kubeConfig() });
    agents.push(a);
    return a;
  };

  it('only the leader reports; when it stops the other starts a new epoch with a full snapshot and is ready', async () => {
    const a = await start('agent-a');
    await waitFor('a reports', async () => (a.readiness().ready ? true : undefined), { timeoutMs: 60_000, intervalMs: 100 });
    const b = await start('agent-b');
    const epochA = reports[0]!.epoch;
    expect(reports[0]).toMatchObject({ kind: 'snapshot', seq: 1, final: true, upserts: [{ secretName: 'a-tls' }] });
    expect(b.readiness()).toEqual({ ready: false, reason: 'leader election in progress' });
    const before = reports.length;
    // b is a standby: it reports nothing while a leads (a few of its election rounds)
    await new Promise((r) => setTimeout(r, 5_000));
    expect(reports.slice(before).every((r) => r.epoch === epochA)).toBe(true);

    await a.close(); // releases the Lease
    agents.splice(agents.indexOf(a), 1);
    const snap = await waitFor('b snapshots', async () => reports.find((r) => r.epoch !== epochA), { timeoutMs: 60_000, intervalMs: 100 });
    expect(snap).toMatchObject({ kind: 'snapshot', seq: 1, final: true, upserts: [{ secretName: 'a-tls' }] });
    await waitFor('b ready', async () => (b.readiness().ready ? true : undefined), { timeoutMs: 30_000, intervalMs: 100 });
  });
});
