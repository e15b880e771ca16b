/**
 * What the chart tests share: the chart's path, helm's own directories (outside the repo, so a run leaves nothing
 * behind and repeated runs reuse helm's cache), `helm template` to YAML or parsed objects, and one apiserver per
 * test file started by the first test that needs it.
 */
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';
import { ensureKubeBinaries, startKubeEnv, type KubeEnv } from '../support/kube.js';

export const run = promisify(execFile);
export const CHART = join(REPO_ROOT, 'charts', 'certmgr-notify');
export const helmEnv = {
  ...process.env,
  HELM_CACHE_HOME: join(tmpdir(), 'cmn-helm', 'cache'),
  HELM_CONFIG_HOME: join(tmpdir(), 'cmn-helm', 'config'),
  HELM_DATA_HOME: join(tmpdir(), 'cmn-helm', 'data'),
};

/** `helm template rel <chart> --namespace <ns> …args`: the rendered YAML. */
export async function helmTemplate(helm: string, namespace: string, args: readonly string[]): Promise<string> {
  const { stdout } = await run(helm, ['template', 'rel', CHART, '--namespace', namespace, ...args], { env: helmEnv, maxBuffer: 32 << 20 });
  return stdout;
}

/** The install notes (templates/NOTES.txt) as `helm install --dry-run=client` prints them: no cluster is contacted. */
export async function helmNotes(helm: string, namespace: string, args: readonly string[]): Promise<string> {
  const { stdout } = await run(helm, ['install', 'rel', CHART, '--dry-run=client', '--namespace', namespace, ...args], {
    env: helmEnv,
    maxBuffer: 32 << 20,
  });
  const at = stdout.indexOf('\nNOTES:\n');
  if (at < 0) throw new Error(`no NOTES in the output of helm install --dry-run=client:\n${stdout.slice(-2000)}`);
  return stdout.slice(at + '\nNOTES:\n'.length);
}

/** The non-empty documents of a multi-document YAML stream. */
export function documents<T>(yaml: string): T[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJS() as T | null)
    .filter((m): m is T => Boolean(m));
}

/** One apiserver + etcd for a test file, started on first use; `stop` in afterAll. */
export class LazyKubeEnv {
  #env: KubeEnv | undefined;
  async get(): Promise<KubeEnv> {
    if (!this.#env) {
      await ensureKubeBinaries();
      this.#env = await startKubeEnv();
    }
    return this.#env;
  }
  async stop(): Promise<void> {
    await this.#env?.stop();
  }
}
