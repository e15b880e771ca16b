/**
 * The CERTIFICATE_EXPIRATION monitoring configuration over the service's REST API
 * (`/outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_EXPIRATION`):
 * the operator reads and writes it (`getMonitoringConfig`, `putMonitoringConfig`; errors are ServiceApiError).
 * The hub's expiry scanner reads it from its own store.
 */
import type { MonitoringConfigInput } from '../model/monitoring.js';
import { ServiceApiError, errorEntries, kindOfStatus, toServiceError } from './errors.js';
import { ServiceHttp, parseJson, type ServiceRequest } from './http.js';
import { MONITORING_CONFIG_PATH } from './operations.js';
import { MANAGER_HEADER, RELEASE_HEADER } from '../model/manager.js';

/** What GET returns: the configuration with its id and read-only rules, and its manager of record (a header). */
export interface MonitoringConfigView extends MonitoringConfigInput {
  id: string;
  rules: { ruleId: number; threshold: number }[];
  /** src/model/manager.ts; absent: nobody manages it */
  manager?: string | undefined;
}

/** How the operator writes: as the manager of record; `release`: and give the record up (its CR was deleted). */
export interface MonitoringWriteOptions {
  manager?: string;
  release?: boolean;
}

async function rest<T>(http: ServiceHttp, what: string, req: ServiceRequest = {}): Promise<{ body: T; manager: string | undefined }> {
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
  return { body: body as T, manager: manager || undefined };
}

type Envelope = { id: string; configuration: MonitoringConfigView };
const view = (r: { body: Envelope; manager: string | undefined }): MonitoringConfigView => ({
  ...r.body.configuration,
  id: r.body.id,
  manager: r.manager,
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
    // spreads: a header's undefined value would be sent as the text
    headers: {
      ...(opts.manager ? { [MANAGER_HEADER]: opts.manager } : {}),
      ...(opts.release ? { [RELEASE_HEADER]: 'true' } : {}),
    },
  });
  return view(r);
}
