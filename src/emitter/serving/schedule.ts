/**
 * The prober's pure scheduling parts (prober.ts runs them): a token bucket bounding the probe rate, a min-heap of
 * due times, and when an endpoint is probed next. Time is passed in.
 */

/**
 * At most `ratePerSecond` on average, with bursts of `burst`: in any window of T seconds at most
 * `ratePerSecond · T + burst` tokens are taken.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    now: number,
  ) {
    if (!(ratePerSecond > 0) || !(burst >= 1)) throw new RangeError(`TokenBucket: rate ${ratePerSecond}/s, burst ${burst}`);
    this.tokens = burst;
    this.at = now;
  }

  /** Takes a token (0), or says in how many ms one is there (nothing taken). */
  take(now: number): number {
    if (now > this.at) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) * this.ratePerSecond) / 1000);
      this.at = now;
    }
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.ratePerSecond));
  }
}

/** What the heap orders: `dueAt`, and its position (-1: not in the heap), kept by the heap. */
export interface Due {
  dueAt: number;
  heapAt: number;
}

/** A binary min-heap of due times with removal and update by position (10,000 endpoints: log n each). */
export class DueHeap<T extends Due> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  /** Adds `x`, or moves it to its new `dueAt` when it is in the heap already. */
  set(x: T, dueAt: number): void {
    x.dueAt = dueAt;
    if (x.heapAt < 0) {
      x.heapAt = this.items.length;
      this.items.push(x);
    }
    this.down(this.up(x.heapAt));
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top) this.remove(top);
    return top;
  }

  remove(x: T): void {
    const i = x.heapAt;
    if (i < 0) return;
    const last = this.items.pop()!;
    x.heapAt = -1;
    if (last === x) return;
    this.items[i] = last;
    last.heapAt = i;
    this.down(this.up(i));
  }

  private up(i: number): number {
    const a = this.items;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]!.dueAt <= a[i]!.dueAt) break;
      this.swap(i, p);
      i = p;
    }
    return i;
  }

  private down(i: number): void {
    const a = this.items;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && a[l]!.dueAt < a[m]!.dueAt) m = l;
      if (r < a.length && a[r]!.dueAt < a[m]!.dueAt) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }

  private swap(i: number, j: number): void {
    const a = this.items;
    const x = a[i]!;
    const y = a[j]!;
    a[i] = y;
    a[j] = x;
    x.heapAt = j;
    y.heapAt = i;
  }
}

/**
 * How long the first probes of `n` endpoints are spread over: the time to probe them at half the rate, at most
 * the interval. A few endpoints are probed within seconds of their discovery; 10,000 at the agent's start are
 * spread over the interval, and each keeps its place in it (the next probe is one interval after the last).
 */
export function firstProbeSpreadMs(n: number, intervalMs: number, ratePerSecond: number): number {
  return Math.min(intervalMs, Math.ceil((n * 2 * 1000) / ratePerSecond));
}

/**
 * When an endpoint probed at `startedAt` is probed next: one interval later, or at its earliest follow-up after
 * `now` (a renewal's). Follow-ups at or before `now` were covered by this probe and are dropped.
 */
export function nextProbe(
  startedAt: number,
  now: number,
  intervalMs: number,
  followUps: readonly number[] | undefined,
): { dueAt: number; followUps: number[] | undefined } {
  const left = followUps?.filter((t) => t > now) ?? [];
  const dueAt = Math.min(startedAt + intervalMs, left[0] ?? Infinity);
  return { dueAt, followUps: left.length ? left : undefined };
}
