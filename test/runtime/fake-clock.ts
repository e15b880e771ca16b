/** A manual clock for runtime unit tests: timers fire only when the test advances time. */
import type { Clock } from '../../src/runtime/timers.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

export const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
};

export class FakeClock implements Clock {
  private t = 0;
  private seq = 0;
  private timers = new Map<number, Timer>();

  constructor(start = 1_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, ms), seq: id, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  get pending(): number {
    return this.timers.size;
  }

  /** Move time forward by `ms`, firing due timers in order and letting promises settle after each. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    await flush();
    for (;;) {
      let next: Timer | undefined;
      for (const tm of this.timers.values())
        if (tm.at <= target && (!next || tm.at < next.at || (tm.at === next.at && tm.seq < next.seq))) next = tm;
      if (!next) break;
      this.timers.delete(next.seq);
      this.t = Math.max(this.t, next.at);
      next.fn();
      await flush();
    }
    this.t = target;
    await flush();
  }
}
