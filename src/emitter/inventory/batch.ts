/**
 * The inventory's pure batching: a snapshot cut into reports of at most MAX_INVENTORY_ITEMS_PER_REPORT, and
 * changes coalesced per Secret until the next delta (the latest state of each wins: an upsert then a delete is
 * a delete, a delete then an upsert an upsert).
 */
import type { CertificateFacts, CertificateLocation } from '../../model/inventory.js';
import { locationKey } from './facts.js';

/** `items` in consecutive chunks of at most `max` (at least one chunk, empty for an empty list: a snapshot of nothing is still a snapshot). */
export function chunk<T>(items: readonly T[], max: number): T[][] {
  const size = Math.max(1, Math.floor(max));
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out.length ? out : [[]];
}

export type InventoryChange = { upsert: CertificateFacts } | { delete: CertificateLocation };

/** Changes not yet reported, one per Secret, in the order each Secret first changed. */
export class ChangeBuffer {
  private readonly changes = new Map<string, InventoryChange>();

  get size(): number {
    return this.changes.size;
  }

  add(c: InventoryChange): void {
    const loc = 'upsert' in c ? c.upsert : c.delete;
    const key = locationKey(loc);
    this.changes.set(key, 'upsert' in c ? c : { delete: { namespace: loc.namespace, secretName: loc.secretName } });
  }

  clear(): void {
    this.changes.clear();
  }

  /** Removes and returns up to `max` changes (the oldest first) as a delta's upserts and deletes. */
  take(max: number): { upserts: CertificateFacts[]; deletes: CertificateLocation[] } {
    const upserts: CertificateFacts[] = [];
    const deletes: CertificateLocation[] = [];
    for (const [key, c] of this.changes) {
      if (upserts.length + deletes.length >= max) break;
      this.changes.delete(key);
      if ('upsert' in c) upserts.push(c.upsert);
      else deletes.push(c.delete);
    }
    return { upserts, deletes };
  }
}
