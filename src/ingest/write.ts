/**
 * Ingestion stage write: the planned events with their deliveries, health rows, holds, reminders and group
 * members, in the one transaction `tx`. What is written is durable: the delivery worker takes it from the store.
 */
import { foldHealth } from './health.js';
import type { ConsoleOps, GroupOps, OutboxOps, ReminderOps } from '../store/types.js';
import { applyReminders } from '../reminders/ingest.js';
import { addGroupMembers } from '../grouping/ingest.js';
import { applyHolds, moveIssuerHolds } from '../grouping/hold-ingest.js';
import type { IngestContext, IngestDeps, PlannedEvent } from './stage.js';

export interface Written {
  /** group or hold members past their member limit */
  capped: number;
  /** delivery rows of hold candidates not held, per event */
  passedRows: Map<string, number>;
}

/** What the write stage writes in its transaction. */
export type IngestWriteOps = OutboxOps & Pick<ConsoleOps, 'putResourceHealth'> & GroupOps & ReminderOps;

export async function writePlanned(
  tx: IngestWriteOps,
  ctx: IngestContext,
  planned: PlannedEvent[],
  now: number,
  deps: IngestDeps,
): Promise<Written> {
  const passedRows = new Map<string, number>();
  if (!planned.length) return { capped: 0, passedRows };
  const companyId = ctx.companyId;
  const deliveries = planned.flatMap((p) => p.deliveries);
  await tx.insertEvents(planned.map((p) => ({ id: p.eventId, companyId, type: p.event.type, data: p.event.data, receivedAt: now })));
  if (deliveries.length) await tx.insertDeliveries(deliveries);
  // the console's health page (after the events: a health row references its event)
  const health = foldHealth(
    companyId,
    planned.map((p) => ({ eventId: p.eventId, type: p.event.type, order: p.order, receivedAt: now })),
  );
  if (health.length) await tx.putResourceHealth(health);
  // after the health rows: holds read the issuer's and the certificate's health as this batch leaves them
  const issuerKeys = planned.filter((p) => p.event.type.startsWith('evt.healthstatus.certmgr-issuer.')).map((p) => p.order.orderKey);
  await moveIssuerHolds(tx, companyId, [...new Set(issuerKeys)], now);
  const holds = await applyHolds(
    tx,
    companyId,
    planned.flatMap((p) => p.holds),
    now,
    () => ctx.newId(),
  );
  const passed = holds.passed.flatMap((c) => (c.fallback.kind === 'row' ? [c.fallback.delivery] : []));
  if (passed.length) await tx.insertDeliveries(passed);
  for (const d of passed) passedRows.set(d.eventId, (passedRows.get(d.eventId) ?? 0) + 1);
  // after the events: a reminder row references its event. A held failure opens no reminder (the hold is the
  // issuer's incident); its recovery still closes one.
  const reminders = await applyReminders(
    tx,
    companyId,
    planned.flatMap((p) => p.reminders.map((r) => (holds.held.has(`${r.eventId}\u0000${r.router.id}`) ? { ...r, sent: false } : r))),
    now,
  );
  if (reminders.refused && (!deps.logLimiter || deps.logLimiter.admit(deps.log, 'warn', companyId, 'reminder_cap')))
    deps.log.warn(
      { companyId, refused: reminders.refused },
      'open reminders at their cap (docs/reminders.md#limits): no reminder for these resources',
    );
  // in acceptance order (a group applies its members in that order): the grouped matches and the passed hold
  // candidates of grouped routers
  const grouped = [
    ...planned.flatMap((p) => p.grouped),
    ...holds.passed
      .filter((c) => c.fallback.kind === 'group')
      .map(({ router, eventId, event, order }) => ({ router, eventId, event, order })),
  ].sort((a, b) => a.order.orderSeq - b.order.orderSeq);
  const capped = holds.capped + (grouped.length ? await addGroupMembers(tx, companyId, grouped, now, () => ctx.newId()) : 0);
  return { capped, passedRows };
}
