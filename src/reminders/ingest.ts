/**
 * Ingestion step 4 (docs/reminders.md): in the transaction that writes the events and their deliveries, each
 * (event, router) of a router that keeps reminders opens, refreshes or closes the reminder of (router, orderKey).
 * The decisions are decideOnEvent's; the write is "upsert if newer", so a concurrent transaction that committed a
 * newer state first is never undone.
 */
import type { EventTypeId, InternalEvent } from '../events/families.js';
import { viewOf } from '../model/event-view.js';
import type { RouterRecord } from '../model/records.js';
import type { ReminderOps, ReminderRecord } from '../store/types.js';
import { admitOpens, decideOnEvent, remindsFor, type AcceptedForReminder, type ReminderState } from './decide.js';

/** One (event, router) that may touch a reminder. */
export interface ReminderCandidate extends AcceptedForReminder {
  router: RouterRecord;
  orderKey: string;
}

/**
 * The candidates of one accepted event: its matched routers that keep reminders for its family. `sent`: the
 * event's delivery to the router is sent (the silences step passes false for a SILENCED one: it opens nothing).
 */
export function reminderCandidates(
  event: InternalEvent,
  family: EventTypeId,
  eventId: string,
  order: { orderKey: string; orderAt: number; orderSeq: number },
  routers: readonly RouterRecord[],
  sent: (router: RouterRecord) => boolean = () => true,
): ReminderCandidate[] {
  const v = viewOf(event);
  if (v.kind === 'certificateExpiration') return [];
  return routers
    .filter((r) => remindsFor(r, family))
    .map((router) => ({ router, eventId, family, state: v.state, sent: sent(router), ...order }));
}

export interface ReminderChanges {
  opened: number;
  refreshed: number;
  closed: number;
  /** new reminders not opened: the router's or the company's cap of open reminders was reached */
  refused: number;
}

const key = (routerId: string, orderKey: string) => `${routerId}\n${orderKey}`;

function stateOf(r: ReminderRecord): ReminderState {
  return {
    open: r.open,
    eventId: r.eventId,
    integrationId: r.integrationId,
    eventTypeId: r.eventTypeId,
    orderAt: r.orderAt,
    orderSeq: r.orderSeq,
    nextDueAt: r.nextDueAt,
    count: r.count,
  };
}

/** Applies the candidates, in acceptance order, inside the ingestion transaction `tx`. */
export async function applyReminders(
  tx: ReminderOps,
  companyId: string,
  candidates: readonly ReminderCandidate[],
  now: number,
): Promise<ReminderChanges> {
  const changes: ReminderChanges = { opened: 0, refreshed: 0, closed: 0, refused: 0 };
  if (candidates.length === 0) return changes;
  const stored = await tx.getReminders(
    companyId,
    candidates.map((c) => ({ routerId: c.router.id, orderKey: c.orderKey })),
  );
  const state = new Map(stored.map((r) => [key(r.routerId, r.orderKey), stateOf(r)]));
  const wasOpen = new Set(stored.filter((r) => r.open).map((r) => key(r.routerId, r.orderKey)));
  // one write per key, the newest (a batch may hold a key's .notready and its .active)
  const writes = new Map<string, { rec: Omit<ReminderRecord, 'count'>; action: 'open' | 'refresh' | 'close' }>();
  for (const c of candidates) {
    const k = key(c.router.id, c.orderKey);
    const d = decideOnEvent(c.router, c, state.get(k) ?? null, now);
    if (d.action === 'none') continue;
    state.set(k, { ...d.write, count: 0 });
    writes.set(k, { rec: { ...d.write, companyId, routerId: c.router.id, orderKey: c.orderKey, updatedAt: now }, action: d.action });
  }
  const opens = [...writes].filter(([k, w]) => w.rec.open && !wasOpen.has(k)).map(([k, w]) => ({ k, routerId: w.rec.routerId }));
  if (opens.length) {
    // counted (and, on PostgreSQL, locked) only when new rows open: refreshes and closes are never refused
    const counts = await tx.countOpenReminders(companyId, [...new Set(opens.map((o) => o.routerId))]);
    const { refused } = admitOpens(opens, counts);
    for (const r of refused) writes.delete(r.k);
    changes.refused = refused.length;
  }
  for (const [k, w] of writes) {
    if (w.action === 'close') changes.closed++;
    else if (w.rec.open && !wasOpen.has(k)) changes.opened++;
    else changes.refreshed++;
  }
  // in key order: two transactions upserting the same keys then lock them in the same order (no deadlock on PostgreSQL)
  const ordered = [...writes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, w]) => w.rec);
  if (ordered.length) await tx.putRemindersIfNewer(ordered);
  return changes;
}
