/**
 * Reminders (docs/reminders.md): the pure decisions. A router WITHOUT groupBy and WITH a repeatInterval
 * re-notifies while a resource stays unhealthy. State per (router, orderKey) lives in the store (`reminders`,
 * migration 13); the ingestion transaction opens, refreshes and closes it, the scanner sends what is due.
 *
 * Positions: a reminder row carries the order position (orderAt, orderSeq) of the event it speaks for, the same
 * position the event's own deliveries have (delivery/order.ts). Every write is "upsert if newer": a row only ever
 * moves to a newer position, whatever order concurrent transactions commit in. A close keeps the row as a closed
 * marker (a tombstone) for CLOSED_KEEP_MS, so a `.notready` older than the `.active` that arrives later (a client's
 * re-send, a concurrent request) cannot reopen it.
 */
import type { EventTypeId } from '../events/families.js';
import type { RouterRecord } from '../model/records.js';

/** Bounds (docs/security.md limits table). */
export const REMINDER_LIMITS = {
  /** open reminders of one router: a new unhealthy resource beyond it gets no reminder (its own notification is sent) */
  openPerRouter: 10_000,
  /** open reminders of one company, all routers */
  openPerCompany: 50_000,
  /** reminder rows claimed (and deliveries written) per scanner transaction */
  batch: 500,
  /** transactions per scan round: at most batch × this reminder deliveries per round and replica */
  batchesPerScan: 20,
} as const;

/** How long a closed reminder is kept as a marker against older `.notready`s arriving late (the delivery max age). */
export const CLOSED_KEEP_MS = 86_400_000;

const EXPIRATION: EventTypeId = 'cert-expiry-ext-notification-config';

export type ReminderRouter = Pick<RouterRecord, 'enabled' | 'eventTypeId' | 'integrationId' | 'groupBy' | 'repeatIntervalMs'>;

/**
 * Whether a router keeps reminders for events of `family`: repeatInterval set, no groupBy (a grouped router
 * repeats its group: src/grouping/), and a health family (issuer, certificate, agent). Expiration events never:
 * their thresholds are the reminders (the API refuses the combination anyway). The hub's agent family is a health
 * family like the others: a silent cluster's `.notready` is reminded of until the cluster reports or is deleted
 * (both send the `.active`).
 */
export function remindsFor(router: ReminderRouter, family: EventTypeId): boolean {
  return (
    router.enabled &&
    router.repeatIntervalMs !== null &&
    router.repeatIntervalMs > 0 &&
    router.groupBy.length === 0 &&
    family !== EXPIRATION &&
    router.eventTypeId === family
  );
}

export interface ReminderPosition {
  orderAt: number;
  orderSeq: number;
}

/** < 0: a is older. Positions of two different events never tie except for two replicas in one millisecond. */
function comparePosition(a: ReminderPosition, b: ReminderPosition): number {
  return a.orderAt - b.orderAt || a.orderSeq - b.orderSeq;
}

/** The stored state of (router, orderKey). */
export interface ReminderState extends ReminderPosition {
  open: boolean;
  eventId: string;
  integrationId: string;
  eventTypeId: EventTypeId;
  nextDueAt: number;
  /** reminders sent since it (re)opened */
  count: number;
}

/** A write of the state: applied only if its position is newer than the stored one (or nothing is stored). */
export type ReminderWrite = Omit<ReminderState, 'count'>;

export interface AcceptedForReminder extends ReminderPosition {
  eventId: string;
  state: 'unhealthy' | 'restored';
  family: EventTypeId;
  /** the event's delivery for this router is sent (false: SILENCED, never sent) */
  sent: boolean;
}

export type EventDecision =
  { action: 'none'; why: 'not reminded' | 'older' | 'silenced' } | { action: 'open' | 'refresh' | 'close'; write: ReminderWrite };

/**
 * What an accepted event does to its (router, orderKey) reminder, `acceptedAt` being the acceptance time:
 * - open: an unhealthy event (`.notready`), nothing open: the first reminder at acceptedAt + repeat;
 * - refresh: a newer unhealthy event while open: it speaks for the newest event, next due from it;
 * - close: a restored event (`.active`), sent or silenced (a recovery always ends the reminders): a closed marker;
 * - none: the router keeps no reminders for it, the stored state is newer (the event arrived late: its own
 *   delivery is superseded too), or the unhealthy event's delivery is SILENCED (opens and refreshes nothing).
 */
export function decideOnEvent(
  router: ReminderRouter,
  e: AcceptedForReminder,
  state: ReminderState | null,
  acceptedAt: number,
): EventDecision {
  if (!remindsFor(router, e.family)) return { action: 'none', why: 'not reminded' };
  if (state && comparePosition(e, state) <= 0) return { action: 'none', why: 'older' };
  const base = { eventId: e.eventId, integrationId: router.integrationId, eventTypeId: e.family, orderAt: e.orderAt, orderSeq: e.orderSeq };
  if (e.state === 'restored') return { action: 'close', write: { ...base, open: false, nextDueAt: acceptedAt + CLOSED_KEEP_MS } };
  if (!e.sent) return { action: 'none', why: 'silenced' };
  const write = { ...base, open: true, nextDueAt: acceptedAt + router.repeatIntervalMs! };
  return { action: state?.open ? 'refresh' : 'open', write };
}

/** Admits new opens under the caps; refreshes and closes always pass. `open` counts are before this batch. */
export function admitOpens<T extends { routerId: string }>(
  opens: readonly T[],
  open: { company: number; byRouter: ReadonlyMap<string, number> },
  limits: { perRouter: number; perCompany: number } = {
    perRouter: REMINDER_LIMITS.openPerRouter,
    perCompany: REMINDER_LIMITS.openPerCompany,
  },
): { admitted: T[]; refused: T[] } {
  let company = open.company;
  const byRouter = new Map(open.byRouter);
  const admitted: T[] = [];
  const refused: T[] = [];
  for (const o of opens) {
    const r = byRouter.get(o.routerId) ?? 0;
    if (company >= limits.perCompany || r >= limits.perRouter) {
      refused.push(o);
      continue;
    }
    company++;
    byRouter.set(o.routerId, r + 1);
    admitted.push(o);
  }
  return { admitted, refused };
}

export type DueDecision =
  /** write a reminder delivery of the newest unhealthy event; next reminder at nextDueAt */
  | { action: 'send'; nextDueAt: number; routerName: string }
  /** the integration is disabled: nothing written (it would only be dead-lettered); try again at nextDueAt */
  | { action: 'skip'; nextDueAt: number; why: 'integration disabled' }
  /** the router no longer reminds of this: the row is deleted */
  | {
      action: 'close';
      why:
        | 'router deleted'
        | 'router disabled'
        | 'repeat off'
        | 'grouped'
        | 'event type changed'
        | 'integration changed'
        | 'integration deleted';
    }
  /** a closed marker whose time is up: deleted */
  | { action: 'expire' };

/**
 * A due row at `now`, against the router and integration as they are now. The router's filter is NOT evaluated
 * again: the reminder speaks for an event the filter matched when it was accepted (docs/reminders.md).
 */
export function decideDue(
  row: Pick<ReminderState, 'open' | 'integrationId' | 'eventTypeId'>,
  router: (ReminderRouter & { name: string }) | null,
  integration: { enabled: boolean } | null,
  now: number,
): DueDecision {
  if (!row.open) return { action: 'expire' };
  if (!router) return { action: 'close', why: 'router deleted' };
  if (!router.enabled) return { action: 'close', why: 'router disabled' };
  if (router.repeatIntervalMs === null || router.repeatIntervalMs <= 0) return { action: 'close', why: 'repeat off' };
  if (router.groupBy.length > 0) return { action: 'close', why: 'grouped' };
  if (router.eventTypeId !== row.eventTypeId) return { action: 'close', why: 'event type changed' };
  // the key's recovery would now go to the other integration and never close this one
  if (router.integrationId !== row.integrationId) return { action: 'close', why: 'integration changed' };
  if (!integration) return { action: 'close', why: 'integration deleted' };
  const nextDueAt = now + router.repeatIntervalMs;
  if (!integration.enabled) return { action: 'skip', nextDueAt, why: 'integration disabled' };
  return { action: 'send', nextDueAt, routerName: router.name };
}

/** The prefix that makes a reminder id sort after every random (version 4) UUID: twelve f, then version 8. */
const REMINDER_ID_PREFIX = 'ffffffff-ffff-8';

/**
 * A reminder delivery's id. It has its event's order position (so an `.active` accepted later is newer than every
 * reminder of the `.notready` before it), and the order per key breaks ties of one position by id: the id must
 * sort after the event's own deliveries (random v4 ids) and after earlier reminders, or the order rules would
 * supersede it as "older than one already sent". An RFC 9562 version 8 UUID: twelve `f`, the version, the time
 * (44 bits of ms, fixed width, so later ids sort later), 28 random bits. Pure: `rand` gives the random bits.
 */
export function reminderDeliveryId(now: number, rand: () => number): string {
  const t = Math.max(0, Math.floor(now)).toString(16).padStart(11, '0').slice(-11);
  const r = Math.floor(rand() * 2 ** 28)
    .toString(16)
    .padStart(7, '0')
    .slice(-7);
  // ffffffff-ffff-8ttt-8ttt-tttttrrrrrrr (the variant nibble is 8)
  return `${REMINDER_ID_PREFIX}${t.slice(0, 3)}-8${t.slice(3, 6)}-${t.slice(6)}${r}`;
}
