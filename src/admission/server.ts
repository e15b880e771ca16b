/**
 * The validating admission webhook's HTTPS server (node:https):
 *
 *   POST /validate   AdmissionReview v1 / v1beta1 → AdmissionReview (same apiVersion), see review.ts
 *   GET  /healthz    200 ok
 *
 * Bounded: request bodies (default 3 MiB: an UPDATE review carries the object and the old object, each up
 * to etcd's 1.5 MiB), time to receive headers and body (10 s; the apiserver gives up after the
 * configuration's timeoutSeconds anyway), JSON only. Stateless: every replica serves it, leader or not.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Counter, Registry } from 'prom-client';
import type { Logger } from 'pino';
import { watchCertificate, type CertificatePair } from './certs.js';
import { BadAdmissionReviewError, decideAdmission, parseAdmissionReview, toResponse, type AdmissionReviewResponse } from './review.js';

const VALIDATE_PATH = '/validate';
const HEALTHZ_PATH = '/healthz';
const DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024;

export interface AdmissionWebhookOptions {
  /** 0 picks a free port. */
  port: number;
  /** Listen address. Default 0.0.0.0. */
  host?: string;
  /** PEM certificate (chain) and key, e.g. `<cert dir>/tls.crt` and `<cert dir>/tls.key`; reloaded on change. */
  certFile: string;
  keyFile: string;
  logger: Logger;
  /** How often the certificate files are re-read besides the directory watch, ms. Default 10 s. */
  certPollMs?: number;
  /** Largest accepted request body. Default 3 MiB. */
  maxBodyBytes?: number;
  /** Time to receive a whole request (headers and body), ms. Default 10 s. */
  requestTimeoutMs?: number;
  /** prom-client registry for `certmgr_notify_webhook_*` metrics. Default: a private one. */
  registry?: Registry;
}

export interface RunningAdmissionWebhook {
  /** https://<host>:<port> (127.0.0.1 when listening on every address). */
  readonly url: string;
  readonly port: number;
  /** The certificate being served (fingerprint, notAfter). */
  certificate(): Pick<CertificatePair, 'fingerprint' | 'notAfter' | 'subjectAltName'>;
  /** Re-read the certificate files now (they are also watched); true when a new pair was loaded. */
  reloadCertificate(): Promise<boolean>;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new HttpError(413, `request body larger than ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > limit) {
        done = true;
        reject(new HttpError(413, `request body larger than ${limit} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks));
    });
    req.on('error', (e) => {
      if (done) return;
      done = true;
      reject(e);
    });
  });
}

/** Starts the webhook server. Throws when the certificate files cannot be loaded or the port not bound. */
export async function startAdmissionWebhook(opts: AdmissionWebhookOptions): Promise<RunningAdmissionWebhook> {
  const log = opts.logger.child({ component: 'admission-webhook' });
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const registry = opts.registry ?? new Registry();
  const requests = new Counter({
    name: 'certmgr_notify_webhook_admission_requests_total',
    help: 'Admission reviews answered, by kind, operation and result (allowed, denied, error)',
    labelNames: ['kind', 'operation', 'result'],
    registers: [registry],
  });
  const tlsErrors = new Counter({
    name: 'certmgr_notify_webhook_tls_errors_total',
    help: 'Failed TLS handshakes (e.g. a client that does not trust the served certificate)',
    registers: [registry],
  });

  // assigned once the server exists; declared first because the certificate watcher's callback reads it
  // eslint-disable-next-line prefer-const
  let server: Server | undefined;
  const certs = await watchCertificate({
    certFile: opts.certFile,
    keyFile: opts.keyFile,
    logger: log,
    pollMs: opts.certPollMs,
    onChange: (pair) => server?.setSecureContext({ cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2' }),
  });

  const send = (res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
    if (res.headersSent) return;
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
    res.end(body);
  };

  const handleValidate = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') throw new HttpError(415, 'content-type must be application/json');
    const raw = await readBody(req, maxBody);
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new HttpError(400, 'body is not JSON');
    }
    let parsed: ReturnType<typeof parseAdmissionReview>;
    try {
      parsed = parseAdmissionReview(body);
    } catch (e) {
      if (e instanceof BadAdmissionReviewError) throw new HttpError(400, e.message);
      throw e;
    }
    const { request } = parsed;
    const decision = decideAdmission(request);
    const out: AdmissionReviewResponse = {
      apiVersion: parsed.apiVersion,
      kind: 'AdmissionReview',
      response: toResponse(request.uid, decision),
    };
    requests.inc({ kind: decision.checked, operation: request.operation, result: decision.allowed ? 'allowed' : 'denied' });
    const fields = {
      uid: request.uid,
      kind: request.kind.kind,
      namespace: request.namespace,
      name: request.name,
      operation: request.operation,
      dryRun: request.dryRun,
      review: parsed.apiVersion,
    };
    if (!decision.allowed) log.info({ ...fields, message: out.response.status?.message }, 'admission denied');
    else log.debug({ ...fields, warnings: decision.warnings.length ? decision.warnings : undefined }, 'admission allowed');
    send(res, 200, JSON.stringify(out), 'application/json');
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0];
    void (async () => {
      try {
        if (path === HEALTHZ_PATH) {
          if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'method not allowed');
          send(res, 200, 'ok');
          return;
        }
        if (path === VALIDATE_PATH) {
          if (req.method !== 'POST') throw new HttpError(405, 'method not allowed');
          await handleValidate(req, res);
          return;
        }
        throw new HttpError(404, 'not found');
      } catch (e) {
        const status = e instanceof HttpError ? e.status : 500;
        if (status === 500) log.error({ err: e }, 'admission webhook request failed');
        else if (path === VALIDATE_PATH) log.warn({ status, err: (e as Error).message }, 'admission webhook request rejected');
        if (path === VALIDATE_PATH) requests.inc({ kind: 'unknown', operation: 'unknown', result: 'error' });
        if (status === 413 || status === 500) res.setHeader('connection', 'close');
        send(res, status, status === 500 ? 'internal error' : (e as Error).message);
        // stop reading an oversized body
        if (status === 413) res.once('finish', () => req.destroy());
      }
    })();
  };

  const initial = certs.current;
  const srv = createServer({ cert: initial.cert, key: initial.key, minVersion: 'TLSv1.2' }, handler);
  server = srv;
  srv.requestTimeout = opts.requestTimeoutMs ?? 10_000;
  srv.headersTimeout = Math.min(srv.requestTimeout, 10_000);
  // longer than the apiserver's idle-connection timeout (90 s), so the client closes idle connections first
  // and never sends a review on a socket we are closing
  srv.keepAliveTimeout = 120_000;
  srv.on('tlsClientError', (err: Error, socket: Socket) => {
    tlsErrors.inc();
    log.debug({ err: err.message, remote: socket.remoteAddress }, 'admission webhook TLS handshake failed');
  });

  const host = opts.host ?? '0.0.0.0';
  try {
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(opts.port, host, () => {
        srv.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    certs.close();
    throw e;
  }
  srv.on('error', (e) => log.error({ err: e }, 'admission webhook server error'));
  const port = (srv.address() as AddressInfo).port;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const url = `https://${urlHost.includes(':') ? `[${urlHost}]` : urlHost}:${port}`;
  log.info({ url, validate: VALIDATE_PATH }, 'admission webhook listening');

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    certificate() {
      const c = certs.current;
      return { fingerprint: c.fingerprint, notAfter: c.notAfter, subjectAltName: c.subjectAltName };
    },
    reloadCertificate: () => certs.reload(),
    close() {
      closing ??= new Promise<void>((resolve) => {
        certs.close();
        // reviews take milliseconds: let in-flight ones finish, then drop what is left
        const force = setTimeout(() => srv.closeAllConnections(), 5_000);
        force.unref();
        srv.close(() => {
          clearTimeout(force);
          resolve();
        });
        srv.closeIdleConnections();
      });
      return closing;
    },
  };
}
