/**
 * The emitter's durable memory of what it has emitted, in ConfigMaps of its own namespace, so that a restart
 * or a new leader neither re-alerts nor forgets to resolve.
 *
 * - Every entry lives in memory; only the entries `persist(v)` selects (e.g. health episodes whose
 *   `.notready` was emitted) are written. Each entry is one key of a ConfigMap's `data` (JSON value).
 * - A write is a JSON merge patch of that one key (`null` removes it): no read-modify-write, so concurrent
 *   writes of different keys never conflict. The ConfigMap is created on first write.
 * - `shards` > 1 spreads entries over `<name>-0` … `<name>-(n-1)` by a hash of the key (a ConfigMap holds
 *   at most 1 MiB).
 * - Callers write AFTER the event was accepted (202): at-least-once. A failed write keeps the new value in
 *   memory (nothing is re-sent by this process) and throws, so the caller's retry writes it again.
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
  /** parse a stored value; undefined drops it (e.g. written by an incompatible version) */
  decode: (raw: unknown) => T | undefined;
  log: Logger;
  labels?: Record<string, string>;
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** ConfigMap data keys allow `[-._a-zA-Z0-9]`, at most 253 characters; state keys are `a/b/c` paths of Kubernetes names. */
export function configMapKey(key: string): string {
  const k = key.replace(/\//g, '_');
  if (k.length <= 253 && /^[-._a-zA-Z0-9]+$/.test(k)) return k;
  return 'sha256.' + createHash('sha256').update(key).digest('hex');
}

interface Stored<T> {
  key: string;
  value: T;
}

export class ConfigMapState<T> implements KeyedState<T> {
  private readonly memory = new Map<string, T>();
  /** serialized value per key as last written (or loaded) */
  private readonly persisted = new Map<string, string>();
  private readonly shards: number;
  /** per key, writes run one after the other */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(private readonly opts: ConfigMapStateOptions<T>) {
    this.shards = Math.max(1, opts.shards ?? 1);
  }

  get size(): number {
    return this.memory.size;
  }

  get persistedSize(): number {
    return this.persisted.size;
  }

  shardName(key: string): string {
    if (this.shards === 1) return this.opts.name;
    const h = createHash('sha256').update(key).digest().readUInt32BE(0);
    return `${this.opts.name}-${h % this.shards}`;
  }

  private shardNames(): string[] {
    return this.shards === 1 ? [this.opts.name] : Array.from({ length: this.shards }, (_, i) => `${this.opts.name}-${i}`);
  }

  /** Reads every shard (missing ones are empty). Throws on API errors: call again. */
  async load(): Promise<void> {
    const entries: Stored<T>[] = [];
    const raw: [string, string][] = [];
    for (const name of this.shardNames()) {
      let cm: V1ConfigMap | undefined;
      try {
        cm = await this.opts.core.readNamespacedConfigMap({ namespace: this.opts.namespace, name });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      for (const [cmKey, text] of Object.entries(cm?.data ?? {})) {
        try {
          const parsed = JSON.parse(text) as { key?: unknown; value?: unknown };
          const value = typeof parsed.key === 'string' ? this.opts.decode(parsed.value) : undefined;
          if (value !== undefined && typeof parsed.key === 'string') {
            entries.push({ key: parsed.key, value });
            raw.push([parsed.key, text]);
            continue;
          }
        } catch {
          /* fall through */
        }
        this.opts.log.warn({ configMap: name, key: cmKey }, 'ignoring an unreadable emitter state entry');
      }
    }
    this.memory.clear();
    this.persisted.clear();
    for (const e of entries) this.memory.set(e.key, e.value);
    for (const [k, t] of raw) this.persisted.set(k, t);
  }

  get(key: string): T | undefined {
    return this.memory.get(key);
  }

  keys(): string[] {
    return [...this.memory.keys()];
  }

  async set(key: string, value: T | undefined): Promise<void> {
    if (value === undefined) this.memory.delete(key);
    else this.memory.set(key, value);
    const prev = this.chains.get(key) ?? Promise.resolve();
    const run = prev.catch(() => {}).then(() => this.flush(key));
    this.chains.set(key, run);
    try {
      await run;
    } finally {
      if (this.chains.get(key) === run) this.chains.delete(key);
    }
  }

  /** Writes the key's current memory value if it differs from what is stored. */
  private async flush(key: string): Promise<void> {
    const v = this.memory.get(key);
    const want = v !== undefined && this.opts.persist(v) ? JSON.stringify({ key, value: v }) : undefined;
    const have = this.persisted.get(key);
    if (want === have) return;
    await this.write(this.shardName(key), configMapKey(key), want ?? null);
    if (want === undefined) this.persisted.delete(key);
    else this.persisted.set(key, want);
  }

  private async write(name: string, cmKey: string, value: string | null): Promise<void> {
    const { core, namespace } = this.opts;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await core.patchNamespacedConfigMap({ namespace, name, body: { data: { [cmKey]: value } } }, mergePatch);
        return;
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      if (value === null) return; // nothing to remove from a ConfigMap that does not exist
      try {
        await core.createNamespacedConfigMap({
          namespace,
          body: {
            metadata: {
              name,
              namespace,
              labels: { 'app.kubernetes.io/managed-by': 'certmgr-notify', 'app.kubernetes.io/component': 'emitter', ...this.opts.labels },
            },
            data: { [cmKey]: value },
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
