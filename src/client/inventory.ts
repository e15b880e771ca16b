/**
 * `POST /v1/inventory` (src/model/inventory.ts) through the client's ServiceHttp. Classifies the answer; what
 * to do about it (retry, resync, wait) is the reporter's business (src/emitter/inventory/reporter.ts).
 */
import { RESYNC_REQUIRED, type InventoryAck, type InventoryReport } from '../model/inventory.js';
import { ServiceUnreachableError, errorEntries } from './errors.js';
import { ServiceHttp, parseJson, type ServiceHttpOptions } from './http.js';

const INVENTORY_PATH = '/v1/inventory';

export type InventoryOutcome =
  | { kind: 'applied' | 'duplicate'; ack: InventoryAck }
  /** 409 RESYNC_REQUIRED: start a new epoch with a full snapshot */
  | { kind: 'resync'; message: string }
  /** 404: a hub without the inventory endpoint (older version) */
  | { kind: 'unsupported' }
  /** 400 / 413: the hub refuses this report; sending it again cannot help */
  | { kind: 'rejected'; status: number; message: string }
  /** network error, timeout, 5xx, 429, 401/403 (a key being rotated): worth another try */
  | { kind: 'retry'; reason: string; retryAfterMs?: number };

export class InventoryClient {
  private readonly http: ServiceHttp;

  constructor(opts: ServiceHttpOptions) {
    this.http = new ServiceHttp(opts);
  }

  async post(report: InventoryReport, signal?: AbortSignal): Promise<InventoryOutcome> {
    let res;
    try {
      res = await this.http.request(INVENTORY_PATH, { body: JSON.stringify(report), ...(signal ? { signal } : {}) });
    } catch (e) {
      const u = ServiceUnreachableError.of(e);
      return { kind: 'retry', reason: `${u.timedOut ? 'timeout' : 'network'} ${u.detail}`.trim() };
    }
    const errors = errorEntries(res.text);
    const message = errors.map((e) => (e.field ? `${e.field}: ${e.message ?? ''}` : (e.message ?? ''))).join('; ') || `HTTP ${res.status}`;
    if (res.status === 200 || res.status === 202) {
      const ack = parseJson(res.text) as Partial<InventoryAck> | undefined;
      const kind = ack?.status === 'duplicate' ? 'duplicate' : 'applied';
      return {
        kind,
        ack: {
          status: kind,
          clusterId: ack?.clusterId ?? report.cluster.id,
          epoch: ack?.epoch ?? report.epoch,
          seq: ack?.seq ?? report.seq,
        },
      };
    }
    if (res.status === 409 && (errors.some((e) => e.code === RESYNC_REQUIRED) || res.text.includes(RESYNC_REQUIRED)))
      return { kind: 'resync', message };
    if (res.status === 404) return { kind: 'unsupported' };
    if (res.status === 400 || res.status === 413 || res.status === 409) return { kind: 'rejected', status: res.status, message };
    const retryAfter = Number(res.headers.get('retry-after'));
    return {
      kind: 'retry',
      reason: `HTTP ${res.status} ${message}`.trim(),
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: Math.min(retryAfter * 1000, 300_000) } : {}),
    };
  }
}
