/**
 * The CERTIFICATE_EXPIRATION monitoring configuration as the emitter reads it: through the service's REST API
 * (`GET /outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_EXPIRATION`, `svc-api-key`), cached for a
 * short time, one request at a time.
 */
import { MONITORING_CONFIG_PATH } from '../../client/operations.js';
import { realClock, type Clock } from '../../runtime/timers.js';

export interface MonitoringConfig {
  enabled: boolean;
  thresholds: number[];
  applicationIds: string[];
  includeUnassignedCertificates: boolean;
}

export interface ExpiryRule {
  /** 1-based position of the threshold in `thresholds` */
  ruleId: number;
  threshold: number;
}

/** ruleId = 1-based position of the threshold (README, "rules"). */
export function rulesOf(cfg: Pick<MonitoringConfig, 'thresholds'>): ExpiryRule[] {
  return cfg.thresholds.map((threshold, i) => ({ ruleId: i + 1, threshold }));
}

export class MonitoringConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MonitoringConfigError';
  }
}

/** Parses the GET response `{ id, companyId, configuration: {...} }`. */
export function parseMonitoringConfig(body: unknown): MonitoringConfig {
  const c = (body as { configuration?: Record<string, unknown> } | null)?.configuration;
  if (!c || typeof c !== 'object') throw new MonitoringConfigError('monitoring configuration response has no `configuration` object');
  const nums = Array.isArray(c['thresholds']) ? c['thresholds'].filter((x): x is number => typeof x === 'number' && Number.isInteger(x) && x > 0) : null;
  const apps = Array.isArray(c['applicationIds']) ? c['applicationIds'].filter((x): x is string => typeof x === 'string') : null;
  if (typeof c['enabled'] !== 'boolean' || !nums || !apps || typeof c['includeUnassignedCertificates'] !== 'boolean') {
    throw new MonitoringConfigError('monitoring configuration response is missing enabled, thresholds, applicationIds or includeUnassignedCertificates');
  }
  return { enabled: c['enabled'], thresholds: nums, applicationIds: apps, includeUnassignedCertificates: c['includeUnassignedCertificates'] };
}

export interface MonitoringConfigSourceOptions {
  url: string;
  apiKey: () => string;
  /** a cached value younger than this is returned without a request; default 30 s */
  maxAgeMs?: number;
  timeoutMs?: number;
  clock?: Clock;
  fetch?: typeof fetch;
}

export class MonitoringConfigSource {
  private cached: { at: number; value: MonitoringConfig } | undefined;
  private inflight: Promise<MonitoringConfig> | undefined;
  private readonly clock: Clock;

  constructor(private readonly opts: MonitoringConfigSourceOptions) {
    this.clock = opts.clock ?? realClock;
  }

  /** The last value read, if any. */
  get current(): MonitoringConfig | undefined {
    return this.cached?.value;
  }

  /** The configuration, from the cache when it is younger than `maxAgeMs` (0: always read). */
  async get(maxAgeMs = this.opts.maxAgeMs ?? 30_000): Promise<MonitoringConfig> {
    if (this.cached && this.clock.now() - this.cached.at < maxAgeMs) return this.cached.value;
    this.inflight ??= this.fetchOnce().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async fetchOnce(): Promise<MonitoringConfig> {
    const f = this.opts.fetch ?? fetch;
    let res: Response;
    try {
      res = await f(new URL(MONITORING_CONFIG_PATH, this.opts.url), {
        headers: { 'svc-api-key': this.opts.apiKey(), accept: 'application/json' },
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000),
      });
    } catch (e) {
      const err = e as { message?: string; cause?: { code?: string; message?: string } };
      throw new MonitoringConfigError(`reading the monitoring configuration failed: ${err.cause?.code ?? err.cause?.message ?? err.message ?? String(e)}`);
    }
    const text = await res.text().catch(() => '');
    if (res.status !== 200) throw new MonitoringConfigError(`reading the monitoring configuration failed: HTTP ${res.status}`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new MonitoringConfigError('monitoring configuration response is not JSON');
    }
    const value = parseMonitoringConfig(body);
    this.cached = { at: this.clock.now(), value };
    return value;
  }
}
