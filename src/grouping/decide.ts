/**
 * Grouping (docs/grouping.md): the pure decisions. A router with `groupBy` collects its events into groups
 * (one per router and groupBy values) and notifies per group, with Alertmanager's timing: the first notification
 * `groupWait` after the group's first member, then at most one per `groupInterval` and only when something changed,
 * and again every `repeatInterval` (when the router has one) while a member is firing.
 *
 * The store (src/store/groups.ts) keeps groups and members; ingestion (src/grouping/ingest.ts) and the flusher
 * (src/grouping/flusher.ts) read them, call these functions and write the result, in one transaction each.
 */
import { createHash } from 'node:crypto';
import type { EventOrder } from '../delivery/order.js';
import type { InternalEvent } from '../events/families.js';
import { viewOf } from '../model/event-view.js';
import type { GroupRow, MemberRow } from './records.js';

export type { GroupRow, MemberRow } from './records.js';

/** Bounds (docs/security.md "Limits"). */
export const GROUPING_LIMITS = {
  /** Member rows per group; past it the counts still grow (see applyMembers) but no row is written. */
  membersPerGroup: 10_000,
  /** Groups per router; past it new values fall into the router's one overflow group (labels "(other)"). */
  groupsPerRouter: 1_000,
  /** Characters of one label value kept for display (the key hashes the whole value). */
  labelChars: 256,
  /** Members listed per state in one notification (the counts tell the rest). */
  listed: 20,
} as const;

/** The label value of a group past the router's group limit. */
const OVERFLOW_LABEL = '(other)';

/** The value of an event field path ('type' or 'data.a.b') as a label: '' when absent or not a scalar. */
export function fieldValue(event: InternalEvent, path: string): string {
  if (path === 'type') return event.type;
  const [root, ...rest] = path.split('.');
  if (root !== 'data' || rest.length === 0) return '';
  let v: unknown = event.data;
  for (const name of rest) v = v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[name] : undefined;
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

export interface GroupIdentity {
  /** certmgr:group:<sha256 hex>: stable per (router, groupBy fields, their values); never the raw values. */
  key: string;
  /** groupBy field → value, each cut to GROUPING_LIMITS.labelChars characters. */
  labels: Record<string, string>;
}

/** Cut to `max` code points (a label is for display; the key is computed from the whole value). */
function cut(s: string, max: number): string {
  const chars = Array.from(s);
  return chars.length <= max ? s : chars.slice(0, max - 1).join('') + '…';
}

/** The group of `event` under a router's `groupBy` (non-empty). The router id is part of the hash: groups are per router. */
export function groupOf(routerId: string, groupBy: readonly string[], event: InternalEvent): GroupIdentity {
  const values = groupBy.map((p) => fieldValue(event, p));
  return identity(routerId, groupBy, values);
}

/** The router's overflow group (past GROUPING_LIMITS.groupsPerRouter): every field labelled "(other)". */
export function overflowGroupOf(routerId: string, groupBy: readonly string[]): GroupIdentity {
  return identity(
    routerId,
    groupBy,
    groupBy.map(() => null),
  );
}

function identity(routerId: string, groupBy: readonly string[], values: (string | null)[]): GroupIdentity {
  const hash = createHash('sha256')
    .update(JSON.stringify([routerId, groupBy.map((p, i) => [p, values[i] ?? null])]))
    .digest('hex');
  const labels: Record<string, string> = {};
  groupBy.forEach((p, i) => (labels[p] = values[i] === null ? OVERFLOW_LABEL : cut(values[i] ?? '', GROUPING_LIMITS.labelChars)));
  return { key: `certmgr:group:${hash}`, labels };
}

/**
 * A member's state from its newest event: a health `.notready` is firing until its `.active` resolves it; an
 * expiration event is firing once (`transient`: listed in the next notification, then dropped: expiration never
 * resolves, like a single expiration event never closes its incident).
 */
export function memberStateOf(event: InternalEvent): { state: 'firing' | 'resolved'; transient: boolean } {
  const v = viewOf(event);
  if (v.kind === 'certificateExpiration') return { state: 'firing', transient: true };
  return { state: v.state === 'restored' ? 'resolved' : 'firing', transient: false };
}

/** The member row an accepted match becomes: its resource (the order key), its newest event and that event's state. */
export function memberRowOf(m: { eventId: string; event: InternalEvent; order: EventOrder }, now: number): MemberRow {
  const s = memberStateOf(m.event);
  return {
    memberKey: m.order.orderKey,
    eventId: m.eventId,
    state: s.state,
    transient: s.transient,
    orderAt: m.order.orderAt,
    orderSeq: m.order.orderSeq,
    acceptedAt: now,
  };
}

/** An event becoming (or updating) a member. */
export type IncomingMember = MemberRow;

export interface AppliedMembers {
  group: GroupRow;
  /** Member rows to insert or replace. */
  upserts: MemberRow[];
  /** Events of new members past the member limit (no row written). */
  capped: number;
}

const newer = (a: { orderAt: number; orderSeq: number }, b: { orderAt: number; orderSeq: number }) =>
  a.orderAt > b.orderAt || (a.orderAt === b.orderAt && a.orderSeq > b.orderSeq);

/**
 * Ingestion: the events of one group (in acceptance order) applied to its state. `existing` holds the stored rows of
 * the incoming members' keys. A group's first notification stays at its first member + groupWait; after that, a
 * change makes it due at the last notification + groupInterval (or now, if that has passed).
 */
export function applyMembers(
  group: GroupRow,
  existing: ReadonlyMap<string, MemberRow>,
  incoming: readonly IncomingMember[],
  now: number,
  cap: number = GROUPING_LIMITS.membersPerGroup,
): AppliedMembers {
  const g: GroupRow = { ...group };
  const members = new Map(existing);
  const upserts = new Map<string, MemberRow>();
  let capped = 0;
  for (const m of incoming) {
    g.lastEventId = m.eventId;
    const cur = members.get(m.memberKey);
    if (cur) {
      if (!newer(m, cur)) continue; // late: the member already holds a newer event
      if (cur.state !== m.state || m.transient) g.changed = true;
    } else if (g.memberCount >= cap) {
      capped++;
      if (m.transient) g.overflowTransient++;
      else if (m.state === 'firing') g.overflowFiring++;
      else if (g.overflowFiring > 0) g.overflowFiring--;
      else continue; // a recovery of a member never counted: nothing changed
      g.changed = true;
      continue;
    } else {
      g.memberCount++;
      g.changed = true;
    }
    members.set(m.memberKey, m);
    upserts.set(m.memberKey, m);
  }
  if (g.changed) {
    if (g.lastFlushAt === null) g.nextFlushAt ??= g.createdAt + g.groupWaitMs;
    else g.nextFlushAt = Math.min(g.nextFlushAt ?? Infinity, Math.max(now, g.lastFlushAt + g.groupIntervalMs));
  }
  return { group: g, upserts: [...upserts.values()], capped };
}

/** Member counts of a group at flush time (stored rows). */
export interface MemberCounts {
  /** firing, not transient */
  firing: number;
  /** firing, transient (expiration) */
  transient: number;
  resolved: number;
}

/** notify, resolved, repeat: a group's; held (the issuer's incident opens), released (its summary): a hold's (hold.ts). */
export type FlushKind = 'notify' | 'resolved' | 'repeat' | 'held' | 'released';

export interface FlushPlan {
  /** The notification to write, or null. */
  send: { kind: FlushKind; allResolved: boolean; reminder: boolean; firingCount: number; resolvedCount: number } | null;
  /** After the write: drop resolved and transient members (they have been told, or there is nothing to tell). */
  dropSettled: boolean;
  /** The group ends (nothing left firing): delete it with its members. */
  deleteGroup: boolean;
  /** The group's state after the flush (when kept). */
  group: GroupRow;
}

/**
 * The flusher, for a group whose nextFlushAt has come. Alertmanager's semantics:
 * - first flush (groupWait over): send if a member is firing; a group whose members all recovered before it sends nothing;
 * - later: send when something changed (at most once per groupInterval, ensured by nextFlushAt); "all recovered"
 *   (incident resolve) when nothing is firing any more after a firing notification was sent;
 * - nothing changed: repeat while firing, every repeatInterval, when the router has one.
 * `eventId` is the event the notification is written under (the caller picks it).
 */
export function planFlush(group: GroupRow, counts: MemberCounts, now: number, eventId: string): FlushPlan {
  const persistent = counts.firing + group.overflowFiring;
  const firingCount = persistent + counts.transient + group.overflowTransient;
  let send: FlushPlan['send'] = null;
  if (group.lastFlushAt === null || group.changed) {
    if (firingCount > 0) send = { kind: 'notify', allResolved: false, reminder: false, firingCount, resolvedCount: counts.resolved };
    else if (group.lastFlushAt !== null && group.sentFiring)
      // every member of the episode: those told recovered before (rows dropped) and these
      send = { kind: 'resolved', allResolved: true, reminder: false, firingCount: 0, resolvedCount: group.resolvedTold + counts.resolved };
  } else if (persistent > 0 && group.repeatIntervalMs !== null && now >= group.lastFlushAt + group.repeatIntervalMs) {
    send = { kind: 'repeat', allResolved: false, reminder: true, firingCount: persistent, resolvedCount: 0 };
  }
  const g: GroupRow = { ...group };
  if (send) {
    g.lastFlushAt = now;
    // the event the notification was written under is the group's newest from now on (a repeat's copy included),
    // so the next repeat copies again and never reuses an event of this router (one delivery per event and router)
    g.lastEventId = eventId;
    g.lastFlushEventId = eventId;
    g.changed = false;
    g.sentFiring ||= persistent > 0;
    g.overflowTransient = 0;
    g.resolvedTold += counts.resolved;
    g.memberCount = counts.firing; // resolved and transient rows are dropped with the write
  }
  // Kept only while a health member is firing (its recovery is still to be told). Transient members always mark a
  // change, so a group with nothing persistent firing has just been told everything there is (or had nothing to say).
  const deleteGroup = persistent === 0;
  if (!deleteGroup) {
    const base = g.lastFlushAt ?? now;
    g.nextFlushAt = g.changed ? now + g.groupIntervalMs : g.repeatIntervalMs !== null ? base + g.repeatIntervalMs : null;
  }
  return { send, dropSettled: send !== null, deleteGroup, group: g };
}

/** The event a group notification is written under: the group's newest, unless the last notification used it (a repeat). */
export function needsEventCopy(group: GroupRow): boolean {
  return group.lastFlushEventId !== null && group.lastFlushEventId === group.lastEventId;
}
