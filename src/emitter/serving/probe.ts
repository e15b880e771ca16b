/**
 * One probe of an endpoint: a TLS handshake with the endpoint's host as SNI, no HTTP request, and the leaf the
 * server presents read into a LeafIdentity. The certificate is not verified (`rejectUnauthorized: false`): the
 * probe reads what is served, whatever it is, and verdict.ts holds it against the Secret's. Any failure is one
 * line (`connection refused`, `timed out after 5s`, `TLS handshake failed: …`). See docs/serving.md.
 */
import { isIP } from 'node:net';
import { connect, createSecureContext, type ConnectionOptions, type SecureContext, type TLSSocket } from 'node:tls';
import { SERVING_LIMITS } from '../../model/serving.js';
import { sanitizeText } from '../../events/sanitize.js';
import { intern } from '../intern.js';
import { leafFacts } from '../inventory/facts.js';
import type { LeafIdentity } from './types.js';

/** What one probe found: the served leaf, or why there is none. */
export type ProbeOutcome = { kind: 'served'; leaf: LeafIdentity } | { kind: 'failed'; error: string };

export interface ProbeTarget {
  /** the TLS server name (SNI); an IP literal is sent without SNI (RFC 6066 allows host names only) */
  host: string;
  /** `<host or IPv4>:<port>` or `[<IPv6>]:<port>` */
  address: string;
}

export interface ProbeOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** node:tls connect (tests) */
  connect?: (o: ConnectionOptions) => TLSSocket;
}

/** `host:port` / `[v6]:port` → its parts; undefined when it is not one (no port, port out of range). */
export function parseAddress(address: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]/]+)):([0-9]{1,5})$/.exec(address);
  if (!m) return undefined;
  const host = m[1] ?? m[2]!;
  if (m[1] !== undefined && isIP(host) !== 6) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  return { host, port };
}

/** The served leaf's DER bytes as a LeafIdentity (the texts facts.ts gives a Secret's leaf); undefined: unparsable. */
function leafIdentityOf(der: Uint8Array): LeafIdentity | undefined {
  const f = leafFacts(der);
  if (!f) return undefined;
  return {
    serial: f.serial,
    issuer: intern(f.issuer.join(', ')),
    subject: f.subject.join(', '),
    dnsNames: f.dnsNames,
    notBefore: f.notBefore,
    notAfter: f.notAfter,
  };
}

/**
 * One client context for every probe: without it each connection builds its own OpenSSL context, which costs
 * the agent CPU and native memory at every probe. Built on first use.
 */
let sharedContext: SecureContext | undefined;
const probeContext = (): SecureContext => (sharedContext ??= createSecureContext());

/** A probe that read the leaf closes gracefully (its handshake's last flight sent) within this long, else at once. */
const CLOSE_GRACE_MS = 1_000;

/**
 * Closes a socket whose handshake completed on our side: end() sends what is still queued (TLS 1.3's client
 * Finished, which the server waits for) and close_notify; destroy() at once would leave the server an aborted
 * handshake to log at every probe (Go's "http: TLS handshake error … EOF", nginx's "peer closed connection").
 */
function closeGracefully(socket: TLSSocket): void {
  socket.on('error', () => {});
  const t = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
  t.unref?.();
  socket.once('close', () => clearTimeout(t));
  socket.end();
}

/** `5000` → `5s`, `1500` → `1500ms`. */
const duration = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);

/** Socket errors by code, as an operator reads them. */
const NETWORK_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'name not found (DNS)',
  EAI_AGAIN: 'name lookup failed (DNS, temporary)',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed',
};

/** One line, within SERVING_LIMITS.reason, without characters the hub refuses. */
const oneLine = (s: string): string => sanitizeText(s.replace(/\s+/g, ' ').trim(), 'text', SERVING_LIMITS.reason).value;

/**
 * A failed probe in one line: a network error by its code; anything during the handshake (OpenSSL's reason, or
 * a close before it completed) as `TLS handshake failed: …`.
 */
export function describeProbeError(err: unknown, connected: boolean): string {
  const e = err as { code?: unknown; reason?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const known = code !== undefined ? NETWORK_ERRORS[code] : undefined;
  // before the TCP connection, a network failure; after it, the server cut the handshake short
  if (known && !connected) return oneLine(known);
  const reason =
    typeof e?.reason === 'string' && e.reason
      ? e.reason
      : (known ?? (typeof e?.message === 'string' && e.message ? e.message : String(err)));
  return oneLine(`TLS handshake failed: ${reason}`);
}

/**
 * Connects, completes a TLS handshake and reads the leaf. Never throws: every failure is a `failed` outcome.
 * The whole probe (name lookup, connect, handshake) is bounded by `timeoutMs`; an abort ends it at once.
 */
export function probeTls(target: ProbeTarget, opts: ProbeOptions): Promise<ProbeOutcome> {
  const addr = parseAddress(target.address);
  if (!addr) return Promise.resolve({ kind: 'failed', error: oneLine(`not an address (host:port): ${target.address}`) });
  if (opts.signal?.aborted) return Promise.resolve({ kind: 'failed', error: 'aborted' });
  return new Promise((resolve) => {
    let socket: TLSSocket | undefined;
    let connected = false;
    let done = false;
    const finish = (out: ProbeOutcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (out.kind === 'served' && socket) closeGracefully(socket);
      else socket?.destroy();
      resolve(out);
    };
    const fail = (error: string): void => finish({ kind: 'failed', error });
    const onAbort = (): void => fail('aborted');
    const timer = setTimeout(() => fail(`timed out after ${duration(opts.timeoutMs)}`), opts.timeoutMs);
    timer.unref?.();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      socket = (opts.connect ?? connect)({
        host: addr.host,
        port: addr.port,
        // SNI names a host; an IP literal is not sent (RFC 6066), the server then picks its default certificate
        servername: isIP(target.host) === 0 ? target.host.replace(/\.$/, '') : undefined,
        // the served leaf is read, not trusted: verdict.ts compares it with the Secret's
        rejectUnauthorized: false,
        secureContext: probeContext(),
      });
    } catch (e) {
      fail(describeProbeError(e, false));
      return;
    }
    socket.once('connect', () => (connected = true));
    socket.once('secureConnect', () => {
      // getPeerCertificate copies the leaf out and frees OpenSSL's copy at once; getPeerX509Certificate's object
      // would hold the parsed certificate natively until a full GC, which a busy agent's heap may not run for
      // minutes: thousands of probes' certificates, invisible to V8
      const raw = socket!.getPeerCertificate(false)?.raw;
      if (!raw?.length) return fail('TLS handshake failed: no certificate served');
      const leaf = leafIdentityOf(raw);
      if (!leaf) return fail('TLS handshake failed: the served certificate could not be parsed');
      finish({ kind: 'served', leaf });
    });
    socket.once('error', (e) => fail(describeProbeError(e, connected)));
    socket.once('close', () => fail(connected ? 'TLS handshake failed: connection closed' : 'connection closed'));
  });
}
