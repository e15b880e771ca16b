// scratch: apiserver CPU per paginated list kind (not committed)
import { readFileSync, readdirSync } from 'node:fs';
import { Pool } from 'undici';
import { startScaleKube } from '../bench/lib/kube-bench.js';
const kube = await startScaleKube({ quotaBytes: 8 * 1024 ** 3, etcdOnTmpfs: true, etcdDataDir: process.env.DIR! });
const port = new URL(kube.server).port;
const pidOf = (s: string): number => Number(readdirSync('/proc').find((d) => /^\d+$/.test(d) && (() => { try { return readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(s); } catch { return false; } })()));
const api = pidOf(`--secure-port=${port}\0`);
const etcd = pidOf(`--listen-client-urls=${kube.etcdEndpoint}\0`);
const cpu = (pid: number): number => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) / 100; };
const pool = new Pool(kube.server, { connections: 2, connect: { rejectUnauthorized: false } });
async function list(path: string, accept: string, limit: number): Promise<void> {
  const a0 = cpu(api), e0 = cpu(etcd), s0 = process.cpuUsage(), t0 = Date.now();
  let cont: string | undefined; let bytes = 0; let pages = 0;
  do {
    const q = `${path}${path.includes('?') ? '&' : '?'}limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
    const r = await pool.request({ path: q, method: 'GET', headers: { authorization: `Bearer ${kube.token}`, accept, 'accept-encoding': 'identity' } });
    const buf = Buffer.from(await r.body.arrayBuffer()); bytes += buf.length; pages++;
    if (accept.includes('json')) { const t = buf.toString(); cont = (JSON.parse(t) as { metadata: { continue?: string } }).metadata.continue || undefined; }
    else { const m = /([A-Za-z0-9+/=_-]{40,})/.exec(buf.subarray(0, 2000).toString('latin1')); cont = undefined; void m; }
  } while (cont);
  const s = process.cpuUsage(s0);
  console.log(path, accept.slice(0, 40), `pages ${pages} MB ${(bytes / 1e6).toFixed(0)} wall ${((Date.now() - t0) / 1000).toFixed(1)} s apiserver ${(cpu(api) - a0).toFixed(1)} etcd ${(cpu(etcd) - e0).toFixed(1)} client ${((s.user + s.system) / 1e6).toFixed(1)}`);
}
await list('/api/v1/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls', 'application/json', 1000);
await list('/apis/cert-manager.io/v1/certificates', 'application/json', 1000);
await list('/api/v1/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls', 'application/json', 1000);
await list('/apis/cert-manager.io/v1/certificates', 'application/json', 1000);
async function firstPages(path: string, accept: string, n: number): Promise<void> {
  const a0 = cpu(api), e0 = cpu(etcd), t0 = Date.now(); let bytes = 0;
  for (let i = 0; i < n; i++) {
    const r = await pool.request({ path: `${path}&limit=1000`, method: 'GET', headers: { authorization: `Bearer ${kube.token}`, accept, 'accept-encoding': 'identity' } });
    bytes += (await r.body.arrayBuffer()).byteLength;
  }
  console.log('first page x', n, accept.slice(0, 40), `MB ${(bytes / 1e6).toFixed(0)} wall ${((Date.now() - t0) / 1000).toFixed(1)} s apiserver ${(cpu(api) - a0).toFixed(1)} etcd ${(cpu(etcd) - e0).toFixed(1)}`);
}
await firstPages('/api/v1/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls', 'application/json', 20);
await firstPages('/api/v1/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls', 'application/vnd.kubernetes.protobuf', 20);
await firstPages('/api/v1/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls', 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1', 20);
await pool.close(); await kube.stop();
