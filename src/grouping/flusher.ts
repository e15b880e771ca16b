/**
 * The group flusher (docs/grouping.md): the thin I/O shell around `planFlush`. Every `pollIntervalMs` it takes the
 * groups whose nextFlushAt has come and, per batch in ONE transaction, decides each group and writes its
 * notification as one delivery (with a snapshot of what it says, under orderKey = the group's key) and the group's
 * new state. A crash before the commit leaves the group due (flushed again after the restart); after it, the
 * delivery is in the outbox: nothing is lost or said twice.
 *
 * Replicas: serve runs it beside the delivery worker (while leading); it is also safe on several at once, since a
 * batch locks its groups (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite serializes write transactions).
 */
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { randomUUID } from 'node:crypto';
import type { DeliverySignal } from '../delivery/signal.js';
import type { GroupOps, OutboxOps, Transactional } from '../store/types.js';
import { GROUPING_LIMITS, needsEventCopy, planFlush, type FlushKind, type GroupRow } from './decide.js';
import { snapshotOf } from './snapshot.js';
import { planHoldFlush } from './hold.js';

export interface GroupFlusherOptions {
  store: Transactional & GroupOps;
  log: Logger;
  /** Prometheus registry for the grouping metrics. */
  registry?: Registry;
  /** Epoch-ms clock; default Date.now. */
  clock?: () => number;
  newId?: () => string;
  /** How often to look for due groups; default 1 s (the finest groupWait/groupInterval step that matters). */
  pollIntervalMs?: number;
  /** Groups per transaction; default 50. */
  batchSize?: number;
  /** Notified after a batch that wrote deliveries committed (wakes the delivery worker). */
  deliverySignal?: Pick<DeliverySignal, 'notify'> | undefined;
}

interface FlushMetrics {
  sent: Counter<'kind'>;
}

function flushMetrics(registry: Registry, store: GroupOps): FlushMetrics {
  new Gauge({
    name: 'certmgr_notify_groups_open',
    help: 'Notification groups open (collecting, or waiting for their members to recover), over all companies',
    registers: [registry],
    async collect() {
      this.set(await store.countGroups());
    },
  });
  return {
    sent: new Counter({
      name: 'certmgr_notify_group_notifications_total',
      help: 'Group notifications written, by kind: notify (new or changed group), resolved (all recovered), repeat (repeatInterval), held (an issuer hold opened), released (an issuer hold summary)',
      labelNames: ['kind'],
      registers: [registry],
    }),
  };
}

export class GroupFlusher {
  readonly #o: Required<Omit<GroupFlusherOptions, 'registry' | 'deliverySignal'>> & Pick<GroupFlusherOptions, 'deliverySignal'>;
  readonly #metrics: FlushMetrics | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #started = false;

  constructor(o: GroupFlusherOptions) {
    this.#o = {
      store: o.store,
      log: o.log.child({ component: 'grouping' }),
      clock: o.clock ?? Date.now,
      newId: o.newId ?? randomUUID,
      pollIntervalMs: o.pollIntervalMs ?? 1000,
      batchSize: o.batchSize ?? 50,
      deliverySignal: o.deliverySignal,
    };
    this.#metrics = o.registry ? flushMetrics(o.registry, o.store) : undefined;
  }

  /** Starts polling (again after a stop: leadership may come back). */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#schedule(0);
  }

  /** Stops polling and waits for a running batch to commit or roll back. */
  async stop(): Promise<void> {
    this.#started = false;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(ms: number): void {
    if (!this.#started) return;
    this.#timer = setTimeout(() => {
      this.#running = this.flushDue()
        .then(() => undefined)
        .catch((err: unknown) => this.#o.log.error({ err }, 'group flush failed; retried at the next poll'))
        .finally(() => this.#schedule(this.#o.pollIntervalMs));
    }, ms);
    this.#timer.unref?.();
  }

  /** Flushes every group due now, batch by batch; returns how many notifications were written. */
  async flushDue(): Promise<number> {
    let written = 0;
    for (;;) {
      const now = this.#o.clock();
      const r = await this.#o.store.transaction((tx) => this.#batch(tx, now));
      written += r.sent.length;
      if (r.sent.length) {
        for (const k of r.sent) this.#metrics?.sent.inc({ kind: k });
        this.#o.deliverySignal?.notify();
      }
      if (r.groups < this.#o.batchSize || !this.#started) return written;
    }
  }

  async #batch(tx: GroupOps & OutboxOps, now: number): Promise<{ groups: number; sent: FlushKind[] }> {
    const groups = await tx.lockDueGroups(now, this.#o.batchSize);
    const sent: FlushKind[] = [];
    for (const g of groups) {
      const kind = await this.#flushGroup(tx, g, now);
      if (kind) sent.push(kind);
    }
    return { groups: groups.length, sent };
  }

  async #flushGroup(tx: GroupOps & OutboxOps, g: GroupRow, now: number): Promise<FlushKind | null> {
    const counts = await tx.groupMemberCounts(g.id);
    // the deliveries table holds one delivery per (event, router): a repeat (no newer event) is written under a
    // copy of the group's newest event
    const copy = needsEventCopy(g);
    const eventId = copy ? this.#o.newId() : g.lastEventId;
    // a hold (held under the issuer, hold.ts) has its own timing; its notification carries where the issuer stands
    const hold = g.holdIssuer ? planHoldFlush(g, counts, now, eventId) : null;
    const plan = hold ?? planFlush(g, counts, now, eventId);
    let sent: FlushKind | null = null;
    if (plan.send) {
      const firing = plan.send.allResolved ? [] : await tx.listGroupMembers(g.id, 'firing', GROUPING_LIMITS.listed);
      const resolved = plan.send.kind === 'repeat' ? [] : await tx.listGroupMembers(g.id, 'resolved', GROUPING_LIMITS.listed);
      const snapshot = snapshotOf(hold ? { ...g, labels: hold.labels } : g, plan.send, firing, resolved);
      const source = copy ? await tx.getEvent(g.companyId, g.lastEventId) : null;
      if (copy && !source) {
        this.#o.log.warn({ companyId: g.companyId, groupId: g.id }, 'group repeat skipped: its newest event is gone');
      } else {
        if (source) await tx.insertEvents([{ ...source, id: eventId, receivedAt: now }]);
        await tx.insertDeliveries([
          {
            id: this.#o.newId(),
            companyId: g.companyId,
            eventId,
            routerId: g.routerId,
            routerName: g.routerName,
            integrationId: g.integrationId,
            createdAt: now,
            orderKey: g.key,
            orderAt: now,
            orderSeq: now * 1000,
            groupKey: g.key,
            groupSnapshot: JSON.stringify(snapshot),
          },
        ]);
        sent = plan.send.kind;
      }
      if (plan.dropSettled) await tx.dropSettledMembers(g.id);
    }
    if (plan.deleteGroup) await tx.deleteGroup(g.id);
    else await tx.saveGroup(plan.group);
    return sent;
  }
}
