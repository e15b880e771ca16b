/** DeliverySignal (src/delivery/signal.ts): a notify() is kept until taken, and wakes the one waiting sleep once. */
import { describe, expect, it } from 'vitest';
import { DeliverySignal } from '../../src/delivery/signal.js';

describe('DeliverySignal', () => {
  it('take() reports a notify() once, whether or not anyone was waiting (a notify during a claim loops again)', () => {
    const s = new DeliverySignal();
    expect(s.take()).toBe(false);
    s.notify();
    s.notify();
    expect(s.take()).toBe(true);
    expect(s.take()).toBe(false);
  });

  it('wakes the waiting sleep once, at the next notify()', () => {
    const s = new DeliverySignal();
    let woken = 0;
    s.onNotify(() => woken++);
    expect(woken).toBe(0);
    s.notify();
    s.notify();
    expect(woken).toBe(1);
    expect(s.take()).toBe(true);
  });

  it('a cancelled wait is not called (the sleep ended on its timer); a later wait is', () => {
    const s = new DeliverySignal();
    const calls: string[] = [];
    const cancel = s.onNotify(() => calls.push('first'));
    cancel();
    s.notify();
    expect(calls).toEqual([]);
    s.onNotify(() => calls.push('second'));
    cancel(); // cancelling the earlier wait leaves the later one
    s.notify();
    expect(calls).toEqual(['second']);
  });
});
