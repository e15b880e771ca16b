/**
 * Groups concurrent calls into one store call (the delivery worker's write-behind): the first call is flushed at
 * the end of the current event-loop turn; calls made while a flush runs wait for it and go together in the next one. No fixed wait: when idle, a
 * call costs what a single statement did; under load, one statement serves every attempt that ended meanwhile.
 *
 * A failed group is retried one item at a time, so one bad row cannot fail its neighbours (if the store is down,
 * each item then fails on its own, as it did before grouping).
 */
interface Pending<I, R> {
  item: I;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

export class Batcher<I, R> {
  readonly #flush: (items: I[]) => Promise<R[]>;
  readonly #max: number;
  #queue: Pending<I, R>[] = [];
  #flushing = false;

  /** `flush` returns one result per item, in order; `max`: most items per flush. */
  constructor(flush: (items: I[]) => Promise<R[]>, max = 500) {
    this.#flush = flush;
    this.#max = Math.max(1, Math.floor(max));
  }

  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (this.#flushing) return;
      // Started after this turn of the event loop, not at once: the callers whose I/O completed in the same turn
      // (responses read together after a synchronous SQLite write held the loop) join this flush.
      this.#flushing = true;
      setImmediate(() => void this.#drain());
    });
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) await this.#run(this.#queue.splice(0, this.#max));
    } finally {
      this.#flushing = false;
    }
  }

  async #run(group: Pending<I, R>[]): Promise<void> {
    try {
      const out = await this.#flush(group.map((g) => g.item));
      group.forEach((g, i) => (i < out.length ? g.resolve(out[i]!) : g.reject(new Error('batcher: no result for an item'))));
    } catch (err) {
      if (group.length === 1) return group[0]!.reject(err);
      for (const g of group) {
        try {
          const [r] = await this.#flush([g.item]);
          if (r === undefined) g.reject(new Error('batcher: no result for an item'));
          else g.resolve(r);
        } catch (e) {
          g.reject(e);
        }
      }
    }
  }
}
