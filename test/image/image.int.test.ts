/**
 * The production image without a Docker engine: replays the Dockerfile's build stage (its COPY lines, filtered
 * by .dockerignore, and its RUN lines, verbatim) in a temporary copy of the repository, assembles the runtime
 * stage's root from its `COPY --from=build` lines only, makes that tree read-only and starts ENTRYPOINT + CMD in
 * it as the image's USER (when the test runs as root), with /data mapped to a temporary directory. Then: /healthz,
 * GraphQL with the generated key, the console at /ui/, no TypeScript loader, a clean stop on SIGTERM.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, posix, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';
import { dockerignore, execForm, parseCopy, parseDockerfile, type Stage } from './dockerfile.js';

const run = promisify(execFile);
// the image's node (and npm's): the Node release package-lock.json pins, which the Dockerfile must name (checked below)
const NODE_BIN_DIR = join(REPO_ROOT, 'node_modules/node/bin');

/** Every file under `dir`, relative to it, sorted. */
function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

/** Where an image path lands under `root`, for an instruction running in `workdir`. */
const inRoot = (root: string, workdir: string, p: string) => join(root, posix.resolve(workdir, p));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function untilOk(url: string, child: ChildProcess, logs: () => string): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the entrypoint exited with ${child.exitCode} before ${url} answered:\n${logs()}`);
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the container image (Dockerfile replayed without Docker)', () => {
  const dockerfile = parseDockerfile(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
  const ignored = dockerignore(readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8'));
  const buildStage = dockerfile.stages.find((s) => s.name === 'build');
  const runtime = dockerfile.stages.at(-1)!;
  const ops = (s: Stage, op: string) => s.instructions.filter((i) => i.op === op);
  const last = (s: Stage, op: string) => ops(s, op).at(-1);

  const work = mkdtempSync(join(tmpdir(), 'cmn-image-'));
  const buildRoot = join(work, 'build-root');
  const runtimeRoot = join(work, 'runtime-root');
  const dataDir = join(work, 'data');
  const tmpDir = join(work, 'tmp');
  const ranCommands: string[] = [];
  /** the runtime stage's RUN lines: checked, not replayed (they touch the image's root) */
  const runtimeRuns: string[] = [];
  const RUNTIME_OPS = ['ARG', 'LABEL', 'ENV', 'WORKDIR', 'COPY', 'RUN', 'USER', 'VOLUME', 'EXPOSE', 'ENTRYPOINT', 'CMD'];
  let child: ChildProcess | undefined;
  let output = '';
  let port = 0;
  let exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  beforeAll(async () => {
    if (!buildStage) throw new Error('Dockerfile: no stage named "build"');

    // --- build stage: COPY from the context (minus .dockerignore), RUN verbatim, in a copy of the repository
    let workdir = '/';
    const env: Record<string, string> = {};
    for (const ins of buildStage.instructions) {
      if (ins.op === 'WORKDIR') {
        workdir = posix.resolve(workdir, ins.args);
        mkdirSync(inRoot(buildRoot, workdir, '.'), { recursive: true });
      } else if (ins.op === 'COPY') {
        const c = parseCopy(ins);
        if (c.from) throw new Error(`build stage: COPY --from=${c.from} is not replayed`);
        const dest = inRoot(buildRoot, workdir, c.dest);
        for (const src of c.sources) {
          if (ignored(src)) throw new Error(`COPY ${src}: excluded by .dockerignore, the build would fail`);
          const target = c.dest.endsWith('/') || c.sources.length > 1 ? join(dest, posix.basename(src)) : dest;
          cpSync(join(REPO_ROOT, src), target, {
            recursive: true,
            filter: (from) => !ignored(relative(REPO_ROOT, from).split('\\').join('/') || '.'),
          });
        }
      } else if (ins.op === 'RUN') {
        ranCommands.push(ins.args);
        const cwd = inRoot(buildRoot, workdir, '.');
        // the image's node and npm: the Node release the Dockerfile pins (checked below) first on PATH
        await run('/bin/sh', ['-c', ins.args], {
          cwd,
          env: { ...process.env, ...env, PATH: `${NODE_BIN_DIR}:${process.env['PATH'] ?? ''}` },
          maxBuffer: 64 << 20,
        });
      } else if (ins.op === 'ENV') {
        const m = /^(\w+)=(.*)$/.exec(ins.args);
        if (!m) throw new Error(`ENV ${ins.args}: only KEY=value is replayed`);
        env[m[1]!] = m[2]!;
      } else if (ins.op !== 'ARG') {
        throw new Error(`build stage: ${ins.op} is not replayed`);
      }
    }

    // --- runtime stage: its root holds only what COPY --from=build copies
    workdir = '/';
    for (const ins of runtime.instructions) {
      if (!RUNTIME_OPS.includes(ins.op)) throw new Error(`runtime stage: ${ins.op} is not replayed`);
      if (ins.op === 'WORKDIR') workdir = posix.resolve(workdir, ins.args);
      if (ins.op === 'RUN') runtimeRuns.push(ins.args);
      if (ins.op !== 'COPY') continue;
      const c = parseCopy(ins);
      if (c.from !== 'build') throw new Error(`runtime stage: COPY ${ins.args} does not come from the build stage`);
      for (const src of c.sources) {
        const target =
          c.dest.endsWith('/') || c.sources.length > 1
            ? join(inRoot(runtimeRoot, workdir, c.dest), posix.basename(src))
            : inRoot(runtimeRoot, workdir, c.dest);
        cpSync(join(buildRoot, src), target, { recursive: true });
      }
    }
    mkdirSync(inRoot(runtimeRoot, workdir, '.'), { recursive: true });
    // the runtime tree read-only (as readOnlyRootFilesystem); only /data and /tmp are writable
    for (const d of [work, runtimeRoot]) chmodSync(d, 0o755);
    await run('chmod', ['-R', 'a-w', runtimeRoot]);
    mkdirSync(dataDir, { mode: 0o700 });
    mkdirSync(tmpDir, { mode: 0o1777 });
    chmodSync(tmpDir, 0o1777);

    const [uid, gid] = last(runtime, 'USER')!.args.split(':').map(Number) as [number, number];
    const asRoot = process.getuid?.() === 0;
    // root ignores file modes: run as the image's user so the read-only tree really is read-only to the program
    if (asRoot) chownSync(dataDir, uid, gid);

    const imageEnv: Record<string, string> = {};
    for (const ins of ops(runtime, 'ENV')) {
      const m = /^(\w+)=(.*)$/.exec(ins.args);
      if (m) imageEnv[m[1]!] = m[2]!;
    }
    // the VOLUME /data becomes the temporary data directory (as `/data/…` and `sqlite:/data/…`)
    const argv = [...execForm(last(runtime, 'ENTRYPOINT')!), ...execForm(last(runtime, 'CMD')!)].map((a) =>
      a.replace(/(^|:)\/data(?=\/|$)/, `$1${dataDir}`),
    );
    port = await freePort();
    child = spawn(argv[0] === 'node' ? join(NODE_BIN_DIR, 'node') : argv[0]!, argv.slice(1), {
      cwd: inRoot(runtimeRoot, workdir, '.'),
      // a clean environment, as in the container: no NODE_OPTIONS, no loader from the test runner
      env: {
        PATH: `${NODE_BIN_DIR}:/usr/bin:/bin`,
        HOME: tmpDir,
        TMPDIR: tmpDir,
        ...imageEnv,
        CERTMGR_NOTIFY_HOST: '127.0.0.1',
        CERTMGR_NOTIFY_PORT: String(port),
        CERTMGR_NOTIFY_KUBE: 'off',
      },
      ...(asRoot ? { uid, gid } : {}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (b: Buffer) => (output += String(b)));
    child.stderr!.on('data', (b: Buffer) => (output += String(b)));
    exit = new Promise((resolve) => child!.once('exit', (code, signal) => resolve({ code, signal })));
    await untilOk(`http://127.0.0.1:${port}/readyz`, child, () => output);
  }, 10 * 60_000);

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exit;
    }
    await run('chmod', ['-R', 'u+w', work]).catch(() => {});
    rmSync(work, { recursive: true, force: true });
  });

  it('runs the build stage: npm ci and the bundle build, verbatim from the Dockerfile', () => {
    expect(ranCommands.some((c) => /^npm ci\b/.test(c))).toBe(true);
    expect(ranCommands.some((c) => /^node scripts\/build\.mjs dist$/.test(c))).toBe(true);
  });

  it('uses the Node release the test suite runs (package-lock.json) in both stages', () => {
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string }>;
    };
    const node = lock.packages['node_modules/node']?.version;
    expect(node).toMatch(/^24\./);
    for (const s of dockerfile.stages) expect(s.from).toMatch(new RegExp(`^node:${node!.replace(/\./g, '\\.')}-[a-z]+-slim$`));
  });

  it('ships dist/ only: the bundle, its source map, the schema and the console; no node_modules, no TypeScript', () => {
    const all = files(runtimeRoot);
    expect(all.length).toBeGreaterThan(0);
    for (const f of all) expect(f).toMatch(/^app\/dist\//);
    expect(all).toEqual(
      expect.arrayContaining(['app/dist/certmgr-notify.mjs', 'app/dist/certmgr-notify.mjs.map', 'app/dist/schema.graphql']),
    );
    expect(all.filter((f) => /node_modules|\.[cm]?ts$|(^|\/)tsx(\/|$)/.test(f))).toEqual([]);
    expect(all).toContain('app/dist/ui/index.html');
  });

  it('runs as a numeric non-root user, keeps state in /data (a VOLUME) and starts node with no loader flags', () => {
    expect(last(runtime, 'USER')!.args).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    expect(ops(runtime, 'VOLUME').flatMap(execForm)).toEqual(['/data']);
    // the first RUN of the runtime stage creates /data owned by the user, before VOLUME (after it, changes are lost)
    // and one removes the base image's package managers, nothing else
    expect(runtimeRuns[0]).toBe(`mkdir -p /data && chown ${last(runtime, 'USER')!.args} /data`);
    expect(runtimeRuns.slice(1)).toEqual([
      expect.stringMatching(
        /^rm -rf( \/usr\/local\/lib\/node_modules\/(npm|corepack)| \/usr\/local\/bin\/(npm|npx|corepack|yarn|yarnpkg)| \/opt\/yarn-\*)+$/,
      ),
    ]);
    const order = runtime.instructions.map((i) => i.op);
    expect(order.indexOf('RUN')).toBeLessThan(order.indexOf('VOLUME'));
    const entry = execForm(last(runtime, 'ENTRYPOINT')!);
    // no --enable-source-maps: ~150 MiB of decoded source map per pod; the heap sized from the limit (Dockerfile)
    expect(entry).toEqual(['node', '--max-old-space-size-percentage=50', '--max-semi-space-size=1', 'dist/certmgr-notify.mjs']);
    const cmd = execForm(last(runtime, 'CMD')!);
    expect(cmd[0]).toBe('serve');
    // every path the default command writes is under /data (a generated key goes beside the SQLite file)
    expect(cmd.filter((a) => a.includes('/'))).toEqual(['sqlite:/data/certmgr-notify.db']);
    expect(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')).not.toMatch(/tsx|--import|--loader|--experimental-strip-types/);
  });

  it('serves /healthz and GraphQL with the key it generated into /data, from a read-only tree', async () => {
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const key = readFileSync(join(dataDir, 'api-key'), 'utf8').trim();
    expect(key).toMatch(/^cmn_/);
    const gql = (k: string | null) =>
      fetch(`http://127.0.0.1:${port}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(k ? { 'svc-api-key': k } : {}) },
        body: JSON.stringify({ query: '{ integrations { totalCount } eventTypes { id } }' }),
      });
    expect((await gql(null)).status).toBe(401);
    const res = await gql(key);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data?: { integrations: { totalCount: number }; eventTypes: { id: string }[] }; errors?: unknown };
    expect(body.errors).toBeUndefined();
    expect(body.data!.integrations.totalCount).toBe(0);
    expect(body.data!.eventTypes.map((e) => e.id)).toContain('certmgr-issuer-health-notification-config');
    // the state it wrote is all in /data: the store, the generated API key and the generated secret key
    expect(
      readdirSync(dataDir)
        .filter((f) => !/-(wal|shm|journal)$/.test(f))
        .sort(),
    ).toEqual(['api-key', 'certmgr-notify.db', 'secret-key']);
    // the program tree stayed read-only (a write there would have failed the start)
    expect(statSync(join(runtimeRoot, 'app', 'dist', 'certmgr-notify.mjs')).mode & 0o222).toBe(0);
  });

  it('serves the console at /ui/ (the build stage built it into dist/ui)', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/ui/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(readFileSync(join(runtimeRoot, 'app/dist/ui/index.html'), 'utf8'));
  });

  it('stops cleanly on SIGTERM', async () => {
    child!.kill('SIGTERM');
    const { code, signal } = await exit;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(output).toMatch(/shutting down/);
  });
});
