import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AlwaysLeader, runWhileLeading } from '../../src/runtime/leader.js';

const log = pino({ level: 'silent' });
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A role whose start and stop are recorded; stop resolves when the test says so. */
function role(events: string[]) {
  let n = 0;
  const pendingStops: (() => void)[] = [];
  const start = async () => {
    const id = ++n;
    events.push(`start ${id}`);
    return {
      stop: () =>
        new Promise<void>((r) => {
          events.push(`stopping ${id}`);
          pendingStops.push(() => {
            events.push(`stopped ${id}`);
            r();
          });
        }),
    };
  };
  return { start, release: () => pendingStops.splice(0).forEach((f) => f()) };
}

describe('runWhileLeading', () => {
  it('starts on leadership, and the step-down waits for the stop (awaited, in registration order)', async () => {
    const events: string[] = [];
    const leader = new AlwaysLeader(log);
    const a = role(events);
    const b = role(events);
    const ra = runWhileLeading(leader, a.start, { name: 'a', log });
    runWhileLeading(leader, b.start, { name: 'b', log });
    expect(ra.current()).toBeUndefined();
    leader.start();
    await tick();
    expect(events).toEqual(['start 1', 'start 1']);
    expect(ra.current()).toBeDefined();
    let stepped = false;
    const down = leader.stop().then(() => (stepped = true));
    await tick();
    expect(events.slice(2)).toEqual(['stopping 1']); // b waits for a
    a.release();
    await tick();
    b.release();
    await down;
    expect(stepped).toBe(true);
    expect(events.slice(2)).toEqual(['stopping 1', 'stopped 1', 'stopping 1', 'stopped 1']);
    expect(ra.current()).toBeUndefined();
  });

  it('stop() stops the current one and starts nothing more; a failed start waits for the next term', async () => {
    const events: string[] = [];
    const leader = new AlwaysLeader(log);
    const a = role(events);
    const handle = runWhileLeading(leader, a.start, { name: 'a', log });
    leader.start();
    await tick();
    const stopping = handle.stop();
    await tick();
    a.release();
    await stopping;
    expect(events).toEqual(['start 1', 'stopping 1', 'stopped 1']);
    await leader.stop();
    leader.start(); // a new term: the stopped handle starts nothing
    await tick();
    expect(events).toHaveLength(3);

    const failing = new AlwaysLeader(log);
    const h2 = runWhileLeading(failing, () => Promise.reject(new Error('no')), { name: 'f', log });
    failing.start();
    await tick();
    expect(h2.current()).toBeUndefined();
  });

  it('AlwaysLeader leads from start() until stop(); a late registration starts at once', async () => {
    const leader = new AlwaysLeader(log);
    expect(leader.isLeader()).toBe(false);
    leader.start();
    expect(leader.isLeader()).toBe(true);
    const seen: string[] = [];
    leader.onStartedLeading(() => void seen.push('started'));
    leader.onStoppedLeading(() => void seen.push('stopped'));
    await tick();
    await leader.stop();
    expect(leader.isLeader()).toBe(false);
    expect(seen).toEqual(['started', 'stopped']);
  });
});
