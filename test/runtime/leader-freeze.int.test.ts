/**
 * Leadership is bounded by time, not by requests, on a real kube-apiserver frozen with SIGSTOP: its process keeps
 * its sockets, so Lease requests are accepted and never answered, as on a half-open connection.
 *
 * Two replicas (two LeaderElectors with their own KubeConfig, identities `replica-a` and `replica-b`, each with a
 * role run through `runWhileLeading` whose stop takes a while) share one Lease. The apiserver is frozen while
 * `replica-a` leads, and thawed after `replica-a` has stepped down and one more lease duration has passed.
 * Both replicas are sampled every 50 ms from start to end. Asserted: never both lead, never both roles run,
 * `replica-a` steps down while the apiserver is still frozen, and `replica-b` (if it takes over) starts only
 * after that step-down; after the thaw exactly one leads.
 *
 * The same on a half-open connection for the leader only (a TCP proxy on its path stops passing data and keeps
 * the connection open; the other replica reaches the apiserver directly): the leader steps down before the
 * other takes over, and never both lead.
 *
 * The step-down times and the worst "two leaders" window (from the electors' own transition log lines) are
 * printed, never asserted.
 */
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shareKubeDispatchers } from '../../src/kube/dispatcher.js';
import { createLeadership, runWhileLeading, type Elector } from '../../src/runtime/leader.js';
import { kubeConfigVia } from '../operator/support.js';
import { startTcpProxy, type TcpProxy } from '../operator/tcp-proxy.js';
import { ensureKubeBinaries, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const LEASE_MS = 4_000;
const RENEW_DEADLINE_MS = 3_000;
const RETRY_MS = 500;
/** how long a role takes to stop (its in-flight work finishing) */
const ROLE_STOP_MS = 200;

interface Replica {
  elector: Elector;
  running(): boolean;
}

interface Transition {
  at: number;
  identity: string;
  leader: boolean;
}

describe.skipIf(skip)('leader election: a frozen apiserver (SIGSTOP) or a half-open path, two replicas', () => {
  let env: KubeEnv;
  const electors: Elector[] = [];
  const proxies: TcpProxy[] = [];
  let frozen = false;

  beforeAll(async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv();
  }, 10 * 60_000);

  afterAll(async () => {
    if (frozen) process.kill(env.apiServerPid(), 'SIGCONT');
    for (const e of electors) await e.stop();
    for (const p of proxies) await p.close();
    await env?.stop();
  });

  /** The electors' own "started/stopped leading" lines, timed when they were logged. */
  const transitions: Transition[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const line of String(chunk).split('\n').filter(Boolean)) {
          const o = JSON.parse(line) as { time: number; msg: string; identity?: string; leader?: boolean };
          if (/^leader election: (started|stopped) leading$/.test(o.msg)) {
            transitions.push({ at: o.time, identity: o.identity!, leader: o.leader! });
          }
        }
        cb();
      },
    }),
  );

  /** A replica as `serve` builds it: its own KubeConfig with the shared dispatchers, an elector, one role. */
  function replica(lease: string, identity: string, kc: KubeConfig = env.kubeConfig()): Replica {
    shareKubeDispatchers(kc);
    const elector = createLeadership({
      options: {
        leaseName: lease,
        leaseNamespace: 'default',
        leaseDurationMs: LEASE_MS,
        renewDeadlineMs: RENEW_DEADLINE_MS,
        retryPeriodMs: RETRY_MS,
      },
      coordination: kc.makeApiClient(CoordinationV1Api),
      identity,
      defaultLeaseName: lease,
      log: logger,
    });
    electors.push(elector);
    let running = false;
    runWhileLeading(
      elector,
      async () => {
        running = true;
        return {
          stop: async () => {
            await sleep(ROLE_STOP_MS);
            running = false;
          },
        };
      },
      { name: identity, log: logger },
    );
    return { elector, running: () => running };
  }

  /** Samples both replicas every 50 ms: leadership changes (in order, among the test's own events), overlaps. */
  function observe(a: Replica, b: Replica) {
    const events: string[] = [];
    const samples = { both: 0, bothRunning: 0, n: 0 };
    let prev = { a: false, b: false };
    let sampling = true;
    const loop = (async () => {
      while (sampling) {
        const now = { a: a.elector.isLeader(), b: b.elector.isLeader() };
        if (now.a !== prev.a) events.push(now.a ? 'a leads' : 'a steps down');
        if (now.b !== prev.b) events.push(now.b ? 'b leads' : 'b steps down');
        prev = now;
        samples.n++;
        if (now.a && now.b) samples.both++;
        if (a.running() && b.running()) samples.bothRunning++;
        await sleep(50);
      }
    })();
    return {
      events,
      samples,
      at: (e: string): number => events.indexOf(e),
      async stop(): Promise<void> {
        sampling = false;
        await loop;
      },
    };
  }

  /** The worst overlap of two replicas' leadership intervals, from the electors' own log lines. */
  function worstOverlapMs(idA: string, idB: string): number {
    const intervals = (id: string): [number, number][] => {
      const out: [number, number][] = [];
      let from: number | undefined;
      for (const t of transitions.filter((x) => x.identity === id)) {
        if (t.leader) from = t.at;
        else if (from !== undefined) {
          out.push([from, t.at]);
          from = undefined;
        }
      }
      if (from !== undefined) out.push([from, Date.now()]);
      return out;
    };
    let worst = 0;
    for (const [s1, e1] of intervals(idA))
      for (const [s2, e2] of intervals(idB)) worst = Math.max(worst, Math.min(e1, e2) - Math.max(s1, s2));
    return worst;
  }

  const steppedDown = (id: string, after: number): number | undefined =>
    transitions.find((t) => t.identity === id && !t.leader && t.at >= after)?.at;
  const since = (t: number | undefined, from: number): string => (t === undefined ? 'not yet' : `${t - from} ms`);
  const timings = `renew deadline ${RENEW_DEADLINE_MS} ms, lease ${LEASE_MS} ms, retry ${RETRY_MS} ms`;

  it('the leader steps down by its deadline while frozen; never two leaders, never two roles running', async () => {
    const a = replica('freeze', 'replica-a');
    const b = replica('freeze', 'replica-b');
    const o = observe(a, b);

    a.elector.start();
    await waitFor('replica-a leads', () => a.elector.isLeader() && a.running(), { timeoutMs: 15_000, intervalMs: 50 });
    b.elector.start();
    await sleep(2 * LEASE_MS); // b has read the Lease many times and waits
    expect(b.elector.isLeader()).toBe(false);

    const frozenAt = Date.now();
    process.kill(env.apiServerPid(), 'SIGSTOP');
    frozen = true;
    o.events.push('freeze');
    let steppedDownAt: number | undefined;
    try {
      // far less than the client's own 30 s request deadline, which a hanging Lease request waited for before
      await waitFor('replica-a steps down while the apiserver is frozen', () => !a.elector.isLeader(), {
        timeoutMs: 15_000,
        intervalMs: 20,
      });
      steppedDownAt = steppedDown('replica-a', frozenAt);
      await waitFor('replica-a’s role stops', () => !a.running(), { timeoutMs: 15_000, intervalMs: 20 });
      await sleep(LEASE_MS); // frozen past the lease too: b's last sight of the Lease is older than it
    } finally {
      process.kill(env.apiServerPid(), 'SIGCONT');
      frozen = false;
    }
    o.events.push('thaw');

    await waitFor(
      'one replica leads again after the thaw',
      () => (a.elector.isLeader() && a.running()) || (b.elector.isLeader() && b.running()),
      {
        timeoutMs: 30_000,
        intervalMs: 50,
      },
    );
    await sleep(2 * LEASE_MS); // keep sampling: a late answer must not make a second leader
    await o.stop();
    // printed before the assertions, so a failing run shows them too
    console.log(
      `leader-freeze: replica-a stepped down ${since(steppedDownAt, frozenAt)} after SIGSTOP (${timings}); ` +
        `worst two-leaders window ${worstOverlapMs('replica-a', 'replica-b')} ms; ${o.samples.n} samples, both leading in ` +
        `${o.samples.both}, both roles running in ${o.samples.bothRunning}; events ${o.events.join(' → ')}`,
    );

    expect(o.samples.both).toBe(0);
    expect(o.samples.bothRunning).toBe(0);
    expect(o.at('a steps down')).toBeGreaterThan(o.at('freeze'));
    expect(o.at('a steps down')).toBeLessThan(o.at('thaw'));
    if (o.at('b leads') >= 0) expect(o.at('b leads')).toBeGreaterThan(o.at('a steps down'));
    expect([a.elector.isLeader(), b.elector.isLeader()].filter(Boolean)).toHaveLength(1);
    await a.elector.stop();
    await b.elector.stop();
  }, 120_000);

  it('a half-open connection for the leader only (its path blackholed): it steps down before the other takes over', async () => {
    const proxy = await startTcpProxy(env.server);
    proxies.push(proxy);
    const a = replica('half-open', 'replica-c', kubeConfigVia(env, proxy.url));
    const b = replica('half-open', 'replica-d');
    const o = observe(a, b);

    a.elector.start();
    await waitFor('replica-c leads', () => a.elector.isLeader() && a.running(), { timeoutMs: 15_000, intervalMs: 50 });
    b.elector.start();
    await sleep(2 * LEASE_MS);
    expect(b.elector.isLeader()).toBe(false);

    const cutAt = Date.now();
    proxy.blackhole(); // replica-c's pooled connection stays open and passes nothing; replica-d's is fine
    o.events.push('blackhole');
    await waitFor('replica-d leads', () => b.elector.isLeader() && b.running(), { timeoutMs: 30_000, intervalMs: 50 });
    await sleep(2 * LEASE_MS);
    await o.stop();
    const takeoverAt = transitions.find((t) => t.identity === 'replica-d' && t.leader)!.at;
    // printed before the assertions, so a failing run shows them too
    console.log(
      `leader-freeze (half-open): replica-c stepped down ${since(steppedDown('replica-c', cutAt), cutAt)} after its path went ` +
        `half-open, replica-d took over ${takeoverAt - cutAt} ms after (${timings}); worst two-leaders window ` +
        `${worstOverlapMs('replica-c', 'replica-d')} ms; ${o.samples.n} samples, both leading in ${o.samples.both}; events ${o.events.join(' → ')}`,
    );

    expect(o.samples.both).toBe(0);
    expect(o.samples.bothRunning).toBe(0);
    expect(o.at('a steps down')).toBeGreaterThan(o.at('blackhole'));
    expect(o.at('b leads')).toBeGreaterThan(o.at('a steps down'));
    expect(a.elector.isLeader()).toBe(false);
  }, 120_000);
});
