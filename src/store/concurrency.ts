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

/**
 * One company's share of the store on the request path (docs/security.md, "Store work per request"): at most
 * `running` of its store calls at once (a PostgreSQL pool connection or a turn on the SQLite thread each), and
 * at most `queued` more waiting in order; beyond that a call is refused at once. Other companies' calls never
 * wait for this company's queue, only for the `running` calls already on the engine.
 */
export interface CompanyStoreLimits {
  running: number;
  queued: number;
}

/**
 * 2 running: a page is one short index read, so two keep one company's console and API fast while
 * the rest of a PostgreSQL pool (10 by default) and the SQLite thread's queue stay free for the others. 256
 * queued (a waiting call holds a closure, no connection): above what the GraphQL requests' own cap lets one
 * company ask at once (4 requests of 30 aliases), so it is the backstop for everything else on the request path.
 */
export const COMPANY_STORE_LIMITS: CompanyStoreLimits = { running: 2, queued: 256 };

export type Admission = 'run' | 'queue' | 'refuse';

/** What a new store call of a company gets, given its calls running and waiting (FIFO: none jumps the queue). */
export function admit(state: { running: number; queued: number }, limits: CompanyStoreLimits): Admission {
  if (state.running < limits.running && state.queued === 0) return 'run';
  if (state.queued < limits.queued) return 'queue';
  return 'refuse';
}

/** Thrown by CompanySemaphore.run when the company's queue is full. */
export class CompanyBusyError extends Error {
  constructor(readonly limits: CompanyStoreLimits) {
    super(
      `too many store calls of this company at once (${limits.running} running and ${limits.queued} waiting); retry later or send fewer aliases`,
    );
    this.name = 'CompanyBusyError';
  }
}

/** admit() per company, FIFO. Holds state only for companies with calls running or waiting. */
export class CompanySemaphore {
  readonly #companies = new Map<string, { running: number; waiting: (() => void)[] }>();

  constructor(readonly limits: CompanyStoreLimits = COMPANY_STORE_LIMITS) {}

  /** Calls running and waiting for `companyId` (tests, metrics). */
  state(companyId: string): { running: number; queued: number } {
    const c = this.#companies.get(companyId);
    return { running: c?.running ?? 0, queued: c?.waiting.length ?? 0 };
  }

  async run<T>(companyId: string, fn: () => Promise<T>): Promise<T> {
    let c = this.#companies.get(companyId);
    if (!c) this.#companies.set(companyId, (c = { running: 0, waiting: [] }));
    const entry = c;
    const verdict = admit({ running: entry.running, queued: entry.waiting.length }, this.limits);
    if (verdict === 'refuse') throw new CompanyBusyError(this.limits);
    // a queued call is handed the slot of the call that finishes (running stays counted)
    if (verdict === 'queue') await new Promise<void>((resolve) => entry.waiting.push(resolve));
    else entry.running++;
    try {
      return await fn();
    } finally {
      const next = entry.waiting.shift();
      if (next) next();
      else if (--entry.running === 0) this.#companies.delete(companyId);
    }
  }
}
