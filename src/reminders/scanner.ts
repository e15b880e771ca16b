/**
 * The reminder scanner (docs/reminders.md): the thin I/O shell around decideDue. Every `intervalMs` it claims the
 * due reminder rows in batches, one transaction each: claim (next_due_at moved; PostgreSQL: FOR UPDATE SKIP
 * LOCKED, so replicas never take the same row), read the routers and integrations, decide, and write in the same
 * transaction the reminder deliveries (new id, same event, the key's orderKey and the event's position: the order
 * rules apply) with the rows' next due time, or delete the rows that ended. Every replica runs one; a crash rolls
 * the batch back whole (nothing sent twice, nothing lost: the rows are due again).
 *
 * Never after the recovery: an `.active` closes the row in its ingestion transaction. If the scanner's
 * transaction holds the row, the close waits for it (row lock; SQLite: one writer) and the reminder delivery
 * already written is older than the `.active`'s (it has the `.notready`'s position), so the order per key sends
 * it first (or, for state-carrying types, supersedes it); if the close committed first, the claim no longer finds
 * an open row. A reminder delivery is therefore never sent after the `.active` that ended it.
 *
 * Silences: before each transaction, the companies of the due rows and whether each has an active silence are
 * read (dueReminderCompanies), and the silences of those that have one (`silencer`, from the routing snapshot:
 * reading it inside the transaction would deadlock SQLite's one mutex). Inside, a reminder whose event an active
 * silence matches is written SILENCED (silence_id set); it still takes its slot (next_due_at moves, count not).
 * A claimed row of a company the pre-read did not see (another replica took the window first) is put back due.
 */
import { randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { realClock, sleep, type Clock } from '../runtime/timers.js';
import type { DeliverySignal } from '../delivery/signal.js';
import type { NewDelivery, OutboxOps, ReminderKey, ReminderOps, Transactional } from '../store/types.js';
import { REMINDER_LIMITS, decideDue, reminderDeliveryId } from './decide.js';
import type { ReminderSilencer } from './silences.js';

/** Due reminders are looked for this often, unless configured: a reminder is at most this late. */
export const DEFAULT_REMINDER_SCAN_INTERVAL_MS = 15_000;
/** Claimed rows are held this far ahead inside the transaction (the transaction's end decides; this only fences). */
const HOLD_MS = 60_000;
/** The pre-read's window (dueReminderCompanies), in batches. */
const DUE_WINDOW_BATCHES = 4;

const REMINDER_METRICS = {
  sent: 'certmgr_notify_reminders_sent_total',
  ended: 'certmgr_notify_reminders_ended_total',
} as const;

export interface ReminderScannerOptions {
  store: Transactional & ReminderOps;
  log: Logger;
  clock?: Clock;
  /** how often due reminders are looked for; default DEFAULT_REMINDER_SCAN_INTERVAL_MS */
  intervalMs?: number;
  /** rows per transaction (default REMINDER_LIMITS.batch) and transactions per round (REMINDER_LIMITS.batchesPerScan) */
  batchSize?: number;
  batchesPerScan?: number;
  /** notified after a batch committed deliveries: wakes the delivery worker */
  deliverySignal?: Pick<DeliverySignal, 'notify'>;
  registry?: Registry;
  /** random source of the reminder ids' random bits (tests); default crypto */
  rand?: () => number;
  /**
   * The company's silence decision, read before a batch's transaction for each company with due rows and an
   * active silence (src/reminders/silences.ts snapshotSilencer); null: none live. Omitted: reminders are never silenced.
   */
  silencer?: (companyId: string) => Promise<ReminderSilencer | null>;
  /** counts reminders recorded SILENCED (certmgr_notify_notifications_silenced_total, the routing metrics') */
  silencedCounter?: Pick<Counter<'event_type_id'>, 'inc'>;
}

export interface ReminderScanReport {
  sent: number;
  /** reminder deliveries written SILENCED (an active silence matched their event) */
  silenced: number;
  skipped: number;
  /** open reminders ended (router or integration changed or gone) */
  ended: number;
  /** closed markers whose time was up */
  expired: number;
  batches: number;
}

interface Metrics {
  sent: Counter;
  ended: Counter<'reason'>;
}

export class ReminderScanner {
  readonly #o: Required<Omit<ReminderScannerOptions, 'registry' | 'deliverySignal' | 'silencer' | 'silencedCounter'>> &
    Pick<ReminderScannerOptions, 'deliverySignal' | 'silencer' | 'silencedCounter'>;
  readonly #metrics: Metrics | undefined;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(opts: ReminderScannerOptions) {
    this.#o = {
      clock: realClock,
      intervalMs: DEFAULT_REMINDER_SCAN_INTERVAL_MS,
      batchSize: REMINDER_LIMITS.batch,
      batchesPerScan: REMINDER_LIMITS.batchesPerScan,
      rand: () => randomInt(2 ** 28) / 2 ** 28,
      ...opts,
      log: opts.log.child({ component: 'reminders' }),
    };
    this.#metrics = opts.registry
      ? {
          sent: new Counter({
            name: REMINDER_METRICS.sent,
            help: 'Reminder deliveries written (a resource still unhealthy at its router repeatInterval)',
            registers: [opts.registry],
          }),
          ended: new Counter({
            name: REMINDER_METRICS.ended,
            help: 'Open reminders ended by the scanner because their router or integration changed or was deleted, by reason',
            labelNames: ['reason'],
            registers: [opts.registry],
          }),
        }
      : undefined;
  }

  /** Scans now (catch-up after downtime), then `intervalMs` after each round ends. Idempotent. */
  start(): void {
    if (this.#loop) return;
    const abort = new AbortController();
    this.#abort = abort;
    this.#loop = this.#run(abort.signal);
  }

  /** Ends the loop and waits for a running round (its batch commits or rolls back). */
  async stop(): Promise<void> {
    this.#abort?.abort();
    await this.#loop;
    this.#loop = undefined;
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const r = await this.scanOnce();
        if (r.sent || r.ended) this.#o.log.debug(r, 'reminder scan done');
      } catch (err) {
        // the batch rolled back whole: its rows are due again at the next round
        this.#o.log.error({ err }, 'reminder scan failed; retried at the next interval');
      }
      await sleep(this.#o.clock, this.#o.intervalMs, signal);
    }
  }

  /** One round: batches until nothing is due or the round's bound is reached. */
  async scanOnce(): Promise<ReminderScanReport> {
    const report: ReminderScanReport = { sent: 0, silenced: 0, skipped: 0, ended: 0, expired: 0, batches: 0 };
    for (let b = 0; b < this.#o.batchesPerScan; b++) {
      if (b > 0 && this.#abort?.signal.aborted) break; // stopping: the rest is due again at the next start
      const claimed = await this.#batch(report);
      report.batches++;
      if (claimed < this.#o.batchSize) break;
    }
    return report;
  }

  /** One transaction; returns how many rows it claimed. */
  async #batch(report: ReminderScanReport): Promise<number> {
    const now = this.#o.clock.now();
    const rand = this.#o.rand;
    const silencers = await this.#silencers(now);
    const out = await this.#o.store.transaction(async (tx) => {
      const rows = await tx.claimDueReminders(now, this.#o.batchSize, now + HOLD_MS);
      if (rows.length === 0) return { claimed: 0, sent: 0, silenced: [] as string[], skipped: 0, ended: [] as string[], expired: 0 };
      const targets = await tx.reminderTargets(rows);
      const deliveries: NewDelivery[] = [];
      const reschedule: (ReminderKey & { nextDueAt: number; sent: boolean })[] = [];
      const remove: ReminderKey[] = [];
      const ended: string[] = [];
      let expired = 0;
      const ids = new Set<string>();
      const silenced: string[] = [];
      for (const row of rows) {
        const silencer = silencers ? silencers.get(row.companyId) : null;
        if (silencer === undefined) {
          // its company's silences were not read: due again (the next batch reads them), nothing written
          reschedule.push({ companyId: row.companyId, routerId: row.routerId, orderKey: row.orderKey, nextDueAt: now, sent: false });
          continue;
        }
        const t = targets.get(`${row.companyId}/${row.routerId}`);
        const d = decideDue(row, t?.router ?? null, t?.integration ?? null, now);
        const k: ReminderKey = { companyId: row.companyId, routerId: row.routerId, orderKey: row.orderKey };
        if (d.action === 'expire' || d.action === 'close') {
          remove.push(k);
          if (d.action === 'close') ended.push(d.why);
          else expired++;
          continue;
        }
        const silence = d.action === 'send' && silencer ? await silenceOf(tx, row, silencer, now) : null;
        // a silenced reminder takes its slot (next due moves) but is not counted as sent
        reschedule.push({ ...k, nextDueAt: d.nextDueAt, sent: d.action === 'send' && !silence });
        if (d.action !== 'send') continue;
        let id = reminderDeliveryId(now, rand);
        while (ids.has(id)) id = reminderDeliveryId(now, rand);
        ids.add(id);
        if (silence) silenced.push(row.eventTypeId);
        deliveries.push({
          id,
          companyId: row.companyId,
          eventId: row.eventId,
          routerId: row.routerId,
          routerName: d.routerName,
          integrationId: row.integrationId,
          createdAt: now,
          orderKey: row.orderKey,
          orderAt: row.orderAt,
          orderSeq: row.orderSeq,
          reminder: true,
          silenceId: silence || undefined,
        });
      }
      if (deliveries.length) await tx.insertDeliveries(deliveries);
      if (reschedule.length) await tx.rescheduleReminders(reschedule, now);
      if (remove.length) await tx.deleteReminders(remove);
      const sent = deliveries.length - silenced.length;
      return { claimed: rows.length, sent, silenced, skipped: reschedule.length - deliveries.length, ended, expired };
    });
    report.sent += out.sent;
    report.silenced += out.silenced.length;
    report.skipped += out.skipped;
    report.ended += out.ended.length;
    report.expired += out.expired;
    if (out.sent) {
      this.#metrics?.sent.inc(out.sent);
      this.#o.deliverySignal?.notify();
    }
    for (const why of out.ended) this.#metrics?.ended.inc({ reason: why });
    for (const family of out.silenced) this.#o.silencedCounter?.inc({ event_type_id: family });
    return out.claimed;
  }

  /**
   * Outside the transaction: the silence decision of each company with due rows (null: no active silence), or
   * undefined when no silencer is configured (every company: never silenced).
   */
  async #silencers(now: number): Promise<Map<string, ReminderSilencer | null> | undefined> {
    const silencer = this.#o.silencer;
    if (!silencer) return undefined;
    // a window wider than the batch: a replica that claimed the first rows leaves the next ones to this one
    const companies = await this.#o.store.dueReminderCompanies(now, DUE_WINDOW_BATCHES * this.#o.batchSize);
    const out = new Map<string, ReminderSilencer | null>();
    for (const c of companies) out.set(c.companyId, c.activeSilence ? await silencer(c.companyId) : null);
    return out;
  }
}

/** The id of the silence a due reminder is recorded under, or null: its event is read only here. */
async function silenceOf(
  tx: Pick<OutboxOps, 'getEvent'>,
  row: { companyId: string; eventId: string },
  silencer: ReminderSilencer,
  now: number,
): Promise<string | null> {
  const ev = await tx.getEvent(row.companyId, row.eventId);
  if (!ev) return null;
  return silencer({ type: ev.type, data: ev.data }, now)?.id ?? null;
}
