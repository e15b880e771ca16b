/**
 * Ingestion stage remind (docs/reminders.md): the (event, router) pairs of routers that keep reminders; the write
 * stage opens or closes them (reminders/ingest.ts). A silenced (event, router) opens no reminder (an .active
 * still closes one).
 */
import type { EventOrder } from '../delivery/order.js';
import type { EventTypeId, InternalEvent } from '../events/families.js';
import type { RouterRecord } from '../model/records.js';
import type { NewDelivery } from '../store/types.js';
import { reminderCandidates, type ReminderCandidate } from '../reminders/ingest.js';

export function remindCandidates(
  event: InternalEvent,
  family: EventTypeId,
  eventId: string,
  order: EventOrder,
  matched: readonly RouterRecord[],
  rows: readonly NewDelivery[],
): ReminderCandidate[] {
  const silencedRouters = new Set(rows.filter((d) => d.silenceId).map((d) => d.routerId));
  return reminderCandidates(event, family, eventId, order, matched, (r) => !silencedRouters.has(r.id));
}
