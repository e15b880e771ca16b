/**
 * The emitter's durable memory of what it has emitted, in ConfigMaps of its own namespace, so that a restart
 * or a new leader neither re-alerts nor forgets to resolve.
 *
 * - Every entry lives in memory; only the entries `persist(v)` selects (e.g. health episodes whose
 *   `.notready` was emitted) are written. Each entry is one key of a ConfigMap's `data` (JSON value).
 * - `shards` > 1 spreads entries over `<name>-0` … `<name>-(n-1)` by a hash of the key (a ConfigMap holds
 *   at most 1 MiB, and every write rewrites the whole object in etcd: small objects keep writes cheap).
 * - Batching: one writer per shard. Keys changed while the shard's previous patch is in flight are coalesced
 *   into ONE JSON merge patch (`null` removes a key; split above `maxPatchBytes`). One writer per object means
 *   no two patches race for it (no optimistic-concurrency retries in the apiserver); at most `maxInFlight`
 *   shards write at a time. The ConfigMap is created on first write.
 * - `set()`: memory now; its promise resolves once a patch carrying that key's value (or a newer one)
 *   succeeded, and rejects when that patch failed. The value stays in memory (nothing is re-sent by this
 *   process); the caller's retry (`set` again) writes it, since it differs from what is stored.
 * - Callers write AFTER the event was accepted (202): at-least-once.
 */
import { createHash } from 'node:crypto';
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isConflict, isNotFound } from '../kube/errors.js';

/** What the controllers need from a state store (a plain Map-backed fake works in tests). */
export interface KeyedState<T> {
  get(key: string): T | undefined;
  keys(): string[];
  /** memory now; durable before the promise resolves (throws when the write failed) */
  set(key: string, value: T | undefined): Promise<void>;
}

export interface ConfigMapStateOptions<T> {
  core: CoreV1Api;
  namespace: string;
  /** ConfigMap name (or name prefix with shards) */
  name: string;
  shards?: number;
  /** which values are written (others live in memory only) */
  persist: (v: T) => boolean;
  /** the stored form of a value (e.g. with capped lists); default: the value itself */
  encode?: (v: T) => unknown;
  /** parse a stored value; undefined drops it (e.g. written by an incompatible version) */
  decode: (raw: unknown) => T | undefined;
  /** largest patch body; a batch above it is split. Default 256 KiB */
  maxPatchBytes?: number;
  /** shards writing at the same time (a burst must not flood the apiserver). Default 16 */
  maxInFlight?: number;
  log: Logger;
  labels?: Record<string, string>;
}

export const DEFAULT_MAX_PATCH_BYTES = 256 * 1024;
const DEFAULT_MAX_IN_FLIGHT = 16;
/** `{"data":{}}` around the entries of a patch */
const PATCH_ENVELOPE_BYTES = 12;
/** parallel GETs in load() */
const LOAD_CONCURRENCY = 8;

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** ConfigMap data keys allow `[-._a-zA-Z0-9]`, at most 253 characters; state keys are `a/b/c` paths of Kubernetes names. */
export function configMapKey(key: string): string {
  const k = key.replace(/\//g, '_');
  if (k.length <= 253 && /^[-._a-zA-Z0-9]+$/.test(k)) return k;
  return 'sha256.' + createHash('sha256').update(key).digest('hex');
}

/** Bytes one `"cmKey":"text",` member adds to a patch body. */
function memberBytes(cmKey: string, text: string | null): number {
  return Buffer.byteLength(JSON.stringify(cmKey)) + (text === null ? 4 : Buffer.byteLength(JSON.stringify(text))) + 2;
}

interface Waiter {
  resolve: () => void;
  reject: (e: unknown) => void;
}

interface Shard {
  name: string;
  /** keys changed since the last batch was taken, with the set() calls waiting for them */
  pending: Map<string, Waiter[]>;
  busy: boolean;
}

interface Change {
  key: string;
  cmKey: string;
  text: string | null;
  bytes: number;
  waiters: Waiter[];
}

interface Found {
  configMap: V1ConfigMap | undefined;
  name: string;
}

export class ConfigMapState<T> implements KeyedState<T> {
  private readonly memory = new Map<string, T>();
  /** serialized value per key as last written (or loaded) */
  private readonly persisted = new Map<string, string>();
  private readonly shardCount: number;
  private readonly shards: Shard[];
  private readonly maxPatchBytes: number;
  private readonly maxInFlight: number;
  private inFlight = 0;
  private readonly slotWaiters: (() => void)[] = [];

  constructor(private readonly opts: ConfigMapStateOptions<T>) {
    this.shardCount = Math.max(1, Math.floor(opts.shards ?? 1));
    this.maxPatchBytes = opts.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES;
    this.maxInFlight = Math.max(1, opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT);
    this.shards = Array.from({ length: this.shardCount }, (_, i) => ({
      name: this.shardCount === 1 ? opts.name : `${opts.name}-${i}`,
      pending: new Map(),
      busy: false,
    }));
  }

  get size(): number {
    return this.memory.size;
  }

  get persistedSize(): number {
    return this.persisted.size;
  }

  private shardOf(key: string): Shard {
    if (this.shardCount === 1) return this.shards[0]!;
    const h = createHash('sha256').update(key).digest().readUInt32BE(0);
    return this.shards[h % this.shardCount]!;
  }

  shardName(key: string): string {
    return this.shardOf(key).name;
  }

  /** The shards' ConfigMap names. */
  shardNames(): string[] {
    return this.shards.map((s) => s.name);
  }

  private async read(name: string): Promise<Found> {
    try {
      return { name, configMap: await this.opts.core.readNamespacedConfigMap({ namespace: this.opts.namespace, name }) };
    } catch (e) {
      if (isNotFound(e)) return { name, configMap: undefined };
      throw e;
    }
  }

  private async readAll(names: string[]): Promise<Found[]> {
    const out: Found[] = new Array<Found>(names.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < names.length) {
        const i = next++;
        out[i] = await this.read(names[i]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(LOAD_CONCURRENCY, names.length) }, worker));
    return out;
  }

  /** The readable entries of a ConfigMap (unreadable ones are logged and skipped). */
  private entries(f: Found): { key: string; value: T; text: string; cmKey: string }[] {
    const out: { key: string; value: T; text: string; cmKey: string }[] = [];
    for (const [cmKey, text] of Object.entries(f.configMap?.data ?? {})) {
      try {
        const parsed = JSON.parse(text) as { key?: unknown; value?: unknown };
        const value = typeof parsed.key === 'string' ? this.opts.decode(parsed.value) : undefined;
        if (value !== undefined && typeof parsed.key === 'string') {
          out.push({ key: parsed.key, value, text, cmKey });
          continue;
        }
      } catch {
        /* fall through */
      }
      this.opts.log.warn({ configMap: f.name, key: cmKey }, 'ignoring an unreadable emitter state entry');
    }
    return out;
  }

  /**
   * Reads every shard (missing ones are empty); moves entries that are not in their shard (written with another
   * shard count). Throws on API errors: call again (a half-done move is finished by the next call; nothing is
   * removed before it was rewritten).
   */
  async load(): Promise<void> {
    const found = await this.readAll(this.shardNames());
    this.memory.clear();
    this.persisted.clear();
    const move = new Set<string>();
    /** misplaced keys per shard ConfigMap: removed from there once moved */
    const misplaced = new Map<string, string[]>();
    const read = found.map((f) => ({ name: f.name, entries: this.entries(f) }));
    for (const f of read) {
      for (const e of f.entries) {
        if (this.shardName(e.key) !== f.name) continue;
        this.memory.set(e.key, e.value);
        this.persisted.set(e.key, e.text);
      }
    }
    // in a shard, but not its own (another shard count): moved unless its own shard has it
    for (const f of read) {
      for (const e of f.entries) {
        if (this.shardName(e.key) === f.name) continue;
        misplaced.set(f.name, [...(misplaced.get(f.name) ?? []), e.cmKey]);
        if (this.memory.has(e.key)) continue;
        this.memory.set(e.key, e.value);
        move.add(e.key);
      }
    }
    if (move.size === 0 && misplaced.size === 0) return;
    // rewrite into the home shards first (batched); a failure throws before anything is removed
    await Promise.all([...move].map((k) => this.enqueue(k)));
    // a misplaced key's home is another ConfigMap, so removing it here never touches the moved copy
    for (const [name, cmKeys] of misplaced) await this.patch(name, Object.fromEntries(cmKeys.map((k) => [k, null])));
    this.opts.log.info({ moved: move.size, shards: this.shardCount }, 'emitter state moved into its shards');
  }

  get(key: string): T | undefined {
    return this.memory.get(key);
  }

  keys(): string[] {
    return [...this.memory.keys()];
  }

  set(key: string, value: T | undefined): Promise<void> {
    if (value === undefined) this.memory.delete(key);
    else this.memory.set(key, value);
    return this.enqueue(key);
  }

  /** Waits for the key's current memory value to be stored (nothing is written if it already is). */
  private enqueue(key: string): Promise<void> {
    const shard = this.shardOf(key);
    return new Promise<void>((resolve, reject) => {
      const waiters = shard.pending.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else shard.pending.set(key, [{ resolve, reject }]);
      if (!shard.busy) {
        shard.busy = true;
        // the next turn of the event loop: set() calls of the same burst join one batch
        setImmediate(() => void this.drain(shard));
      }
    });
  }

  private async drain(shard: Shard): Promise<void> {
    try {
      while (shard.pending.size > 0) {
        // the batch is taken once a slot is free: keys arriving meanwhile join it
        await this.acquire();
        const batch = shard.pending;
        shard.pending = new Map();
        try {
          await this.writeBatch(shard.name, batch);
        } finally {
          this.release();
        }
      }
    } finally {
      shard.busy = false;
    }
  }

  private acquire(): Promise<void> {
    if (this.inFlight < this.maxInFlight) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.slotWaiters.push(resolve));
  }

  private release(): void {
    const next = this.slotWaiters.shift();
    if (next) next();
    else this.inFlight--;
  }

  /** What should be stored for the key now (undefined: nothing). */
  private serialize(key: string): string | undefined {
    const v = this.memory.get(key);
    if (v === undefined || !this.opts.persist(v)) return undefined;
    return JSON.stringify({ key, value: this.opts.encode ? this.opts.encode(v) : v });
  }

  private async writeBatch(name: string, batch: Map<string, Waiter[]>): Promise<void> {
    const changes: Change[] = [];
    for (const [key, waiters] of batch) {
      let text: string | undefined;
      try {
        text = this.serialize(key);
      } catch (e) {
        for (const w of waiters) w.reject(e);
        continue;
      }
      if (text === this.persisted.get(key)) {
        for (const w of waiters) w.resolve();
        continue;
      }
      const cmKey = configMapKey(key);
      const bytes = memberBytes(cmKey, text ?? null);
      if (bytes + PATCH_ENVELOPE_BYTES > this.maxPatchBytes) {
        const err = new Error(`emitter state entry ${key} is ${bytes} bytes, more than a patch may carry (${this.maxPatchBytes})`);
        for (const w of waiters) w.reject(err);
        continue;
      }
      changes.push({ key, cmKey, text: text ?? null, bytes, waiters });
    }
    for (const chunk of chunks(changes, this.maxPatchBytes - PATCH_ENVELOPE_BYTES)) {
      try {
        await this.patch(name, Object.fromEntries(chunk.map((c) => [c.cmKey, c.text])));
      } catch (e) {
        for (const c of chunk) for (const w of c.waiters) w.reject(e);
        continue;
      }
      for (const c of chunk) {
        if (c.text === null) this.persisted.delete(c.key);
        else this.persisted.set(c.key, c.text);
        for (const w of c.waiters) w.resolve();
      }
    }
  }

  /** One JSON merge patch of `data`; creates the ConfigMap when it does not exist. */
  private async patch(name: string, data: Record<string, string | null>): Promise<void> {
    const { core, namespace } = this.opts;
    if (Object.keys(data).length === 0) return;
    const values = Object.entries(data).filter((e): e is [string, string] => e[1] !== null);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await core.patchNamespacedConfigMap({ namespace, name, body: { data } }, mergePatch);
        return;
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      if (values.length === 0) return; // nothing to remove from a ConfigMap that does not exist
      try {
        await core.createNamespacedConfigMap({
          namespace,
          body: {
            metadata: {
              name,
              namespace,
              labels: { 'app.kubernetes.io/managed-by': 'certmgr-notify', 'app.kubernetes.io/component': 'emitter', ...this.opts.labels },
            },
            data: Object.fromEntries(values),
          },
        });
        return;
      } catch (e) {
        if (!isConflict(e)) throw e; // created meanwhile: patch it
      }
    }
    throw new Error(`could not write ConfigMap ${namespace}/${name}`);
  }
}

/** Consecutive groups whose member bytes sum to at most `max` (every change alone fits). */
function chunks(changes: Change[], max: number): Change[][] {
  const out: Change[][] = [];
  let cur: Change[] = [];
  let bytes = 0;
  for (const c of changes) {
    if (cur.length > 0 && bytes + c.bytes > max) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(c);
    bytes += c.bytes;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
