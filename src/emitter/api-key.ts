/**
 * The emitter's API key read from a Secret: read once at start (retried by the caller), then re-read every
 * minute so a rotation needs no restart; a failed re-read keeps the last key.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeKubeError } from '../kube/errors.js';
import type { Clock } from '../runtime/timers.js';

export class SecretApiKey {
  private key = '';
  private timer: unknown;
  private stopped = false;

  constructor(
    private readonly o: { core: CoreV1Api; secret: { namespace: string; name: string; key: string }; clock: Clock; log: Logger; refreshMs?: number },
  ) {}

  readonly get = (): string => this.key;

  /** Reads the key now (throws on failure) and re-reads it every `refreshMs` after. */
  async start(): Promise<void> {
    this.key = await this.read();
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.o.clock.clearTimeout(this.timer);
  }

  private async read(): Promise<string> {
    const sel = this.o.secret;
    const sec = await this.o.core.readNamespacedSecret({ namespace: sel.namespace, name: sel.name });
    const b64 = sec.data?.[sel.key];
    if (!b64) throw new Error(`API key Secret ${sel.namespace}/${sel.name} has no key ${sel.key}`);
    return Buffer.from(b64, 'base64').toString('utf8').trim();
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.read()
        .then(
          (k) => (this.key = k),
          (e: unknown) => this.o.log.warn({ error: e instanceof Error && !('code' in e) ? e.message : describeKubeError(e) }, 'could not re-read the API key Secret; keeping the last key'),
        )
        .finally(() => this.arm());
    }, this.o.refreshMs ?? 60_000);
  }
}
