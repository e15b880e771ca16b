/**
 * Leader election on a coordination.k8s.io/v1 Lease (client-go's algorithm, in small pieces):
 * - `decideLease` (pure): create, renew, take over, or wait — expiry is judged on the LOCAL clock from when
 *   this candidate last saw the record change (no cross-node clock comparison), like client-go.
 * - `LeaderElector`: every `retryPeriod` tries to acquire or renew with optimistic concurrency (a stale
 *   resourceVersion → 409 → lost race). Leadership is bounded by time, not by requests: every Lease request is
 *   aborted at the renew deadline, and a timer armed at each successful renewal steps the leader down at
 *   `renewDeadline` after that renewal's start (`decideTerm`), even while a request hangs. The next attempt
 *   waits until everything that ran under leadership has stopped.
 *   `stop()` releases the lease (holder cleared) so another candidate takes over at once.
 * - `AlwaysLeader`: the same callbacks without election; `createLeadership` picks one of the two.
 * - `runWhileLeading`: the one way a role runs only while this replica leads (operator, emitter, delivery).
 */
import {
  Observable,
  type ConfigurationOptions,
  type CoordinationV1Api,
  type ObservableMiddleware,
  type V1Lease,
  type V1LeaseSpec,
  type V1ObjectMeta,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeKubeError, isConflict, isNotFound } from '../kube/errors.js';
import { podNamespace } from '../kube/kubeconfig.js';
import { realClock, sleep, type Clock } from './timers.js';

export interface LeaseRecord {
  holderIdentity?: string | undefined;
  leaseDurationSeconds?: number | undefined;
  acquireTime?: string | undefined;
  renewTime?: string | undefined;
  leaseTransitions?: number | undefined;
  resourceVersion?: string | undefined;
}

export type LeaseDecision =
  | { action: 'create' }
  | { action: 'renew' }
  | { action: 'takeover'; reason: 'released' | 'expired' }
  | { action: 'wait'; holder: string; expiresInMs: number };

/** What this candidate should do with the lease as read now. `observedAt`: local time the record last changed. */
export function decideLease(input: {
  lease: LeaseRecord | undefined;
  identity: string;
  now: number;
  observedAt: number;
  leaseDurationMs: number;
}): LeaseDecision {
  const { lease, identity, now, observedAt } = input;
  if (!lease) return { action: 'create' };
  const holder = lease.holderIdentity ?? '';
  if (holder === identity) return { action: 'renew' };
  if (holder === '') return { action: 'takeover', reason: 'released' };
  const durationMs = lease.leaseDurationSeconds ? lease.leaseDurationSeconds * 1000 : input.leaseDurationMs;
  const expiresInMs = observedAt + durationMs - now;
  if (expiresInMs <= 0) return { action: 'takeover', reason: 'expired' };
  return { action: 'wait', holder, expiresInMs };
}

/**
 * True when, while leading, this candidate finds its own identity in the Lease with a renewTime it did not write:
 * another LIVE process uses the same identity (--instance-id), so both believe they lead. Since a restart of the
 * same pod renews its own Lease at once (no wait), the identity must be unique among live processes; this only
 * detects the misconfiguration (no automatic step-down: both would step down and nobody would lead).
 */
export function foreignRenewal(input: {
  lease: LeaseRecord | undefined;
  identity: string;
  leading: boolean;
  lastAttemptedRenew: string | undefined;
}): boolean {
  const { lease, identity, leading, lastAttemptedRenew } = input;
  return leading && lastAttemptedRenew !== undefined && lease?.holderIdentity === identity && lease.renewTime !== lastAttemptedRenew;
}

export type TermDecision = { lead: true; stepDownAt: number } | { lead: false };

/**
 * Whether a candidate leads at `now`. `renewedAt` is the local time its last successful renewal (or acquisition)
 * STARTED: the apiserver wrote that record no earlier, so every other candidate, counting the lease from when it
 * saw the record, waits at least `renewedAt + leaseDuration`. Leading ends at `renewedAt + renewDeadline` (the
 * gap to the lease duration is the time the roles have to stop), whatever the requests in flight do.
 */
export function decideTerm(input: { leading: boolean; renewedAt: number; now: number; renewDeadlineMs: number }): TermDecision {
  if (!input.leading) return { lead: false };
  const stepDownAt = input.renewedAt + input.renewDeadlineMs;
  return input.now < stepDownAt ? { lead: true, stepDownAt } : { lead: false };
}

/** The record identity used to detect "changed since last observed". */
export function leaseVersion(l: LeaseRecord | undefined): string {
  return l ? `${l.resourceVersion ?? ''}|${l.holderIdentity ?? ''}|${l.renewTime ?? ''}` : '';
}

/** RFC 3339 with microseconds, the MicroTime wire format. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** What the elector needs from the API (a fake in unit tests). `signal` aborts the request (the deadline). */
export interface LeaseLock {
  get(signal?: AbortSignal): Promise<LeaseRecord | undefined>;
  /** create; false on AlreadyExists */
  create(rec: LeaseRecord, signal?: AbortSignal): Promise<boolean>;
  /** replace with optimistic concurrency on rec.resourceVersion; false on Conflict */
  update(rec: LeaseRecord, signal?: AbortSignal): Promise<boolean>;
}

/** Per-request options that hand `signal` to client-node's fetch (RequestContext.setSignal). */
function abortable(signal: AbortSignal | undefined): ConfigurationOptions | undefined {
  if (!signal) return undefined;
  const mw: ObservableMiddleware = {
    pre: (ctx) => {
      ctx.setSignal(signal);
      return new Observable(Promise.resolve(ctx));
    },
    post: (res) => new Observable(Promise.resolve(res)),
  };
  return { middleware: [mw], middlewareMergeStrategy: 'append' };
}

function k8sLeaseLock(api: CoordinationV1Api, namespace: string, name: string): LeaseLock {
  const toRecord = (l: V1Lease): LeaseRecord => {
    const s = l.spec ?? {};
    const t = (v: unknown): string | undefined => (v instanceof Date ? microTime(v.getTime()) : (v as string | undefined));
    return {
      holderIdentity: s.holderIdentity ?? '',
      leaseDurationSeconds: s.leaseDurationSeconds,
      acquireTime: t(s.acquireTime),
      renewTime: t(s.renewTime),
      leaseTransitions: s.leaseTransitions,
      resourceVersion: l.metadata?.resourceVersion,
    };
  };
  const toBody = (rec: LeaseRecord): V1Lease => {
    // client-node's V1Lease types its fields without undefined: a key only with a value
    const metadata: V1ObjectMeta = { name, namespace };
    if (rec.resourceVersion) metadata.resourceVersion = rec.resourceVersion;
    const spec: V1LeaseSpec = {};
    if (rec.holderIdentity !== undefined) spec.holderIdentity = rec.holderIdentity;
    if (rec.leaseDurationSeconds !== undefined) spec.leaseDurationSeconds = rec.leaseDurationSeconds;
    // MicroTime: client-node passes strings through unchanged
    if (rec.acquireTime !== undefined) spec.acquireTime = rec.acquireTime as unknown as Date;
    if (rec.renewTime !== undefined) spec.renewTime = rec.renewTime as unknown as Date;
    if (rec.leaseTransitions !== undefined) spec.leaseTransitions = rec.leaseTransitions;
    return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata, spec };
  };
  return {
    async get(signal) {
      try {
        return toRecord(await api.readNamespacedLease({ name, namespace }, abortable(signal)));
      } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
      }
    },
    async create(rec, signal) {
      try {
        await api.createNamespacedLease({ namespace, body: toBody(rec) }, abortable(signal));
        return true;
      } catch (e) {
        if (isConflict(e)) return false;
        throw e;
      }
    },
    async update(rec, signal) {
      try {
        await api.replaceNamespacedLease({ name, namespace, body: toBody(rec) }, abortable(signal));
        return true;
      } catch (e) {
        if (isConflict(e)) return false;
        throw e;
      }
    },
  };
}

/** How long a lease is valid without renewal (controller-runtime's default too). */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
/** A leader steps down when it could not renew for this long. */
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
/** How often a candidate tries to acquire or renew. */
export const DEFAULT_RETRY_PERIOD_MS = 2_000;

export interface LeaderElectorOptions {
  lock: LeaseLock;
  identity: string;
  /** how long a lease is valid without renewal (default DEFAULT_LEASE_DURATION_MS) */
  leaseDurationMs?: number | undefined;
  /** a leader steps down when it could not renew for this long (default DEFAULT_RENEW_DEADLINE_MS) */
  renewDeadlineMs?: number | undefined;
  /** attempt interval (default DEFAULT_RETRY_PERIOD_MS) */
  retryPeriodMs?: number | undefined;
  /** clear the holder on stop so another candidate takes over immediately (default true) */
  releaseOnStop?: boolean;
  clock?: Clock | undefined;
  log: Logger;
}

export type LeaderCallback = () => void | Promise<void>;

export class LeaderElector {
  private readonly clock: Clock;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private leader = false;
  /** local time the last successful renewal (or acquisition) started */
  private renewedAt = 0;
  /** steps down at the renew deadline of the current term */
  private stepDownTimer: unknown;
  /** aborts the Lease request in flight (at its deadline, at a step-down, or at stop) */
  private attempt: AbortController | undefined;
  private observed = '';
  private observedAt = 0;
  private current: LeaseRecord | undefined;
  /** renewTime of our last write attempt (also one that errored but may have been applied) */
  private lastAttemptedRenew: string | undefined;
  private foreignWarned = false;
  private readonly started: LeaderCallback[] = [];
  private readonly stopped: LeaderCallback[] = [];
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private transitions: Promise<void> = Promise.resolve();

  constructor(private readonly opts: LeaderElectorOptions) {
    this.clock = opts.clock ?? realClock;
    this.leaseDurationMs = opts.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    this.retryPeriodMs = opts.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
    if (this.renewDeadlineMs >= this.leaseDurationMs) throw new Error('leader election: renewDeadline must be shorter than leaseDuration');
    if (this.retryPeriodMs >= this.renewDeadlineMs) throw new Error('leader election: retryPeriod must be shorter than renewDeadline');
  }

  get identity(): string {
    return this.opts.identity;
  }

  isLeader(): boolean {
    return this.leader;
  }

  /** Called (awaited, in order) when this candidate becomes leader; immediately if it already is. */
  onStartedLeading(cb: LeaderCallback): void {
    this.started.push(cb);
    if (this.leader) this.transition(cb);
  }

  onStoppedLeading(cb: LeaderCallback): void {
    this.stopped.push(cb);
  }

  /** Wait for the callbacks of past transitions to finish. */
  settled(): Promise<void> {
    return this.transitions;
  }

  start(): void {
    if (this.loop) return;
    this.abort = new AbortController();
    this.loop = this.run(this.abort.signal);
  }

  /** Stop campaigning; step down (callbacks run) and release the lease if held. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.loop = undefined;
    this.disarmStepDown();
    const wasLeader = this.leader;
    if (wasLeader) this.setLeader(false);
    await this.transitions;
    if (wasLeader && (this.opts.releaseOnStop ?? true)) {
      try {
        await this.bounded(this.clock.now() + this.renewDeadlineMs, async (signal) => {
          const cur = await this.opts.lock.get(signal);
          if (cur && cur.holderIdentity === this.opts.identity) {
            const rec = { ...cur, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(this.clock.now()) };
            await this.opts.lock.update(rec, signal);
          }
        });
      } catch (e) {
        this.opts.log.warn({ error: describeKubeError(e) }, 'leader election: could not release the lease');
      }
    }
  }

  /** One acquire/renew attempt. True when this candidate holds the lease afterwards. `signal` aborts its requests. */
  async tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean> {
    const now = this.clock.now();
    const lease = await this.opts.lock.get(signal);
    const v = leaseVersion(lease);
    if (v !== this.observed) {
      this.observed = v;
      this.observedAt = now;
    }
    this.current = lease;
    const d = decideLease({ lease, identity: this.opts.identity, now, observedAt: this.observedAt, leaseDurationMs: this.leaseDurationMs });
    const seconds = Math.max(1, Math.ceil(this.leaseDurationMs / 1000));
    const nowTime = microTime(now);
    switch (d.action) {
      case 'wait':
        return false;
      case 'create':
        this.lastAttemptedRenew = nowTime;
        return this.opts.lock.create(
          {
            holderIdentity: this.opts.identity,
            leaseDurationSeconds: seconds,
            acquireTime: nowTime,
            renewTime: nowTime,
            leaseTransitions: 0,
          },
          signal,
        );
      case 'renew':
        if (
          !this.foreignWarned &&
          foreignRenewal({ lease, identity: this.opts.identity, leading: this.leader, lastAttemptedRenew: this.lastAttemptedRenew })
        ) {
          this.foreignWarned = true; // once per process: it repeats every retry period otherwise
          this.opts.log.error(
            { identity: this.opts.identity },
            'leader election: another live process renews the Lease under this identity; --instance-id must be unique among live processes',
          );
        }
        this.lastAttemptedRenew = nowTime;
        return this.opts.lock.update(
          { ...lease, holderIdentity: this.opts.identity, leaseDurationSeconds: seconds, renewTime: nowTime },
          signal,
        );
      case 'takeover':
        this.opts.log.info({ previous: lease?.holderIdentity || undefined, reason: d.reason }, 'leader election: taking over the lease');
        this.lastAttemptedRenew = nowTime;
        return this.opts.lock.update(
          {
            ...lease,
            holderIdentity: this.opts.identity,
            leaseDurationSeconds: seconds,
            acquireTime: nowTime,
            renewTime: nowTime,
            leaseTransitions: (lease?.leaseTransitions ?? 0) + 1,
          },
          signal,
        );
    }
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      // a new term starts only once everything that ran under the last one has stopped (a step-down at the
      // deadline can come while this loop sleeps)
      if (!this.leader) await this.transitions;
      if (signal.aborted) break;
      const startedAt = this.clock.now();
      // a leader's requests end at its term's deadline, a candidate's one renew deadline after they start
      const term = decideTerm({ leading: this.leader, renewedAt: this.renewedAt, now: startedAt, renewDeadlineMs: this.renewDeadlineMs });
      const deadline = term.lead ? term.stepDownAt : startedAt + this.renewDeadlineMs;
      const leading = this.leader;
      let ok = false;
      try {
        ok = await this.bounded(deadline, (s) => this.tryAcquireOrRenew(s), signal);
      } catch (e) {
        this.opts.log.warn({ error: describeKubeError(e) }, 'leader election: lease request failed');
      }
      if (signal.aborted) break;
      // an answer that arrives after the deadline does not count: its request was aborted, or the term ended
      if (leading && !this.leader) ok = false;
      if (ok && decideTerm({ leading: true, renewedAt: startedAt, now: this.clock.now(), renewDeadlineMs: this.renewDeadlineMs }).lead) {
        this.renewedAt = startedAt;
        this.armStepDown();
        if (!this.leader) this.setLeader(true);
      }
      await sleep(this.clock, this.retryPeriodMs, signal);
    }
  }

  /**
   * Runs `fn` with a signal aborted at `deadline` (local time), at a step-down or when `outer` aborts. Rejects at
   * the deadline even if `fn` ignores the signal.
   */
  private bounded<T>(deadline: number, fn: (signal: AbortSignal) => Promise<T>, outer?: AbortSignal): Promise<T> {
    const ac = new AbortController();
    this.attempt = ac;
    const onOuter = (): void => ac.abort(new Error('leader election stopped'));
    outer?.addEventListener('abort', onOuter, { once: true });
    const timer = this.clock.setTimeout(
      () => ac.abort(new Error('lease request not answered by the renew deadline')),
      Math.max(0, deadline - this.clock.now()),
    );
    const aborted = new Promise<never>((_, reject) => {
      const fail = (): void => reject(ac.signal.reason instanceof Error ? ac.signal.reason : new Error(String(ac.signal.reason)));
      if (ac.signal.aborted) fail();
      else ac.signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => undefined); // the race below observes it
    return Promise.race([fn(ac.signal), aborted]).finally(() => {
      this.clock.clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
      if (this.attempt === ac) this.attempt = undefined;
    });
  }

  /** (Re)arms the step-down at the current term's deadline. */
  private armStepDown(): void {
    this.disarmStepDown();
    const d = decideTerm({ leading: true, renewedAt: this.renewedAt, now: this.clock.now(), renewDeadlineMs: this.renewDeadlineMs });
    if (!d.lead) return;
    this.stepDownTimer = this.clock.setTimeout(() => this.deadlineReached(), d.stepDownAt - this.clock.now());
  }

  private disarmStepDown(): void {
    if (this.stepDownTimer !== undefined) this.clock.clearTimeout(this.stepDownTimer);
    this.stepDownTimer = undefined;
  }

  /** The term's deadline passed without a renewal: stop leading now, whatever request is in flight. */
  private deadlineReached(): void {
    this.stepDownTimer = undefined;
    const now = this.clock.now();
    if (decideTerm({ leading: this.leader, renewedAt: this.renewedAt, now, renewDeadlineMs: this.renewDeadlineMs }).lead) {
      this.armStepDown(); // a timer that fired early
      return;
    }
    if (!this.leader) return;
    this.attempt?.abort(new Error('renew deadline passed'));
    this.opts.log.warn({ sinceRenewMs: now - this.renewedAt }, 'leader election: could not renew within the deadline; stepping down');
    this.setLeader(false);
  }

  private setLeader(v: boolean): void {
    this.leader = v;
    this.opts.log.info(
      { identity: this.opts.identity, leader: v },
      v ? 'leader election: started leading' : 'leader election: stopped leading',
    );
    for (const cb of v ? this.started : this.stopped) this.transition(cb);
  }

  private transition(cb: LeaderCallback): void {
    this.transitions = this.transitions.then(async () => {
      try {
        await cb();
      } catch (e) {
        this.opts.log.error({ err: e }, 'leader election callback failed');
      }
    });
  }
}

// ---------------------------------------------------------------------------------------------------------
// leadership for the roles

/** What a role needs to follow leadership: a LeaderElector, or an AlwaysLeader without election. */
export interface Leadership {
  isLeader(): boolean;
  /** awaited, in registration order, when this replica starts leading (at once if it leads) */
  onStartedLeading(cb: LeaderCallback): void;
  /** awaited, in registration order, when it stops leading (also at `stop()`) */
  onStoppedLeading(cb: LeaderCallback): void;
}

/** Leadership owned by a composition root: started once the roles are registered, stopped last. */
export interface Elector extends Leadership {
  start(): void;
  stop(): Promise<void>;
}

/** Without leader election (a single replica, or no Kubernetes): leads from `start()` until `stop()`. */
export class AlwaysLeader implements Elector {
  private leader = false;
  private readonly started: LeaderCallback[] = [];
  private readonly stopped: LeaderCallback[] = [];
  private transitions: Promise<void> = Promise.resolve();

  constructor(private readonly log: Logger) {}

  isLeader(): boolean {
    return this.leader;
  }

  onStartedLeading(cb: LeaderCallback): void {
    this.started.push(cb);
    if (this.leader) this.run([cb]);
  }

  onStoppedLeading(cb: LeaderCallback): void {
    this.stopped.push(cb);
  }

  start(): void {
    if (this.leader) return;
    this.leader = true;
    this.run(this.started);
  }

  async stop(): Promise<void> {
    if (this.leader) {
      this.leader = false;
      this.run(this.stopped);
    }
    await this.transitions;
  }

  private run(cbs: LeaderCallback[]): void {
    for (const cb of [...cbs]) {
      this.transitions = this.transitions.then(async () => {
        try {
          await cb();
        } catch (e) {
          this.log.error({ err: e }, 'leadership callback failed');
        }
      });
    }
  }
}

export interface LeadershipOptions {
  /** default true */
  enabled?: boolean;
  /** default: the caller's default lease name */
  leaseName?: string | undefined;
  /** default: the pod's namespace (service account mount), else `default` */
  leaseNamespace?: string | undefined;
  /** default DEFAULT_LEASE_DURATION_MS */
  leaseDurationMs?: number;
  /** default DEFAULT_RENEW_DEADLINE_MS */
  renewDeadlineMs?: number;
  /** default DEFAULT_RETRY_PERIOD_MS */
  retryPeriodMs?: number;
}

/** A LeaderElector on a Lease, or an AlwaysLeader when election is disabled. Not started. */
export function createLeadership(o: {
  options: LeadershipOptions;
  coordination: CoordinationV1Api;
  identity: string;
  defaultLeaseName: string;
  clock?: Clock;
  log: Logger;
}): Elector {
  const le = o.options;
  if (!(le.enabled ?? true)) return new AlwaysLeader(o.log);
  return new LeaderElector({
    lock: k8sLeaseLock(o.coordination, le.leaseNamespace ?? podNamespace(), le.leaseName ?? o.defaultLeaseName),
    identity: o.identity,
    leaseDurationMs: le.leaseDurationMs,
    renewDeadlineMs: le.renewDeadlineMs,
    retryPeriodMs: le.retryPeriodMs,
    clock: o.clock,
    log: o.log,
  });
}

export interface WhileLeading<T> {
  /** what runs in the current leadership term, if this replica leads */
  current(): T | undefined;
  /** stop what runs (awaited) and start nothing more */
  stop(): Promise<void>;
}

/**
 * Runs `start()`'s result only while `leader` leads: started when leadership starts, stopped (and awaited,
 * so the elector's step-down waits for it) when it ends. Transitions run one after the other; a failed start
 * is logged and waits for the next term.
 */
export function runWhileLeading<T extends { stop(): Promise<void> }>(
  leader: Leadership,
  start: () => Promise<T>,
  opts: { name: string; log: Logger },
): WhileLeading<T> {
  let current: T | undefined;
  let closed = false;
  let chain: Promise<void> = Promise.resolve();
  const serial = (fn: () => Promise<void>): Promise<void> =>
    (chain = chain
      .then(fn)
      .catch((e: unknown) => opts.log.error({ err: e, component: opts.name }, `${opts.name}: leadership transition failed`)));
  const stopCurrent = async (): Promise<void> => {
    const c = current;
    current = undefined;
    await c?.stop();
  };
  leader.onStartedLeading(() =>
    serial(async () => {
      if (!closed && !current) current = await start();
    }),
  );
  leader.onStoppedLeading(() => serial(stopCurrent));
  return {
    current: () => current,
    stop: () => {
      closed = true;
      return serial(stopCurrent);
    },
  };
}
