/**
 * What `npm test` checks before it starts: the system programs the int tier runs (the unit tier needs none). As
 * root on Debian it installs the missing ones with apt-get; otherwise it names them with the command to install
 * them and exits 1, before anything runs.
 *
 * usage: node scripts/preflight.ts [--dry-run]   (--dry-run: print what is missing and the plan, change nothing)
 *
 * Runs on Node 24's own TypeScript support, so it imports only Node's modules.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What a requirement's check may look at: the environment, and whether a file exists. */
export interface Machine {
  env: Readonly<Record<string, string | undefined>>;
  exists(path: string): boolean;
  /** Directories matching /usr/lib/postgresql/<version>/bin. */
  postgresBinDirs(): string[];
  /** The kube-apiserver cache is complete (scripts/k8s-env.sh built it before). */
  kubeBuilt(): boolean;
}

export interface Requirement {
  /** The program, as the message names it. */
  name: string;
  /** The Debian packages that provide it. */
  packages: readonly string[];
  /** Which tests need it. */
  why: string;
  present(m: Machine): boolean;
}

/** The command on PATH (an executable file of that name in one of its directories). */
export function onPath(m: Machine, command: string): boolean {
  return (m.env['PATH'] ?? '')
    .split(delimiter)
    .filter(Boolean)
    .some((d) => m.exists(join(d, command)));
}

/** Needed only while scripts/k8s-env.sh has not built kube-apiserver yet (it builds from Debian's source package). */
const kubeBuildTool = (name: string, pkg: string, command = name): Requirement => ({
  name,
  packages: [pkg],
  why: 'building kube-apiserver (scripts/k8s-env.sh, once)',
  present: (m) => m.kubeBuilt() || onPath(m, command),
});

export const REQUIREMENTS: readonly Requirement[] = [
  {
    name: 'postgresql',
    packages: ['postgresql'],
    why: 'the PostgreSQL store tier (scripts/pg.sh starts a throwaway server)',
    present: (m) =>
      Boolean(m.env['DATABASE_URL']) ||
      [...(m.env['PGBIN'] ? [m.env['PGBIN']] : []), ...m.postgresBinDirs()].some(
        (d) => m.exists(join(d, 'initdb')) && m.exists(join(d, 'pg_ctl')),
      ) ||
      (onPath(m, 'initdb') && onPath(m, 'pg_ctl')),
  },
  { name: 'openssl', packages: ['openssl'], why: 'test certificates', present: (m) => onPath(m, 'openssl') },
  { name: 'shellcheck', packages: ['shellcheck'], why: 'scripts/*.sh are checked', present: (m) => onPath(m, 'shellcheck') },
  {
    name: 'promtool',
    packages: ['prometheus'],
    why: "the chart's alert rules are tested",
    present: (m) => m.exists(m.env['PROMTOOL'] ?? '/usr/bin/promtool'),
  },
  {
    name: 'chromium',
    packages: ['chromium'],
    why: "the console's browser test",
    present: (m) => m.exists(m.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium'),
  },
  {
    name: 'prometheus-alertmanager',
    packages: ['prometheus-alertmanager'],
    why: 'the ALERTMANAGER integration is tested against a real Alertmanager (test/support/alertmanager.ts)',
    present: (m) => m.exists(m.env['ALERTMANAGER_BIN'] || '/usr/bin/prometheus-alertmanager'),
  },
  { name: 'etcd', packages: ['etcd-server'], why: 'the kube tests run a real apiserver', present: (m) => onPath(m, 'etcd') },
  { name: 'etcdctl', packages: ['etcd-client'], why: 'scripts/k8s-env.sh checks etcd with it', present: (m) => onPath(m, 'etcdctl') },
  kubeBuildTool('go', 'golang-go'),
  kubeBuildTool('rsync', 'rsync'),
  kubeBuildTool('jq', 'jq'),
  kubeBuildTool('make', 'make'),
  kubeBuildTool('dpkg-source', 'dpkg-dev'),
  {
    name: 'unzip',
    packages: ['unzip'],
    why: 'unpacking helm and kubectl (scripts/k8s-tools.sh; python3 does as well)',
    present: (m) => onPath(m, 'unzip') || onPath(m, 'python3'),
  },
];

export function missingOf(requirements: readonly Requirement[], m: Machine): Requirement[] {
  return requirements.filter((r) => !r.present(m));
}

export type Plan = { action: 'run' } | { action: 'install'; packages: string[] } | { action: 'refuse'; message: string };

const packagesOf = (missing: readonly Requirement[]): string[] => [...new Set(missing.flatMap((r) => r.packages))];

/** "missing: postgresql (apt-get install postgresql), …" and the one command that installs them all. */
export function missingMessage(missing: readonly Requirement[]): string {
  const each = missing.map((r) => `${r.name} (apt-get install ${r.packages.join(' ')})`).join(', ');
  const why = missing.map((r) => `  ${r.name}: ${r.why}`).join('\n');
  return (
    `missing: ${each}\n${why}\n` + `as root: apt-get update && apt-get install -y --no-install-recommends ${packagesOf(missing).join(' ')}`
  );
}

/** What to do about the missing programs: run, install them (root with apt-get), or refuse, naming them. */
export function plan(missing: readonly Requirement[], who: { root: boolean; apt: boolean }): Plan {
  if (missing.length === 0) return { action: 'run' };
  if (who.root && who.apt) return { action: 'install', packages: packagesOf(missing) };
  const why = who.root ? 'apt-get is not on this machine; install them another way' : 'not root, so nothing was installed';
  return { action: 'refuse', message: `${missingMessage(missing)}\n(${why})` };
}

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function thisMachine(): Machine {
  let built: boolean | undefined;
  return {
    env: process.env,
    exists: existsSync,
    postgresBinDirs: () => {
      try {
        return readdirSync('/usr/lib/postgresql').map((v) => join('/usr/lib/postgresql', v, 'bin'));
      } catch {
        return [];
      }
    },
    kubeBuilt: () => {
      if (built === undefined) {
        const bin = execFileSync('bash', [join(REPO_ROOT, 'scripts', 'k8s-env.sh'), 'path'], { encoding: 'utf8' }).trim();
        built = existsSync(join(dirname(bin), '.complete'));
      }
      return built;
    },
  };
}

function main(args: readonly string[]): number {
  const machine = thisMachine();
  const who = { root: process.getuid?.() === 0, apt: onPath(machine, 'apt-get') };
  const missing = missingOf(REQUIREMENTS, machine);
  const decided = plan(missing, who);
  if (args.includes('--dry-run')) {
    console.log(missing.length ? missingMessage(missing) : 'missing: nothing');
    console.log(`plan: ${JSON.stringify(decided)}`);
    return 0;
  }
  if (decided.action === 'run') return 0;
  if (decided.action === 'refuse') {
    console.error(`[preflight] ${decided.message}`);
    return 1;
  }
  console.error(`[preflight] apt-get install ${decided.packages.join(' ')} (${missing.map((r) => r.name).join(', ')} missing)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (aptArgs: string[]) => spawnSync('apt-get', aptArgs, { stdio: ['ignore', 'ignore', 'inherit'], env }).status === 0;
  if (!apt(['update', '-qq']) || !apt(['install', '-y', '-qq', '--no-install-recommends', ...decided.packages])) {
    console.error(`[preflight] apt-get failed\n${missingMessage(missing)}`);
    return 1;
  }
  const still = missingOf(REQUIREMENTS, machine);
  if (still.length) {
    console.error(`[preflight] still missing after apt-get install:\n${missingMessage(still)}`);
    return 1;
  }
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
