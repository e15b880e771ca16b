/**
 * Helpers of bench/scale.ts: a dedicated kube-apiserver + etcd sized for 100,000s of objects, fast concurrent
 * object creation (keep-alive, N requests in flight), cert-manager-like Certificates and TLS Secrets, a sampler
 * of a child process's memory (/proc/<pid>/status), Ingresses whose hosts a loopback TLS server answers (counting
 * the serving prober's handshakes) and the bare client-node informer baseline.
 */
import { execFileSync, spawn } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecureContext, createServer as createTlsServer } from 'node:tls';
import { Pool } from 'undici';
import { CERT_MANAGER_API_VERSION } from '../../test/fixtures/cert-manager-crds.js';
import { startKubeEnv, type KubeEnv } from '../../test/support/kube.js';

const MIB = 1024 * 1024;
export const mib = (bytes: number): string => `${Math.round(bytes / MIB)} MiB`;
export const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * etcd with its backend quota raised (the default 2 GiB fills up around 100,000 TLS Secrets plus their
 * revisions) and the apiserver's watch cache on, as in production: after an apiserver restart, a watch from a
 * resourceVersion older than the new cache gets 410 and the informers relist.
 */
export function startScaleKube(o: {
  quotaBytes: number;
  etcdOnTmpfs: boolean;
  etcdDataDir?: string;
  profiling?: boolean;
}): Promise<KubeEnv> {
  return startKubeEnv({
    watchCache: true,
    etcdOnTmpfs: o.etcdOnTmpfs,
    ...(o.etcdDataDir !== undefined ? { etcdDataDir: o.etcdDataDir } : {}),
    startTimeoutMs: 180_000,
    etcdArgs: [`--quota-backend-bytes=${o.quotaBytes}`, '--snapshot-count=100000'],
    // the bench's writers and the informers' big LISTs at once; the apiserver's defaults are 400/200
    apiserverArgs: ['--max-requests-inflight=1000', '--max-mutating-requests-inflight=500', ...(o.profiling ? ['--profiling=true'] : [])],
  });
}

/**
 * A CPU profile of the apiserver (`--profiling=true`: `startScaleKube({ profiling })`) over the next `seconds`,
 * written to `file` (read it with `go tool pprof -top <kube-apiserver binary> <file>`). Asks again every 200 ms
 * while the apiserver is down or starting, so a profile asked for at its kill starts with its first answer.
 */
export async function apiserverProfile(env: KubeEnv, seconds: number, file: string, until: number): Promise<string> {
  const pool = new Pool(env.server, { connections: 1, connect: { rejectUnauthorized: false } });
  try {
    while (Date.now() < until) {
      const startedAt = Date.now();
      try {
        const r = await pool.request({
          path: `/debug/pprof/profile?seconds=${seconds}`,
          method: 'GET',
          headers: { authorization: `Bearer ${env.token}` },
          headersTimeout: (seconds + 30) * 1000,
          bodyTimeout: (seconds + 30) * 1000,
        });
        const body = Buffer.from(await r.body.arrayBuffer());
        if (r.statusCode === 200) {
          writeFileSync(file, body);
          return `apiserver CPU profile of ${seconds} s from ${new Date(startedAt).toISOString()}: ${file}`;
        }
      } catch {
        /* down or starting */
      }
      await sleep(200);
    }
    return 'apiserver CPU profile: not taken (no answer)';
  } finally {
    await pool.close();
  }
}

// ---------------------------------------------------------------------------
// certificates

export interface TlsMaterial {
  /** leaf + CA, PEM (cert-manager's tls.crt with a chain) */
  crt: string;
  key: string;
  ca: string;
  notBefore: Date;
  notAfter: Date;
}

/** `count` distinct RSA-2048 leaf certificates signed by one CA (openssl), 90 days, as cert-manager issues them. */
export function generateTlsMaterial(count: number): TlsMaterial[] {
  const dir = mkdtempSync(join(tmpdir(), 'cmn-scale-certs-'));
  const ssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  try {
    ssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '3650',
      '-subj',
      '/O=Bench Corp/CN=Bench CA',
    );
    const ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
    const out: TlsMaterial[] = [];
    for (let i = 0; i < count; i++) {
      const cn = `app-${i}.bench.example.com`;
      writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=DNS:${cn},DNS:www.${cn}\nextendedKeyUsage=serverAuth\n`);
      ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', `/CN=${cn}`);
      ssl(
        'x509',
        '-req',
        '-in',
        'leaf.csr',
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-set_serial',
        `0x${randomBytes(16).toString('hex')}`,
        '-days',
        '90',
        '-extfile',
        'ext.cnf',
        '-out',
        'leaf.crt',
      );
      const now = new Date();
      out.push({
        crt: readFileSync(join(dir, 'leaf.crt'), 'utf8') + ca,
        key: readFileSync(join(dir, 'leaf.key'), 'utf8'),
        ca,
        notBefore: now,
        notAfter: new Date(now.getTime() + 90 * 86_400_000),
      });
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// objects

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const pad = (n: number, w: number): string => String(n).padStart(w, '0');

export interface Layout {
  namespaces: number;
  /** every `notReadyEvery`-th Certificate is Ready=False */
  notReadyEvery: number;
}

const namespaceOf = (i: number, l: Layout): string => `scale-${pad(i % l.namespaces, 3)}`;
const certName = (i: number): string => `app-${pad(i, 6)}`;

function issuerRefOf(i: number): { name: string; kind: string; group: string } {
  return i % 2
    ? { name: 'letsencrypt', kind: 'ClusterIssuer', group: 'cert-manager.io' }
    : { name: 'ca-issuer', kind: 'Issuer', group: 'cert-manager.io' };
}

function dnsNamesOf(i: number, ns: string): string[] {
  return [`${certName(i)}.bench.example.com`, `${certName(i)}.${ns}.svc.cluster.local`];
}

function certificateOf(i: number, l: Layout): Record<string, unknown> {
  const ns = namespaceOf(i, l);
  const name = certName(i);
  return {
    apiVersion: CERT_MANAGER_API_VERSION,
    kind: 'Certificate',
    metadata: { name, namespace: ns, labels: { 'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': 'bench' } },
    spec: {
      secretName: `${name}-tls`,
      commonName: `${name}.bench.example.com`,
      dnsNames: dnsNamesOf(i, ns),
      duration: '2160h0m0s',
      renewBefore: '360h0m0s',
      issuerRef: issuerRefOf(i),
      privateKey: { algorithm: 'RSA', size: 2048, rotationPolicy: 'Always' },
      usages: ['digital signature', 'key encipherment', 'server auth'],
    },
  };
}

function certificateStatusOf(i: number, l: Layout, m: TlsMaterial): Record<string, unknown> {
  const ready = i % l.notReadyEvery !== 0;
  const at = m.notBefore.toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    status: {
      conditions: [
        ready
          ? {
              type: 'Ready',
              status: 'True',
              reason: 'Ready',
              message: 'Certificate is up to date and has not expired',
              lastTransitionTime: at,
              observedGeneration: 1,
            }
          : {
              type: 'Ready',
              status: 'False',
              reason: 'Failed',
              message: 'The certificate request has failed to complete and will be retried: the ACME order failed (bench)',
              lastTransitionTime: at,
              observedGeneration: 1,
            },
      ],
      notBefore: at,
      notAfter: m.notAfter.toISOString().replace(/\.\d+Z$/, 'Z'),
      renewalTime: new Date(m.notAfter.getTime() - 15 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z'),
      revision: 1,
    },
  };
}

/** The Secret cert-manager writes for Certificate `i`: its labels and annotations, tls.crt (leaf + CA), tls.key, ca.crt. */
function tlsSecretOf(i: number, l: Layout, m: TlsMaterial): Record<string, unknown> {
  const ns = namespaceOf(i, l);
  const ref = issuerRefOf(i);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: {
      name: `${certName(i)}-tls`,
      namespace: ns,
      labels: { 'controller.cert-manager.io/fao': 'true' },
      annotations: {
        'cert-manager.io/alt-names': dnsNamesOf(i, ns).join(','),
        'cert-manager.io/certificate-name': certName(i),
        'cert-manager.io/common-name': `${certName(i)}.bench.example.com`,
        'cert-manager.io/ip-sans': '',
        'cert-manager.io/issuer-group': ref.group,
        'cert-manager.io/issuer-kind': ref.kind,
        'cert-manager.io/issuer-name': ref.name,
        'cert-manager.io/uri-sans': '',
      },
    },
    data: { 'tls.crt': b64(m.crt), 'tls.key': b64(m.key), 'ca.crt': b64(m.ca) },
  };
}

/**
 * Ingress `i`: both DNS names of Certificate `i` as hosts of one spec.tls entry with its Secret, probed at
 * `address` (the probe-address annotation): two endpoints each.
 */
function ingressOf(i: number, l: Layout, address: string): Record<string, unknown> {
  const ns = namespaceOf(i, l);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: certName(i), namespace: ns, annotations: { 'notify.certmgr.io/probe-address': address } },
    spec: {
      defaultBackend: { service: { name: certName(i), port: { number: 443 } } },
      tls: [{ hosts: dnsNamesOf(i, ns), secretName: `${certName(i)}-tls` }],
    },
  };
}

/** Ingresses for i in [from, to), each pointing at `address`; an existing one gets the address (a reused etcd). */
export async function growIngresses(w: ApiWriter, l: Layout, from: number, to: number, address: string): Promise<GrowStats> {
  const t0 = performance.now();
  const req0 = w.requests;
  const retry0 = w.retries;
  await forEachConcurrent(from, to, w.connections, async (i) => {
    const ns = namespaceOf(i, l);
    await w.upsert(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`, certName(i), ingressOf(i, l, address));
  });
  return { objects: to - from, requests: w.requests - req0, retries: w.retries - retry0, ms: performance.now() - t0 };
}

/** A loopback TLS server as every Ingress endpoint: what it accepted (each probe is one connection). */
export interface ProbeTarget {
  address: string;
  /** TCP connections accepted; completed handshakes; connections per whole second since start (index = second) */
  readonly connections: number;
  readonly handshakes: number;
  readonly perSecond: readonly number[];
  readonly startedAt: number;
  close(): Promise<void>;
}

/**
 * Serves, for the SNI `app-<i>.…`, the certificate of Secret `i` (material[i % material.length], as grow() wrote
 * it): every endpoint serves its Secret's certificate, the steady state of a healthy cluster.
 */
export async function startProbeTarget(material: TlsMaterial[]): Promise<ProbeTarget> {
  const contexts = material.map((m) => createSecureContext({ key: m.key, cert: m.crt }));
  const startedAt = Date.now();
  const perSecond: number[] = [];
  const counts = { connections: 0, handshakes: 0 };
  const server = createTlsServer({
    key: material[0]!.key,
    cert: material[0]!.crt,
    SNICallback: (name, cb) => {
      const m = /^app-(\d+)\./.exec(name);
      cb(null, contexts[m ? Number(m[1]) % contexts.length : 0]);
    },
  });
  server.on('connection', () => {
    counts.connections++;
    const s = Math.floor((Date.now() - startedAt) / 1000);
    perSecond[s] = (perSecond[s] ?? 0) + 1;
  });
  server.on('secureConnection', (socket) => {
    counts.handshakes++;
    socket.on('error', () => {});
    socket.end();
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    get connections() {
      return counts.connections;
    },
    get handshakes() {
      return counts.handshakes;
    },
    perSecond,
    startedAt,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const NOISE = randomBytes(768).toString('base64'); // ~1 KiB of data per noise object

// ---------------------------------------------------------------------------
// writing

/** Raw JSON requests to the apiserver over `connections` keep-alive connections, one request in flight each. */
export class ApiWriter {
  private readonly pool: Pool;
  requests = 0;
  retries = 0;

  constructor(
    private readonly env: KubeEnv,
    readonly connections: number,
  ) {
    this.pool = new Pool(env.server, { connections, connect: { rejectUnauthorized: false }, keepAliveTimeout: 30_000 });
  }

  /** POST (a 409 Already Exists counts as done: a rerun or a retry after a lost answer) or PATCH (merge). */
  async send(method: 'POST' | 'PATCH', path: string, body: unknown): Promise<void> {
    await this.write(method, path, body);
  }

  /** POST, or when the object exists (409), a merge PATCH of `name` with the same body. */
  async upsert(path: string, name: string, body: unknown): Promise<void> {
    if ((await this.write('POST', path, body)) === 'exists') await this.write('PATCH', `${path}/${name}`, body);
  }

  /** GET of one object, as JSON. */
  async read(path: string): Promise<Record<string, unknown>> {
    this.requests++;
    const r = await this.pool.request({
      path,
      method: 'GET',
      headers: { authorization: `Bearer ${this.env.token}`, accept: 'application/json' },
    });
    const text = await r.body.text();
    if (r.statusCode >= 300) throw new Error(`GET ${path}: HTTP ${r.statusCode} ${text.slice(0, 300)}`);
    return JSON.parse(text) as Record<string, unknown>;
  }

  private async write(method: 'POST' | 'PATCH', path: string, body: unknown): Promise<'exists' | undefined> {
    const payload = JSON.stringify(body);
    for (let attempt = 1; ; attempt++) {
      this.requests++;
      try {
        const r = await this.pool.request({
          path,
          method,
          headers: {
            authorization: `Bearer ${this.env.token}`,
            'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
            accept: 'application/json',
          },
          body: payload,
        });
        const text = await r.body.text();
        if (r.statusCode < 300) return undefined;
        if (method === 'POST' && r.statusCode === 409) return 'exists';
        if ((r.statusCode === 429 || r.statusCode >= 500) && attempt < 8) {
          this.retries++;
          await sleep(100 * attempt);
          continue;
        }
        throw new Error(`${method} ${path}: HTTP ${r.statusCode} ${text.slice(0, 300)}`);
      } catch (e) {
        if (attempt >= 8 || (e as Error).message.startsWith(`${method} ${path}: HTTP`)) throw e;
        this.retries++;
        await sleep(100 * attempt);
      }
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/**
 * While `during` runs (an apiserver restart), polls `/version` every 100 ms: the first answer after a failed
 * poll is the new apiserver serving, which can be well before its /readyz is 200 (clients list and watch then).
 */
export async function servingAgainAt(env: KubeEnv, during: () => Promise<void>): Promise<number | undefined> {
  const pool = new Pool(env.server, { connections: 1, connect: { rejectUnauthorized: false }, pipelining: 0 });
  let down = false;
  let servingAt: number | undefined;
  let done = false;
  const poller = (async () => {
    while (!done && servingAt === undefined) {
      try {
        const r = await pool.request({
          path: '/version',
          method: 'GET',
          headers: { authorization: `Bearer ${env.token}`, connection: 'close' },
          headersTimeout: 2000,
          bodyTimeout: 2000,
        });
        await r.body.text();
        if (down && r.statusCode === 200) servingAt = Date.now();
      } catch {
        down = true;
      }
      await sleep(100);
    }
  })();
  try {
    await during();
  } finally {
    done = true;
    await poller;
    await pool.close();
  }
  return servingAt;
}

/**
 * The apiserver fills the watch cache of a custom resource on the first request for it (a built-in type's at
 * its start), and until it is filled serves a list with resourceVersion=0 from etcd, page by page. In a cluster
 * cert-manager's own controller watches its resources all the time, so an agent starting there finds their
 * caches filled; here (a reused etcd, a fresh apiserver) nothing has touched them yet. Asks each resource of
 * `resources` (plural names of cert-manager.io/v1, or `secrets`) in the first bench namespace for one object with
 * resourceVersion=0 until the answer comes from the cache (which ignores the limit: the namespace's objects,
 * no continue token) rather than from etcd (one object and a continue token). Returns the ms it took.
 */
export async function warmWatchCaches(env: KubeEnv, resources: readonly string[]): Promise<number> {
  const t0 = Date.now();
  const pool = new Pool(env.server, { connections: resources.length, connect: { rejectUnauthorized: false } });
  const ns = namespaceOf(0, { namespaces: 1, notReadyEvery: 1 });
  try {
    await Promise.all(
      resources.map(async (plural) => {
        for (;;) {
          const r = await pool.request({
            path: `${plural === 'secrets' ? '/api/v1' : '/apis/cert-manager.io/v1'}/namespaces/${ns}/${plural}?limit=1&resourceVersion=0`,
            method: 'GET',
            headers: { authorization: `Bearer ${env.token}`, accept: 'application/json' },
            headersTimeout: 0,
            bodyTimeout: 0,
          });
          const body = (await r.body.json()) as { metadata?: { continue?: string } };
          if (r.statusCode === 200 && !body.metadata?.continue) return;
          if (Date.now() - t0 > 600_000) throw new Error(`the watch cache of ${plural} not filled after 10 min (HTTP ${r.statusCode})`);
          await sleep(500);
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return Date.now() - t0;
}

/** Runs `fn(i)` for i in [from, to) with `concurrency` calls in flight. */
async function forEachConcurrent(from: number, to: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = from;
  const worker = async (): Promise<void> => {
    while (next < to) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(0, to - from)) }, worker));
}

/** Namespaces, one Issuer per namespace and a ClusterIssuer, all Ready. Idempotent. */
export async function createScaffolding(w: ApiWriter, l: Layout): Promise<void> {
  const cm = `/apis/${CERT_MANAGER_API_VERSION}`;
  const readyStatus = {
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'ACMEAccountRegistered',
          message: 'The ACME account was registered with the ACME server',
          observedGeneration: 1,
        },
      ],
    },
  };
  await w.send('POST', `${cm}/clusterissuers`, {
    apiVersion: CERT_MANAGER_API_VERSION,
    kind: 'ClusterIssuer',
    metadata: { name: 'letsencrypt' },
    spec: { acme: { server: 'https://acme-v02.api.letsencrypt.org/directory', privateKeySecretRef: { name: 'letsencrypt-account' } } },
  });
  await w.send('PATCH', `${cm}/clusterissuers/letsencrypt/status`, readyStatus);
  await forEachConcurrent(0, l.namespaces, w.connections, async (n) => {
    const ns = namespaceOf(n, l);
    await w.send('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await w.send('POST', `${cm}/namespaces/${ns}/issuers`, {
      apiVersion: CERT_MANAGER_API_VERSION,
      kind: 'Issuer',
      metadata: { name: 'ca-issuer', namespace: ns },
      spec: { ca: { secretName: 'bench-ca' } },
    });
    await w.send('PATCH', `${cm}/namespaces/${ns}/issuers/ca-issuer/status`, readyStatus);
  });
}

export interface GrowStats {
  objects: number;
  requests: number;
  retries: number;
  ms: number;
}

/**
 * Certificates (create + status) and their TLS Secrets for i in [from, to), plus noise for j in [from/10, to/10):
 * an Opaque Secret and a ConfigMap each.
 */
/**
 * The material a reused etcd's objects were written with, read back from Secrets 0 … count-1 (grow() gave Secret i
 * material[i % count]): a new generateTlsMaterial() would make every probed endpoint serve a foreign certificate.
 */
export async function readTlsMaterial(w: ApiWriter, l: Layout, count: number): Promise<TlsMaterial[]> {
  const out: TlsMaterial[] = [];
  for (let i = 0; i < count; i++) {
    const s = await w.read(`/api/v1/namespaces/${namespaceOf(i, l)}/secrets/${certName(i)}-tls`);
    const data = s['data'] as Record<string, string>;
    const text = (k: string): string => Buffer.from(data[k] ?? '', 'base64').toString('utf8');
    const leaf = new X509Certificate(text('tls.crt'));
    out.push({ crt: text('tls.crt'), key: text('tls.key'), ca: text('ca.crt'), notBefore: leaf.validFromDate, notAfter: leaf.validToDate });
  }
  return out;
}

export async function grow(w: ApiWriter, l: Layout, material: TlsMaterial[], from: number, to: number): Promise<GrowStats> {
  const t0 = performance.now();
  const req0 = w.requests;
  const retry0 = w.retries;
  const cm = `/apis/${CERT_MANAGER_API_VERSION}`;
  await forEachConcurrent(from, to, w.connections, async (i) => {
    const ns = namespaceOf(i, l);
    const m = material[i % material.length]!;
    await w.send('POST', `/api/v1/namespaces/${ns}/secrets`, tlsSecretOf(i, l, m));
    await w.send('POST', `${cm}/namespaces/${ns}/certificates`, certificateOf(i, l));
    await w.send('PATCH', `${cm}/namespaces/${ns}/certificates/${certName(i)}/status`, certificateStatusOf(i, l, m));
  });
  const nFrom = Math.floor(from / 10);
  const nTo = Math.floor(to / 10);
  await forEachConcurrent(nFrom, nTo, w.connections, async (j) => {
    const ns = namespaceOf(j, l);
    const name = `noise-${pad(j, 6)}`;
    await w.send('POST', `/api/v1/namespaces/${ns}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name, namespace: ns },
      data: { 'config.json': b64(NOISE) },
    });
    await w.send('POST', `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: ns },
      data: { 'settings.txt': NOISE },
    });
  });
  return {
    objects: 2 * (to - from) + 2 * (nTo - nFrom),
    requests: w.requests - req0,
    retries: w.retries - retry0,
    ms: performance.now() - t0,
  };
}

// ---------------------------------------------------------------------------
// memory of a child process

/** VmRSS sampled every `everyMs` (its maximum) and the kernel's high-water mark VmHWM, which `resetPeak` resets. */
export class MemorySampler {
  maxRss = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly pid: number,
    everyMs = 200,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
    this.sample();
  }

  private field(name: 'VmRSS' | 'VmHWM'): number | undefined {
    try {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : undefined;
    } catch {
      return undefined; // exited
    }
  }

  sample(): void {
    const rss = this.field('VmRSS');
    if (rss !== undefined && rss > this.maxRss) this.maxRss = rss;
  }

  /** current VmRSS (0 once the process is gone) */
  get rss(): number {
    return this.field('VmRSS') ?? 0;
  }

  /** the kernel's peak RSS since start or the last resetPeak (0 once the process is gone) */
  get hwm(): number {
    return this.field('VmHWM') ?? 0;
  }

  /** `echo 5 > /proc/<pid>/clear_refs` resets VmHWM to the current RSS (Linux ≥ 4.0) */
  resetPeak(): void {
    writeFileSync(`/proc/${this.pid}/clear_refs`, '5');
    this.maxRss = 0;
    this.sample();
  }

  /** utime + stime, clock ticks */
  cpuTicks(): number {
    try {
      const stat = readFileSync(`/proc/${this.pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(f[11]) + Number(f[12]);
    } catch {
      return 0;
    }
  }

  /** Resolves once the process used under 5% of a core over `windowMs` (its work after a sync is done), or after `maxMs`. */
  async quiet(windowMs = 3000, maxMs = 120_000): Promise<void> {
    const end = Date.now() + maxMs;
    let prev = this.cpuTicks();
    while (Date.now() < end) {
      await sleep(windowMs);
      const now = this.cpuTicks();
      // 100 ticks per second
      if (now - prev < (windowMs / 1000) * 100 * 0.05) return;
      prev = now;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

// ---------------------------------------------------------------------------
// baseline: a bare client-node informer

/**
 * The baseline child: plain Node (no tsx, no bundle), client-node's ListWatch with its default unpaginated
 * list, for the TLS Secrets (field selector) and the Certificates of every namespace, as an operator written
 * with client-node's makeInformer would do. It prints one JSON line per informer synced or failed.
 */
const BARE_INFORMER_SOURCE = (clientNodeUrl: string): string => `
import { CoreV1Api, CustomObjectsApi, KubeConfig, ListWatch, Watch } from ${JSON.stringify(clientNodeUrl)};
const kc = new KubeConfig();
kc.loadFromFile(process.env.KUBECONFIG);
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const t0 = Number(process.env.BENCH_T0 ?? Date.now());
const say = (o) => process.stdout.write(JSON.stringify({ ...o, ms: Date.now() - t0 }) + '\\n');
const informer = (name, path, list, fieldSelector) => {
  let synced = false;
  const lw = new ListWatch(path, new Watch(kc), async () => {
    const l = await list();
    setImmediate(() => { if (!synced) { synced = true; say({ informer: name, synced: true, objects: lw.list().length }); } });
    return l;
  }, false, undefined, fieldSelector);
  lw.on('error', (e) => say({ informer: name, error: String(e?.code ?? e?.name ?? 'error') + ': ' + String(e?.message ?? e).slice(0, 200) }));
  return lw;
};
const tls = 'type=kubernetes.io/tls';
await Promise.all([
  informer('tls-secrets', '/api/v1/secrets', () => core.listSecretForAllNamespaces({ fieldSelector: tls }), tls).start(),
  informer('certificates', '/apis/cert-manager.io/v1/certificates', () => custom.listClusterCustomObject({ group: 'cert-manager.io', version: 'v1', plural: 'certificates' })).start(),
]);
setInterval(() => {}, 1 << 30);
`;

export interface BareResult {
  /** ms from spawn until both informers synced; undefined on failure */
  syncMs?: number;
  peakRss: number;
  error?: string;
}

/** Runs the bare informer child until both informers synced (or one failed, or `timeoutMs`); its sync time and VmHWM. */
export async function runBareInformer(kubeconfigPath: string, timeoutMs: number): Promise<BareResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cmn-bare-informer-'));
  const file = join(dir, 'bare-informer.mjs');
  writeFileSync(file, BARE_INFORMER_SOURCE(import.meta.resolve('@kubernetes/client-node')));
  const t0 = Date.now();
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, KUBECONFIG: kubeconfigPath, BENCH_T0: String(t0), NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const mem = new MemorySampler(child.pid!);
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()).length > 100_000 && (err = err.slice(-50_000)));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const result = await new Promise<BareResult>((resolve) => {
    const synced = new Set<string>();
    const timer = setTimeout(
      () => resolve({ peakRss: Math.max(mem.hwm, mem.maxRss), error: `not synced within ${secs(timeoutMs)}` }),
      timeoutMs,
    );
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      for (;;) {
        const nl = out.indexOf('\n');
        if (nl < 0) break;
        const line = JSON.parse(out.slice(0, nl)) as { informer: string; synced?: boolean; error?: string; ms: number };
        out = out.slice(nl + 1);
        if (line.error) {
          clearTimeout(timer);
          resolve({ peakRss: Math.max(mem.hwm, mem.maxRss), error: `${line.informer}: ${line.error} (after ${secs(line.ms)})` });
        } else if (line.synced) {
          synced.add(line.informer);
          if (synced.size === 2) {
            clearTimeout(timer);
            // the peak may come just after the lists are applied: let the process settle first
            void mem.quiet(1000, 15_000).then(() => resolve({ syncMs: line.ms, peakRss: Math.max(mem.hwm, mem.maxRss) }));
          }
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      const last = err.trim().split('\n').slice(-3).join(' | ');
      resolve({
        peakRss: mem.maxRss,
        error: `exited with ${code}: ${/ERR_STRING_TOO_LONG|heap out of memory/.exec(err)?.[0] ?? last.slice(0, 300)}`,
      });
    });
  });
  mem.stop();
  if (child.exitCode === null) child.kill('SIGKILL');
  await exited;
  rmSync(dir, { recursive: true, force: true });
  return result;
}
