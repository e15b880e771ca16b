/** Finding a Kubernetes configuration (for `--kube auto`) and loading it. */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export type KubeConfigSource = { kind: 'in-cluster' } | { kind: 'kubeconfig'; paths: string[] };

/** Where a configuration would come from, or undefined when there is none (then `--kube auto` stays off). */
export function detectKubeConfig(env: NodeJS.ProcessEnv = process.env, saDir = SA_DIR): KubeConfigSource | undefined {
  const fromEnv = (env['KUBECONFIG'] ?? '').split(delimiter).filter((p) => p && existsSync(p));
  if (fromEnv.length) return { kind: 'kubeconfig', paths: fromEnv };
  const home = env['HOME'] || homedir();
  const def = join(home, '.kube', 'config');
  if (!env['KUBECONFIG'] && existsSync(def)) return { kind: 'kubeconfig', paths: [def] };
  if (env['KUBERNETES_SERVICE_HOST'] && env['KUBERNETES_SERVICE_PORT'] && existsSync(join(saDir, 'token'))) return { kind: 'in-cluster' };
  return undefined;
}

/** Loads the configuration client-node would (KUBECONFIG, ~/.kube/config, in-cluster). */
export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  if (!kc.getCurrentCluster())
    throw new Error('no Kubernetes configuration found (KUBECONFIG, ~/.kube/config or in-cluster service account)');
  return kc;
}

/** The namespace this pod runs in (service account mount), else `default` (not in a pod). */
export function podNamespace(saDir = SA_DIR): string {
  try {
    const file = join(saDir, 'namespace');
    if (existsSync(file)) return readFileSync(file, 'utf8').trim() || 'default';
  } catch {
    /* not in a pod */
  }
  return 'default';
}
