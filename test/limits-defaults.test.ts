/**
 * One source per default: what a component applies when given no value is what the limits table (and so
 * `serve --help` and docs/flags.md) names, and every flag's help shows the default its parsing gives. A second
 * literal somewhere (a component's own `?? 15_000`, a help text's "(default …)") that drifts fails here, where the
 * imports cannot tell.
 */
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { AGENT_FLAGS, SERVE_FLAGS, loadAgentConfig, loadServeConfig } from '../src/config.js';
import { workerOptions } from '../src/delivery/options.js';
import { DEFAULT_MAX_PENDING_EVENTS } from '../src/client/events.js';
import { HealthController } from '../src/emitter/health/controller.js';
import {
  DEFAULT_HEALTH_GRACE_PERIOD_MS,
  DEFAULT_HEALTH_ISSUING_GRACE_PERIOD_MS,
  DEFAULT_HEALTH_UNKNOWN_GRACE_PERIOD_MS,
} from '../src/emitter/health/diff.js';
import { HEALTH_KINDS } from '../src/emitter/health/observe.js';
import { DEFAULT_RENEWAL_OVERDUE_GRACE_MS } from '../src/emitter/health/renewal.js';
import { DEFAULT_SERVING_PROBE_INTERVAL_MS } from '../src/emitter/serving/prober.js';
import { ExpiryScanner } from '../src/expiry/scanner.js';
import { LIMITS, formatLimit, limitOf, limitSpec, type LimitKey } from '../src/limits.js';
import { LogBuckets } from '../src/log/limiter.js';
import { DEFAULT_CLUSTER_SILENCE_AFTER_MS } from '../src/model/inventory.js';
import { DEFAULT_LEASE_NAME, DEFAULT_RECONCILE_CONCURRENCY } from '../src/operator/index.js';
import { ReminderScanner } from '../src/reminders/scanner.js';
import { DEFAULT_RESYNC_MS } from '../src/runtime/controller.js';
import { LeaderElector, type LeaseLock } from '../src/runtime/leader.js';
import type { Clock } from '../src/runtime/timers.js';
import { DEFAULT_QUOTAS, quotaLimit } from '../src/service/quotas.js';

const log = pino({ level: 'silent' });
const never = {} as never;

/** A clock that records the delays asked of it and runs nothing by itself. */
function recordingClock(): Clock & { delays: number[]; fns: (() => void)[] } {
  const delays: number[] = [];
  const fns: (() => void)[] = [];
  return {
    delays,
    fns,
    now: () => 0,
    setTimeout: (fn, ms) => (delays.push(ms), fns.push(fn)),
    clearTimeout: () => {},
  };
}

const idleLock: LeaseLock = { get: async () => undefined, create: async () => true, update: async () => true };
/** A leader elector given no timings: its fields are what it runs with. */
const elector = (field: string) => () => Reflect.get(new LeaderElector({ lock: idleLock, identity: 'x', log }), field) as number;

/** Lines a fresh log bucket lets through at once. */
function logBurst(): number {
  const b = new LogBuckets();
  let n = 0;
  while (b.take('t', 'delivery_retry', 'warn', 0).ok) n++;
  return n;
}

/** Lines per minute a log bucket lets through under steady pressure (one attempt each 100 ms for 10 minutes). */
function logPerMinute(): number {
  const b = new LogBuckets();
  while (b.take('t', 'delivery_retry', 'warn', 0).ok);
  let n = 0;
  for (let t = 100; t <= 600_000; t += 100) if (b.take('t', 'delivery_retry', 'warn', t).ok) n++;
  return Math.round(n / 10);
}

function healthResync(): number {
  const informer = { on: () => {}, onList: () => {} };
  const c = new HealthController({
    informers: Object.fromEntries(HEALTH_KINDS.map((k) => [k, informer])) as never,
    state: never,
    sink: never,
    health: never,
    log,
  });
  return Reflect.get(c, 'resyncMs') as number;
}

/** The scanner's wait between rounds: a round against a store that fails at once, then the recorded sleep. */
async function reminderInterval(): Promise<number> {
  const clock = recordingClock();
  const s = new ReminderScanner({ store: never, log, clock });
  s.start();
  await vi.waitFor(() => expect(clock.delays).toHaveLength(1));
  await s.stop();
  return clock.delays[0]!;
}

async function expiryInterval(): Promise<number> {
  const clock = recordingClock();
  const s = new ExpiryScanner({ store: never, ingest: never, log, clock });
  s.start(); // the first round at once (0), the next one interval after it ends
  clock.fns[0]!();
  await vi.waitFor(() => expect(clock.delays).toHaveLength(2));
  await s.stop();
  return clock.delays[1]!;
}

/**
 * Per key: the default the component applies on its own, constructed where that is cheap, else the constant its
 * fallback reads; null where only serve's config reads the key (the table's default is then the only one).
 */
const COMPONENT_DEFAULT: Record<LimitKey, (() => number | Promise<number>) | null> = {
  maxRoutersPerCompany: () => quotaLimit('routers', undefined),
  maxIntegrationsPerCompany: () => quotaLimit('integrations', undefined),
  maxTemplatesPerCompany: () => quotaLimit('templates', undefined),
  maxSilencesPerCompany: () => quotaLimit('silences', undefined),
  maxClustersPerCompany: () => quotaLimit('clusters', undefined),
  maxCertificatesPerCompany: () => DEFAULT_QUOTAS.maxCertificatesPerCompany,
  maxIntegrationRate: null,
  clusterSilenceAfter: () => DEFAULT_CLUSTER_SILENCE_AFTER_MS,
  logRatePerMinute: logPerMinute,
  logRateBurst: logBurst,
  // createApp takes it required: serve's config is its one source
  requestTimeout: null,
  shutdownTimeout: null,
  deliveryWorkers: () => workerOptions().concurrency,
  deliveryTimeout: () => workerOptions().attemptTimeoutMs,
  deliveryMaxAge: () => workerOptions().maxAgeMs,
  deliveryRetryBase: () => workerOptions().baseDelayMs,
  expiryScanInterval: expiryInterval,
  reminderScanInterval: reminderInterval,
  leaseDuration: elector('leaseDurationMs'),
  renewDeadline: elector('renewDeadlineMs'),
  retryPeriod: elector('retryPeriodMs'),
  resyncPeriod: healthResync,
  reconcileConcurrency: () => DEFAULT_RECONCILE_CONCURRENCY,
  maxPendingEvents: () => DEFAULT_MAX_PENDING_EVENTS,
  healthGracePeriod: () => DEFAULT_HEALTH_GRACE_PERIOD_MS,
  healthUnknownGracePeriod: () => DEFAULT_HEALTH_UNKNOWN_GRACE_PERIOD_MS,
  healthIssuingGracePeriod: () => DEFAULT_HEALTH_ISSUING_GRACE_PERIOD_MS,
  healthRenewalOverdueGrace: () => DEFAULT_RENEWAL_OVERDUE_GRACE_MS,
  servingProbeInterval: () => DEFAULT_SERVING_PROBE_INTERVAL_MS,
};

describe('the limits table names the defaults the components apply', () => {
  it.each(LIMITS.map((l) => [l.key, COMPONENT_DEFAULT[l.key]] as const))('%s', async (key, componentDefault) => {
    if (componentDefault) expect(await componentDefault()).toBe(limitSpec(key).default);
    expect(limitOf({}, key)).toBe(limitSpec(key).default);
  });

  it('the operator and the emitter resync by the same default', () => {
    expect(healthResync()).toBe(DEFAULT_RESYNC_MS);
  });

  it('serve resolves every key to a value: absent keys carry the default to the components', () => {
    const c = loadServeConfig([], {});
    const k = c.kubeOptions;
    expect({
      leaseDuration: k.leaseDurationMs,
      renewDeadline: k.renewDeadlineMs,
      retryPeriod: k.retryPeriodMs,
      resyncPeriod: k.resyncMs,
      reconcileConcurrency: k.concurrency,
      healthGracePeriod: k.healthGracePeriodMs,
      healthUnknownGracePeriod: k.healthUnknownGracePeriodMs,
      healthIssuingGracePeriod: k.healthIssuingGracePeriodMs,
      healthRenewalOverdueGrace: k.healthRenewalOverdueGraceMs,
      servingProbeInterval: k.servingProbeIntervalMs,
      maxPendingEvents: k.maxPendingEvents,
      deliveryRetryBase: c.deliveryBaseDelayMs,
    }).toEqual({
      leaseDuration: limitSpec('leaseDuration').default,
      renewDeadline: limitSpec('renewDeadline').default,
      retryPeriod: limitSpec('retryPeriod').default,
      resyncPeriod: limitSpec('resyncPeriod').default,
      reconcileConcurrency: limitSpec('reconcileConcurrency').default,
      healthGracePeriod: limitSpec('healthGracePeriod').default,
      healthUnknownGracePeriod: limitSpec('healthUnknownGracePeriod').default,
      healthIssuingGracePeriod: limitSpec('healthIssuingGracePeriod').default,
      healthRenewalOverdueGrace: limitSpec('healthRenewalOverdueGrace').default,
      servingProbeInterval: limitSpec('servingProbeInterval').default,
      maxPendingEvents: limitSpec('maxPendingEvents').default,
      deliveryRetryBase: limitSpec('deliveryRetryBase').default,
    });
  });
});

/** The "(default X)" of a help text. */
const helpDefault = (flags: readonly { name: string; help: string }[], name: string): string | undefined =>
  /\(default ([^;)\s]+)/.exec(flags.find((f) => f.name === name)!.help)?.[1];

describe('a flag shows the default its parsing gives', () => {
  const serve = loadServeConfig([], {});
  it.each([
    ['port', serve.port],
    ['host', serve.host],
    ['store', serve.store],
    ['kube', serve.kube],
    ['log-level', serve.logLevel],
    ['log-format', serve.logFormat],
    ['incident-events-url', serve.incidentEventsUrl],
    ['opsgenie-api-url', serve.opsgenieApiUrl],
    ['smtp-from', serve.smtpFrom],
    ['leader-elect', serve.kubeOptions.leaderElect],
    ['emitter', serve.kubeOptions.emitter],
    // serve leaves it unset; the composition root passes the operator's name as the default
    ['lease-name', DEFAULT_LEASE_NAME],
  ])('serve --%s', (name, value) => {
    expect(helpDefault(SERVE_FLAGS, name)).toBe(String(value));
  });

  const agentRequired = ['--hub-url', 'http://hub', '--api-key-file', '/k', '--cluster-name', 'c'];
  const agent = loadAgentConfig(agentRequired, {});
  const duration = (key: LimitKey, ms: number) => formatLimit(limitSpec(key), ms);
  it.each([
    ['port', agent.port],
    ['host', agent.host],
    ['log-level', agent.logLevel],
    ['leader-elect', agent.leaderElect],
    ['max-pending-events', agent.maxPendingEvents],
    ['health-grace-period', duration('healthGracePeriod', agent.healthGracePeriodMs)],
    ['health-unknown-grace-period', duration('healthUnknownGracePeriod', agent.healthUnknownGracePeriodMs)],
    ['health-issuing-grace-period', duration('healthIssuingGracePeriod', agent.healthIssuingGracePeriodMs)],
    ['health-renewal-overdue-grace', duration('healthRenewalOverdueGrace', agent.healthRenewalOverdueGraceMs)],
    ['serving-probe-interval', duration('servingProbeInterval', agent.servingProbeIntervalMs)],
  ])('agent --%s', (name, value) => {
    expect(helpDefault(AGENT_FLAGS, name)).toBe(String(value));
  });

  it('the agent holds as many pending events as serve does by default', () => {
    expect(agent.maxPendingEvents).toBe(serve.kubeOptions.maxPendingEvents);
  });
});
