/**
 * Command-line and environment configuration, parsed once at the edge.
 * Every flag --foo-bar may also come from CERTMGR_NOTIFY_FOO_BAR (flags win).
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { LimitsError, formatLimit, limitOf, limitSpec, limitValue, loadLimitsFile, type GivenLimits, type LimitKey } from './limits.js';
import { DEFAULT_CLUSTER_NAME } from './emitter/cluster.js';
import { parseEgressAllow, type EgressAllow } from './integrations/egress.js';
import { parseSenderDomains } from './integrations/email-address.js';
import { DEFAULT_INCIDENT_EVENTS_URL, DEFAULT_OPSGENIE_API_URL } from './integrations/types.js';
import { DEFAULT_LEASE_NAME } from './operator/index.js';

export const DEFAULT_COMPANY_ID = '00000000-0000-4000-8000-000000000001';
/** The admission webhook's HTTPS port (on --host). */
const WEBHOOK_PORT = 9443;
/** Defaults of flags (each written once: the help texts and the parsing read them). */
const DEFAULT_PORT = 8080;
const DEFAULT_HOST = '0.0.0.0';
const DEFAULT_DATA_DIR = './data';
const DEFAULT_STORE = `sqlite:${DEFAULT_DATA_DIR}/certmgr-notify.db`;
const DEFAULT_LOG_LEVEL = 'info';
const DEFAULT_LOG_FORMAT = 'json';
const DEFAULT_KUBE = 'auto';
const DEFAULT_SMTP_FROM = 'certmgr-notify@localhost';
const DEFAULT_LEADER_ELECT = true;
const DEFAULT_EMITTER = true;
const DEFAULT_OPERATOR = false;
/** The key of --service-api-key-secret <namespace>/<name>[:key] when none is written. */
const DEFAULT_SECRET_KEY = 'api-key';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What a key may do (see src/http/auth.ts): `admin` everything, `agent` post events only, `read` queries only. */
export const API_KEY_SCOPES = ['admin', 'agent', 'read'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export interface ApiKeyEntry {
  key: string;
  companyId: string;
  /** Absent: admin. */
  scope?: ApiKeyScope | undefined;
}

export interface ServeConfig {
  port: number;
  host: string;
  store: string;
  apiKeys: ApiKeyEntry[];
  apiKeysFile: string | undefined;
  /** Where a generated key is written when none is configured. */
  apiKeyPath: string;
  companyId: string;
  kube: 'auto' | 'off' | 'on';
  logLevel: string;
  /** json (one object a line, the default) or pretty (pino-pretty, for a person at a terminal) */
  logFormat: 'json' | 'pretty';
  incidentEventsUrl: string;
  /** Opsgenie Alert API base (OPSGENIE integrations); trusted like incidentEventsUrl. */
  opsgenieApiUrl: string;
  smtpUrl: string | undefined;
  /** Tenant destinations allowed despite the egress deny-list (loopback, private, link-local, metadata). */
  egressAllow: EgressAllow;
  smtpFrom: string;
  /** Sender domains an EMAIL integration's from may use (`example.com`, `*.example.com`); default: smtpFrom's domain. */
  smtpSenderDomains: string[];
  /** Keys sealing integration secrets at rest; undefined: see secretKeySource (SQLite generates one). */
  secretKeyFile: string | undefined;
  /** Per-tenant, per-cause log rate limit: lines per minute and burst. */
  logRateLimitPerMinute: number;
  logRateBurst: number;
  deliveryTimeoutMs: number;
  /**
   * This process's one stable name (--instance-id; default hostname = the pod name
   * in Kubernetes): owner of its delivery claims AND its leader-election identity, so a restart of the same pod
   * finds its own claims and its own Lease and continues at once.
   */
  instanceId: string;
  deliveryMaxAgeMs: number;
  /** The hub's expiry evaluation over the inventory runs this often (src/expiry/scanner.ts). */
  expiryScanIntervalMs: number;
  /** Due reminders are looked for this often (src/reminders/scanner.ts). */
  reminderScanIntervalMs: number;
  /** Concurrent deliveries of this replica; 0 = this replica only serves the API and accepts events. */
  deliveryWorkers: number;
  /** First retry delay (full jitter doubles it per attempt); tests shorten it. */
  deliveryBaseDelayMs: number;
  /** Every HTTP request is received and answered within this (ms); also bounds slow request senders. */
  requestTimeoutMs: number;
  /** On SIGTERM, in-flight requests get this long (ms) before remaining connections are closed. */
  shutdownTimeoutMs: number;
  /** Per-company quotas: creating one more is refused with QUOTA_EXCEEDED. */
  maxRoutersPerCompany: number;
  maxIntegrationsPerCompany: number;
  /** Inventory: clusters and certificate rows a company may have; when a cluster counts as silent. */
  maxClustersPerCompany: number;
  maxCertificatesPerCompany: number;
  /** Notification templates a company may have. */
  maxTemplatesPerCompany: number;
  /** Silences a company may have, not counting ended ones. */
  maxSilencesPerCompany: number;
  /** The highest rateLimit.perSecond a tenant may set on an integration; 0: no bound (unlimited allowed too). */
  maxIntegrationRate: number;
  clusterSilenceAfterMs: number;
  serviceUrl: string | undefined;
  serviceApiKey: string | undefined;
  /** Admission webhook: served (HTTPS) when a directory with tls.crt/tls.key is given. */
  webhookCertDir: string | undefined;
  webhookPort: number;
  /** Operator in remote mode: the API key comes from this Secret (namespace/name[:key]). */
  serviceApiKeySecret: { namespace: string; name: string; key: string } | undefined;
  kubeOptions: {
    watchNamespace: string | undefined;
    leaderElect: boolean;
    leaseName: string | undefined;
    leaseNamespace: string | undefined;
    leaseDurationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
    resyncMs: number;
    concurrency: number;
    clusterName: string | undefined;
    clusterId: string | undefined;
    emitter: boolean;
    emitterWatchNamespace: string | undefined;
    healthGracePeriodMs: number;
    healthUnknownGracePeriodMs: number;
    healthIssuingGracePeriodMs: number;
    healthRenewalOverdueGraceMs: number;
    /** the emitter's serving probes (docs/serving.md): every endpoint this often; 0: off */
    servingProbeIntervalMs: number;
    maxPendingEvents: number;
  };
  /** The web console's built files, served at /ui (src/http/console.ts). */
  consoleDir: string;
  /** The hub's external URL without a trailing slash (template variable consoleUrl); undefined: not known. */
  publicUrl: string | undefined;
}

export class ConfigError extends Error {}

interface FlagSpec {
  name: string;
  /** bool: `--flag` alone means true; `--flag=true|false` too (never takes the next argument) */
  kind: 'string' | 'int' | 'list' | 'bool' | 'duration';
  help: string;
}

export const SERVE_FLAGS: FlagSpec[] = [
  { name: 'port', kind: 'int', help: `HTTP port (default ${DEFAULT_PORT})` },
  { name: 'host', kind: 'string', help: `listen address (default ${DEFAULT_HOST})` },
  {
    name: 'store',
    kind: 'string',
    help: `sqlite:<path> | sqlite::memory: | postgres://… (default ${DEFAULT_STORE}); with no API key configured, a generated one is written to <store dir>/api-key (${DEFAULT_DATA_DIR}/api-key when the store is no SQLite file)`,
  },
  {
    name: 'api-key',
    kind: 'list',
    help: 'API key of the default company (repeatable; env: comma-separated). Prefer the environment variable or --api-keys-file: on the command line a key shows in ps and npm start echoes it',
  },
  {
    name: 'api-keys-file',
    kind: 'string',
    help: 'YAML file: keys: [{key, companyId, scope}]; scope admin (default), agent (post events only) or read (queries only)',
  },
  { name: 'kube', kind: 'string', help: `auto | off | on: whether the Kubernetes parts start (default ${DEFAULT_KUBE})` },
  { name: 'log-level', kind: 'string', help: `pino level (default ${DEFAULT_LOG_LEVEL})` },
  {
    name: 'log-format',
    kind: 'string',
    help: `json | pretty: one JSON object a line, or readable lines for a terminal (default ${DEFAULT_LOG_FORMAT})`,
  },
  { name: 'incident-events-url', kind: 'string', help: `incident management events API base (default ${DEFAULT_INCIDENT_EVENTS_URL})` },
  {
    name: 'opsgenie-api-url',
    kind: 'string',
    help: `Opsgenie API base of OPSGENIE integrations (default ${DEFAULT_OPSGENIE_API_URL}; EU accounts: https://api.eu.opsgenie.com)`,
  },
  { name: 'smtp-url', kind: 'string', help: 'SMTP server for email integrations, e.g. smtp://user:pass@host:587' },
  {
    name: 'egress-allow',
    kind: 'list',
    help: 'CIDR, IP or host name (*.domain for subdomains) that tenant URLs (webhook, Slack, Teams, Google Chat, Discord, generic webhook) may reach despite the egress deny-list of loopback, private, link-local and metadata destinations (repeatable; env: comma-separated)',
  },
  { name: 'smtp-from', kind: 'string', help: `sender address of emails (default ${DEFAULT_SMTP_FROM})` },
  {
    name: 'smtp-sender-domains',
    kind: 'list',
    help: "domains an email integration's from may use on the SMTP relay: example.com, or *.example.com for its subdomains (repeatable; env: comma-separated; default: only the domain of --smtp-from)",
  },
  {
    name: 'secret-key-file',
    kind: 'string',
    help: 'keys sealing integration secrets at rest, one <keyId>:<base64 of 32 bytes> per line; the first encrypts, all decrypt (default: SQLite generates <store dir>/secret-key; required with PostgreSQL)',
  },
  {
    name: 'limits-file',
    kind: 'string',
    help: 'YAML file of quotas, rates, timeouts, intervals and concurrency (every key optional; docs/flags.md#the-limits-file lists them with their defaults)',
  },
  { name: 'service-url', kind: 'string', help: 'operator: a remote service to reconcile into (default: this process)' },
  {
    name: 'service-api-key',
    kind: 'string',
    help: 'operator: API key for --service-url (prefer --service-api-key-secret or the environment variable: on the command line it shows in ps)',
  },
  {
    name: 'service-api-key-secret',
    kind: 'string',
    help: `operator: <namespace>/<name>[:key] of the Secret holding the key for --service-url (key default ${DEFAULT_SECRET_KEY})`,
  },
  {
    name: 'webhook-cert-dir',
    kind: 'string',
    help: `serve the validating admission webhook (HTTPS on --host, port ${WEBHOOK_PORT}) with <dir>/tls.crt and tls.key (reloaded on rotation)`,
  },
  { name: 'watch-namespace', kind: 'string', help: 'operator: watch only this namespace (default all)' },
  {
    name: 'leader-elect',
    kind: 'string',
    help: `true | false: Lease leader election; only the leader reconciles and delivers (default ${DEFAULT_LEADER_ELECT})`,
  },
  { name: 'lease-name', kind: 'string', help: `leader election Lease name (default ${DEFAULT_LEASE_NAME})` },
  {
    name: 'lease-namespace',
    kind: 'string',
    help: "namespace of the leader election Lease and the emitter's state ConfigMaps (default the pod's, else default)",
  },
  {
    name: 'instance-id',
    kind: 'string',
    help: "this process's name: owner of its delivery claims and its leader election identity; stable across a restart (a restarted pod then resends and leads at once), unique among live processes (default hostname; in Kubernetes the pod name)",
  },
  {
    name: 'cluster-name',
    kind: 'string',
    help: `this cluster's name: clusterName of health events (default ${DEFAULT_CLUSTER_NAME}) and managedBy suffix when several clusters share one service`,
  },
  { name: 'cluster-id', kind: 'string', help: 'clusterId (UUID) of health events (default the kube-system namespace uid)' },
  {
    name: 'emitter',
    kind: 'string',
    help: `true | false: watch cert-manager Issuers/Certificates and TLS Secrets and emit health and expiration events (default ${DEFAULT_EMITTER} with --kube)`,
  },
  { name: 'emitter-watch-namespace', kind: 'string', help: 'emitter: watch only this namespace (ClusterIssuers always; default all)' },
  {
    name: 'public-url',
    kind: 'string',
    help: "the hub's external http(s) URL, e.g. https://certmgr-notify.example.com: notifications link to its console (template variable consoleUrl)",
  },
];

export type RawFlags = Map<string, string[]>;

/** Parses `--flag value`, `--flag=value`; unknown flags are an error naming the flag. */
function parseFlags(argv: string[], specs: FlagSpec[]): RawFlags {
  const out: RawFlags = new Map();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument '${arg}'`);
    let name = arg.slice(2);
    let value: string | undefined;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    const spec = specs.find((s) => s.name === name);
    if (!spec) throw new ConfigError(`unknown flag --${name}; known flags: ${specs.map((s) => '--' + s.name).join(', ')}`);
    if (value === undefined && spec.kind === 'bool') value = 'true';
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new ConfigError(`flag --${name} needs a value`);
    }
    const list = out.get(name) ?? [];
    list.push(value);
    out.set(name, list);
  }
  return out;
}

export function envName(flag: string): string {
  return 'CERTMGR_NOTIFY_' + flag.toUpperCase().replace(/-/g, '_');
}

function pick(flags: RawFlags, env: NodeJS.ProcessEnv, name: string): string[] | undefined {
  const f = flags.get(name);
  if (f && f.length) return f;
  const e = env[envName(name)];
  if (e !== undefined && e !== '')
    // a list flag's variable holds its values comma-separated
    return SERVE_FLAGS.some((x) => x.name === name && x.kind === 'list')
      ? e
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : [e];
  return undefined;
}

function one(flags: RawFlags, env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = pick(flags, env, name);
  return v ? v[v.length - 1] : undefined;
}

function int(flags: RawFlags, env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number): number {
  const raw = one(flags, env, name);
  if (raw === undefined) return def;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`--${name} must be an integer, got '${raw}'`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`--${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** A flag holding a limit (a duration such as 30s or 5m, a count): its value, else the limit's default. */
function flagLimit(flags: RawFlags, env: NodeJS.ProcessEnv, name: string, key: LimitKey): number {
  const raw = one(flags, env, name);
  const spec = limitSpec(key);
  if (raw === undefined) return spec.default;
  const v = limitValue(spec, spec.kind === 'count' && /^\d+$/.test(raw) ? Number(raw) : raw);
  if (typeof v === 'string') throw new ConfigError(`--${name} ${v}`);
  return v;
}

function uuidOpt(v: string | undefined, name: string): string | undefined {
  if (v !== undefined && !UUID_RE.test(v)) throw new ConfigError(`--${name} must be a UUID, got '${v}'`);
  return v?.toLowerCase();
}

/** --instance-id: printable ASCII without spaces, ≤ 253 (a DNS name / pod name fits); default the hostname. */
export function instanceIdOf(v: string | undefined, host: () => string = hostname): string {
  const id = v ?? host();
  if (!/^[\x21-\x7e]{1,253}$/.test(id))
    throw new ConfigError(
      `--instance-id must be 1 to 253 printable ASCII characters without spaces${v === undefined ? ' (the hostname is not; set --instance-id)' : ''}`,
    );
  return id;
}

function bool(v: string | undefined, name: string, def: boolean): boolean {
  if (v === undefined) return def;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new ConfigError(`--${name} must be true or false, got '${v}'`);
}

function parseSecretRef(v: string | undefined): ServeConfig['serviceApiKeySecret'] {
  if (v === undefined) return undefined;
  const m = /^([a-z0-9-]{1,63})\/([a-z0-9.-]{1,253})(?::([A-Za-z0-9._-]+))?$/.exec(v);
  if (!m) throw new ConfigError(`--service-api-key-secret must be <namespace>/<name>[:key], got '${v}'`);
  return { namespace: m[1]!, name: m[2]!, key: m[3] ?? DEFAULT_SECRET_KEY };
}

const KEY_ENTRY_FIELDS = new Set(['key', 'companyId', 'scope']);

function loadApiKeysFile(path: string): ApiKeyEntry[] {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ConfigError(`--api-keys-file ${path}: ${(e as Error).message}`);
  }
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new ConfigError(`--api-keys-file ${path}: expected 'keys: [{key, companyId, scope}]'`);
  return keys.map((k, i) => {
    if (typeof k !== 'object' || k === null || Array.isArray(k))
      throw new ConfigError(`--api-keys-file ${path}: keys[${i}] must be a mapping {key, companyId, scope}`);
    // strict: a misspelt 'scope' must not silently leave an admin key
    const unknown = Object.keys(k).filter((f) => !KEY_ENTRY_FIELDS.has(f));
    if (unknown.length)
      throw new ConfigError(
        `--api-keys-file ${path}: keys[${i}] has unknown field(s) ${unknown.map((f) => `'${f.slice(0, 40)}'`).join(', ')}; allowed: key, companyId, scope`,
      );
    const e = k as { key?: unknown; companyId?: unknown; scope?: unknown };
    if (typeof e.key !== 'string' || e.key.length < 16)
      throw new ConfigError(`--api-keys-file ${path}: keys[${i}].key must be a string of at least 16 characters`);
    if (typeof e.companyId !== 'string' || !UUID_RE.test(e.companyId))
      throw new ConfigError(`--api-keys-file ${path}: keys[${i}].companyId must be a UUID`);
    const scope = e.scope;
    if (scope !== undefined && !(API_KEY_SCOPES as readonly unknown[]).includes(scope))
      throw new ConfigError(
        `--api-keys-file ${path}: keys[${i}].scope must be one of ${API_KEY_SCOPES.join(', ')}, got ${typeof scope === 'string' ? `'${scope.slice(0, 40)}'` : String(scope)}`,
      );
    // absent: admin, so keys files written before scopes keep working
    return { key: e.key, companyId: e.companyId.toLowerCase(), scope: scope as ApiKeyScope | undefined };
  });
}

function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Where the console's build is by default: `ui` next to the running code. In the bundle (dist/certmgr-notify.mjs)
 * that is dist/ui; run from source (src/config.ts) it is <repo>/dist/ui, where npm run build:console writes.
 */
export function defaultConsoleDir(moduleUrl: string = import.meta.url): string {
  const here = dirname(fileURLToPath(moduleUrl));
  return basename(here) === 'src' ? join(here, '..', 'dist', 'ui') : join(here, 'ui');
}

/** --public-url: an absolute http(s) URL without credentials, query or fragment; returned without trailing slashes. */
export function publicUrlOf(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new ConfigError(`--public-url must be an http(s) URL, got '${v.slice(0, 200)}'`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new ConfigError(`--public-url must be an http(s) URL, got '${v.slice(0, 200)}'`);
  if (u.username || u.password || u.search || u.hash)
    throw new ConfigError('--public-url must not carry credentials, a query or a fragment: notifications show it');
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

export function loadServeConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ServeConfig {
  const flags = parseFlags(argv, SERVE_FLAGS);
  const companyId = DEFAULT_COMPANY_ID;
  const limits = limitsOf(one(flags, env, 'limits-file'));
  const limit = (key: LimitKey) => limitOf(limits, key);
  const kube = one(flags, env, 'kube') ?? DEFAULT_KUBE;
  if (kube !== 'auto' && kube !== 'off' && kube !== 'on') throw new ConfigError(`--kube must be auto, off or on, got '${kube}'`);
  const apiKeysFile = one(flags, env, 'api-keys-file');
  const apiKeys: ApiKeyEntry[] = (pick(flags, env, 'api-key') ?? []).map((key) => {
    if (key.length < 16) throw new ConfigError('--api-key must be at least 16 characters');
    return { key, companyId }; // no scope: admin
  });
  if (apiKeysFile) apiKeys.push(...loadApiKeysFile(apiKeysFile));
  const serviceUrl = one(flags, env, 'service-url');
  if (serviceUrl !== undefined) {
    try {
      const u = new URL(serviceUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    } catch {
      throw new ConfigError('--service-url must be an http(s) URL');
    }
    if (!one(flags, env, 'service-api-key') && !one(flags, env, 'service-api-key-secret'))
      throw new ConfigError('--service-url needs --service-api-key-secret (or --service-api-key)');
  }
  const incidentEventsUrl = one(flags, env, 'incident-events-url') ?? DEFAULT_INCIDENT_EVENTS_URL;
  if (!isHttpUrl(incidentEventsUrl)) throw new ConfigError('--incident-events-url must be an http(s) URL');
  const opsgenieApiUrl = one(flags, env, 'opsgenie-api-url') ?? DEFAULT_OPSGENIE_API_URL;
  if (!isHttpUrl(opsgenieApiUrl)) throw new ConfigError('--opsgenie-api-url must be an http(s) URL');
  let egressAllow: EgressAllow;
  try {
    egressAllow = parseEgressAllow(pick(flags, env, 'egress-allow') ?? []);
  } catch (e) {
    throw new ConfigError(`--egress-allow: ${(e as Error).message}`);
  }
  const smtpFrom = one(flags, env, 'smtp-from') ?? DEFAULT_SMTP_FROM;
  const senderEntries = pick(flags, env, 'smtp-sender-domains') ?? [];
  let smtpSenderDomains: string[];
  try {
    smtpSenderDomains = parseSenderDomains(senderEntries, smtpFrom);
  } catch (e) {
    // without entries the default comes from --smtp-from, which the message names
    throw new ConfigError(senderEntries.length ? `--smtp-sender-domains: ${(e as Error).message}` : (e as Error).message);
  }
  const store = one(flags, env, 'store') ?? DEFAULT_STORE;
  const secretKeyFile = one(flags, env, 'secret-key-file');
  // Several replicas share a PostgreSQL store: a key generated by each would not open the others' rows.
  if (/^postgres(ql)?:\/\//.test(store) && secretKeyFile === undefined)
    throw new ConfigError(
      '--store postgres://… needs --secret-key-file (integration secrets are encrypted at rest with a key every replica shares); create one with: echo "k1:$(openssl rand -base64 32)" > secret-key',
    );
  return {
    port: int(flags, env, 'port', DEFAULT_PORT, 0, 65535),
    host: one(flags, env, 'host') ?? DEFAULT_HOST,
    store,
    apiKeys,
    apiKeysFile,
    apiKeyPath: generatedKeyPath(store),
    companyId,
    kube,
    logLevel: one(flags, env, 'log-level') ?? DEFAULT_LOG_LEVEL,
    logFormat: logFormatOf(one(flags, env, 'log-format')),
    incidentEventsUrl,
    opsgenieApiUrl,
    smtpUrl: one(flags, env, 'smtp-url'),
    egressAllow,
    smtpFrom,
    smtpSenderDomains,
    secretKeyFile,
    logRateLimitPerMinute: limit('logRatePerMinute'),
    logRateBurst: limit('logRateBurst'),
    deliveryTimeoutMs: limit('deliveryTimeout'),
    instanceId: instanceIdOf(one(flags, env, 'instance-id')),
    deliveryMaxAgeMs: limit('deliveryMaxAge'),
    expiryScanIntervalMs: limit('expiryScanInterval'),
    reminderScanIntervalMs: limit('reminderScanInterval'),
    deliveryWorkers: limit('deliveryWorkers'),
    deliveryBaseDelayMs: limit('deliveryRetryBase'),
    requestTimeoutMs: limit('requestTimeout'),
    shutdownTimeoutMs: limit('shutdownTimeout'),
    maxRoutersPerCompany: limit('maxRoutersPerCompany'),
    maxIntegrationsPerCompany: limit('maxIntegrationsPerCompany'),
    maxClustersPerCompany: limit('maxClustersPerCompany'),
    maxCertificatesPerCompany: limit('maxCertificatesPerCompany'),
    maxTemplatesPerCompany: limit('maxTemplatesPerCompany'),
    maxSilencesPerCompany: limit('maxSilencesPerCompany'),
    maxIntegrationRate: limit('maxIntegrationRate'),
    clusterSilenceAfterMs: limit('clusterSilenceAfter'),
    serviceUrl,
    serviceApiKey: one(flags, env, 'service-api-key'),
    webhookCertDir: one(flags, env, 'webhook-cert-dir'),
    webhookPort: WEBHOOK_PORT,
    serviceApiKeySecret: parseSecretRef(one(flags, env, 'service-api-key-secret')),
    kubeOptions: {
      watchNamespace: one(flags, env, 'watch-namespace'),
      leaderElect: bool(one(flags, env, 'leader-elect'), 'leader-elect', DEFAULT_LEADER_ELECT),
      leaseName: one(flags, env, 'lease-name'),
      leaseNamespace: one(flags, env, 'lease-namespace'),
      leaseDurationMs: limit('leaseDuration'),
      renewDeadlineMs: limit('renewDeadline'),
      retryPeriodMs: limit('retryPeriod'),
      resyncMs: limit('resyncPeriod'),
      concurrency: limit('reconcileConcurrency'),
      clusterName: one(flags, env, 'cluster-name'),
      clusterId: uuidOpt(one(flags, env, 'cluster-id'), 'cluster-id'),
      emitter: bool(one(flags, env, 'emitter'), 'emitter', DEFAULT_EMITTER),
      emitterWatchNamespace: one(flags, env, 'emitter-watch-namespace'),
      healthGracePeriodMs: limit('healthGracePeriod'),
      healthUnknownGracePeriodMs: limit('healthUnknownGracePeriod'),
      healthIssuingGracePeriodMs: limit('healthIssuingGracePeriod'),
      healthRenewalOverdueGraceMs: limit('healthRenewalOverdueGrace'),
      servingProbeIntervalMs: limit('servingProbeInterval'),
      maxPendingEvents: limit('maxPendingEvents'),
    },
    consoleDir: defaultConsoleDir(),
    publicUrl: publicUrlOf(one(flags, env, 'public-url')),
  };
}

/** --limits-file: the keys it gives (none without the flag); its messages name the file and the key. */
function limitsOf(path: string | undefined): GivenLimits {
  if (path === undefined) return {};
  try {
    return loadLimitsFile(path);
  } catch (e) {
    if (e instanceof LimitsError) throw new ConfigError(e.message);
    throw e;
  }
}

/** Where a generated API key is written: beside a SQLite store file, else in the default store's directory. */
export function generatedKeyPath(store: string): string {
  const file = store.startsWith('sqlite:') && store !== 'sqlite::memory:' ? store.slice('sqlite:'.length) : undefined;
  return join(file ? dirname(file) : DEFAULT_DATA_DIR, 'api-key');
}

function logFormatOf(v: string | undefined): 'json' | 'pretty' {
  if (v === undefined || v === 'json' || v === 'pretty') return v ?? DEFAULT_LOG_FORMAT;
  throw new ConfigError(`--log-format must be json or pretty, got '${v.slice(0, 100)}'`);
}

/** `certmgr-notify agent`: see docs/agent.md. */
export interface AgentConfig {
  hubUrl: string;
  apiKeyFile: string;
  clusterName: string;
  clusterId: string | undefined;
  port: number;
  host: string;
  healthGracePeriodMs: number;
  healthUnknownGracePeriodMs: number;
  healthIssuingGracePeriodMs: number;
  healthRenewalOverdueGraceMs: number;
  /** serving probes: every endpoint this often; 0: off (docs/serving.md) */
  servingProbeIntervalMs: number;
  watchNamespace: string | undefined;
  stateNamespace: string | undefined;
  instanceId: string;
  leaderElect: boolean;
  logLevel: string;
  maxPendingEvents: number;
  operator: boolean;
}

/** An agent flag that is a key of serve's limits file: the same help, default and bounds. */
const limitFlag = (name: string, key: LimitKey): FlagSpec => {
  const spec = limitSpec(key);
  return { name, kind: 'duration', help: `${spec.help.replace(/^emitter: /, '')} (default ${formatLimit(spec, spec.default)})` };
};

export const AGENT_FLAGS: FlagSpec[] = [
  { name: 'hub-url', kind: 'string', help: 'base URL of the hub (certmgr-notify serve) receiving events and inventory (required)' },
  {
    name: 'api-key-file',
    kind: 'string',
    help: 'file holding the hub API key (scope agent; admin with --operator); re-read when it changes (required)',
  },
  { name: 'cluster-name', kind: 'string', help: "this cluster's name in health events and inventory reports (required)" },
  {
    name: 'cluster-id',
    kind: 'string',
    help: 'cluster UUID in health events and inventory reports (default the kube-system namespace uid)',
  },
  { name: 'port', kind: 'int', help: `port of /healthz, /readyz, /metrics (default ${DEFAULT_PORT})` },
  { name: 'host', kind: 'string', help: `listen address (default ${DEFAULT_HOST})` },
  limitFlag('health-grace-period', 'healthGracePeriod'),
  limitFlag('health-unknown-grace-period', 'healthUnknownGracePeriod'),
  limitFlag('health-issuing-grace-period', 'healthIssuingGracePeriod'),
  limitFlag('health-renewal-overdue-grace', 'healthRenewalOverdueGrace'),
  limitFlag('serving-probe-interval', 'servingProbeInterval'),
  { name: 'watch-namespace', kind: 'string', help: 'watch only this namespace (ClusterIssuers always; default all)' },
  {
    name: 'state-namespace',
    kind: 'string',
    help: "namespace of the health state ConfigMap and the leader election Lease (default the pod's, else default)",
  },
  { name: 'instance-id', kind: 'string', help: 'leader election identity, unique among live replicas (default hostname: the pod name)' },
  {
    name: 'leader-elect',
    kind: 'string',
    help: `true | false: only the Lease holder watches and reports (default ${DEFAULT_LEADER_ELECT})`,
  },
  { name: 'log-level', kind: 'string', help: `pino level (default ${DEFAULT_LOG_LEVEL})` },
  {
    name: 'max-pending-events',
    kind: 'int',
    help: `health events held while the hub is unreachable; more are refused and derived again later, never lost (default ${limitSpec('maxPendingEvents').default})`,
  },
  {
    name: 'operator',
    kind: 'bool',
    help: 'also run the operator, reconciling the CRDs into the hub (--operator or --operator=true|false)',
  },
];

export function loadAgentConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const flags = parseFlags(argv, AGENT_FLAGS);
  const required = (name: string): string => {
    const v = one(flags, env, name);
    if (v === undefined || v === '') throw new ConfigError(`--${name} is required (or ${envName(name)})`);
    return v;
  };
  const hubUrl = required('hub-url');
  if (!isHttpUrl(hubUrl)) throw new ConfigError(`--hub-url must be an http(s) URL, got '${hubUrl.slice(0, 200)}'`);
  const apiKeyFile = required('api-key-file');
  const clusterName = required('cluster-name');
  if (clusterName.length > 253) throw new ConfigError('--cluster-name must be at most 253 characters');
  // serve's limits-file key of the same meaning: one default and one range
  const pending = limitSpec('maxPendingEvents');
  return {
    hubUrl,
    apiKeyFile,
    clusterName,
    clusterId: uuidOpt(one(flags, env, 'cluster-id'), 'cluster-id'),
    port: int(flags, env, 'port', DEFAULT_PORT, 0, 65535),
    host: one(flags, env, 'host') ?? DEFAULT_HOST,
    healthGracePeriodMs: flagLimit(flags, env, 'health-grace-period', 'healthGracePeriod'),
    healthUnknownGracePeriodMs: flagLimit(flags, env, 'health-unknown-grace-period', 'healthUnknownGracePeriod'),
    healthIssuingGracePeriodMs: flagLimit(flags, env, 'health-issuing-grace-period', 'healthIssuingGracePeriod'),
    healthRenewalOverdueGraceMs: flagLimit(flags, env, 'health-renewal-overdue-grace', 'healthRenewalOverdueGrace'),
    servingProbeIntervalMs: flagLimit(flags, env, 'serving-probe-interval', 'servingProbeInterval'),
    watchNamespace: one(flags, env, 'watch-namespace'),
    stateNamespace: one(flags, env, 'state-namespace'),
    instanceId: instanceIdOf(one(flags, env, 'instance-id')),
    leaderElect: bool(one(flags, env, 'leader-elect'), 'leader-elect', DEFAULT_LEADER_ELECT),
    logLevel: one(flags, env, 'log-level') ?? DEFAULT_LOG_LEVEL,
    maxPendingEvents: int(flags, env, 'max-pending-events', pending.default, pending.min, pending.max),
    operator: bool(one(flags, env, 'operator'), 'operator', DEFAULT_OPERATOR),
  };
}
