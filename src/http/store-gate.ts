/**
 * The request path's store calls, per company through a CompanySemaphore (src/store/concurrency.ts): one
 * company's requests (30 aliases of a list each make 30 store calls at once) hold at most
 * COMPANY_STORE_LIMITS.running pool connections or SQLite turns; more wait in order, and past the queue bound a
 * call is refused with TOO_MANY_REQUESTS. Background work (delivery, expiry scans, ingestion) uses the store
 * directly and is not counted.
 */
import type { ServiceContext } from '../service/context.js';
import { ServiceError } from '../model/errors.js';
import { CompanyBusyError, CompanySemaphore, type CompanyStoreLimits } from '../store/concurrency.js';
import type { Store } from '../store/types.js';

/**
 * GraphQL requests of one company executing at once, and waiting (in order, holding nothing but the connection):
 * the store share bounds a company's store calls, this bounds the event loop's work on its requests (resolving
 * and answering 30 aliases). A request past the queue is refused before it is executed, so a client retrying at
 * once costs an HTTP round trip and a parse. 4 running take the console's page loads (a few requests at once)
 * without waiting; 16 waiting absorb a burst.
 */
export const COMPANY_GRAPHQL_LIMITS: CompanyStoreLimits = { running: 4, queued: 16 };

/** One semaphore of each kind per store (a process has one; tests open several). */
const semaphores = new WeakMap<Store, CompanySemaphore>();
const requestSemaphores = new WeakMap<Store, CompanySemaphore>();

/** Not request work (and not awaited by one). */
const UNGATED: ReadonlySet<PropertyKey> = new Set(['close', 'migrate']);

export function semaphoreOf(store: Store): CompanySemaphore {
  let s = semaphores.get(store);
  if (!s) semaphores.set(store, (s = new CompanySemaphore()));
  return s;
}

/** The GraphQL requests' semaphore (COMPANY_GRAPHQL_LIMITS) of the service on `store`. */
export function requestSemaphoreOf(store: Store): CompanySemaphore {
  let s = requestSemaphores.get(store);
  if (!s) requestSemaphores.set(store, (s = new CompanySemaphore(COMPANY_GRAPHQL_LIMITS)));
  return s;
}

/**
 * `store` with every call (a transaction is one call) run through `sem` for `companyId`. Made per request: once
 * one of its calls is refused, its other calls (the other aliases, waiting or not yet made) are refused without
 * running, since the request's answer is a refusal anyway (the API's list fields are non-null).
 */
export function gatedStore(store: Store, sem: CompanySemaphore, companyId: string): Store {
  let refused: ServiceError | undefined;
  // The request's own calls (a page's nested fields resolve one call per node) wait in the request's queue, at most
  // the company's running share at a time in the company's: the company's queue bound counts requests, so a page
  // of 500 deliveries with their events is never refused for its own fan-out (the GraphQL cost model bounds it).
  const own = new CompanySemaphore({ running: sem.limits.running, queued: Number.POSITIVE_INFINITY });
  return new Proxy(store, {
    get(target, prop) {
      const v: unknown = Reflect.get(target, prop, target);
      if (typeof v !== 'function' || UNGATED.has(prop)) return v;
      const fn = v as (...args: unknown[]) => Promise<unknown>;
      return async (...args: unknown[]) => {
        if (refused) throw refused;
        try {
          return await own.run(companyId, () =>
            refused ? Promise.reject(refused) : sem.run(companyId, () => (refused ? Promise.reject(refused) : fn.apply(target, args))),
          );
        } catch (e) {
          if (!(e instanceof CompanyBusyError)) throw e;
          refused ??= new ServiceError('TOO_MANY_REQUESTS', e.message);
          throw refused;
        }
      };
    },
  });
}

/** The request's context with its store gated by the company's share. */
export function withStoreGate(ctx: ServiceContext): ServiceContext {
  return { ...ctx, store: gatedStore(ctx.store, semaphoreOf(ctx.store), ctx.companyId) };
}
