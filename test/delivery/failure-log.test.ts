/** FailureLogWindow: at most one warn line per integration per minute, the failures in between counted into the next. */
import { describe, expect, it } from 'vitest';
import { FAILURE_LOG_WINDOW_MS, FailureLogWindow } from '../../src/delivery/failure-log.js';

const M = FAILURE_LOG_WINDOW_MS;

describe('FailureLogWindow', () => {
  it.each([
    {
      name: 'one integration failing: a line, then none for a minute, then a line counting the rest',
      steps: [
        ['a', 0, { ok: true, suppressed: 0 }],
        ['a', 1, { ok: false }],
        ['a', M - 1, { ok: false }],
        ['a', M, { ok: true, suppressed: 2 }],
        ['a', M + 10, { ok: false }],
        ['a', 5 * M, { ok: true, suppressed: 1 }],
        ['a', 6 * M, { ok: true, suppressed: 0 }],
      ],
    },
    {
      name: 'per integration: one failing does not hold back another',
      steps: [
        ['a', 0, { ok: true, suppressed: 0 }],
        ['b', 1, { ok: true, suppressed: 0 }],
        ['a', 2, { ok: false }],
        ['b', 3, { ok: false }],
        ['b', M + 1, { ok: true, suppressed: 1 }],
        ['a', M + 2, { ok: true, suppressed: 1 }],
      ],
    },
    {
      name: 'a clock going back holds the line until a minute after the last one',
      steps: [
        ['a', 10 * M, { ok: true, suppressed: 0 }],
        ['a', 5 * M, { ok: false }],
        ['a', 11 * M, { ok: true, suppressed: 1 }],
      ],
    },
  ] as const)('$name', ({ steps }) => {
    const w = new FailureLogWindow();
    for (const [id, now, want] of steps) expect(w.take(id, now), `${id} at ${now}`).toEqual(want);
  });

  it('bounded: past maxKeys the integration with the oldest line is forgotten, with its count', () => {
    const w = new FailureLogWindow(M, 2);
    w.take('a', 0);
    w.take('a', 1); // suppressed, forgotten below
    w.take('b', 2);
    w.take('c', 3); // evicts a
    expect(w.size).toBe(2);
    expect(w.take('a', 4)).toEqual({ ok: true, suppressed: 0 });
    expect(w.take('c', 5)).toEqual({ ok: false }); // c is remembered
  });

  it('refuses a window that is not positive', () => {
    expect(() => new FailureLogWindow(0)).toThrow(/windowMs must be > 0/);
  });
});
