/**
 * Requests in flight per company and in all, for the routes whose bodies are large (an inventory report may be
 * 4 MiB parsed into objects several times that): the memory one company can hold in the hub at once is bounded,
 * and one company cannot take every slot. A refused request is answered 429 with Retry-After before its body is
 * read; agents send the same report again after it (docs/inventory.md).
 */
export interface InflightLimits {
  perCompany: number;
  total: number;
}

/**
 * Inventory reports: 8 per company, 24 in all. 24 bounds the hub's memory for full reports in flight; 8 let a
 * company with many clusters keep the apply busy without taking every slot.
 */
export const INVENTORY_INFLIGHT: InflightLimits = { perCompany: 8, total: 24 };

export type InflightDecision = { ok: true; release: () => void } | { ok: false; reason: string };

export class InflightLimiter {
  private readonly byCompany = new Map<string, number>();
  private all = 0;

  constructor(private readonly limits: InflightLimits) {}

  get inFlight(): number {
    return this.all;
  }

  /** Takes a slot for `companyId`, or says which limit is reached. `release` is idempotent. */
  acquire(companyId: string): InflightDecision {
    const mine = this.byCompany.get(companyId) ?? 0;
    if (mine >= this.limits.perCompany)
      return { ok: false, reason: `${mine} requests of this company are in flight (limit ${this.limits.perCompany})` };
    if (this.all >= this.limits.total) return { ok: false, reason: `${this.all} requests are in flight (limit ${this.limits.total})` };
    this.byCompany.set(companyId, mine + 1);
    this.all++;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.all--;
        const n = (this.byCompany.get(companyId) ?? 1) - 1;
        // the map holds only companies with requests in flight
        if (n <= 0) this.byCompany.delete(companyId);
        else this.byCompany.set(companyId, n);
      },
    };
  }
}
