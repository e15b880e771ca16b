/**
 * Ingestion, step 2 of the pipeline (docs/grouping.md): an event matched by a router with `groupBy` gets no delivery
 * row; it becomes a member of the router's group, written in the ingestion transaction (durable like a delivery: a
 * crash during groupWait loses nothing). The flusher (flusher.ts) later writes one delivery per group notification.
 */
import type { EventOrder } from '../delivery/order.js';
import type { InternalEvent } from '../events/families.js';
import type { RouterRecord } from '../model/records.js';
import type { GroupOps } from '../store/types.js';
import {
  applyMembers,
  GROUPING_LIMITS,
  groupOf,
  memberRowOf,
  overflowGroupOf,
  type GroupIdentity,
  type GroupRow,
  type MemberRow,
} from './decide.js';

/** One (event, grouped router) match of an accepted event. */
export interface GroupedMatch {
  router: RouterRecord;
  eventId: string;
  event: InternalEvent;
  order: EventOrder;
}

/**
 * Applies accepted matches to a locked group: reads their members' stored rows, applies the events (applyMembers)
 * and writes the member rows that changed. Returns the group to save and how many went past the member limit.
 */
export async function addMembers(
  tx: GroupOps,
  group: GroupRow,
  matches: readonly { eventId: string; event: InternalEvent; order: EventOrder }[],
  now: number,
  cap: number,
): Promise<{ group: GroupRow; capped: number }> {
  const incoming: MemberRow[] = matches.map((m) => memberRowOf(m, now));
  const existing = await tx.getGroupMembers(
    group.id,
    incoming.map((m) => m.memberKey),
  );
  const applied = applyMembers(group, new Map(existing.map((m) => [m.memberKey, m])), incoming, now, cap);
  if (applied.upserts.length) await tx.putGroupMembers(group.id, applied.upserts);
  return { group: applied.group, capped: applied.capped };
}

/** Whether a router groups its events (groupBy set). */
export function isGrouped(router: Pick<RouterRecord, 'groupBy'>): boolean {
  return router.groupBy.length > 0;
}

/**
 * Writes the members of `matches` (in acceptance order) into their groups, inside the caller's transaction.
 * Returns how many events went past a group's member limit (no member row; counted).
 */
export async function addGroupMembers(
  tx: GroupOps,
  companyId: string,
  matches: readonly GroupedMatch[],
  now: number,
  newId: () => string,
  limits: { membersPerGroup: number; groupsPerRouter: number } = GROUPING_LIMITS,
): Promise<number> {
  const byRouter = new Map<string, GroupedMatch[]>();
  for (const m of matches) byRouter.set(m.router.id, [...(byRouter.get(m.router.id) ?? []), m]);
  let capped = 0;
  // routers in id order, groups in key order: concurrent ingestions lock groups in the same order (no deadlock)
  for (const routerId of [...byRouter.keys()].sort()) {
    const list = byRouter.get(routerId)!;
    const router = list[list.length - 1]!.router;
    const ids = list.map((m) => groupOf(router.id, router.groupBy, m.event));
    const identities = await withinGroupLimit(tx, companyId, router, ids, limits.groupsPerRouter);
    const byKey = new Map<string, { id: GroupIdentity; members: GroupedMatch[] }>();
    list.forEach((m, i) => {
      const id = identities[i]!;
      const entry = byKey.get(id.key) ?? { id, members: [] };
      entry.members.push(m);
      byKey.set(id.key, entry);
    });
    const keys = [...byKey.keys()].sort();
    const init = keys.map((k) => initialGroup(companyId, router, byKey.get(k)!.id, byKey.get(k)!.members[0]!.eventId, now, newId()));
    const groups = await tx.lockGroups(init);
    for (const stored of groups) {
      const entry = byKey.get(stored.key)!;
      // the router's current name, integration and timing apply from now on
      const current: GroupRow = {
        ...stored,
        routerName: router.name,
        integrationId: router.integrationId,
        groupWaitMs: router.groupWaitMs,
        groupIntervalMs: router.groupIntervalMs,
        repeatIntervalMs: router.repeatIntervalMs,
      };
      const applied = await addMembers(tx, current, entry.members, now, limits.membersPerGroup);
      capped += applied.capped;
      await tx.saveGroup(applied.group);
    }
  }
  return capped;
}

/**
 * The groups-per-router limit: values that would open a group past it go to the router's overflow group. Counted
 * inside the transaction; two transactions opening groups of one router at once may pass it by their own count.
 */
async function withinGroupLimit(
  tx: GroupOps,
  companyId: string,
  router: RouterRecord,
  ids: GroupIdentity[],
  max: number,
): Promise<GroupIdentity[]> {
  const wanted = [...new Set(ids.map((i) => i.key))];
  const existing = new Set(await tx.existingGroupKeys(companyId, router.id, wanted));
  const fresh = wanted.filter((k) => !existing.has(k));
  if (fresh.length === 0) return ids;
  const overflow = overflowGroupOf(router.id, router.groupBy);
  // one place is kept for the overflow group (counted once it exists)
  let room = max - (await tx.countRouterGroups(companyId, router.id)) - (existing.has(overflow.key) ? 0 : 1);
  const admitted = new Set<string>();
  for (const k of fresh) {
    if (k === overflow.key) admitted.add(k);
    else if (room > 0) {
      admitted.add(k);
      room--;
    }
  }
  return ids.map((i) => (existing.has(i.key) || admitted.has(i.key) ? i : overflow));
}

export function initialGroup(
  companyId: string,
  router: RouterRecord,
  id: GroupIdentity,
  firstEventId: string,
  now: number,
  rowId: string,
): GroupRow {
  return {
    id: rowId,
    companyId,
    routerId: router.id,
    key: id.key,
    labels: id.labels,
    routerName: router.name,
    integrationId: router.integrationId,
    groupWaitMs: router.groupWaitMs,
    groupIntervalMs: router.groupIntervalMs,
    repeatIntervalMs: router.repeatIntervalMs,
    createdAt: now,
    nextFlushAt: now + router.groupWaitMs,
    lastFlushAt: null,
    changed: false,
    sentFiring: false,
    memberCount: 0,
    overflowFiring: 0,
    overflowTransient: 0,
    resolvedTold: 0,
    lastEventId: firstEventId,
    lastFlushEventId: null,
  };
}
