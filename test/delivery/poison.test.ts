import { describe, expect, it } from 'vitest';
import { POISON_AFTER_ABANDONED, poisonedError, triageClaims } from '../../src/delivery/poison.js';
import type { ClaimedDelivery } from '../../src/store/types.js';

const claimed = (id: string, abandonedClaims: number) => ({ id, abandonedClaims }) as ClaimedDelivery;
const ids = (ds: readonly ClaimedDelivery[]) => ds.map((d) => d.id);

describe('triageClaims', () => {
  it.each([
    { name: 'nothing abandoned: all sent as usual', batch: [0, 0, 0], poisoned: [], alone: null, rest: ['d0', 'd1', 'd2'] },
    { name: 'the first suspect alone, the rest handed back', batch: [0, 1, 1, 0], poisoned: [], alone: 'd1', rest: ['d0', 'd2', 'd3'] },
    { name: 'poisoned at the limit, never sent', batch: [POISON_AFTER_ABANDONED, 0], poisoned: ['d0'], alone: null, rest: ['d1'] },
    { name: 'above the limit too', batch: [0, POISON_AFTER_ABANDONED + 3, 1], poisoned: ['d1'], alone: 'd2', rest: ['d0'] },
    { name: 'empty', batch: [], poisoned: [], alone: null, rest: [] },
  ])('$name', ({ batch, poisoned, alone, rest }) => {
    const t = triageClaims(batch.map((n, i) => claimed(`d${i}`, n)));
    expect({ poisoned: ids(t.poisoned), alone: t.alone?.id ?? null, rest: ids(t.rest) }).toEqual({ poisoned, alone, rest });
  });

  it('the dead letter says POISONED first, and how many times', () => {
    expect(poisonedError(2)).toMatch(/^POISONED: .* 2 times/);
  });
});
