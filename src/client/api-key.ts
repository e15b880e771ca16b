/**
 * Where the `svc-api-key` comes from: a value, a getter, or a Kubernetes Secret re-read periodically so a
 * rotated key needs no restart (the last good key is kept while a re-read fails).
 */
import type { Logger } from 'pino';
import { describeKubeError } from '../kube/errors.js';
import { realClock, type Clock } from '../runtime/timers.js';

/** An API key: the value, or a getter so a rotated key (e.g. SecretApiKey's) is picked up. */
export type ApiKey = string | (() => string);

export interface SecretKeySelector {
  namespace: string;
  name: string;
  key: string;
}

/** Reads a Secret; undefined when it does not exist. */
export type SecretReader = (namespace: string, name: string) => Promise<{ data?: Record<string, string> | undefined } | undefined>;

/** Pure: the key in a Secret's data (base64, trimmed); throws naming the Secret, never its value. */
export function apiKeyOf(secret: { data?: Record<string, string> | undefined } | undefined, sel: SecretKeySelector): string {
  if (!secret) throw new Error(`API key Secret ${sel.namespace}/${sel.name} not found`);
  const b64 = secret.data?.[sel.key];
  if (!b64) throw new Error(`API key Secret ${sel.namespace}/${sel.name} has no key ${sel.key}`);
  return Buffer.from(b64, 'base64').toString('utf8').trim();
}

export interface SecretApiKeyOptions {
  read: SecretReader;
  secret: SecretKeySelector;
  log: Logger;
  /** default 60 s */
  refreshMs?: number;
  clock?: Clock;
}

/** The key held in a Secret: `load()` once, then `start()` re-reads it every `refreshMs` until `stop()`. */
export class SecretApiKey {
  private key = '';
  private timer: unknown;
  private stopped = false;
  private readonly clock: Clock;

  constructor(private readonly opts: SecretApiKeyOptions) {
    this.clock = opts.clock ?? realClock;
  }

  /** The last key read ('' before the first `load()`). */
  readonly get = (): string => this.key;

  /** Reads the Secret now; rejects (and keeps the last key) when it cannot. */
  async load(): Promise<string> {
    const { secret, read } = this.opts;
    this.key = apiKeyOf(await read(secret.namespace, secret.name), secret);
    return this.key;
  }

  start(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.timer = this.clock.setTimeout(() => {
      this.load()
        .catch((e: unknown) =>
          // ApiException is an Error with a code: describeKubeError says which HTTP status
          this.opts.log.warn(
            { error: e instanceof Error && !('code' in e) ? e.message : describeKubeError(e) },
            'could not re-read the API key Secret; keeping the last key',
          ),
        )
        .finally(() => {
          this.timer = undefined;
          this.start();
        });
    }, this.opts.refreshMs ?? 60_000);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** A key given as a value or a getter, as a getter. */
export const apiKeyGetter = (k: ApiKey): (() => string) => (typeof k === 'function' ? k : () => k);
