/**
 * The inventory's pure batching: a snapshot cut into reports of at most MAX_INVENTORY_ITEMS_PER_REPORT, and
 * changes coalesced per Secret until the next delta (the latest state of each wins: an upsert then a delete is
 * a delete, a delete then an upsert an upsert).
 */
import type { CertificateFacts, CertificateLocation } from '../../model/inventory.js';
import { locationKey } from './facts.js';

/**
 * `items` in consecutive groups of at most `maxItems` whose summed `sizeOf` stays within `maxBytes` (an item
 * larger than `maxBytes` alone gets a group of its own: the hub's answer decides). Lazy, so a snapshot's facts
 * are built one report at a time. At least one group, empty for no items (a snapshot of nothing is still one).
 */
export function* packReports<T>(items: Iterable<T>, maxItems: number, maxBytes: number, sizeOf: (t: T) => number): Generator<T[]> {
  const limit = Math.max(1, Math.floor(maxItems));
  let group: T[] = [];
  let bytes = 0;
  let any = false;
  for (const item of items) {
    const size = sizeOf(item);
    if (group.length && (group.length >= limit || bytes + size > maxBytes)) {
      yield group;
      any = true;
      group = [];
      bytes = 0;
    }
    group.push(item);
    bytes += size;
  }
  if (group.length || !any) yield group;
}

/** What a change adds to a report body (its JSON), for the byte budget. */
export const jsonSize = (v: unknown): number => JSON.stringify(v).length;

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

  /**
   * Removes and returns up to `max` changes (the oldest first) as a delta's upserts and deletes, within
   * `maxBytes` of JSON (at least one change, however large).
   */
  take(max: number, maxBytes = Infinity): { upserts: CertificateFacts[]; deletes: CertificateLocation[] } {
    const upserts: CertificateFacts[] = [];
    const deletes: CertificateLocation[] = [];
    let bytes = 0;
    for (const [key, c] of this.changes) {
      const n = upserts.length + deletes.length;
      if (n >= max) break;
      const size = jsonSize('upsert' in c ? c.upsert : c.delete);
      if (n > 0 && bytes + size > maxBytes) break;
      bytes += size;
      this.changes.delete(key);
      if ('upsert' in c) upserts.push(c.upsert);
      else deletes.push(c.delete);
    }
    return { upserts, deletes };
  }
}
