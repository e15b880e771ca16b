/**
 * The CERTIFICATE_EXPIRATION monitoring configuration over the service's REST API
 * (`/outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_EXPIRATION`):
 * - the operator reads and writes it (`getMonitoringConfig`, `putMonitoringConfig`; errors are ServiceApiError);
 * - the emitter reads it through `MonitoringConfigSource`: checked strictly, cached for a short time, one
 *   request at a time (errors are MonitoringConfigError).
 */
import { realClock, type Clock } from '../runtime/timers.js';
import type { MonitoringConfigInput } from '../model/monitoring.js';
import { ServiceApiError, ServiceUnreachableError, errorEntries, kindOfStatus, toServiceError } from './errors.js';
import { ServiceHttp, parseJson, type ServiceHttpOptions, type ServiceRequest } from './http.js';
import { MONITORING_CONFIG_PATH } from './operations.js';
import { MANAGER_HEADER, RELEASE_HEADER } from '../model/manager.js';

/** What GET returns: the configuration with its id and read-only rules, and its manager of record (a header). */
export interface MonitoringConfigView extends MonitoringConfigInput {
  id: string;
  rules: { ruleId: number; threshold: number }[];
  /** src/model/manager.ts; absent: nobody manages it */
  manager?: string;
}

/** How the operator writes: as the manager of record; `release`: and give the record up (its CR was deleted). */
export interface MonitoringWriteOptions {
  manager?: string;
  release?: boolean;
}

async function rest<T>(http: ServiceHttp, what: string, req: ServiceRequest = {}): Promise<{ body: T; manager?: string }> {
  let res;
  try {
    res = await http.request(MONITORING_CONFIG_PATH, req);
  } catch (e) {
    throw toServiceError(e, what);
  }
  const body = parseJson(res.text);
  if (res.status < 200 || res.status >= 300) {
    const errors = (body === undefined ? [] : errorEntries(res.text)).slice(0, 10);
    const msg = errors.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join('; ') || `HTTP ${res.status}`;
    // 409: another manager holds the record (src/model/manager.ts)
    const kind = res.status === 409 ? 'conflict' : kindOfStatus(res.status);
    throw new ServiceApiError(kind, `${what}: ${msg}`, { status: res.status, errors });
  }
  const manager = res.headers.get(MANAGER_HEADER);
  return { body: body as T, ...(manager ? { manager } : {}) };
}

type Envelope = { id: string; configuration: MonitoringConfigView };
const view = (r: { body: Envelope; manager?: string }): MonitoringConfigView => ({
  ...r.body.configuration,
  id: r.body.id,
  ...(r.manager ? { manager: r.manager } : {}),
});

export async function getMonitoringConfig(http: ServiceHttp): Promise<MonitoringConfigView> {
  return view(await rest<Envelope>(http, 'get monitoring config'));
}

export async function putMonitoringConfig(
  http: ServiceHttp,
  v: MonitoringConfigInput,
  opts: MonitoringWriteOptions = {},
): Promise<MonitoringConfigView> {
  const r = await rest<Envelope>(http, 'put monitoring config', {
    method: 'PUT',
    body: JSON.stringify({ inventoryMonitoringConfiguration: { inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION', ...v } }),
    headers: {
      ...(opts.manager ? { [MANAGER_HEADER]: opts.manager } : {}),
      ...(opts.release ? { [RELEASE_HEADER]: 'true' } : {}),
    },
  });
  return view(r);
}

export class MonitoringConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MonitoringConfigError';
  }
}

/** Parses the GET response `{ id, companyId, configuration: {...} }`. */
export function parseMonitoringConfig(body: unknown): MonitoringConfigInput {
  const c = (body as { configuration?: Record<string, unknown> } | null)?.configuration;
  if (!c || typeof c !== 'object') throw new MonitoringConfigError('monitoring configuration response has no `configuration` object');
  const nums = Array.isArray(c['thresholds'])
    ? c['thresholds'].filter((x): x is number => typeof x === 'number' && Number.isInteger(x) && x > 0)
    : null;
  const apps = Array.isArray(c['applicationIds']) ? c['applicationIds'].filter((x): x is string => typeof x === 'string') : null;
  if (typeof c['enabled'] !== 'boolean' || !nums || !apps || typeof c['includeUnassignedCertificates'] !== 'boolean') {
    throw new MonitoringConfigError(
      'monitoring configuration response is missing enabled, thresholds, applicationIds or includeUnassignedCertificates',
    );
  }
  return {
    enabled: c['enabled'],
    thresholds: nums,
    applicationIds: apps,
    includeUnassignedCertificates: c['includeUnassignedCertificates'],
  };
}

export interface MonitoringConfigSourceOptions extends ServiceHttpOptions {
  /** a cached value younger than this is returned without a request; default 30 s */
  maxAgeMs?: number;
  clock?: Clock;
}

export class MonitoringConfigSource {
  private cached: { at: number; value: MonitoringConfigInput } | undefined;
  private inflight: Promise<MonitoringConfigInput> | undefined;
  private readonly clock: Clock;
  private readonly http: ServiceHttp;

  constructor(private readonly opts: MonitoringConfigSourceOptions) {
    this.clock = opts.clock ?? realClock;
    this.http = new ServiceHttp(opts);
  }

  /** The last value read, if any. */
  get current(): MonitoringConfigInput | undefined {
    return this.cached?.value;
  }

  /** The configuration, from the cache when it is younger than `maxAgeMs` (0: always read). */
  async get(maxAgeMs = this.opts.maxAgeMs ?? 30_000): Promise<MonitoringConfigInput> {
    if (this.cached && this.clock.now() - this.cached.at < maxAgeMs) return this.cached.value;
    this.inflight ??= this.fetchOnce().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async fetchOnce(): Promise<MonitoringConfigInput> {
    let res;
    try {
      res = await this.http.request(MONITORING_CONFIG_PATH);
    } catch (e) {
      throw new MonitoringConfigError(`reading the monitoring configuration failed: ${ServiceUnreachableError.of(e).detail}`);
    }
    if (res.status !== 200) throw new MonitoringConfigError(`reading the monitoring configuration failed: HTTP ${res.status}`);
    let body: unknown;
    try {
      body = JSON.parse(res.text);
    } catch {
      throw new MonitoringConfigError('monitoring configuration response is not JSON');
    }
    const value = parseMonitoringConfig(body);
    this.cached = { at: this.clock.now(), value };
    return value;
  }
}
