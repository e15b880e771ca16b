/**
 * scripts/preflight.ts: which programs the int tier lacks on a machine, what `npm test` does about it (install as
 * root, else name them and stop), and that the test commands run it before anything else.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REQUIREMENTS, missingMessage, missingOf, plan, type Machine } from '../../scripts/preflight.js';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';

/** A machine whose files are `files`, with `env` (PATH=/bin unless given). */
function machine(files: readonly string[], env: Record<string, string> = {}, kubeBuilt = false): Machine {
  const set = new Set(files);
  return {
    env: { PATH: '/bin', ...env },
    exists: (p) => set.has(p),
    postgresBinDirs: () => ['/usr/lib/postgresql/15/bin'],
    kubeBuilt: () => kubeBuilt,
  };
}

const EVERYTHING = [
  '/usr/lib/postgresql/15/bin/initdb',
  '/usr/lib/postgresql/15/bin/pg_ctl',
  '/usr/bin/promtool',
  '/usr/bin/chromium',
  '/usr/bin/prometheus-alertmanager',
  ...['openssl', 'shellcheck', 'etcd', 'etcdctl', 'go', 'rsync', 'jq', 'make', 'dpkg-source', 'unzip'].map((c) => `/bin/${c}`),
];
const without = (...gone: string[]) => EVERYTHING.filter((f) => !gone.includes(f));
const ALL = REQUIREMENTS.map((r) => r.name);
const KUBE_BUILD = ['go', 'rsync', 'jq', 'make', 'dpkg-source'];

describe('missingOf: what the int tier lacks on a machine', () => {
  it.each<[string, Machine, string[]]>([
    ['a fresh machine: everything', machine([]), ALL],
    [
      'a fresh machine with kube-apiserver already built: all but its build tools',
      machine([], {}, true),
      ALL.filter((n) => !KUBE_BUILD.includes(n)),
    ],
    ['everything installed: nothing', machine(EVERYTHING), []],
    ['no PostgreSQL server binaries', machine(without('/usr/lib/postgresql/15/bin/pg_ctl')), ['postgresql']],
    [
      'no PostgreSQL binaries but DATABASE_URL names a server',
      machine(without('/usr/lib/postgresql/15/bin/initdb'), { DATABASE_URL: 'postgres://db/x' }),
      [],
    ],
    [
      'PostgreSQL in PGBIN',
      machine([...without('/usr/lib/postgresql/15/bin/initdb', '/usr/lib/postgresql/15/bin/pg_ctl'), '/opt/pg/initdb', '/opt/pg/pg_ctl'], {
        PGBIN: '/opt/pg',
      }),
      [],
    ],
    [
      'PostgreSQL on PATH',
      machine([...without('/usr/lib/postgresql/15/bin/initdb', '/usr/lib/postgresql/15/bin/pg_ctl'), '/bin/initdb', '/bin/pg_ctl']),
      [],
    ],
    ['shellcheck only in a directory not on PATH', machine([...without('/bin/shellcheck'), '/opt/sc/shellcheck']), ['shellcheck']],
    ['shellcheck in a later PATH directory', machine([...without('/bin/shellcheck'), '/opt/sc/shellcheck'], { PATH: '/bin:/opt/sc' }), []],
    ['promtool where PROMTOOL points', machine([...without('/usr/bin/promtool'), '/opt/promtool'], { PROMTOOL: '/opt/promtool' }), []],
    ['PROMTOOL points at nothing', machine(EVERYTHING, { PROMTOOL: '/opt/promtool' }), ['promtool']],
    [
      'chromium where CHROMIUM_PATH points',
      machine([...without('/usr/bin/chromium'), '/opt/chrome'], { CHROMIUM_PATH: '/opt/chrome' }),
      [],
    ],
    ['no Alertmanager', machine(without('/usr/bin/prometheus-alertmanager')), ['prometheus-alertmanager']],
    [
      'Alertmanager where ALERTMANAGER_BIN points',
      machine([...without('/usr/bin/prometheus-alertmanager'), '/opt/am'], { ALERTMANAGER_BIN: '/opt/am' }),
      [],
    ],
    ['no unzip but python3 (k8s-tools.sh unzips with it)', machine([...without('/bin/unzip'), '/bin/python3']), []],
    ['no etcd', machine(without('/bin/etcd', '/bin/etcdctl')), ['etcd', 'etcdctl']],
    ['no go, kube-apiserver not built', machine(without('/bin/go')), ['go']],
    ['no go, kube-apiserver built', machine(without('/bin/go'), {}, true), []],
  ])('%s', (_what, m, names) => {
    expect(missingOf(REQUIREMENTS, m).map((r) => r.name)).toEqual(names);
  });
});

const need = (...names: string[]) => REQUIREMENTS.filter((r) => names.includes(r.name));

describe('plan: what npm test does about it', () => {
  it.each([
    ['nothing missing, root', need(), { root: true, apt: true }, { action: 'run' }],
    ['nothing missing, not root', need(), { root: false, apt: false }, { action: 'run' }],
    [
      'missing, root with apt-get: install the packages',
      need('postgresql', 'promtool'),
      { root: true, apt: true },
      { action: 'install', packages: ['postgresql', 'prometheus'] },
    ],
    [
      'etcd and etcdctl: two packages',
      need('etcd', 'etcdctl'),
      { root: true, apt: true },
      { action: 'install', packages: ['etcd-server', 'etcd-client'] },
    ],
  ])('%s', (_what, missing, who, expected) => {
    expect(plan(missing, who)).toEqual(expected);
  });

  it('missing, not root: refuses, naming each program with the package that provides it', () => {
    const p = plan(need('postgresql', 'promtool', 'shellcheck'), { root: false, apt: true });
    expect(p.action).toBe('refuse');
    const message = p.action === 'refuse' ? p.message : '';
    expect(message.split('\n')[0]).toBe(
      'missing: postgresql (apt-get install postgresql), shellcheck (apt-get install shellcheck), promtool (apt-get install prometheus)',
    );
    expect(message).toContain('as root: apt-get update && apt-get install -y --no-install-recommends postgresql shellcheck prometheus');
    expect(message).toContain('promtool: ');
    expect(message).toContain('not root, so nothing was installed');
  });

  it('missing, root without apt-get: refuses, saying so', () => {
    const p = plan(need('chromium'), { root: true, apt: false });
    expect(p).toEqual({ action: 'refuse', message: expect.stringContaining('apt-get is not on this machine') as unknown });
    expect(p.action === 'refuse' && p.message.startsWith('missing: chromium (apt-get install chromium)')).toBe(true);
  });

  it('every requirement names a Debian package and a reason', () => {
    for (const r of REQUIREMENTS) {
      expect(r.packages.length, r.name).toBeGreaterThan(0);
      expect(r.why, r.name).not.toBe('');
    }
    expect(missingMessage(need('openssl'))).toMatch(/^missing: openssl \(apt-get install openssl\)\n {2}openssl: /);
  });
});

describe('the script', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cmn-preflight-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('on a machine with none of the programs, --dry-run names them all and changes nothing', async () => {
    symlinkSync('/bin/bash', join(dir, 'bash')); // scripts/k8s-env.sh path: where the kube-apiserver cache is
    const env = {
      PATH: dir,
      HOME: dir,
      CERTMGR_NOTIFY_CACHE: join(dir, 'cache'),
      PROMTOOL: join(dir, 'none'),
      CHROMIUM_PATH: join(dir, 'none'),
      ALERTMANAGER_BIN: join(dir, 'none'),
    };
    const { stdout } = await promisify(execFile)(process.execPath, [join(REPO_ROOT, 'scripts/preflight.ts'), '--dry-run'], { env });
    const [first] = stdout.split('\n');
    for (const r of REQUIREMENTS.filter((x) => x.name !== 'postgresql'))
      expect(first).toContain(`${r.name} (apt-get install ${r.packages.join(' ')})`);
    expect(stdout).toMatch(/^plan: \{"action":"(install|refuse)"/m);
  });
});

describe('the test commands', () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

  // test:fuzz and test:faults run a few int files and need only some of the programs; their setup names what is missing
  it.each(['test', 'test:int'])('npm run %s runs the preflight before anything else', (name) => {
    expect(pkg.scripts[name]).toMatch(/^node scripts\/preflight\.ts && /);
  });

  it('npm run test:unit needs no preflight (the unit tier runs no program but Node)', () => {
    expect(pkg.scripts['test:unit']).not.toContain('preflight');
  });

  it('npm run lint runs npm run dup (so CI does)', () => {
    expect(pkg.scripts['lint']).toContain('npm run dup');
  });
});
