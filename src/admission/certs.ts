/**
 * The webhook's serving certificate, read from two PEM files (cert-manager's Secret mounted as a volume:
 * `tls.crt`, `tls.key`) and reloaded when they change — cert-manager renews before expiry and the kubelet
 * swaps the files in place, so no restart is needed.
 *
 * Changes are noticed by a directory watch (immediate) and a poll (fs.watch can miss events, e.g. on some
 * volume types); a reload happens only when the content changed. A pair that does not load (a half-written
 * rotation, key and certificate not matching, not PEM) is skipped and the current certificate kept; it is
 * retried on the next event or poll. The private key is never logged.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';

export interface CertificatePair {
  cert: Buffer;
  key: Buffer;
  /** SHA-256 fingerprint of the leaf certificate (public; for logs and tests). */
  fingerprint: string;
  notAfter: string;
  subjectAltName: string | undefined;
}

/** Reads and checks a pair; throws an Error naming the file and the problem (never the key's content). */
async function loadCertificatePair(certFile: string, keyFile: string): Promise<CertificatePair> {
  const [cert, key] = await Promise.all([
    readFile(certFile).catch((e: NodeJS.ErrnoException) => {
      throw new Error(`cannot read the webhook certificate ${certFile}: ${e.code ?? e.message}`);
    }),
    readFile(keyFile).catch((e: NodeJS.ErrnoException) => {
      throw new Error(`cannot read the webhook key ${keyFile}: ${e.code ?? e.message}`);
    }),
  ]);
  if (cert.length === 0) throw new Error(`the webhook certificate ${certFile} is empty`);
  if (key.length === 0) throw new Error(`the webhook key ${keyFile} is empty`);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (e) {
    throw new Error(`the webhook certificate ${certFile} is not a PEM certificate: ${(e as Error).message}`, { cause: e });
  }
  try {
    createSecureContext({ cert, key });
  } catch (e) {
    // e.g. "key values mismatch" while a rotation has written one file but not yet the other
    throw new Error(`the webhook certificate ${certFile} and key ${keyFile} do not load: ${(e as Error).message}`, { cause: e });
  }
  return { cert, key, fingerprint: x509.fingerprint256, notAfter: x509.validTo, subjectAltName: x509.subjectAltName };
}

export interface CertificateWatcherOptions {
  certFile: string;
  keyFile: string;
  logger: Logger;
  /** Called with each newly loaded pair (not with the initial one). */
  onChange: (pair: CertificatePair) => void;
  /** Poll period, ms. Default 10 s. */
  pollMs?: number | undefined;
}

export interface CertificateWatcher {
  readonly current: CertificatePair;
  /** Re-reads the files now; true when a new pair was loaded. */
  reload(): Promise<boolean>;
  close(): void;
}

const digest = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Loads the pair (throws if it cannot) and keeps watching the files. */
export async function watchCertificate(opts: CertificateWatcherOptions): Promise<CertificateWatcher> {
  const { certFile, keyFile, logger } = opts;
  let current = await loadCertificatePair(certFile, keyFile);
  let currentDigest = digest(current.cert) + digest(current.key);
  let lastFailure = '';
  let closed = false;
  let running: Promise<boolean> | undefined;
  let again = false;

  const reloadOnce = async (): Promise<boolean> => {
    let pair: CertificatePair;
    try {
      pair = await loadCertificatePair(certFile, keyFile);
    } catch (e) {
      const msg = (e as Error).message;
      if (msg !== lastFailure) logger.warn({ err: msg }, 'webhook certificate not reloaded; keeping the current one');
      lastFailure = msg;
      return false;
    }
    lastFailure = '';
    const d = digest(pair.cert) + digest(pair.key);
    if (d === currentDigest || closed) return false;
    current = pair;
    currentDigest = d;
    opts.onChange(pair);
    logger.info(
      { fingerprint: pair.fingerprint, notAfter: pair.notAfter, subjectAltName: pair.subjectAltName },
      'webhook certificate reloaded',
    );
    return true;
  };

  // one reload at a time; an event during a reload schedules one more
  const reload = async (): Promise<boolean> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let changed = false;
      do {
        again = false;
        changed = (await reloadOnce()) || changed;
      } while (again && !closed);
      return changed;
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  let debounce: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (closed) return;
    clearTimeout(debounce);
    debounce = setTimeout(() => void reload(), 200);
    debounce.unref();
  };

  const watchers: FSWatcher[] = [];
  // The kubelet replaces a Secret volume's content by swapping the `..data` symlink: watch the directories
  // (not the files, whose inodes change), and react to any entry in them.
  for (const dir of new Set([dirname(certFile), dirname(keyFile)])) {
    try {
      const w = watch(dir, { persistent: false }, schedule);
      w.on('error', (e) => logger.debug({ err: e.message, dir }, 'webhook certificate directory watch failed; polling only'));
      watchers.push(w);
    } catch (e) {
      logger.debug({ err: (e as Error).message, dir }, 'cannot watch the webhook certificate directory; polling only');
    }
  }
  const poll = setInterval(() => void reload(), opts.pollMs ?? 10_000);
  poll.unref();

  logger.info(
    { fingerprint: current.fingerprint, notAfter: current.notAfter, subjectAltName: current.subjectAltName, cert: basename(certFile) },
    'webhook certificate loaded',
  );

  return {
    get current() {
      return current;
    },
    reload,
    close() {
      closed = true;
      clearInterval(poll);
      clearTimeout(debounce);
      for (const w of watchers) w.close();
    },
  };
}
