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
  /**
   * 429 (QUOTA_EXCEEDED: the company holds as many clusters or certificates as it may; or a rate limit): the hub
   * applied nothing and lost nothing of the epoch, so the same report goes again after `retryAfterMs`
   */
  | { kind: 'throttled'; code: string; message: string; retryAfterMs?: number | undefined }
  /** network error, timeout, 5xx, 401/403 (a key being rotated): worth another try */
  | { kind: 'retry'; reason: string; retryAfterMs?: number | undefined };

/** Retry-After answers are honoured up to this (the hub's quota answer is 300 s) */
const MAX_RETRY_AFTER_MS = 15 * 60_000;

/** `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined when absent or unusable. */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (!header) return undefined;
  const v = header.trim();
  const ms = /^\d+$/.test(v) ? Number(v) * 1000 : Date.parse(v) - now;
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, MAX_RETRY_AFTER_MS) : undefined;
}

export class InventoryClient {
  private readonly http: ServiceHttp;

  constructor(opts: ServiceHttpOptions) {
    this.http = new ServiceHttp(opts);
  }

  async post(report: InventoryReport, signal?: AbortSignal): Promise<InventoryOutcome> {
    let res;
    try {
      res = await this.http.request(INVENTORY_PATH, { body: JSON.stringify(report), signal });
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
    const after = retryAfterMs(res.headers.get('retry-after'), Date.now());
    if (res.status === 429)
      return {
        kind: 'throttled',
        code: errors[0]?.code ?? 'TOO_MANY_REQUESTS',
        message,
        retryAfterMs: after,
      };
    return {
      kind: 'retry',
      reason: `HTTP ${res.status} ${message}`.trim(),
      retryAfterMs: after,
    };
  }
}
