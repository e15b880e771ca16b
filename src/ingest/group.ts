/**
 * Ingestion stage group (docs/grouping.md): a grouped router's match that is not silenced becomes a group member
 * (no delivery row). A grouped router's recovery is never silenced: its trigger may have gone out in a group
 * notification, and the group must see every member recover to resolve (docs/silences.md). A holding router's
 * certificate match is decided in the transaction (it reads the issuer's health as this batch leaves it); not
 * held, it goes on as a group member or a row. Silenced like grouping's.
 */
import type { EventOrder } from '../delivery/order.js';
import type { InternalEvent } from '../events/families.js';
import type { RouterRecord } from '../model/records.js';
import type { NewDelivery } from '../store/types.js';
import { isGrouped, type GroupedMatch } from '../grouping/ingest.js';
import { holdsUnderIssuer, type HoldCandidate } from '../grouping/hold-ingest.js';

export interface Grouped {
  grouped: GroupedMatch[];
  /** the delivery rows that stay rows */
  rows: NewDelivery[];
  holds: HoldCandidate[];
}

export function groupMatches(
  event: InternalEvent,
  eventId: string,
  order: EventOrder,
  matched: readonly RouterRecord[],
  deliveries: readonly NewDelivery[],
): Grouped {
  const routerOf = new Map(matched.map((r) => [r.id, r]));
  const grouped: GroupedMatch[] = [];
  const rows: NewDelivery[] = [];
  const holds: HoldCandidate[] = [];
  for (const d of deliveries) {
    const router = routerOf.get(d.routerId)!;
    const toGroup = isGrouped(router) && (!d.silenceId || event.type.endsWith('.active'));
    if (holdsUnderIssuer(router) && (!d.silenceId || event.type.endsWith('.active')))
      holds.push({ router, eventId, event, order, fallback: toGroup ? { kind: 'group' } : { kind: 'row', delivery: d } });
    else if (toGroup) grouped.push({ router, eventId, event, order });
    else rows.push(d);
  }
  return { grouped, rows, holds };
}
