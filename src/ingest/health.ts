/**
 * The console's health page: per resource, its newest health event and, while that is a .notready, the
 * first .notready of the current streak. Ingestion folds each request's health events into one write per resource
 * (store: resource_health, migration 15). The resource is the correlation key (correlationKeyOf), the order key
 * of its deliveries, of grouping's members and of reminders; "newest" is the deliveries' order (delivery/order.ts).
 */
import { compareOrder, type EventOrder } from '../delivery/order.js';
import type { ResourceHealthWrite } from '../store/types.js';

export interface HealthEventIn {
  eventId: string;
  type: string;
  order: EventOrder;
  receivedAt: number;
}

/** Health events have types ending .notready / .active; expiration events are no resource's health. */
function healthState(type: string): 'unhealthy' | 'healthy' | null {
  if (!type.startsWith('evt.healthstatus.')) return null;
  if (type.endsWith('.notready')) return 'unhealthy';
  if (type.endsWith('.active')) return 'healthy';
  return null;
}

/** One write per resource: its newest event of the batch and the streak that batch ends in. Pure. */
export function foldHealth(companyId: string, events: readonly HealthEventIn[]): ResourceHealthWrite[] {
  const byKey = new Map<string, HealthEventIn[]>();
  for (const e of events) {
    if (healthState(e.type) === null) continue;
    const list = byKey.get(e.order.orderKey) ?? [];
    list.push(e);
    byKey.set(e.order.orderKey, list);
  }
  const out: ResourceHealthWrite[] = [];
  for (const [resourceKey, list] of byKey) {
    const pos = (e: HealthEventIn) => ({ orderAt: e.order.orderAt, orderSeq: e.order.orderSeq, id: e.eventId });
    list.sort((a, b) => compareOrder(pos(a), pos(b)));
    const newest = list.at(-1)!;
    // the tail streak: the .notready events after the last .active
    let start = list.length;
    while (start > 0 && healthState(list[start - 1]!.type) === 'unhealthy') start--;
    const first = list[start];
    out.push({
      companyId,
      resourceKey,
      eventId: newest.eventId,
      orderAt: newest.order.orderAt,
      orderSeq: newest.order.orderSeq,
      since: first ? { at: first.receivedAt, orderAt: first.order.orderAt, orderSeq: first.order.orderSeq } : null,
      // an .active in the batch ends whatever streak was stored: what follows it (or nothing) replaces since
      fresh: start > 0,
    });
  }
  return out;
}
