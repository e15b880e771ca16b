/**
 * Which failed delivery attempts get a warn line: at most one per integration per window (a minute), so a receiver
 * that is down shows up at once without one line per attempt. The attempts not logged in between are counted into
 * the integration's next line. Pure (the time is passed in) and bounded: past maxKeys the integration whose last
 * line is oldest is forgotten, with its count.
 */

export const FAILURE_LOG_WINDOW_MS = 60_000;
const MAX_KEYS = 10_000;

export class FailureLogWindow {
  readonly #windowMs: number;
  readonly #maxKeys: number;
  /** Per integration: when its last line was written, and the failures not logged since. In order of that time. */
  readonly #last = new Map<string, { at: number; suppressed: number }>();

  constructor(windowMs = FAILURE_LOG_WINDOW_MS, maxKeys = MAX_KEYS) {
    if (!(windowMs > 0) || !(maxKeys >= 1)) throw new RangeError('failure log window: windowMs must be > 0 and maxKeys >= 1');
    this.#windowMs = windowMs;
    this.#maxKeys = maxKeys;
  }

  /** Whether this failure of `integrationId` gets a line now; when it does, how many were not logged before it. */
  take(integrationId: string, now: number): { ok: true; suppressed: number } | { ok: false } {
    const last = this.#last.get(integrationId);
    if (last && now - last.at < this.#windowMs) {
      last.suppressed++;
      return { ok: false };
    }
    this.#last.delete(integrationId); // re-inserted last: the map stays in the order of the lines' times
    if (this.#last.size >= this.#maxKeys) this.#last.delete(this.#last.keys().next().value!);
    this.#last.set(integrationId, { at: now, suppressed: 0 });
    return { ok: true, suppressed: last?.suppressed ?? 0 };
  }

  get size(): number {
    return this.#last.size;
  }
}
