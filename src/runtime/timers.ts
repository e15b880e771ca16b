/** Injectable time source for the runtime (queues, informer restarts, leader election). Tests pass fakes. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const h = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clock.clearTimeout(h);
      resolve();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface BackoffPolicy {
  /** delay after the first failure */
  baseMs: number;
  /** cap */
  maxMs: number;
  /** 0..1: up to this fraction is added at random (default 0) */
  jitter?: number;
}

/** Exponential backoff: base·2^(failures−1), capped, plus optional jitter. `failures` ≥ 1. */
export function backoffDelay(failures: number, p: BackoffPolicy, rand: () => number = Math.random): number {
  const n = Math.max(1, Math.floor(failures));
  // 2^52 overflows nothing but is pointless: clamp the exponent
  const raw = p.baseMs * 2 ** Math.min(n - 1, 52);
  const capped = Math.min(raw, p.maxMs);
  const j = p.jitter ? capped * p.jitter * rand() : 0;
  return Math.min(Math.round(capped + j), Math.round(p.maxMs * (1 + (p.jitter ?? 0))));
}
