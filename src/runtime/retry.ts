/** Start-up steps that must eventually succeed (read a Secret, resolve an id, load state): retried until `signal` aborts. */
import type { Logger } from 'pino';
import { describeKubeError } from '../kube/errors.js';
import { backoffDelay, sleep, type BackoffPolicy, type Clock } from './timers.js';

const STARTUP_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000, jitter: 0.2 };

/** `fn`'s result, retried with backoff; undefined once `signal` aborted. */
export async function retryUntilAborted<T>(
  what: string,
  fn: () => Promise<T>,
  o: { signal: AbortSignal; clock: Clock; log: Logger; backoff?: BackoffPolicy },
): Promise<T | undefined> {
  for (let attempt = 1; !o.signal.aborted; attempt++) {
    try {
      return await fn();
    } catch (e) {
      const delay = backoffDelay(attempt, o.backoff ?? STARTUP_BACKOFF);
      o.log.warn(
        { error: e instanceof Error && !('code' in e) ? e.message : describeKubeError(e), retryInMs: delay },
        `${what} failed; retrying`,
      );
      await sleep(o.clock, delay, o.signal);
    }
  }
  return undefined;
}
