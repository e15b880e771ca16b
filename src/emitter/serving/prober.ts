/**
 * The prober: every endpoint discovery found (discover.ts) is probed (probe.ts) every `intervalMs`, soon after
 * its Secret's certificate changes (twice: when consumers usually reloaded, and once the reload grace passed),
 * and each probe turned into a verdict (verdict.ts). Probes are bounded in number at once (`concurrency`), in
 * rate (a token bucket, `ratePerSecond`) and in time (`timeoutMs`). The health controller and the inventory
 * reporter read the verdicts (ServingVerdicts, factsOf) and hear of their changes. See docs/serving.md.
 *
 * Memory: one small record per endpoint (its verdict, its place in the schedule) and one per TLS Secret with
 * endpoints; the Secret's leaf is read from the TLS Secret informer's cache, one copy per Secret.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ResilientInformer } from '../../kube/informer.js';
import { INVENTORY_LIMITS } from '../../model/inventory.js';
import { SERVING_LIMITS, SERVING_REASONS, type ServingEndpointFacts } from '../../model/serving.js';
import { servingAddressProblem, servingHostProblem } from '../../inventory/serving.js';
import { sanitizeText } from '../../events/sanitize.js';
import { realClock, type Clock } from '../../runtime/timers.js';
import type { TlsSecretFacts } from '../inventory/facts.js';
import { probeTls, type ProbeOutcome, type ProbeTarget } from './probe.js';
import { DueHeap, TokenBucket, firstProbeSpreadMs, nextProbe } from './schedule.js';
import { secretKeyOf, type Endpoint, type EndpointVerdict, type LeafIdentity, type SecretKey, type ServingVerdicts } from './types.js';
import { DEFAULT_RELOAD_GRACE_MS, DEFAULT_UNREACHABLE_GRACE_MS, sameCertificate, servingVerdict, type ProbeResult } from './verdict.js';

/** Default of `--serving-probe-interval`: every endpoint is probed this often. */
export const DEFAULT_SERVING_PROBE_INTERVAL_MS = 5 * 60_000;
/**
 * Probes started per second at most, per cluster: 10,000 endpoints every 5 minutes are 33 a second, two thirds
 * of it. Bursts are a tenth of a second's worth.
 */
export const DEFAULT_SERVING_PROBE_RATE = 50;
/** Probes in flight at most: at the rate, with every endpoint timing out, 64 keep up with 12 a second. */
export const DEFAULT_SERVING_PROBE_CONCURRENCY = 64;
/** One probe (name lookup, connect, TLS handshake) takes at most this long. */
export const DEFAULT_SERVING_PROBE_TIMEOUT_MS = 5_000;
/** After a Secret's certificate changes its endpoints are probed this long later, and again this long after the reload grace. */
export const RENEWAL_PROBE_DELAY_MS = 15_000;
/** Endpoints found after the start are probed within this long (spread, not all at once). */
const NEW_ENDPOINT_SPREAD_MS = 5_000;
/** The scheduler looks again at least this often (a timer far ahead is not set). */
const MAX_IDLE_MS = 60_000;
/** Secrets waiting for a consumer look-up at most; more get none. */
const MAX_QUEUED_LOOKUPS = 256;
/** A consumer look-up is reused for this long by the Secret's other endpoints turning non-ok. */
const LOOKUP_REUSE_MS = 10 * 60_000;
/**
 * A Secret whose verdicts did not change is told to the listeners again after this long, so the inventory's
 * checkedAt shows that probing goes on (a change is told at once).
 */
export const CHECKED_AT_REFRESH_MS = 60 * 60_000;

/** What the prober reads of discovery (serving/informers.ts EndpointIndex). */
export interface EndpointSource {
  endpointsOf(namespace: string, secretName: string): readonly Endpoint[];
  all(): Iterable<Endpoint>;
  onChange(cb: (namespace: string, secretName: string) => void): void;
}

export interface ServingProberOptions {
  endpoints: EndpointSource;
  /** the TLS Secret informer: the expected leaf, and renewals (a new serial) */
  secrets: Pick<ResilientInformer<TlsSecretFacts>, 'on' | 'get'>;
  /** workloads mounting a Secret (consumers.ts), looked up when one of its endpoints turns non-ok */
  consumers?: (namespace: string, secretName: string) => Promise<readonly string[]>;
  log: Logger;
  clock?: Clock;
  random?: () => number;
  intervalMs?: number;
  timeoutMs?: number;
  concurrency?: number;
  ratePerSecond?: number;
  unreachableGraceMs?: number;
  reloadGraceMs?: number;
  /** after a renewal, the first probe (default RENEWAL_PROBE_DELAY_MS) */
  renewalProbeDelayMs?: number;
  /** probe.ts probeTls (tests) */
  probe?: (target: ProbeTarget, opts: { timeoutMs: number; signal: AbortSignal }) => Promise<ProbeOutcome>;
}

/** One endpoint: its verdict and its place in the schedule. */
interface Probed {
  endpoint: Endpoint;
  readonly group: SecretGroup;
  verdict: EndpointVerdict;
  dueAt: number;
  heapAt: number;
  /** renewal probes still to come (ms epoch, ascending) */
  followUps: number[] | undefined;
  inFlight: boolean;
  removed: boolean;
}

/** The endpoints of one TLS Secret. */
interface SecretGroup {
  readonly namespace: string;
  readonly name: string;
  members: Probed[];
  /** the Secret's leaf as last read (one object, shared by the ok verdicts); undefined: none */
  expected: LeafIdentity | undefined;
  /** the serial seen last; null: no Secret or no leaf */
  serial: string | null;
  /** ms epoch: when a new certificate was seen in the Secret */
  changedAt: number | undefined;
  /** the last consumer look-up */
  consumers: { names: readonly string[]; at: number } | undefined;
  lookup: 'queued' | 'running' | undefined;
  /** ms epoch: when the listeners last heard of this Secret */
  toldAt: number | undefined;
  /** of()'s answer, built when read */
  verdicts: readonly EndpointVerdict[] | undefined;
}

const idOf = (e: Endpoint): string => `${e.source.kind}/${e.source.namespace}/${e.source.name}\n${e.host}\n${e.address ?? ''}`;
const isProblem = (v: EndpointVerdict): boolean => v.status in SERVING_REASONS;
const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());
const text = (v: string, max: number): string => sanitizeText(v, 'text', max).value;

/** A ParsedChain (ISO times) as a LeafIdentity. */
function leafOf(s: TlsSecretFacts | undefined): LeafIdentity | undefined {
  const c = s?.chain;
  if (!c) return undefined;
  return {
    serial: c.serial,
    issuer: c.issuer,
    subject: c.subject,
    dnsNames: c.dnsNames,
    notBefore: Date.parse(c.notBefore),
    notAfter: Date.parse(c.notAfter),
  };
}

/** What changes a verdict's readers care about (not checkedAt alone: that changes at every probe). */
const sameVerdict = (a: EndpointVerdict, b: EndpointVerdict): boolean =>
  a.status === b.status &&
  a.since === b.since &&
  a.address === b.address &&
  a.reason === b.reason &&
  a.served?.serial === b.served?.serial &&
  a.expected?.serial === b.expected?.serial &&
  a.consumers === b.consumers;

export class ServingProber implements ServingVerdicts {
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private readonly unreachableGraceMs: number;
  private readonly reloadGraceMs: number;
  private readonly bucket: TokenBucket;
  private readonly probe: NonNullable<ServingProberOptions['probe']>;
  private readonly groups = new Map<SecretKey, SecretGroup>();
  private readonly heap = new DueHeap<Probed>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly listeners: ((namespace: string, secretName: string) => void)[] = [];
  private readonly lookups: SecretGroup[] = [];
  private lookupRunning: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private wake: (() => void) | undefined;
  private loopPromise: Promise<void> | undefined;
  private started = false;
  readonly stats = { probes: 0, failures: 0, lookups: 0, lookupsDropped: 0 };

  constructor(private readonly opts: ServingProberOptions) {
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.intervalMs = opts.intervalMs ?? DEFAULT_SERVING_PROBE_INTERVAL_MS;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_SERVING_PROBE_TIMEOUT_MS;
    this.concurrency = Math.max(1, opts.concurrency ?? DEFAULT_SERVING_PROBE_CONCURRENCY);
    this.unreachableGraceMs = opts.unreachableGraceMs ?? DEFAULT_UNREACHABLE_GRACE_MS;
    this.reloadGraceMs = opts.reloadGraceMs ?? DEFAULT_RELOAD_GRACE_MS;
    const rate = opts.ratePerSecond ?? DEFAULT_SERVING_PROBE_RATE;
    this.bucket = new TokenBucket(rate, Math.max(1, Math.ceil(rate / 10)), this.clock.now());
    this.probe = opts.probe ?? probeTls;
    opts.endpoints.onChange((ns, name) => {
      if (this.started) this.sync(ns, name, NEW_ENDPOINT_SPREAD_MS);
    });
    const seen = (s: TlsSecretFacts): void => this.secretSeen(s.metadata.namespace, s.metadata.name, s);
    opts.secrets.on('add', seen);
    opts.secrets.on('update', seen);
    opts.secrets.on('delete', (s: KubernetesObject) => {
      const g = this.groups.get(secretKeyOf(s.metadata?.namespace ?? '', s.metadata?.name ?? ''));
      if (g) Object.assign(g, { expected: undefined, serial: null });
    });
  }

  /** Call once discovery and the TLS Secrets are synced: every endpoint known is scheduled, spread. */
  start(): void {
    if (this.started || this.abort.signal.aborted) return;
    this.started = true;
    const secrets = new Map<SecretKey, [string, string]>();
    let n = 0;
    for (const e of this.opts.endpoints.all()) {
      secrets.set(secretKeyOf(e.secret.namespace, e.secret.name), [e.secret.namespace, e.secret.name]);
      n++;
    }
    const spread = firstProbeSpreadMs(n, this.intervalMs, this.opts.ratePerSecond ?? DEFAULT_SERVING_PROBE_RATE);
    for (const [ns, name] of secrets.values()) this.sync(ns, name, spread);
    this.opts.log.info({ endpoints: n, secrets: secrets.size, intervalMs: this.intervalMs, spreadMs: spread }, 'serving prober started');
    this.loopPromise = this.loop().catch((e: unknown) => this.opts.log.error({ err: e }, 'serving prober failed'));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.wake?.();
    await this.loopPromise;
    await Promise.all([...this.inFlight]);
    await this.lookupRunning;
  }

  /** Endpoints known, probes in flight. */
  get size(): { endpoints: number; inFlight: number } {
    let endpoints = 0;
    for (const g of this.groups.values()) endpoints += g.members.length;
    return { endpoints, inFlight: this.inFlight.size };
  }

  of(namespace: string, secretName: string): readonly EndpointVerdict[] {
    const g = this.groups.get(secretKeyOf(namespace, secretName));
    if (!g) return [];
    return (g.verdicts ??= Object.freeze(g.members.map((m) => m.verdict)));
  }

  onChange(listener: (namespace: string, secretName: string) => void): void {
    this.listeners.push(listener);
  }

  /**
   * The Secret's endpoints as the inventory reports them: at most SERVING_LIMITS.endpoints, by host, within the
   * hub's rules (src/inventory/validate.ts): the hub refuses a whole report for one field it does not accept,
   * so an endpoint whose host or address it would refuse (a host discovery could not read) is left out.
   */
  factsOf(namespace: string, secretName: string): ServingEndpointFacts[] {
    const vs = this.of(namespace, secretName).filter(
      (v) =>
        v.host.length <= SERVING_LIMITS.host &&
        !servingHostProblem(v.host) &&
        (v.address === null || (v.address.length <= SERVING_LIMITS.address && !servingAddressProblem(v.address))) &&
        v.source.name !== '',
    );
    const order = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
    vs.sort((a, b) => order(a.host, b.host) || order(a.address ?? '', b.address ?? '') || order(a.source.name, b.source.name));
    return vs.slice(0, SERVING_LIMITS.endpoints).map((v) => {
      const reason = v.reason !== undefined ? text(v.reason, SERVING_LIMITS.reason) : '';
      return {
        host: v.host,
        address: v.address,
        source: { kind: v.source.kind, namespace: v.source.namespace, name: text(v.source.name, INVENTORY_LIMITS.name) },
        status: v.status,
        reason: reason || undefined,
        // as the Secret's serial (facts.ts clampFacts): the first digits of an over-long one
        servedSerial: v.served ? v.served.serial.slice(0, INVENTORY_LIMITS.serial) : null,
        servedNotAfter: iso(v.served?.notAfter),
        checkedAt: iso(v.checkedAt),
      };
    });
  }

  private emit(g: SecretGroup): void {
    g.verdicts = undefined;
    g.toldAt = this.clock.now();
    for (const l of this.listeners)
      try {
        l(g.namespace, g.name);
      } catch (e) {
        this.opts.log.error({ err: e }, 'serving verdict listener failed');
      }
  }

  /** The Secret's current leaf, reusing the object held when it is the same certificate. */
  private expectedOf(g: SecretGroup): LeafIdentity | undefined {
    const now = leafOf(this.opts.secrets.get(g.name, g.namespace));
    if (now && g.expected && sameCertificate(now, g.expected)) return g.expected;
    g.expected = now;
    return now;
  }

  /** A TLS Secret added or updated: a new certificate in a Secret with endpoints is a renewal. */
  private secretSeen(namespace: string, name: string, s: TlsSecretFacts): void {
    const g = this.groups.get(secretKeyOf(namespace, name));
    if (!g) return;
    const serial = s.chain?.serial ?? null;
    if (serial === g.serial) return;
    const before = g.serial;
    g.serial = serial;
    if (serial === null || !this.started) return;
    const now = this.clock.now();
    g.changedAt = now;
    this.opts.log.debug({ namespace, name, serial, before }, 'new certificate in a served Secret: probing its endpoints soon');
    const delay = this.opts.renewalProbeDelayMs ?? RENEWAL_PROBE_DELAY_MS;
    const followUps = [now + delay, now + this.reloadGraceMs + delay];
    for (const m of g.members) {
      if (m.endpoint.address === null) continue;
      m.followUps = followUps;
      if (!m.inFlight) this.schedule(m, Math.min(m.heapAt >= 0 ? m.dueAt : Infinity, followUps[0]!));
    }
  }

  private schedule(m: Probed, dueAt: number): void {
    // the loop sleeps until the head's time: an earlier head wakes it (the head may be `m` itself)
    const headAt = this.heap.peek()?.dueAt ?? Infinity;
    this.heap.set(m, dueAt);
    if (dueAt < headAt) this.wake?.();
  }

  /** Discovery's endpoints of one Secret → its group: new ones scheduled within `spreadMs`, gone ones dropped. */
  private sync(namespace: string, name: string, spreadMs: number): void {
    const key = secretKeyOf(namespace, name);
    const found = this.opts.endpoints.endpointsOf(namespace, name);
    let g = this.groups.get(key);
    if (!g && !found.length) return;
    if (!g) {
      const s = this.opts.secrets.get(name, namespace);
      g = {
        namespace,
        name,
        members: [],
        expected: undefined,
        serial: s?.chain?.serial ?? null,
        changedAt: undefined,
        consumers: undefined,
        lookup: undefined,
        toldAt: undefined,
        verdicts: undefined,
      };
      this.groups.set(key, g);
    }
    const now = this.clock.now();
    // ids built for this comparison only (kept per endpoint they were the largest part of its record)
    const old = new Map(g.members.map((m) => [idOf(m.endpoint), m]));
    const ids = new Set<string>();
    const members: Probed[] = [];
    let changed = false;
    for (const e of found) {
      const id = idOf(e);
      if (ids.has(id)) continue;
      ids.add(id);
      const m = old.get(id);
      if (m) {
        old.delete(id);
        m.endpoint = e;
        if (e.address === null && e.reason !== m.verdict.reason) {
          m.verdict = this.verdictOf(m, undefined, now);
          changed = true;
        }
        members.push(m);
        continue;
      }
      const fresh: Probed = {
        endpoint: e,
        group: g,
        verdict: undefined as unknown as EndpointVerdict,
        dueAt: Infinity,
        heapAt: -1,
        followUps: undefined,
        inFlight: false,
        removed: false,
      };
      fresh.verdict = this.verdictOf(fresh, undefined, now);
      if (e.address !== null) this.schedule(fresh, now + Math.floor(this.random() * spreadMs));
      members.push(fresh);
      changed = true;
    }
    for (const m of old.values()) {
      m.removed = true;
      this.heap.remove(m);
      changed = true;
    }
    g.members = members;
    if (!members.length) this.groups.delete(key);
    if (changed) this.emit(g);
  }

  private verdictOf(m: Probed, probe: ProbeResult | undefined, now: number): EndpointVerdict {
    const g = m.group;
    return servingVerdict({
      endpoint: m.endpoint,
      expected: this.expectedOf(g),
      expectedSince: g.changedAt,
      probe,
      previous: m.verdict,
      now,
      unreachableGraceMs: this.unreachableGraceMs,
      reloadGraceMs: this.reloadGraceMs,
    });
  }

  /**
   * Sleeps until `ms` passed (at most MAX_IDLE_MS), a wake-up or the stop. A timer and a resolver, not
   * AbortSignal.any: a signal combined with the long-lived stop signal at every sleep (one per probe at the
   * rate) left a WeakRef behind in it each time.
   */
  private idle(ms: number): Promise<void> {
    if (this.abort.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.clock.clearTimeout(timer);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = this.clock.setTimeout(done, Math.max(0, Math.min(ms, MAX_IDLE_MS)));
      this.wake = done;
    });
  }

  private async loop(): Promise<void> {
    while (!this.abort.signal.aborted) {
      const head = this.heap.peek();
      const now = this.clock.now();
      if (!head || head.dueAt > now) {
        await this.idle(head ? head.dueAt - now : MAX_IDLE_MS);
        continue;
      }
      if (this.inFlight.size >= this.concurrency) {
        await this.idle(MAX_IDLE_MS); // a probe ending wakes the loop
        continue;
      }
      const wait = this.bucket.take(now);
      if (wait > 0) {
        await this.idle(wait);
        continue;
      }
      this.heap.remove(head);
      const run = this.run(head, now).finally(() => {
        this.inFlight.delete(run);
        this.wake?.();
      });
      this.inFlight.add(run);
    }
  }

  private async run(m: Probed, startedAt: number): Promise<void> {
    m.inFlight = true;
    let out: ProbeOutcome;
    try {
      out = await this.probe(
        { host: m.endpoint.host, address: m.endpoint.address! },
        { timeoutMs: this.timeoutMs, signal: this.abort.signal },
      );
    } catch (e) {
      out = { kind: 'failed', error: e instanceof Error ? e.message : String(e) };
    } finally {
      m.inFlight = false;
    }
    if (this.abort.signal.aborted || m.removed) return;
    const now = this.clock.now();
    this.stats.probes++;
    if (out.kind === 'failed') this.stats.failures++;
    const next = nextProbe(startedAt, now, this.intervalMs, m.followUps);
    m.followUps = next.followUps;
    this.schedule(m, next.dueAt);
    const probe: ProbeResult =
      out.kind === 'served' ? { kind: 'served', leaf: out.leaf, at: now } : { kind: 'failed', error: out.error, at: now };
    const before = m.verdict;
    let v = this.verdictOf(m, probe, now);
    const g = m.group;
    if (isProblem(v) && !v.consumers && this.opts.consumers) {
      if (g.consumers && now - g.consumers.at < LOOKUP_REUSE_MS) v = { ...v, consumers: g.consumers.names };
      else this.queueLookup(g);
    }
    m.verdict = v;
    g.verdicts = undefined;
    const changed = !sameVerdict(before, v);
    if (changed || g.toldAt === undefined || now - g.toldAt >= CHECKED_AT_REFRESH_MS) {
      // a problem starting or ending is worth a line; the first ok of each endpoint (thousands at start) is not
      if (v.status !== before.status)
        this.opts.log[isProblem(v) || isProblem(before) ? 'info' : 'debug'](
          {
            namespace: g.namespace,
            secret: g.name,
            host: v.host,
            address: v.address,
            status: v.status,
            was: before.status,
            reason: v.reason,
          },
          'serving verdict changed',
        );
      this.emit(g);
    }
  }

  /** One look-up at a time, a bounded queue; its names go to every endpoint of the Secret with an open problem. */
  private queueLookup(g: SecretGroup): void {
    if (g.lookup) return;
    if (this.lookups.length >= MAX_QUEUED_LOOKUPS) {
      this.stats.lookupsDropped++;
      return;
    }
    g.lookup = 'queued';
    this.lookups.push(g);
    this.lookupRunning ??= this.runLookups().finally(() => (this.lookupRunning = undefined));
  }

  private async runLookups(): Promise<void> {
    for (let g = this.lookups.shift(); g && !this.abort.signal.aborted; g = this.lookups.shift()) {
      g.lookup = 'running';
      let names: readonly string[] = [];
      try {
        names = await this.opts.consumers!(g.namespace, g.name);
      } catch (e) {
        this.opts.log.debug({ err: e, namespace: g.namespace, secret: g.name }, 'consumer look-up failed');
      }
      g.lookup = undefined;
      this.stats.lookups++;
      if (this.abort.signal.aborted) return;
      g.consumers = { names: Object.freeze([...names]), at: this.clock.now() };
      let changed = false;
      for (const m of g.members)
        if (isProblem(m.verdict) && !m.verdict.consumers) {
          m.verdict = { ...m.verdict, consumers: g.consumers.names };
          changed = true;
        }
      if (changed && this.groups.get(secretKeyOf(g.namespace, g.name)) === g) this.emit(g);
    }
  }
}
