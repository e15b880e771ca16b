/**
 * The delivery worker's wake-up: whoever commits deliveries due now (ingestion, the group flusher, the reminder
 * scanner, a retry) notifies it, and the worker claims at once instead of at its next poll. Made once where the
 * service is composed (src/main.ts) and handed to each of them and to the worker. Only this process's worker
 * hears it: other replicas sharing a PostgreSQL store find the rows by polling.
 */
export class DeliverySignal {
  #notified = false;
  #waiter: (() => void) | undefined;

  /** Deliveries are due: the worker claims now, or once more after the claim it is making. Cheap; safe any time. */
  notify(): void {
    this.#notified = true;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }

  /** Whether notify() was called since the last take(); resets it. */
  take(): boolean {
    const notified = this.#notified;
    this.#notified = false;
    return notified;
  }

  /** Calls `wake` once, at the next notify() (one waiter: the worker's sleep); returns what cancels it. */
  onNotify(wake: () => void): () => void {
    this.#waiter = wake;
    return () => {
      if (this.#waiter === wake) this.#waiter = undefined;
    };
  }
}
