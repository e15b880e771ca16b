/**
 * Time-sliced routing (fairness): the sliced variants decide exactly like the synchronous ones, and
 * they let other work run between evaluations once a slice is used up.
 */
import { describe, expect, it } from 'vitest';
import { decideRouters, decideRoutersSliced, matchRouters, matchRoutersSliced } from '../../src/routing/match.js';
import { TimeSlicer } from '../../src/routing/slicer.js';
import { randomEvent, randomRouters, rng, snapshotOf } from './generators.js';

describe('TimeSlicer', () => {
  it.each([
    [2, 0, false],
    [2, 1.9, false],
    [2, 2, true],
    [0, 0, true],
  ])('slice of %s ms, %s ms in: due = %s', (sliceMs, elapsed, due) => {
    let t = 100;
    const s = new TimeSlicer(sliceMs, () => t);
    t += elapsed;
    expect(s.due()).toBe(due);
  });

  it('yield lets pending I/O callbacks run and starts a new slice', async () => {
    let t = 0;
    const s = new TimeSlicer(2, () => t);
    t = 5;
    let ran = false;
    setImmediate(() => (ran = true));
    await s.yield();
    expect(ran).toBe(true);
    expect(s.due()).toBe(false);
  });
});

describe('sliced routing', () => {
  it('decides exactly like the synchronous functions, for random routers and events', async () => {
    const r = rng(7);
    const snap = await snapshotOf(randomRouters(r, 300));
    for (let i = 0; i < 40; i++) {
      const event = randomEvent(r);
      // a zero-length slice yields after every evaluation: the most interleaved schedule
      expect(await decideRoutersSliced(event, snap, new TimeSlicer(0))).toEqual(decideRouters(event, snap));
      expect(await matchRoutersSliced(event, snap, new TimeSlicer(0))).toEqual(matchRouters(event, snap));
    }
  });

  it('other callbacks run between evaluations, not only after the whole routing', async () => {
    const r = rng(11);
    const snap = await snapshotOf(randomRouters(r, 200));
    const event = randomEvent(r, 'evt.healthstatus.certmgr-issuer.notready');
    let evaluationsDone = false;
    let ranDuring = false;
    const tick = (): void => {
      if (evaluationsDone) return;
      ranDuring = true;
    };
    setImmediate(tick);
    await decideRoutersSliced(event, snap, new TimeSlicer(0)).then(() => (evaluationsDone = true));
    expect(ranDuring).toBe(true);
  });
});
