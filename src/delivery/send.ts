/** Send stage: the send slots (at most `concurrency` at once) and one bounded attempt. */
import type { Notifiers } from '../integrations/index.js';
import type { DeliveryResult, Notification } from '../integrations/types.js';
import type { IntegrationType } from '../store/types.js';
import { ATTEMPT_GRACE_MS } from './options.js';

/** At most `concurrency` sends at once; the claimed deliveries waiting for one are served in claim order. */
export class SendSlots {
  readonly #concurrency: number;
  #sending = 0;
  #waiters: (() => void)[] = [];

  constructor(concurrency: number) {
    this.#concurrency = concurrency;
  }

  /** Resolves when this delivery may send. */
  take(): Promise<void> {
    if (this.#sending < this.#concurrency) {
      this.#sending++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  free(): void {
    const next = this.#waiters.shift();
    if (next)
      next(); // the slot passes on
    else this.#sending--;
  }
}

/** One attempt; never throws, never outlives timeoutMs (+ a short grace) or the shutdown signal. */
export async function sendAttempt(
  notifiers: Notifiers,
  type: IntegrationType,
  n: Notification,
  timeoutMs: number,
  shutdown: AbortSignal,
): Promise<DeliveryResult> {
  // One controller and one timer per attempt (AbortSignal.any + AbortSignal.timeout cost more than the send's
  // own setup): aborted at the timeout or at shutdown; a notifier that ignores its signal must not hold the slot
  // past the lease (or past shutdown), so the attempt is given up ATTEMPT_GRACE_MS later.
  const attempt = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const guard = new Promise<DeliveryResult>((resolve) => {
    const give = (error: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => resolve({ outcome: 'retry', error }), ATTEMPT_GRACE_MS);
    };
    timer = setTimeout(() => {
      attempt.abort(new DOMException(`attempt timed out after ${timeoutMs} ms`, 'TimeoutError'));
      give(`attempt timed out after ${timeoutMs} ms`);
    }, timeoutMs);
    onAbort = () => {
      attempt.abort(shutdown.reason);
      give('aborted');
    };
    if (shutdown.aborted) onAbort();
    else shutdown.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const notifier = notifiers.of(type);
    return await Promise.race([notifier.send(n, attempt.signal), guard]);
  } catch (err) {
    const name = err instanceof Error ? err.name : typeof err;
    return { outcome: 'retry', error: `internal error in the ${type} notifier (${name})` };
  } finally {
    clearTimeout(timer);
    if (onAbort) shutdown.removeEventListener('abort', onAbort);
  }
}
