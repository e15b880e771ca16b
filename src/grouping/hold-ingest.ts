/**
 * Ingestion of holds (docs/grouping.md "Held under the issuer"; decisions in hold.ts), inside the ingestion
 * transaction after the batch's health rows are written (so the batch's own issuer and certificate events count):
 * - an issuer event moves the holds under that issuer (recovered: the flusher looks at once; down again: they wait);
 * - a certificate event of a `holdUnderIssuer` router becomes a member of the router's hold of its issuer when
 *   `holdVerdict` says so; otherwise it goes where it would have gone without the option (a delivery or a group).
 * Durable like grouping: the member is written in the transaction that accepts its event.
 */
import type { EventOrder } from '../delivery/order.js';
import type { InternalEvent } from '../events/families.js';
import type { RouterRecord } from '../model/records.js';
import type { GroupOps, NewDelivery } from '../store/types.js';
import { GROUPING_LIMITS, memberStateOf, type GroupRow } from './decide.js';
import { holdIdentity, holdVerdict, issuerCandidatesOf, onIssuerHealth, pickIssuer, scheduleHold, type IssuerRef } from './hold.js';
import { addMembers, initialGroup } from './ingest.js';

/** One (certificate event, holding router) match: held, or sent on as `fallback` says. */
export interface HoldCandidate {
  router: RouterRecord;
  eventId: string;
  event: InternalEvent;
  order: EventOrder;
  /** without the hold: this delivery row, or a member of the router's group (groupBy) */
  fallback: { kind: 'row'; delivery: NewDelivery } | { kind: 'group' };
}

/** Whether a router's certificate-health matches are candidates for holding. */
export function holdsUnderIssuer(router: Pick<RouterRecord, 'holdUnderIssuer' | 'eventTypeId'>): boolean {
  return router.holdUnderIssuer && router.eventTypeId === 'certmgr-cert-resource-health-notification-config';
}

/** The issuers whose health changed in the batch (their events' order keys) move their holds. */
export async function moveIssuerHolds(tx: GroupOps, companyId: string, issuerKeys: readonly string[], now: number): Promise<void> {
  if (issuerKeys.length === 0) return;
  const holds = await tx.lockIssuerHolds(companyId, [...issuerKeys]);
  if (holds.length === 0) return;
  const streaks = await tx.resourceStreaks(companyId, [...new Set(holds.map((h) => h.holdIssuer!))]);
  for (const h of holds) {
    const next = onIssuerHealth(h, streaks.get(h.holdIssuer!) ? 'notready' : 'ready', now);
    if (next !== h) await tx.saveGroup(next);
  }
}

function initialHold(
  companyId: string,
  router: RouterRecord,
  issuer: IssuerRef,
  firstEventId: string,
  now: number,
  rowId: string,
): GroupRow {
  // a group's row, without reminders (the issuer's own router reminds), marked as the issuer's hold
  return {
    ...initialGroup(companyId, router, holdIdentity(router.id, issuer), firstEventId, now, rowId),
    repeatIntervalMs: null,
    holdIssuer: issuer.key,
    issuerReadyAt: null,
    holdReleased: false,
  };
}

/**
 * Decides every candidate (in acceptance order) and writes the held ones as hold members. Returns the candidates
 * not held (the caller sends them on by their fallback) and the held ones' `eventId\0routerId` (no reminder opens for
 * them: the hold is the issuer's incident).
 */
export async function applyHolds(
  tx: GroupOps,
  companyId: string,
  candidates: readonly HoldCandidate[],
  now: number,
  newId: () => string,
  limits: { membersPerGroup: number; groupsPerRouter: number } = GROUPING_LIMITS,
): Promise<{ passed: HoldCandidate[]; held: Set<string>; capped: number }> {
  const passed: HoldCandidate[] = [];
  const held = new Set<string>();
  let capped = 0;
  if (candidates.length === 0) return { passed, held, capped };
  const pairs = candidates.map((c) => issuerCandidatesOf(c.event));
  const streaks = await tx.resourceStreaks(companyId, [
    ...candidates.map((c) => c.order.orderKey),
    ...pairs.flatMap((p) => (p ? [p[0].key, p[1].key] : [])),
  ]);
  const byRouter = new Map<string, number[]>();
  candidates.forEach((c, i) => byRouter.set(c.router.id, [...(byRouter.get(c.router.id) ?? []), i]));
  // routers in id order, holds in key order (lockGroups): concurrent ingestions lock in the same order
  for (const routerId of [...byRouter.keys()].sort()) {
    const idx = byRouter.get(routerId)!;
    const router = candidates[idx[idx.length - 1]!]!.router;
    const certKeys = idx.map((i) => candidates[i]!.order.orderKey);
    // the router's holds of any candidate issuer, and which of these certificates are members of them
    const refs = new Map<string, IssuerRef>();
    for (const i of idx) for (const r of pairs[i] ?? []) refs.set(holdIdentity(routerId, r).key, r);
    const existing = await tx.existingGroupKeys(companyId, routerId, [...refs.keys()]);
    const memberOf = new Map<string, string>();
    if (existing.length) {
      const init = existing.sort().map((k) => initialHold(companyId, router, refs.get(k)!, candidates[idx[0]!]!.eventId, now, newId()));
      for (const h of await tx.lockGroups(init)) for (const m of await tx.getGroupMembers(h.id, certKeys)) memberOf.set(m.memberKey, h.key);
    }
    const toHold = new Map<string, { issuer: IssuerRef; members: HoldCandidate[] }>();
    let room: number | null = null;
    for (const i of idx) {
      const c = candidates[i]!;
      const pair = pairs[i];
      const certKey = c.order.orderKey;
      const memberHold = memberOf.get(certKey);
      const issuer = memberHold ? refs.get(memberHold)! : pair ? pickIssuer(pair, streaks) : null;
      const verdict = issuer
        ? holdVerdict({
            state: memberStateOf(c.event).state,
            member: memberHold !== undefined,
            issuer: streaks.get(issuer.key) ?? null,
            certificate: streaks.get(certKey) ?? null,
          })
        : 'pass';
      const key = memberHold ?? (issuer ? holdIdentity(routerId, issuer).key : '');
      if (verdict === 'hold' && !toHold.has(key) && !existing.includes(key)) {
        // the groups-per-router limit: past it a new hold is not opened (the event is sent on as without the option)
        room ??= limits.groupsPerRouter - (await tx.countRouterGroups(companyId, routerId));
        if (room <= 0) {
          passed.push(c);
          continue;
        }
        room--;
      }
      if (verdict === 'pass') {
        passed.push(c);
        continue;
      }
      const entry = toHold.get(key) ?? { issuer: issuer!, members: [] };
      entry.members.push(c);
      toHold.set(key, entry);
      memberOf.set(certKey, key);
      held.add(`${c.eventId}\u0000${routerId}`);
    }
    if (toHold.size === 0) continue;
    const keys = [...toHold.keys()].sort();
    const init = keys.map((k) => initialHold(companyId, router, toHold.get(k)!.issuer, toHold.get(k)!.members[0]!.eventId, now, newId()));
    for (const stored of await tx.lockGroups(init)) {
      const current: GroupRow = {
        ...stored,
        routerName: router.name,
        integrationId: router.integrationId,
        groupWaitMs: router.groupWaitMs,
      };
      const applied = await addMembers(tx, current, toHold.get(stored.key)!.members, now, limits.membersPerGroup);
      capped += applied.capped;
      await tx.saveGroup(scheduleHold(applied.group, now));
    }
  }
  return { passed, held, capped };
}
