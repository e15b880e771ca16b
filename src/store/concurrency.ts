/** Small concurrency helpers shared by the stores. */
import { AsyncLocalStorage } from 'node:async_hooks';
import { StoreError } from './errors.js';

/** FIFO async mutex. */
export class Mutex {
  #tail: Promise<void> = Promise.resolve();

  async run<T>(fn: () => T | Promise<T>): Promise<T> {
    const prev = this.#tail;
    let release!: () => void;
    this.#tail = new Promise<void>((r) => (release = r));
    await prev;
    try {
      return await fn();
    } finally {
      release();
    }
  }
}

/**
 * Detects store calls made from inside that store's own transaction callback through the store
 * object instead of the `tx` ops. On SQLite such a call would wait for the transaction forever;
 * on PostgreSQL it would silently run outside the transaction. Both engines throw instead.
 * Work merely started inside the callback that runs after the transaction ended is not affected.
 */
export class TxGuard {
  readonly #als = new AsyncLocalStorage<{ active: boolean }>();

  assertOutside(what: string): void {
    if (this.#als.getStore()?.active) {
      throw new StoreError(`${what} was called inside store.transaction(); use the ops passed to the transaction callback`);
    }
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const scope = { active: true };
    try {
      return await this.#als.run(scope, fn);
    } finally {
      scope.active = false;
    }
  }
}

/** Marks tx ops unusable once their transaction has finished. */
export class TxScope {
  done = false;
  check(): void {
    if (this.done) throw new StoreError('transaction ops used after the transaction finished');
  }
}
