/**
 * Keep-alive connections to the apiserver for client-node's requests. client-node 2.0.1 builds a new undici Agent
 * for every API request (KubeConfig.applySecurityAuthentication → createDispatcher): a TCP + TLS handshake and a
 * pool per request, two a status flip on the health path (docs/performance.md, "Health path"). This makes a
 * KubeConfig reuse one dispatcher per set of connection options for every request except watches.
 *
 * Pooling was backed out once: on a half-open path (no FIN, no RST; test/faults/watch-cut.int.test.ts) requests
 * waited forever on dead pooled connections. So each pooled request has a deadline: no response headers within
 * REQUEST_IDLE_TIMEOUT_MS, or a body silent that long, fails the request and drops the connection it was on
 * (HTTP/1.1: undici destroys the socket; HTTP/2, which the apiserver speaks over ALPN: undici pings the session
 * and replaces it when the ping is not answered within the same time). An idle pooled connection closes after
 * undici's keep-alive timeout (4 s), far below the apiserver's idle timeout, so the server never closes one under
 * a request. Watches keep a connection of their own (client-node's own inactivity timeout ends them;
 * one shared HTTP/2 session would make every watch blind with it).
 *
 * A list from the apiserver's watch cache (`isCacheListPath`) also gets a connection of its own, and waits for its
 * headers up to LIST_HEADERS_TIMEOUT_MS: after an apiserver restart the cache refills before it answers (at 100,000
 * Certificates for a minute, docs/performance.md, eighth pass), and a list given up at 30 s and asked again made the
 * apiserver build the same answer again beside the one it was still building. The apiserver's own request timeout
 * (60 s) ends it first. A new connection cannot be a dead pooled one (a blackholed path fails at connect).
 */
import type { KubeConfig } from '@kubernetes/client-node';

/** No response headers, or no body bytes, for this long on a pooled (non-watch) request: the request fails. */
const REQUEST_IDLE_TIMEOUT_MS = 30_000;
/** Headers of a list from the watch cache: above the apiserver's own request timeout (60 s by default). */
const LIST_HEADERS_TIMEOUT_MS = 75_000;
/** Option sets kept (a rotated client certificate makes a new one); the oldest is closed gracefully. */
const MAX_DISPATCHERS = 4;

/** What this needs of an undici Dispatcher (client-node's own undici: its fetch dispatches to it). */
interface Dispatcher {
  dispatch(opts: DispatchOptions, handler: unknown): boolean;
  compose(interceptor: (dispatch: Dispatch) => Dispatch): Dispatcher;
  close(): Promise<void>;
}
interface DispatchOptions {
  path: string;
  headersTimeout?: number | null;
  bodyTimeout?: number | null;
}
type Dispatch = (opts: DispatchOptions, handler: unknown) => boolean;
type CreateDispatcher = (cluster: unknown, agentOptions: Record<string, unknown>) => Dispatcher | undefined;

/** The connection options createDispatcher reads (client-node's KubeConfig.createDispatcherOptions). */
const CLUSTER_KEYS = ['server', 'skipTLSVerify', 'tlsServerName', 'proxyUrl'] as const;
const AGENT_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

interface Entry {
  cluster: Record<string, unknown>;
  agentOptions: Record<string, unknown>;
  dispatcher: Dispatcher;
}

const patched = new WeakSet<KubeConfig>();

/** client-node's Watch asks for `watch=true`; everything else is a request that ends. */
export function isWatchPath(path: string): boolean {
  return /[?&]watch=(?:true|1)(?:&|$)/.test(path);
}

/** A list the apiserver serves from its watch cache in one response: a resourceVersion, no continue, not a watch. */
export function isCacheListPath(path: string): boolean {
  return !isWatchPath(path) && /[?&]resourceVersion=[^&]/.test(path) && !/[?&]continue=/.test(path);
}

/**
 * Makes `kc` (and every API client and Watch made from it, before or after) share keep-alive dispatchers.
 * Idempotent; a no-op when client-node's internals differ from 2.0.x (requests then connect as client-node makes them).
 */
export function shareKubeDispatchers(
  kc: KubeConfig,
  idleTimeoutMs = REQUEST_IDLE_TIMEOUT_MS,
  listTimeoutMs = LIST_HEADERS_TIMEOUT_MS,
): void {
  const target = kc as unknown as { createDispatcher?: CreateDispatcher };
  const original = target.createDispatcher;
  if (typeof original !== 'function' || patched.has(kc)) return;
  patched.add(kc);
  const entries: Entry[] = [];
  target.createDispatcher = (cluster, agentOptions) => {
    const c = (cluster ?? {}) as Record<string, unknown>;
    const hit = entries.find((e) => sameOptions(e, c, agentOptions));
    if (hit) return hit.dispatcher;
    const pooled = original.call(kc, cluster, agentOptions);
    if (!pooled || typeof pooled.compose !== 'function') return pooled;
    const dispatcher = pooled.compose((dispatch) => (opts, handler) => {
      // a connection of its own, as client-node makes it (closed by the server, the watch's abort, or idle)
      const own = (): Dispatcher => original.call(kc, cluster, agentOptions) ?? pooled;
      if (isWatchPath(opts.path)) return own().dispatch(opts, handler);
      if (isCacheListPath(opts.path))
        return own().dispatch({ ...opts, headersTimeout: listTimeoutMs, bodyTimeout: idleTimeoutMs }, handler);
      return dispatch({ ...opts, headersTimeout: idleTimeoutMs, bodyTimeout: idleTimeoutMs }, handler);
    });
    entries.push({ cluster: c, agentOptions, dispatcher });
    if (entries.length > MAX_DISPATCHERS)
      void entries
        .shift()!
        .dispatcher.close()
        .catch(() => undefined); // requests in flight finish
    return dispatcher;
  };
}

/** Field by field (Buffers by content): no digest or string of the key material is made per request. */
function sameOptions(e: Entry, cluster: Record<string, unknown>, agentOptions: Record<string, unknown>): boolean {
  return CLUSTER_KEYS.every((k) => same(e.cluster[k], cluster[k])) && AGENT_KEYS.every((k) => same(e.agentOptions[k], agentOptions[k]));
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  return false;
}
