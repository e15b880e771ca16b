/**
 * Order per key: the pure rules. The store's claim and supersede queries (store/outbox-queue.ts)
 * implement exactly these; test/store/order-contract checks the SQL against this module.
 *
 * Key: (integration, correlation key). The correlation key is the incident dedup_key
 * (correlationKeyOf in model/correlation.ts), the same for every integration type: one resource
 * (kind + cluster + namespace + name), or one expiration rule of one certificate.
 *
 * Order of a key's deliveries ("older" / "newer"): (orderAt, orderSeq, id), ascending.
 *   - orderAt: the event's own time (health: data.statusTransition; expiration: data.notificationDate),
 *     clamped to the acceptance time (an event cannot have happened after we accepted it; a cluster
 *     clock running ahead then falls back to acceptance order). Missing or unparsable: the acceptance time.
 *   - orderSeq: acceptance sequence = acceptedAt × 1000 + the event's index in its request (≤ 1000 per
 *     request), so events of one request keep their order and an emitter's re-send is newer than its original.
 *   - id: last tie-break (two replicas accepting in the same millisecond; two routers to one integration).
 *
 * Rules, for delivery D of a key:
 *   - wait:       an older delivery of the key is still PENDING or IN_FLIGHT (at most one in flight per
 *                 key, the oldest first). Other keys are not affected: the claim skips blocked keys.
 *   - superseded: 'supersede' mode (state-carrying, e.g. INCIDENT_MGMT; the type's descriptor says): any newer delivery of the key exists;
 *                 D's state is obsolete and is not sent.
 *                 'in-order' mode (every other type): a newer delivery of the key was already sent or is
 *                 being sent (DELIVERED or IN_FLIGHT): D arrived late and sending it would break the order.
 *   - send:       otherwise.
 * A DEAD, SUPERSEDED or SILENCED older delivery no longer blocks: the newer one proceeds. A SILENCED delivery
 * (recorded, never sent) carries no state to the receiver, so it supersedes nothing.
 */
import type { InternalEvent } from '../events/families.js';
import { descriptorOf } from '../integrations/registry.js';
import type { OrderMode } from '../integrations/types.js';
import { correlationKeyOf } from '../model/correlation.js';
import { viewOf } from '../model/event-view.js';
import type { DeliveryStatus, IntegrationType } from '../store/types.js';

export type { OrderMode } from '../integrations/types.js';

/**
 * Each type's descriptor says whether its notifications carry state (supersede) or not (in-order). A name this
 * version does not know (a row written by a newer one) stays 'in-order', the mode that never drops a notification.
 */
export function orderModeOf(type: IntegrationType): OrderMode {
  return descriptorOf(type)?.orderMode ?? 'in-order';
}

export interface OrderPosition {
  orderAt: number;
  orderSeq: number;
  id: string;
}

/** < 0: a is older than b. */
export function compareOrder(a: OrderPosition, b: OrderPosition): number {
  return a.orderAt - b.orderAt || a.orderSeq - b.orderSeq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Events per request are capped at 1,000 (MAX_EVENTS_PER_REQUEST), so the index fits below the multiplier. */
const SEQ_PER_MS = 1000;

export interface EventOrder {
  orderKey: string;
  orderAt: number;
  orderSeq: number;
}

/** The order fields of an accepted event: `index` is its position in the request. */
export function orderOfEvent(event: InternalEvent, acceptedAt: number, index: number): EventOrder {
  const v = viewOf(event);
  const own = v.kind === 'certificateExpiration' ? v.notificationDate : v.statusTransition;
  const parsed = own === null ? NaN : Date.parse(own);
  return {
    orderKey: correlationKeyOf(v),
    orderAt: Number.isFinite(parsed) ? Math.min(parsed, acceptedAt) : acceptedAt,
    orderSeq: acceptedAt * SEQ_PER_MS + (Math.max(0, Math.floor(index)) % SEQ_PER_MS),
  };
}

export interface KeyDelivery extends OrderPosition {
  status: DeliveryStatus;
}

export type OrderVerdict = 'send' | 'wait' | 'superseded';

const OPEN: ReadonlySet<DeliveryStatus> = new Set(['PENDING', 'IN_FLIGHT']);
const SENT: ReadonlySet<DeliveryStatus> = new Set(['IN_FLIGHT', 'DELIVERED']);

/** May `self` be claimed (not 'wait'), and once claimed, is it sent or superseded? `others`: the key's other deliveries. */
export function orderVerdict(mode: OrderMode, self: OrderPosition, others: readonly KeyDelivery[]): OrderVerdict {
  const older = others.filter((o) => compareOrder(o, self) < 0);
  const newer = others.filter((o) => compareOrder(o, self) > 0);
  if (older.some((o) => OPEN.has(o.status))) return 'wait';
  if (mode === 'supersede' ? newer.some((o) => o.status !== 'SILENCED') : newer.some((o) => SENT.has(o.status))) return 'superseded';
  return 'send';
}
