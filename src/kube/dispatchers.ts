/**
 * client-node 2.0.1 builds a new undici Agent for every API request (KubeConfig.applySecurityAuthentication →
 * createDispatcher), so every call to the apiserver opens a new TCP + TLS connection: two handshakes per status
 * flip on the health path, and a connection per page on a large list. This keeps one dispatcher per distinct set
 * of connection options and reuses it, so requests share keep-alive connections as a browser or kubectl would.
 */
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';

type CreateDispatcher = (cluster: unknown, agentOptions: unknown) => unknown;
interface Closable {
  close?: () => Promise<void>;
}

/** Option sets kept; a rotated client certificate makes a new one, the oldest is closed (gracefully). */
const MAX_DISPATCHERS = 4;
/** The dispatcher cache of every patched KubeConfig (for dropKubeConnections). */
const caches = new WeakMap<KubeConfig, Map<string, unknown>>();

/** Makes `kc` reuse its undici dispatchers. Idempotent; a no-op when client-node's internals differ. */
export function reuseKubeDispatchers(kc: KubeConfig): void {
  const target = kc as unknown as { createDispatcher?: CreateDispatcher };
  const original = target.createDispatcher;
  if (typeof original !== 'function' || caches.has(kc)) return;
  const cache = new Map<string, unknown>();
  caches.set(kc, cache);
  target.createDispatcher = (cluster, agentOptions) => {
    const key = optionsKey(cluster, agentOptions);
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const made = original.call(kc, cluster, agentOptions);
    if (made === undefined) return made;
    cache.set(key, made);
    if (cache.size > MAX_DISPATCHERS) {
      const [oldestKey, oldest] = cache.entries().next().value as [string, Closable];
      cache.delete(oldestKey);
      // close() lets requests in flight finish
      void oldest.close?.().catch(() => undefined);
    }
    return made;
  };
}

/** A digest of everything createDispatcher reads (server, TLS material, proxy): the key material is never kept. */
function optionsKey(cluster: unknown, agentOptions: unknown): string {
  const c = (cluster ?? {}) as Record<string, unknown>;
  const h = createHash('sha256');
  const put = (v: unknown): void => {
    h.update(typeof v === 'string' ? v : Buffer.isBuffer(v) ? v : (JSON.stringify(v ?? null) ?? 'undefined'));
    h.update('\0');
  };
  for (const k of ['server', 'skipTLSVerify', 'tlsServerName', 'proxyUrl', 'caData', 'caFile']) put(c[k]);
  const o = (agentOptions ?? {}) as Record<string, unknown>;
  for (const k of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername']) {
    const v = o[k];
    put(Array.isArray(v) ? v.map((x) => (Buffer.isBuffer(x) ? x.toString('base64') : x)) : v);
  }
  return h.digest('hex');
}

/**
 * Forgets `kc`'s pooled connections: the next requests open new ones. Called when a watch passed nothing for its
 * idle timeout, the sign of a half-open path (no FIN, no RST): a pooled keep-alive connection on it would make the
 * next LIST hang too. Requests in flight finish on their own (close() is graceful).
 */
export function dropKubeConnections(kc: KubeConfig): void {
  const cache = caches.get(kc);
  if (!cache) return;
  for (const d of cache.values()) void (d as Closable).close?.().catch(() => undefined);
  cache.clear();
}
