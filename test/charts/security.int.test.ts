/**
 * The chart's pods run the image with a read-only root filesystem as a non-root user: the Pod Security Standards'
 * "restricted" rules are checked on every rendered mode, every path the program would write (read from the
 * rendered environment with the service's own config loader) lands on a writable emptyDir or PVC, and the
 * renders pass a real apiserver's dry-run. The apiserver here (v1.20) predates PodSecurity admission, so the
 * restricted rules are asserted field by field.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { CHART, LazyKubeEnv, documents, helmEnv, helmTemplate, run } from './helm.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadAgentConfig, loadServeConfig } from '../../src/config.js';
import { ensureKubeTools } from '../support/kube.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
/** The image's WORKDIR: relative paths of the program resolve against it (Dockerfile). */
const WORKDIR = '/app';

interface Container {
  name: string;
  args?: string[];
  env: { name: string; value?: string; valueFrom?: unknown }[];
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
  securityContext?: Record<string, unknown>;
}
interface PodSpec {
  securityContext?: Record<string, unknown>;
  containers: Container[];
  initContainers?: Container[];
  volumes: ({ name: string } & Record<string, unknown>)[];
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
}
interface Manifest {
  kind: string;
  metadata: { name: string };
  spec?: { template?: { spec: PodSpec } };
}

const AGENT = [
  '--set',
  'mode=agent',
  '--set',
  'clusterName=a',
  '--set',
  'agent.hubUrl=https://hub.example.com',
  '--set',
  'agent.apiKey.existingSecret=hub-key',
];
const CASES: [string, string[]][] = [
  ['standalone (SQLite on a PVC)', []],
  ['standalone without persistence (SQLite on an emptyDir)', ['--set', 'persistence.enabled=false']],
  ['standalone, PostgreSQL', ['--set', 'store.url=postgres://notify@db:5432/notify']],
  [
    'hub with the admission webhook and a keys file',
    ['--set', 'mode=hub', '--set', 'webhook.enabled=true', '--set', 'apiKeysFile.existingSecret=keys'],
  ],
  ['agent', AGENT],
  ['agent with a bounded /tmp', [...AGENT, '--set', 'tmpDir.sizeLimit=64Mi']],
];

/** Volume types the restricted profile allows (Pod Security Standards, "Volume Types"). */
const RESTRICTED_VOLUMES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];

/** The rendered environment as the process sees it; values from Secrets/fieldRefs become placeholders. */
function envOf(c: Container): NodeJS.ProcessEnv {
  return Object.fromEntries(
    c.env
      // the keys and limits files are read at load (read-only volumes, not here); they only add to the env
      .filter((e) => e.name !== 'CERTMGR_NOTIFY_API_KEYS_FILE' && e.name !== 'CERTMGR_NOTIFY_LIMITS_FILE')
      .map((e) => [e.name, e.value ?? 'from-a-secret-0123456789']),
  );
}

/** Every directory the program writes into, for this container's command and environment (see src/main.ts). */
function writtenDirs(c: Container): string[] {
  const abs = (p: string) => posix.resolve(WORKDIR, p);
  const dirs = ['/tmp'];
  if (c.args?.[0] === 'agent') {
    loadAgentConfig(c.args.slice(1), envOf(c)); // the agent keeps its state in ConfigMaps: /tmp only
    return dirs;
  }
  const cfg = loadServeConfig(c.args?.slice(1) ?? [], envOf(c));
  const sqlite = /^sqlite:(.+)$/.exec(cfg.store);
  // the store, its WAL files and, with no --secret-key-file, the generated secret key next to it
  if (sqlite && sqlite[1] !== ':memory:') dirs.push(posix.dirname(abs(sqlite[1]!)));
  // no key configured: a generated one is written beside the SQLite store (or ./data)
  if (cfg.apiKeys.length === 0) dirs.push(posix.dirname(abs(cfg.apiKeyPath)));
  return dirs;
}

/** The directories of writtenDirs not on a writable emptyDir or PVC mount of the container. */
function unwritableDirs(pod: PodSpec, c: Container): string[] {
  return writtenDirs(c).filter((dir) => {
    // the mount holding dir: the longest mountPath that is dir or a parent of it
    const mount = c.volumeMounts
      .filter((m) => dir === m.mountPath || dir.startsWith(m.mountPath.replace(/\/$/, '') + '/'))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    if (!mount || mount.readOnly) return true;
    const volume = pod.volumes.find((v) => v.name === mount.name);
    return !volume || !('emptyDir' in volume || 'persistentVolumeClaim' in volume);
  });
}

describe.skipIf(skip)('chart pods: read-only root filesystem, non-root, restricted', () => {
  let helm: string;
  let kubectl: string;
  const kube = new LazyKubeEnv();
  const renders = new Map<string, string>();

  beforeAll(async () => {
    ({ helm, kubectl } = await ensureKubeTools());
    for (const [name, args] of CASES) {
      renders.set(name, await helmTemplate(helm, 'default', args));
    }
  }, 10 * 60_000);

  afterAll(async () => {
    await kube.stop();
  });

  const podsOf = (name: string): PodSpec[] =>
    documents<Manifest>(renders.get(name)!)
      .filter((m) => Boolean(m.spec?.template))
      .map((m) => m.spec!.template!.spec);

  it.each(CASES.map(([n]) => n))('%s: pod and containers meet the restricted profile and have a read-only root', (name) => {
    const pods = podsOf(name);
    expect(pods.length).toBeGreaterThan(0);
    for (const pod of pods) {
      const psc = pod.securityContext ?? {};
      expect(psc).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(psc['runAsUser']).not.toBe(0);
      expect([pod.hostNetwork, pod.hostPID, pod.hostIPC].filter(Boolean)).toEqual([]);
      for (const v of pod.volumes)
        expect(
          Object.keys(v)
            .filter((k) => k !== 'name')
            .every((k) => RESTRICTED_VOLUMES.includes(k)),
          v.name,
        ).toBe(true);
      for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
        expect(c.securityContext, c.name).toMatchObject({
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
        });
        expect(c.securityContext!['privileged'] ?? false).toBe(false);
        expect((c.securityContext!['capabilities'] as { add?: string[] }).add ?? []).toEqual([]);
        expect(c.securityContext!['runAsUser'] ?? psc['runAsUser']).not.toBe(0);
      }
    }
  });

  it.each(CASES.map(([n]) => n))('%s: every path the program writes is on a writable emptyDir or PVC', (name) => {
    for (const pod of podsOf(name)) {
      for (const c of pod.containers) {
        expect(writtenDirs(c).length).toBeGreaterThan(0);
        expect(unwritableDirs(pod, c), name).toEqual([]);
        // the image's two state directories are the only writable mounts (Secrets are read-only; /data stays an
        // emptyDir with PostgreSQL, unused)
        const writable = c.volumeMounts.filter((m) => !m.readOnly).map((m) => m.mountPath);
        expect(writable.filter((p) => p !== '/data' && p !== '/tmp')).toEqual([]);
      }
    }
  });

  it('names a store path that would land on the read-only root filesystem', async () => {
    const { stdout } = await run(
      helm,
      ['template', 'rel', CHART, '--set', 'store.url=sqlite:/var/lib/notify/db.sqlite', '--set', 'persistence.enabled=true'],
      {
        env: helmEnv,
      },
    );
    const m = parseAllDocuments(stdout)
      .map((d) => d.toJS() as Manifest | null)
      .find((x) => x?.kind === 'Deployment')!;
    const pod = m.spec!.template!.spec;
    expect(unwritableDirs(pod, pod.containers[0]!)).toEqual(['/var/lib/notify']);
  });

  it('persistence off keeps the store on an emptyDir; a bounded /tmp is passed to the kubelet', () => {
    const [pod] = podsOf('standalone without persistence (SQLite on an emptyDir)');
    expect(pod!.volumes.find((v) => v.name === 'data')).toEqual({ name: 'data', emptyDir: {} });
    const [agent] = podsOf('agent with a bounded /tmp');
    expect(agent!.volumes.find((v) => v.name === 'tmp')).toEqual({ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } });
    const [pvc] = podsOf('standalone (SQLite on a PVC)');
    expect(pvc!.volumes.find((v) => v.name === 'data')).toEqual({
      name: 'data',
      persistentVolumeClaim: { claimName: 'rel-certmgr-notify-data' },
    });
  });

  it('the renders are accepted by a real apiserver (kubectl apply --dry-run=server)', async () => {
    const env = await kube.get();
    const dir = mkdtempSync(join(tmpdir(), 'cmn-chart-security-'));
    // the webhook case needs cert-manager's CRDs (its Issuer/Certificate); its pod spec is the hub's plus a Secret volume
    for (const [name] of CASES.filter(([n]) => !n.includes('webhook'))) {
      const file = join(dir, `${name.replace(/\W+/g, '-')}.yaml`);
      writeFileSync(file, renders.get(name)!);
      const out = await run(kubectl, ['--kubeconfig', env.kubeconfigPath, 'apply', '--dry-run=server', '-f', file], { env: process.env });
      expect(out.stdout, name).toMatch(/deployment\.apps\/rel-certmgr-notify created \(server dry run\)/);
    }
  }, 180_000);
});
