/** Kubernetes API error helpers (client-node's ApiException keeps the Status body as raw JSON text). */

export interface KubeStatus {
  reason?: string;
  message?: string;
  code?: number;
}

/** HTTP status of an ApiException / watch error, if any. */
export function kubeErrorCode(e: unknown): number | undefined {
  const o = e as { code?: unknown; statusCode?: unknown } | null;
  if (typeof o?.code === 'number') return o.code;
  if (typeof o?.statusCode === 'number') return o.statusCode;
  return undefined;
}

/** The Status of an ApiException body, parsed. */
export function kubeStatus(e: unknown): KubeStatus | undefined {
  const body = (e as { body?: unknown } | null)?.body;
  try {
    return typeof body === 'string' ? (JSON.parse(body) as KubeStatus) : (body as KubeStatus | undefined);
  } catch {
    return undefined;
  }
}

export const isNotFound = (e: unknown): boolean => kubeErrorCode(e) === 404;
export const isConflict = (e: unknown): boolean => kubeErrorCode(e) === 409;

/**
 * A request that ended at our own deadline (dispatcher.ts: no response headers, or a silent body, for 30 s): the
 * apiserver may still be working on it (a list waits for a watch cache that is refilling after a restart), and the
 * wait itself spaced the attempts.
 */
export function isRequestDeadline(e: unknown): boolean {
  const code = (e as { cause?: { code?: unknown } } | null)?.cause?.code;
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
}

/** A short, log-safe description: the Status message, not the whole exception (which repeats headers). */
export function describeKubeError(e: unknown): string {
  const code = kubeErrorCode(e);
  const st = kubeStatus(e);
  if (code !== undefined) return `HTTP ${code}${st?.reason ? ` ${st.reason}` : ''}${st?.message ? `: ${st.message}` : ''}`;
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } } | null;
  const cause = err?.cause?.code ?? err?.cause?.message;
  return `${err?.name ?? 'Error'}: ${err?.message ?? String(e)}${cause ? ` (${cause})` : ''}`;
}

/** group/version/plural of a collection path (`/apis/<group>/<version>[/namespaces/<ns>]/<plural>`, or `/api/v1/…`). */
export interface ResourceRef {
  /** '' for the core group */
  group: string;
  version: string;
  plural: string;
}

export function resourceOfPath(path: string): ResourceRef | undefined {
  const named = /^\/apis\/([^/]+)\/([^/]+)\/(?:namespaces\/[^/]+\/)?([^/?]+)\/?$/.exec(path.split('?')[0]!);
  if (named) return { group: named[1]!, version: named[2]!, plural: named[3]! };
  const core = /^\/api\/([^/]+)\/(?:namespaces\/[^/]+\/)?([^/?]+)\/?$/.exec(path.split('?')[0]!);
  if (core) return { group: '', version: core[1]!, plural: core[2]! };
  return undefined;
}

/** Where a missing resource's definition comes from: a 404 on a list/watch means it is not installed. */
const CRD_SOURCES: Record<string, string> = {
  'cert-manager.io': 'install cert-manager in this cluster',
  'acme.cert-manager.io': 'install cert-manager in this cluster',
  'notify.certmgr.io': "install certmgr-notify's CRDs (crds/ of the repository, or the Helm chart)",
};

/**
 * What a 404 on listing/watching `path` means, naming the resource: the CRD (or, for the core group, the
 * resource) is not served by this apiserver. Undefined when the path is not a collection path.
 */
export function missingResourceMessage(path: string): string | undefined {
  const r = resourceOfPath(path);
  if (!r) return undefined;
  if (r.group === '') return `resource ${r.version} ${r.plural} not served by this apiserver (HTTP 404)`;
  const owner = r.group === 'cert-manager.io' || r.group === 'acme.cert-manager.io' ? 'cert-manager ' : '';
  const fix = CRD_SOURCES[r.group] ?? 'install the CRD in this cluster';
  return `${owner}CRD ${r.plural}.${r.group} ${r.version} not found (HTTP 404): ${fix}; retrying until it appears`;
}
