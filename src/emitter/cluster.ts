/**
 * The cluster's identity in health events: `clusterId` (a UUID) and `clusterName`.
 * clusterId: the configured one, else the uid of the `kube-system` namespace (stable for the cluster's life,
 * the usual cluster id of agents), else — when that cannot be read (RBAC) — a UUID derived from the cluster
 * name and API server URL (stable too, but changes with either).
 */
import { createHash } from 'node:crypto';
import type { CoreV1Api } from '@kubernetes/client-node';
import { kubeErrorCode } from '../kube/errors.js';

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** `clusterName` of health events when none is configured. */
export const DEFAULT_CLUSTER_NAME = 'kubernetes';

/** A name-based UUID (version 5 layout over SHA-256) of `text`. */
export function derivedClusterId(text: string): string {
  const h = createHash('sha256').update(`certmgr-notify:cluster:${text}`).digest('hex');
  const variant = ((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

export interface ClusterIdResult {
  id: string;
  source: 'configured' | 'kube-system' | 'derived';
}

/** Throws on errors worth retrying (network, 5xx); falls back to a derived id on 401/403/404. */
export async function resolveClusterId(
  core: CoreV1Api,
  opts: { configured?: string | undefined; clusterName: string; server: string },
): Promise<ClusterIdResult> {
  if (opts.configured) {
    if (!UUID_RE.test(opts.configured)) throw new TypeError(`clusterId must be a UUID, got '${opts.configured}'`);
    return { id: opts.configured.toLowerCase(), source: 'configured' };
  }
  try {
    const ns = await core.readNamespace({ name: 'kube-system' });
    const uid = ns.metadata?.uid;
    if (uid && UUID_RE.test(uid)) return { id: uid.toLowerCase(), source: 'kube-system' };
  } catch (e) {
    const code = kubeErrorCode(e);
    if (code !== 401 && code !== 403 && code !== 404) throw e;
  }
  return { id: derivedClusterId(`${opts.clusterName}@${opts.server}`), source: 'derived' };
}
