/**
 * The limits file of `serve` (--limits-file): quotas, rates, timeouts, intervals and concurrency, the tuning an
 * operator rarely changes, kept off the command line. One YAML mapping; every key is optional. This table is the one
 * place of each key's bounds and help, and names its default: the loader, `serve --help` and docs/flags.md all read
 * it. A default the component also applies on its own (a constructor given no value) is the component's exported
 * constant, imported here, so that it is written once.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_MAX_PENDING_EVENTS } from './client/events.js';
import { DEFAULT_WORKER_OPTIONS } from './delivery/options.js';
import {
  DEFAULT_HEALTH_GRACE_PERIOD_MS,
  DEFAULT_HEALTH_ISSUING_GRACE_PERIOD_MS,
  DEFAULT_HEALTH_UNKNOWN_GRACE_PERIOD_MS,
} from './emitter/health/diff.js';
import { DEFAULT_RENEWAL_OVERDUE_GRACE_MS } from './emitter/health/renewal.js';
import { DEFAULT_SERVING_PROBE_INTERVAL_MS } from './emitter/serving/prober.js';
import { DEFAULT_EXPIRY_SCAN_INTERVAL_MS } from './expiry/decide.js';
import { DEFAULT_LOG_LIMITS } from './log/limiter.js';
import { DEFAULT_CLUSTER_SILENCE_AFTER_MS } from './model/inventory.js';
import { DEFAULT_RECONCILE_CONCURRENCY } from './operator/index.js';
import { DEFAULT_REMINDER_SCAN_INTERVAL_MS } from './reminders/scanner.js';
import { DEFAULT_RESYNC_MS } from './runtime/controller.js';
import { DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_DEADLINE_MS, DEFAULT_RETRY_PERIOD_MS } from './runtime/leader.js';
import { DEFAULT_QUOTAS } from './service/quotas.js';
import { DURATION_EXAMPLES, formatDuration, parseDuration } from './validation/duration.js';

export interface LimitSpec {
  key: string;
  /** count: a whole number; duration: written like 30s or 5m, held in ms */
  kind: 'count' | 'duration';
  /** the value when the key is absent (ms for durations) */
  default: number;
  min: number;
  max: number;
  /** 0 is accepted besides [min, max]: it turns the thing off */
  zeroOff?: boolean;
  help: string;
}

const H = 3_600_000;
const M = 60_000;
const S = 1_000;
const D = 24 * H;

export const LIMITS = [
  // quotas: one more is refused with QUOTA_EXCEEDED
  {
    key: 'maxRoutersPerCompany',
    kind: 'count',
    default: DEFAULT_QUOTAS.maxRoutersPerCompany,
    min: 1,
    max: 100_000,
    help: 'routers a company may have; one more is refused with QUOTA_EXCEEDED',
  },
  {
    key: 'maxIntegrationsPerCompany',
    kind: 'count',
    default: DEFAULT_QUOTAS.maxIntegrationsPerCompany,
    min: 1,
    max: 100_000,
    help: 'integrations a company may have; one more is refused with QUOTA_EXCEEDED',
  },
  {
    key: 'maxTemplatesPerCompany',
    kind: 'count',
    default: DEFAULT_QUOTAS.maxTemplatesPerCompany,
    min: 1,
    max: 100_000,
    help: 'notification templates a company may have; one more is refused with QUOTA_EXCEEDED',
  },
  {
    key: 'maxSilencesPerCompany',
    kind: 'count',
    default: DEFAULT_QUOTAS.maxSilencesPerCompany,
    min: 1,
    max: 100_000,
    help: 'active and pending silences a company may have; one more is refused with QUOTA_EXCEEDED',
  },
  {
    key: 'maxClustersPerCompany',
    kind: 'count',
    default: DEFAULT_QUOTAS.maxClustersPerCompany,
    min: 1,
    max: 1_000_000,
    help: 'inventory: clusters a company may report; a new one more is refused with QUOTA_EXCEEDED',
  },
  {
    key: 'maxCertificatesPerCompany',
    kind: 'count',
    default: DEFAULT_QUOTAS.maxCertificatesPerCompany,
    min: 1,
    max: 1_000_000_000,
    help: 'inventory: certificates a company may hold over all its clusters; a report growing past it is refused',
  },
  // integrations
  {
    key: 'maxIntegrationRate',
    kind: 'count',
    default: 0,
    min: 0,
    max: 10_000,
    help: "the highest rateLimit.perSecond a tenant may set on an integration; a higher one, or 0 (unlimited), is refused naming this key; 0: no bound. The types' defaults apply either way",
  },
  {
    key: 'clusterSilenceAfter',
    kind: 'duration',
    default: DEFAULT_CLUSTER_SILENCE_AFTER_MS,
    min: 1,
    max: 30 * D,
    help: 'inventory: time without a report after which a cluster counts as silent (metric, GraphQL, log)',
  },
  // logs
  {
    key: 'logRatePerMinute',
    kind: 'count',
    default: DEFAULT_LOG_LIMITS.perMinute,
    min: 1,
    max: 1_000_000,
    help: 'per-event/per-delivery log lines per minute for each tenant and cause; the rest are counted and summarized',
  },
  {
    key: 'logRateBurst',
    kind: 'count',
    default: DEFAULT_LOG_LIMITS.burst,
    min: 1,
    max: 1_000_000,
    help: 'log lines a tenant and cause may write at once before logRatePerMinute applies',
  },
  // HTTP
  {
    key: 'requestTimeout',
    kind: 'duration',
    default: 30 * S,
    min: 100,
    max: 10 * M,
    help: 'to receive and answer one HTTP request: a request still arriving then gets 408, one received but not answered 503',
  },
  {
    key: 'shutdownTimeout',
    kind: 'duration',
    default: 10 * S,
    min: 0,
    max: 10 * M,
    help: 'a graceful stop waits this long for in-flight requests before closing connections',
  },
  // delivery
  {
    key: 'deliveryWorkers',
    kind: 'count',
    default: DEFAULT_WORKER_OPTIONS.concurrency,
    min: 0,
    max: 256,
    help: 'concurrent deliveries in this process; 0 = accept and serve only, deliver elsewhere',
  },
  {
    key: 'deliveryTimeout',
    kind: 'duration',
    default: DEFAULT_WORKER_OPTIONS.attemptTimeoutMs,
    min: 100,
    max: 10 * M,
    help: 'one delivery attempt',
  },
  {
    key: 'deliveryMaxAge',
    kind: 'duration',
    default: DEFAULT_WORKER_OPTIONS.maxAgeMs,
    min: S,
    max: 30 * D,
    help: 'a delivery still failing after this long is given up (dead-lettered)',
  },
  {
    key: 'deliveryRetryBase',
    kind: 'duration',
    default: DEFAULT_WORKER_OPTIONS.baseDelayMs,
    min: 1,
    max: 10 * M,
    help: 'first retry delay; doubles per attempt with full jitter, capped at 10m',
  },
  // the hub's scans
  {
    key: 'expiryScanInterval',
    kind: 'duration',
    default: DEFAULT_EXPIRY_SCAN_INTERVAL_MS,
    min: S,
    max: 7 * D,
    help: "the hub evaluates the certificate inventory's expirations this often",
  },
  {
    key: 'reminderScanInterval',
    kind: 'duration',
    default: DEFAULT_REMINDER_SCAN_INTERVAL_MS,
    min: 50,
    max: H,
    help: "due reminders (a router's repeatInterval) are looked for this often; a reminder is at most this late",
  },
  // operator and leader election (--kube)
  {
    key: 'leaseDuration',
    kind: 'duration',
    default: DEFAULT_LEASE_DURATION_MS,
    min: S,
    max: H,
    help: 'leader election: how long a Lease holds without renewal',
  },
  {
    key: 'renewDeadline',
    kind: 'duration',
    default: DEFAULT_RENEW_DEADLINE_MS,
    min: 500,
    max: H,
    help: 'leader election: the leader gives up leading when it could not renew for this long',
  },
  {
    key: 'retryPeriod',
    kind: 'duration',
    default: DEFAULT_RETRY_PERIOD_MS,
    min: 100,
    max: 10 * M,
    help: 'leader election: how often a candidate tries to acquire or renew',
  },
  {
    key: 'resyncPeriod',
    kind: 'duration',
    default: DEFAULT_RESYNC_MS,
    min: S,
    max: D,
    help: 'operator and emitter: every object is reconciled at least this often, reverting API drift',
  },
  {
    key: 'reconcileConcurrency',
    kind: 'count',
    default: DEFAULT_RECONCILE_CONCURRENCY,
    min: 1,
    max: 64,
    help: 'operator: concurrent reconciles per controller',
  },
  // emitter (--kube with --emitter)
  {
    key: 'maxPendingEvents',
    kind: 'count',
    default: DEFAULT_MAX_PENDING_EVENTS,
    min: 1,
    max: 10_000_000,
    help: 'emitter: health events waiting for the service at most; more are refused and derived again later',
  },
  {
    key: 'healthGracePeriod',
    kind: 'duration',
    default: DEFAULT_HEALTH_GRACE_PERIOD_MS,
    min: 0,
    max: D,
    help: 'emitter: Ready=False this long before .notready',
  },
  {
    key: 'healthUnknownGracePeriod',
    kind: 'duration',
    default: DEFAULT_HEALTH_UNKNOWN_GRACE_PERIOD_MS,
    min: 0,
    max: D,
    help: 'emitter: Ready=Unknown or missing this long before .notready',
  },
  {
    key: 'healthIssuingGracePeriod',
    kind: 'duration',
    default: DEFAULT_HEALTH_ISSUING_GRACE_PERIOD_MS,
    min: 0,
    max: D,
    help: 'emitter: first issuance in progress this long before .notready',
  },
  {
    key: 'healthRenewalOverdueGrace',
    kind: 'duration',
    default: DEFAULT_RENEWAL_OVERDUE_GRACE_MS,
    min: M,
    max: 30 * D,
    help: 'emitter: a Ready Certificate whose status.renewalTime passed this long ago without a new certificate is unhealthy (RenewalOverdue)',
  },
  {
    key: 'servingProbeInterval',
    kind: 'duration',
    default: DEFAULT_SERVING_PROBE_INTERVAL_MS,
    min: 10 * S,
    max: D,
    zeroOff: true,
    help: "emitter: every Ingress and Gateway host with a TLS Secret is probed (a TLS handshake) this often and its served certificate held against the Secret's (docs/serving.md); 0 turns probing off",
  },
] as const satisfies readonly LimitSpec[];

export type LimitKey = (typeof LIMITS)[number]['key'];
/** The keys a file gave, validated (durations in ms). */
export type GivenLimits = Partial<Record<LimitKey, number>>;

export class LimitsError extends Error {}

const SPEC = new Map<string, LimitSpec>(LIMITS.map((l) => [l.key, l]));

export function limitSpec(key: LimitKey): LimitSpec {
  return SPEC.get(key)!;
}

/** A value as the file writes it: 5m, 1000. */
export function formatLimit(spec: LimitSpec, v: number): string {
  return spec.kind === 'duration' ? (v === 0 ? '0' : formatDuration(v)) : String(v);
}

/** The range a value must be in, as a message says it. */
export function limitRange(spec: LimitSpec): string {
  const range = `between ${formatLimit(spec, spec.min)} and ${formatLimit(spec, spec.max)}`;
  return spec.zeroOff ? `0 (off) or ${range}` : range;
}

const shown = (v: unknown) => (typeof v === 'string' ? `'${v.slice(0, 100)}'` : (JSON.stringify(v)?.slice(0, 100) ?? String(v)));

/**
 * One value of a limit (from the file, or from a duration flag that shares its spec): its number, or a message
 * naming what is wrong, without the key (the caller says where).
 */
export function limitValue(spec: LimitSpec, raw: unknown): number | string {
  let n: number | undefined;
  if (spec.kind === 'count') {
    if (typeof raw !== 'number' || !Number.isSafeInteger(raw)) return `must be a whole number (${limitRange(spec)}), got ${shown(raw)}`;
    n = raw;
  } else {
    // a bare number (YAML 5000) would leave its unit to guess: only 0 may be written without one
    if (raw === 0) n = 0;
    else if (typeof raw !== 'string' || (n = parseDuration(raw)) === undefined) return `must be ${DURATION_EXAMPLES}, got ${shown(raw)}`;
  }
  if (n === 0 && spec.zeroOff) return 0;
  if (n < spec.min || n > spec.max) return `must be ${limitRange(spec)}, got ${shown(raw)}`;
  return n;
}

/** A parsed limits document: every key known and valid, or a LimitsError naming the key and `where`. */
export function parseLimits(doc: unknown, where: string): GivenLimits {
  if (doc === null || doc === undefined) return {}; // an empty file: every default
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new LimitsError(`${where}: expected a mapping of limits (e.g. maxRoutersPerCompany: 500, deliveryTimeout: 10s)`);
  const out: GivenLimits = {};
  for (const [key, raw] of Object.entries(doc)) {
    const spec = SPEC.get(key);
    if (!spec) throw new LimitsError(`${where}: unknown key '${key.slice(0, 60)}'; known keys: ${LIMITS.map((l) => l.key).join(', ')}`);
    const v = limitValue(spec, raw);
    if (typeof v === 'string') throw new LimitsError(`${where}: ${key} ${v}`);
    out[key as LimitKey] = v;
  }
  return out;
}

/** --limits-file <path>: read, parsed and validated; messages name the file and the key. */
export function loadLimitsFile(path: string): GivenLimits {
  const where = `--limits-file ${path}`;
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new LimitsError(`${where}: ${(e as Error).message}`);
  }
  return parseLimits(doc, where);
}

/** A limit's value: the file's, else its default. */
export function limitOf(given: GivenLimits, key: LimitKey): number {
  return given[key] ?? limitSpec(key).default;
}
