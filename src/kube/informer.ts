/**
 * A client-node ListWatch that keeps running. client-node relists by itself after a 410 and re-watches after
 * a normal close or its 30 s idle timeout, but on any other error (connection cut, 5xx, ECONNREFUSED) it fires
 * `error` and stops; this wrapper restarts it with exponential backoff. It also reports every (re)list so
 * controllers can enqueue everything after a relist, and exposes `synced` (first list done).
 */
import { ListWatch, Watch, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeKubeError, isRequestDeadline, kubeErrorCode, kubeStatus, missingResourceMessage } from './errors.js';
import { isStale, relistByMetadata, type MetadataRelist } from './metadata-relist.js';
import { backoffDelay, realClock, type BackoffPolicy, type Clock } from '../runtime/timers.js';

export type InformerEvent = 'add' | 'update' | 'delete';

export interface InformerStats {
  lists: number;
  /** LIST requests (pages) made; a list of n objects takes ceil(n / pageSize) of them */
  pages: number;
  /** paginated lists started over because their continue token expired (410) */
  listRestarts: number;
  /** relists read by metadata (metadata-relist.ts), and the objects they read by GET */
  metadataRelists: number;
  relistGets: number;
  restarts: number;
  errors: number;
  lastError?: string;
}

/**
 * One page of a paginated LIST: `limit` objects, from `continue` (the previous page's `metadata.continue`); or,
 * on the first request of a streamed list (`streamed`), `resourceVersion` ("0", or the last one seen, without
 * a limit) so that the apiserver serves it from its watch cache.
 */
export interface ListPage {
  limit?: number | undefined;
  continue?: string | undefined;
  resourceVersion?: string | undefined;
}

/**
 * `R` is what the API returns, `T` what is cached (`transform` turns one into the other; without it they are
 * the same).
 */
export interface ResilientInformerOptions<T extends KubernetesObject, R extends KubernetesObject = T> {
  name: string;
  kc: KubeConfig;
  /** watch path, e.g. /apis/notify.certmgr.io/v1alpha1/notificationrouters */
  path: string;
  /**
   * One page of the list. A function that ignores `page` and returns everything at once (no
   * `metadata.continue`) still works; the emitter's lists paginate, since one response holding ~75,000 TLS
   * Secrets is larger than Node's maximum string length.
   */
  list: (page: ListPage, each?: (item: R) => void) => Promise<KubernetesListObject<R>>;
  /**
   * `list` streams: given `each`, it hands every item to it as the response arrives (memory: one item) and
   * returns the list's metadata without items. The informer then lists as client-go's reflector does: the first
   * list with resourceVersion=0 (served from the apiserver's watch cache in one response, whatever the limit;
   * no etcd read, no decoding of every stored object: far less CPU of apiserver and etcd at scale), a relist from the last resourceVersion seen without a limit (also from the
   * cache), and on 410 or "Too large resource version" (504) the paginated consistent list from etcd. A server that
   * paginates anyway (no watch cache) still gets continue requests. Default false: pages only.
   */
  streamed?: boolean;
  /**
   * With `streamed`: a relist lists metadata first and reads whole only the objects that changed
   * (metadata-relist.ts); the first list, and a relist where too many changed, list whole objects.
   */
  relistByMetadata?: MetadataRelist<R>;
  /** objects per LIST page; default 1000 (each page is a new TLS connection to the apiserver: fewer, larger pages cost both sides less) */
  pageSize?: number | undefined;
  /** called for every page read (a metric) */
  onListPage?: (() => void) | undefined;
  log: Logger;
  backoff?: BackoffPolicy | undefined;
  clock?: Clock | undefined;
  /** inject a Watch (tests) */
  watch?: Watch;
  /** a watch that ran this long without failing starts over at the base delay (default 60 s) */
  backoffResetMs?: number;
  /**
   * After a failed watch (connection cut or refused, HTTP error), relist instead of resuming from the last
   * resourceVersion (default false: resume). A resumed watch replays every change made while it was down,
   * and a level-triggered controller then acts on whichever intermediate states its reconciles happen to
   * read; a relist shows only the current state, as a 410 or a restart does, so what happened while the
   * informer was blind is judged the same way whatever the apiserver still remembers. Normal closes (the
   * server's watch timeout, client-node's 30 s idle timeout) still resume: no relist every 30 s.
   */
  relistAfterError?: boolean;
  /** field selector of the watch (e.g. `type=kubernetes.io/tls`); `list` must apply the same one */
  fieldSelector?: string;
  /**
   * Applied to every listed and watched object before the cache and the handlers see it, e.g. to keep
   * only the fields a controller reads (a Secret's private key never reaches memory that outlives a request).
   */
  transform?: (obj: R) => T;
}

const DEFAULT_PAGE_SIZE = 1000;
/** an expired continue token restarts the list; a list that cannot finish this many times in a row fails */
const MAX_LIST_RESTARTS = 5;
const DEFAULT_INFORMER_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000, jitter: 0.2 };
/** A missing CRD is retried every ≤30 s for as long as it stays missing: say so this often, not every retry. */
const MISSING_RESOURCE_LOG_EVERY_MS = 10 * 60_000;

export class ResilientInformer<T extends KubernetesObject, R extends KubernetesObject = T> {
  private readonly lw: ListWatch<T>;
  private readonly clock: Clock;
  private readonly backoff: BackoffPolicy;
  private readonly handlers: Record<InformerEvent, ((obj: T) => void)[]> = { add: [], update: [], delete: [] };
  private readonly listHandlers: ((items: T[]) => void)[] = [];
  private stopped = true;
  private failures = 0;
  private lastFailureAt = 0;
  private restartTimer: unknown;
  /** when the "CRD not found" warning was last logged; reset by a successful list (it may go missing again) */
  private missingLoggedAt: number | undefined;
  /** the next watch() call answers 410 Gone: client-node's ListWatch then relists (its documented path) */
  private relistNext = false;
  /** the newest resourceVersion seen (a list's, a watch event's): where a streamed relist starts */
  private lastResourceVersion: string | undefined;
  /** objects the last relist read by GET, newer than its list: older watch events of them are dropped */
  private ahead = new Map<string, number>();
  private syncedResolve!: () => void;
  private syncedFlag = false;
  readonly synced: Promise<void>;
  readonly stats: InformerStats = { lists: 0, pages: 0, listRestarts: 0, metadataRelists: 0, relistGets: 0, restarts: 0, errors: 0 };

  constructor(private readonly opts: ResilientInformerOptions<T, R>) {
    this.clock = opts.clock ?? realClock;
    this.backoff = opts.backoff ?? DEFAULT_INFORMER_BACKOFF;
    this.synced = new Promise((r) => (this.syncedResolve = r));
    const transform = opts.transform;
    const listFn = async (): Promise<KubernetesListObject<T>> => {
      const list = await this.listFromCacheOrPages();
      this.stats.lists++;
      this.failures = 0;
      this.missingLoggedAt = undefined;
      this.relistNext = false; // just listed: no second list when the failure was the list's own
      const items = list.items ?? [];
      // after client-node has applied the list to its cache (it does so synchronously once this promise
      // resolves, in a microtask; setImmediate runs after all of them)
      setImmediate(() => {
        if (!this.syncedFlag) {
          this.syncedFlag = true;
          this.syncedResolve();
        }
        for (const h of this.listHandlers) h(items);
      });
      return list;
    };
    const base = opts.watch ?? new Watch(opts.kc);
    const seen = (rv: string): void => void (this.lastResourceVersion = rv);
    const stale = (o: KubernetesObject): boolean => isStale(this.ahead, o);
    const watch =
      opts.fieldSelector !== undefined || transform || opts.streamed
        ? filteredWatch<T, R>(base, opts.fieldSelector, transform, seen, stale)
        : base;
    const lwWatch = opts.relistAfterError ? this.relistingWatch(watch) : watch;
    this.lw = new ListWatch<T>(opts.path, lwWatch, listFn, false);
    this.lw.on('add', (o) => this.emit('add', o));
    this.lw.on('update', (o) => this.emit('update', o));
    this.lw.on('delete', (o) => this.emit('delete', o));
    this.lw.on('error', (err) => this.onError(err));
  }

  get name(): string {
    return this.opts.name;
  }

  /** See `streamed`; without it, listAllPages. */
  private async listFromCacheOrPages(): Promise<KubernetesListObject<T>> {
    if (!this.opts.streamed) return this.listAllPages();
    const from = this.lastResourceVersion;
    this.ahead = new Map();
    let list: KubernetesListObject<T>;
    try {
      list = (from !== undefined && (await this.listByMetadata(from))) || (await this.listAllPages(from === undefined ? '0' : from));
    } catch (e) {
      const code = kubeErrorCode(e);
      // the cache does not have that resourceVersion: expired (410), or newer than this apiserver has seen (a 504
      // that says so; any other 504, e.g. a cache still filling after a restart, is retried as it is)
      const tooLarge = code === 504 && /too large resource version/i.test(kubeStatus(e)?.message ?? '');
      if (from === undefined || (code !== 410 && !tooLarge)) throw e;
      this.opts.log.info(
        { informer: this.name, code, resourceVersion: from },
        'relist from the last resourceVersion refused; listing pages from etcd',
      );
      list = await this.listAllPages();
    }
    const rv = list.metadata?.resourceVersion;
    if (rv) this.lastResourceVersion = rv;
    return list;
  }

  /** See `relistByMetadata`; undefined when the relist must read whole objects. */
  private async listByMetadata(from: string): Promise<KubernetesListObject<T> | undefined> {
    const meta = this.opts.relistByMetadata;
    if (!meta) return undefined;
    const r = await relistByMetadata<T, R>({
      meta,
      resourceVersion: from,
      cached: (name, namespace) => this.lw.get(name, namespace),
      transform: this.opts.transform,
    });
    this.stats.pages++;
    this.opts.onListPage?.();
    if (!r) {
      this.opts.log.info(
        { informer: this.name },
        'relist by metadata not possible (many objects changed, a GET refused, or a paginated answer); listing whole objects',
      );
      return undefined;
    }
    this.stats.metadataRelists++;
    this.stats.relistGets += r.gets;
    this.opts.log.info(
      { informer: this.name, objects: r.items.length, read: r.gets },
      'relisted by metadata; read whole only the changed objects',
    );
    this.ahead = r.ahead;
    return { metadata: { resourceVersion: r.resourceVersion }, items: r.items } as KubernetesListObject<T>;
  }

  /**
   * Every page of the list, each transformed before the next is read (only the transformed objects are
   * kept). The next page is requested before the current one is transformed, so the apiserver reads and
   * encodes it while this process parses certificates (at most two raw pages in memory). An expired continue
   * token (410: etcd compacted the list's revision meanwhile) starts the list over.
   */
  private async listAllPages(resourceVersion0?: string): Promise<KubernetesListObject<T>> {
    const pageLimit = this.opts.pageSize ?? DEFAULT_PAGE_SIZE;
    const transform = this.opts.transform;
    const streamed = this.opts.streamed === true;
    let items: T[] = [];
    const each = streamed ? (o: R): void => void items.push(this.cachedOrNew(o, transform)) : undefined;
    let from = resourceVersion0;
    const request = (cont?: string): Promise<KubernetesListObject<R>> => {
      // a relist from a resourceVersion other than 0 with a limit is served from etcd (v1.20's cacher): none
      const limit = from !== undefined && from !== '0' && cont === undefined ? undefined : pageLimit;
      const page: ListPage = { limit, continue: cont, resourceVersion: cont === undefined ? from : undefined };
      return this.opts.list(page, each);
    };
    for (let restarts = 0; ; restarts++) {
      items = [];
      let cont: string | undefined;
      let head: { apiVersion?: string | undefined; kind?: string | undefined } | undefined;
      let resourceVersion: string | undefined;
      let next: Promise<KubernetesListObject<R>> | undefined = request();
      try {
        while (next) {
          const page: KubernetesListObject<R> = await next;
          next = undefined;
          this.stats.pages++;
          this.opts.onListPage?.();
          head ??= { apiVersion: page.apiVersion, kind: page.kind };
          // typed lists (core API) name it _continue, custom objects (plain JSON) continue
          const meta = page.metadata as { _continue?: string; continue?: string; resourceVersion?: string } | undefined;
          cont = meta?._continue || meta?.continue || undefined;
          resourceVersion = meta?.resourceVersion;
          // awaited at the top of the loop, right after this synchronous transform: never an unhandled rejection
          if (cont !== undefined) next = request(cont);
          for (const o of page.items ?? []) items.push(this.cachedOrNew(o, transform));
        }
      } catch (e) {
        void next?.catch(() => {}); // a prefetched page nobody reads
        if (cont !== undefined && kubeErrorCode(e) === 410 && restarts < MAX_LIST_RESTARTS) {
          this.stats.listRestarts++;
          from = undefined; // the consistent list from etcd, as the expired one was
          this.opts.log.info(
            { informer: this.name, pagesRead: this.stats.pages },
            'list continue token expired (410); listing again from the start',
          );
          continue;
        }
        throw e;
      }
      // the watch starts from the revision of the whole (consistent) list, which every page shares
      return {
        apiVersion: head?.apiVersion ?? 'v1',
        kind: head?.kind ?? 'List',
        metadata: { resourceVersion },
        items,
      } as KubernetesListObject<T>;
    }
  }

  /**
   * On a relist, the cached object when the listed one has its resourceVersion (the same object, unchanged):
   * a relist of 100,000 objects then holds one copy of each, not the cache plus the new list until client-node
   * swaps them, and does not transform (parse) again what did not change.
   */
  private cachedOrNew(o: R, transform: ((obj: R) => T) | undefined): T {
    const md = o.metadata;
    if (md?.name !== undefined && md.resourceVersion) {
      const cached = this.lw.get(md.name, md.namespace);
      if (cached?.metadata?.resourceVersion === md.resourceVersion) return cached;
    }
    return transform ? transform(o) : (o as unknown as T);
  }

  get hasSynced(): boolean {
    return this.syncedFlag;
  }

  on(event: InformerEvent, cb: (obj: T) => void): void {
    this.handlers[event].push(cb);
  }

  /** Called after every successful list (start, relist after 410, restart without a resourceVersion). */
  onList(cb: (items: T[]) => void): void {
    this.listHandlers.push(cb);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.lw.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.lw.list(namespace);
  }

  /** Starts list+watch; resolves once started (not once synced: await `synced` for that). */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    await this.lw.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer !== undefined) this.clock.clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    await this.lw.stop();
  }

  /** `watch`, except that after a failure its next call ends at once with 410, so ListWatch relists. */
  private relistingWatch(watch: Watch): Watch {
    const relisting = Object.create(watch) as Watch;
    relisting.watch = async (path, query, cb, done) => {
      if (!this.relistNext) return watch.watch(path, query, cb, done);
      this.relistNext = false;
      const ac = new AbortController();
      // after ListWatch has stored the returned controller (it awaits this call), as a real 410 would come
      setImmediate(() => done(Object.assign(new Error('relist after a failed watch'), { statusCode: 410 })));
      return ac;
    };
    return relisting;
  }

  private emit(event: InformerEvent, obj: T): void {
    this.failures = 0;
    for (const h of this.handlers[event]) {
      try {
        h(obj);
      } catch (e) {
        this.opts.log.error({ err: e, informer: this.name }, 'informer handler threw');
      }
    }
  }

  private onError(err: unknown): void {
    if (this.stopped) return; // stop() aborts the watch and client-node reports that as an error
    this.stats.errors++;
    this.stats.lastError = describeKubeError(err);
    const now = this.clock.now();
    if (now - this.lastFailureAt > (this.opts.backoffResetMs ?? 60_000)) this.failures = 0;
    this.lastFailureAt = now;
    // A request that hit our own deadline is tried again at once, as client-node does after its watch timeout: the
    // deadline already spaced the attempts. A relist waiting for a restarted apiserver's cache then lost 13 s of
    // backoff after two such deadlines at 100,000 Certificates (docs/performance.md, "Scale").
    const deadline = isRequestDeadline(err);
    if (!deadline) this.failures++;
    if (this.opts.relistAfterError) this.relistNext = true;
    const delay = deadline ? 0 : backoffDelay(this.failures, this.backoff);
    const code = kubeErrorCode(err);
    const missing = code === 404 ? missingResourceMessage(this.opts.path) : undefined;
    // whenSynced's "still waiting" warning quotes lastError: name the CRD there too
    if (missing !== undefined) this.stats.lastError = missing;
    if (missing !== undefined) {
      // a bare "HTTP 404" every retry does not say which CRD to install: name it, once per period
      const quiet = this.missingLoggedAt !== undefined && now - this.missingLoggedAt < MISSING_RESOURCE_LOG_EVERY_MS;
      if (!quiet) this.missingLoggedAt = now;
      this.opts.log[quiet ? 'debug' : 'warn']({ informer: this.name, code, path: this.opts.path, retryInMs: delay }, missing);
    } else {
      this.opts.log.warn({ informer: this.name, code, error: this.stats.lastError, retryInMs: delay }, 'watch failed; restarting');
    }
    if (this.restartTimer !== undefined) this.clock.clearTimeout(this.restartTimer);
    this.restartTimer = this.clock.setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopped) return;
      this.stats.restarts++;
      // start() keeps the last resourceVersion: a watch from it resumes, or gets 410 and relists
      void this.lw.start().catch((e: unknown) => this.onError(e));
    }, delay);
  }
}

/** `watch` with a field selector added to its query and `transform` applied to every watched object. */
function filteredWatch<T extends KubernetesObject, R extends KubernetesObject>(
  watch: Watch,
  fieldSelector: string | undefined,
  transform: ((obj: R) => T) | undefined,
  seen?: (resourceVersion: string) => void,
  stale?: (obj: KubernetesObject) => boolean,
): Watch {
  const w = Object.create(watch) as Watch;
  w.watch = (path, query, cb, done) => {
    const each = (phase: string, obj: unknown, raw?: unknown): void => {
      // ERROR events carry a Status, not an object of the watched kind
      const isObject = typeof obj === 'object' && obj !== null && (obj as KubernetesObject).kind !== 'Status' && 'metadata' in obj;
      const rv = isObject ? (obj as KubernetesObject).metadata?.resourceVersion : undefined;
      if (rv && seen) seen(rv);
      if (isObject && stale?.(obj as KubernetesObject)) return;
      cb(phase, transform && isObject ? transform(obj as R) : obj, raw);
    };
    return watch.watch(path, fieldSelector !== undefined ? { ...query, fieldSelector } : query, each, done);
  };
  return w;
}

/**
 * Resolves true once every informer listed, false when `signal` aborts first. Warns after `warnAfterMs`
 * (default 60 s) naming the informers still waiting and their last error.
 */
export async function whenSynced(
  informers: readonly ResilientInformer<never>[],
  o: { what: string; signal: AbortSignal; clock: Clock; log: Logger; warnAfterMs?: number },
): Promise<boolean> {
  const warn = o.clock.setTimeout(
    () =>
      o.log.warn(
        { informers: informers.filter((i) => !i.hasSynced).map((i) => `${i.name}: ${i.stats.lastError ?? 'no list yet'}`) },
        `${o.what}: caches not synced yet (CRDs installed? RBAC?)`,
      ),
    o.warnAfterMs ?? 60_000,
  );
  await Promise.race([
    Promise.all(informers.map((i) => i.synced)),
    new Promise((r) => o.signal.addEventListener('abort', r, { once: true })),
  ]);
  o.clock.clearTimeout(warn);
  return !o.signal.aborted;
}
