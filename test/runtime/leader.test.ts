import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import {
  LeaderElector,
  decideLease,
  decideTerm,
  foreignRenewal,
  leaseVersion,
  microTime,
  type LeaseLock,
  type LeaseRecord,
} from '../../src/runtime/leader.js';
import { ConfigError, instanceIdOf, loadServeConfig } from '../../src/config.js';
import { FakeClock, flush } from './fake-clock.js';

const log = pino({ level: 'silent' });

describe('decideLease', () => {
  const now = 100_000;
  const base = { identity: 'me', now, observedAt: now - 1_000, leaseDurationMs: 15_000 };
  it.each<[string, LeaseRecord | undefined, number, string]>([
    ['no lease → create', undefined, now, 'create'],
    ['held by me → renew', { holderIdentity: 'me', leaseDurationSeconds: 15 }, now, 'renew'],
    ['released (empty holder) → takeover', { holderIdentity: '', leaseDurationSeconds: 15 }, now, 'takeover'],
    ['held by other, fresh → wait', { holderIdentity: 'other', leaseDurationSeconds: 15 }, now - 1_000, 'wait'],
    [
      'held by other, seen unchanged for the lease duration → takeover',
      { holderIdentity: 'other', leaseDurationSeconds: 15 },
      now - 15_000,
      'takeover',
    ],
    ['expiry uses the lease’s own duration', { holderIdentity: 'other', leaseDurationSeconds: 2 }, now - 2_500, 'takeover'],
    ['just before expiry → wait', { holderIdentity: 'other', leaseDurationSeconds: 2 }, now - 1_999, 'wait'],
  ])('%s', (_name, lease, observedAt, want) => {
    expect(decideLease({ ...base, lease, observedAt }).action).toBe(want);
  });
  it('reports the time left', () => {
    const d = decideLease({ ...base, lease: { holderIdentity: 'x', leaseDurationSeconds: 10 }, observedAt: now - 4_000 });
    expect(d).toEqual({ action: 'wait', holder: 'x', expiresInMs: 6_000 });
  });
  it('judges expiry on the local observation time, not the holder’s renewTime (clock skew)', () => {
    const lease = { holderIdentity: 'x', leaseDurationSeconds: 10, renewTime: microTime(now - 60 * 60_000) };
    expect(decideLease({ ...base, lease, observedAt: now }).action).toBe('wait');
  });
});

describe('decideTerm: leadership is bounded by time since the last renewal started', () => {
  const renewedAt = 50_000;
  const renewDeadlineMs = 10_000;
  it.each<[string, boolean, number, ReturnType<typeof decideTerm>]>([
    ['not leading → does not lead', false, renewedAt + 1, { lead: false }],
    ['just renewed → leads until the deadline', true, renewedAt, { lead: true, stepDownAt: 60_000 }],
    ['within the deadline → leads', true, renewedAt + 9_999, { lead: true, stepDownAt: 60_000 }],
    ['at the deadline → steps down', true, renewedAt + 10_000, { lead: false }],
    ['past the deadline (a request that hung) → steps down', true, renewedAt + 32_000, { lead: false }],
  ])('%s', (_what, leading, now, want) => {
    expect(decideTerm({ leading, renewedAt, now, renewDeadlineMs })).toEqual(want);
  });
});

describe('foreignRenewal: another live process under my identity', () => {
  const mine = { holderIdentity: 'me', renewTime: 't1' };
  it.each<[string, LeaseRecord | undefined, boolean, string | undefined, boolean]>([
    ['leading, my last write is what the Lease shows', mine, true, 't1', false],
    ['leading, my identity with a renewTime I did not write', { ...mine, renewTime: 't9' }, true, 't1', true],
    ['not leading yet (a restart finding its own Lease)', { ...mine, renewTime: 't9' }, false, undefined, false],
    ['leading but nothing written yet', { ...mine, renewTime: 't9' }, true, undefined, false],
    ['another identity holds it (ordinary loss, not this check)', { holderIdentity: 'other', renewTime: 't9' }, true, 't1', false],
    ['no Lease', undefined, true, 't1', false],
  ])('%s', (_what, lease, leading, lastAttemptedRenew, want) => {
    expect(foreignRenewal({ lease, identity: 'me', leading, lastAttemptedRenew })).toBe(want);
  });
});

describe('microTime / leaseVersion', () => {
  it('formats MicroTime with 6 fractional digits', () => {
    expect(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678))).toBe('2026-01-02T03:04:05.678000Z');
  });
  it('changes when holder, renewTime or resourceVersion change', () => {
    const a = { holderIdentity: 'a', renewTime: 't1', resourceVersion: '1' };
    expect(leaseVersion(a)).not.toBe(leaseVersion({ ...a, renewTime: 't2' }));
    expect(leaseVersion(a)).not.toBe(leaseVersion({ ...a, resourceVersion: '2' }));
    expect(leaseVersion(undefined)).toBe('');
  });
});

/** An in-memory Lease with optimistic concurrency, as the apiserver does it. */
class MemoryLease {
  rec: LeaseRecord | undefined;
  private rv = 0;
  lockFor(down: { value: boolean }): LeaseLock {
    return {
      get: async () => {
        if (down.value) throw new Error('connection refused');
        return this.rec ? { ...this.rec } : undefined;
      },
      create: async (r) => {
        if (down.value) throw new Error('connection refused');
        if (this.rec) return false;
        this.rec = { ...r, resourceVersion: String(++this.rv) };
        return true;
      },
      update: async (r) => {
        if (down.value) throw new Error('connection refused');
        if (!this.rec || r.resourceVersion !== this.rec.resourceVersion) return false;
        this.rec = { ...r, resourceVersion: String(++this.rv) };
        return true;
      },
    };
  }
}

function candidate(mem: MemoryLease, clock: FakeClock, identity: string) {
  const down = { value: false };
  const events: string[] = [];
  const e = new LeaderElector({
    lock: mem.lockFor(down),
    identity,
    leaseDurationMs: 3_000,
    renewDeadlineMs: 2_000,
    retryPeriodMs: 500,
    clock,
    log,
  });
  e.onStartedLeading(() => void events.push(`start@${clock.now()}`));
  e.onStoppedLeading(() => void events.push(`stop@${clock.now()}`));
  return { e, down, events };
}

/**
 * `lock`, except that while `hang.value` every request waits like one on a half-open connection: it never
 * answers, and ends only when its signal aborts (recorded as `aborted@<time>`).
 */
function hanging(lock: LeaseLock, clock: FakeClock, hang: { value: boolean }, log: string[]): LeaseLock {
  const wait = <T>(signal: AbortSignal | undefined, real: () => Promise<T>): Promise<T> => {
    if (!hang.value) return real();
    return new Promise<T>((_, reject) =>
      signal?.addEventListener('abort', () => (log.push(`aborted@${clock.now()}`), reject(new Error('aborted'))), { once: true }),
    );
  };
  return {
    get: (signal) => wait(signal, () => lock.get(signal)),
    create: (rec, signal) => wait(signal, () => lock.create(rec, signal)),
    update: (rec, signal) => wait(signal, () => lock.update(rec, signal)),
  };
}

describe('LeaderElector (fake clock, in-memory Lease)', () => {
  it('a Lease request that hangs: the leader stops leading AT its renew deadline (the request is aborted there), before the other takes over', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const hang = { value: false };
    const requests: string[] = [];
    const order: string[] = [];
    const a = new LeaderElector({
      lock: hanging(mem.lockFor({ value: false }), clock, hang, requests),
      identity: 'a',
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 500,
      clock,
      log,
    });
    a.onStartedLeading(() => void order.push(`a start@${clock.now()}`));
    a.onStoppedLeading(() => void order.push(`a stop@${clock.now()}`));
    const b = candidate(mem, clock, 'b'); // its connection is fine: only a's hangs
    b.e.onStartedLeading(() => void order.push(`b start@${clock.now()}`));
    a.start();
    await flush();
    b.e.start();
    await clock.advance(500); // a renews at 500
    expect(a.isLeader()).toBe(true);
    const renewedAt = clock.now();
    hang.value = true;
    await clock.advance(2_000);
    expect(a.isLeader()).toBe(false);
    expect(order).toContain(`a stop@${renewedAt + 2_000}`);
    expect(requests[0]).toBe(`aborted@${renewedAt + 2_000}`);
    await clock.advance(5_000);
    expect(b.e.isLeader()).toBe(true);
    // never two leaders: a stopped before b started
    expect(order.filter((x) => !x.startsWith('a start'))).toEqual([`a stop@${renewedAt + 2_000}`, expect.stringMatching(/^b start@/)]);
    expect(Number(order.at(-1)!.split('@')[1])).toBeGreaterThanOrEqual(renewedAt + 3_000);
    hang.value = false;
    await a.stop();
    await b.e.stop();
  });

  it('a candidate’s Lease request that hangs is aborted one renew deadline after it started; the next attempt follows', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const hang = { value: true };
    const requests: string[] = [];
    const a = new LeaderElector({
      lock: hanging(mem.lockFor({ value: false }), clock, hang, requests),
      identity: 'a',
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 500,
      clock,
      log,
    });
    a.start();
    await clock.advance(2_000);
    expect(requests).toEqual(['aborted@2000']);
    hang.value = false;
    await clock.advance(500);
    expect(a.isLeader()).toBe(true);
    await a.stop();
  });

  it('after a step-down at the deadline, the next term waits until everything that ran under the last one has stopped', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const a = candidate(mem, clock, 'a');
    const order: string[] = [];
    let release = (): void => undefined;
    a.e.onStartedLeading(() => void order.push('start'));
    a.e.onStoppedLeading(
      () =>
        new Promise<void>((r) => {
          order.push('stopping');
          a.down.value = false; // the Lease is reachable again right at the step-down, and still names a
          release = () => (order.push('stopped'), r());
        }),
    );
    a.e.start();
    await flush();
    a.down.value = true;
    await clock.advance(2_500);
    expect(a.e.isLeader()).toBe(false);
    await clock.advance(5_000);
    expect(a.e.isLeader()).toBe(false); // a role of the last term is still stopping
    expect(order).toEqual(['start', 'stopping']);
    release();
    await clock.advance(500);
    expect(a.e.isLeader()).toBe(true);
    expect(order).toEqual(['start', 'stopping', 'stopped', 'start']);
    const stopping = a.e.stop();
    await flush();
    release();
    await stopping;
  });

  it('acquires an absent lease, then renews every retry period', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const a = candidate(mem, clock, 'a');
    a.e.start();
    await flush();
    expect(a.e.isLeader()).toBe(true);
    expect(a.events).toEqual(['start@0']);
    expect(mem.rec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 3, leaseTransitions: 0 });
    const first = mem.rec!.renewTime;
    await clock.advance(500);
    expect(mem.rec!.renewTime).not.toBe(first);
    await a.e.stop();
  });

  it('one leads; the other waits; a graceful stop releases and the other takes over at its next retry', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const a = candidate(mem, clock, 'a');
    const b = candidate(mem, clock, 'b');
    a.e.start();
    await flush();
    b.e.start();
    await clock.advance(5_000);
    expect([a.e.isLeader(), b.e.isLeader()]).toEqual([true, false]);
    const t0 = clock.now();
    await a.e.stop();
    expect(a.events.at(-1)).toBe(`stop@${t0}`);
    expect(mem.rec?.holderIdentity).toBe('');
    await clock.advance(500);
    expect(b.e.isLeader()).toBe(true);
    expect(mem.rec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.e.stop();
  });

  it('a leader that cannot renew steps down at the renew deadline; the other takes over only after the lease expired', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const a = candidate(mem, clock, 'a');
    const b = candidate(mem, clock, 'b');
    a.e.start();
    await flush();
    b.e.start();
    await clock.advance(2_000);
    const lastRenew = clock.now(); // a renewed at this tick (retry period divides it)
    a.down.value = true;
    await clock.advance(10_000);
    const aStop = Number(a.events.find((x) => x.startsWith('stop'))!.split('@')[1]);
    const bStart = Number(b.events.find((x) => x.startsWith('start'))!.split('@')[1]);
    expect(aStop - lastRenew).toBeGreaterThanOrEqual(2_000); // renew deadline
    expect(aStop - lastRenew).toBeLessThan(3_000);
    expect(bStart - lastRenew).toBeGreaterThanOrEqual(3_000); // lease duration
    expect(bStart - lastRenew).toBeLessThanOrEqual(3_000 + 500 + 500);
    expect(aStop).toBeLessThan(bStart); // never two leaders
    // a recovers: follower
    a.down.value = false;
    await clock.advance(2_000);
    expect([a.e.isLeader(), b.e.isLeader()]).toEqual([false, true]);
    await a.e.stop();
    await b.e.stop();
  });

  it('killed without releasing, restarted under the SAME identity (same pod): leads on its first attempt, no clock advance', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const a = candidate(mem, clock, 'pod-a');
    a.e.start();
    await clock.advance(1_000);
    expect(a.e.isLeader()).toBe(true);
    // SIGKILL: the loop is gone and nothing releases the lease (the process cannot run its stop())
    const held = { ...mem.rec! };
    a.down.value = true; // the dead process's elector can no longer write
    const again = candidate(mem, clock, 'pod-a');
    again.e.start();
    await flush(); // no time passes: a wait of the lease would need clock.advance
    expect(again.e.isLeader()).toBe(true);
    expect(again.events).toEqual([`start@${clock.now()}`]);
    // a renewal of its own term, not a takeover
    expect(mem.rec).toMatchObject({ holderIdentity: 'pod-a', leaseTransitions: held.leaseTransitions, acquireTime: held.acquireTime });
    await again.e.stop();
  });

  it('restarted under a NEW identity (the pre-issue-8 default hostname + random): waits the lease out', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const a = candidate(mem, clock, 'host_1234abcd');
    a.e.start();
    await flush();
    a.down.value = true;
    const b = candidate(mem, clock, 'host_5678ef01');
    b.e.start();
    await clock.advance(2_500);
    expect(b.e.isLeader()).toBe(false);
    await clock.advance(1_000); // past the 3 s lease, judged from b's first sight of it
    expect(b.e.isLeader()).toBe(true);
    expect(mem.rec).toMatchObject({ holderIdentity: 'host_5678ef01', leaseTransitions: 1 });
    await b.e.stop();
  });

  it('two LIVE processes under one identity (a misconfiguration): each says so once in its log', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const lines: string[] = [];
    const sink = pino({ level: 'error' }, new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
    const make = () =>
      new LeaderElector({
        lock: mem.lockFor({ value: false }),
        identity: 'dup',
        leaseDurationMs: 3_000,
        renewDeadlineMs: 2_000,
        retryPeriodMs: 500,
        clock,
        log: sink,
      });
    const [x, y] = [make(), make()];
    x.start();
    await flush();
    y.start();
    await clock.advance(3_000);
    const dup = lines.filter((l) => l.includes('another live process renews the Lease under this identity'));
    expect(dup.length).toBeGreaterThanOrEqual(1);
    expect(dup.length).toBeLessThanOrEqual(2); // once per process
    await x.stop();
    await y.stop();
  });

  it('two candidates racing for an absent lease: exactly one wins', async () => {
    const clock = new FakeClock(0);
    const mem = new MemoryLease();
    const a = candidate(mem, clock, 'a');
    const b = candidate(mem, clock, 'b');
    a.e.start();
    b.e.start();
    await clock.advance(3_000);
    expect([a.e.isLeader(), b.e.isLeader()].filter(Boolean)).toHaveLength(1);
    await a.e.stop();
    await b.e.stop();
  });

  it('rejects inconsistent timings', () => {
    const mem = new MemoryLease();
    expect(
      () => new LeaderElector({ lock: mem.lockFor({ value: false }), identity: 'x', leaseDurationMs: 1_000, renewDeadlineMs: 1_000, log }),
    ).toThrow(/renewDeadline/);
  });
});

describe('instanceIdOf: one name for delivery claims and the Lease (--instance-id)', () => {
  it.each<[string, string | undefined, string]>([
    ['not given: the hostname (the pod name in Kubernetes)', undefined, 'node-1'],
    ['--instance-id', 'pod-a', 'pod-a'],
  ])('%s', (_what, instanceId, want) => {
    expect(instanceIdOf(instanceId, () => 'node-1')).toBe(want);
  });
  it('refuses an invalid value naming the flag', () => {
    expect(() => instanceIdOf('a b', () => 'node-1')).toThrow(ConfigError);
    expect(() => instanceIdOf('a b', () => 'node-1')).toThrow(/--instance-id must be/);
  });
  it('from flags and environment, once at the edge; --pod-name is not a flag', () => {
    expect(loadServeConfig(['--instance-id', 'pod-x'], {}).instanceId).toBe('pod-x');
    expect(loadServeConfig([], { CERTMGR_NOTIFY_INSTANCE_ID: 'pod-y' }).instanceId).toBe('pod-y');
    expect(() => loadServeConfig(['--pod-name', 'pod-x'], {})).toThrow(/unknown flag --pod-name/);
  });
});
