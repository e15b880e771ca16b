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

/** A short, log-safe description: the Status message, not the whole exception (which repeats headers). */
export function describeKubeError(e: unknown): string {
  const code = kubeErrorCode(e);
  const st = kubeStatus(e);
  if (code !== undefined) return `HTTP ${code}${st?.reason ? ` ${st.reason}` : ''}${st?.message ? `: ${st.message}` : ''}`;
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } } | null;
  const cause = err?.cause?.code ?? err?.cause?.message;
  return `${err?.name ?? 'Error'}: ${err?.message ?? String(e)}${cause ? ` (${cause})` : ''}`;
}
