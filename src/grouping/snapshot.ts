/**
 * What a group notification says, frozen when the flusher writes its delivery (deliveries.group_snapshot): every
 * attempt of the delivery sends the same content, whatever the group does meanwhile. The worker turns it back into
 * `Notification.group` (and `reminder` for a repeat).
 */
import { isEventType } from '../events/families.js';
import type { GroupMember, NotificationGroup } from '../integrations/types.js';
import type { ListedMember } from '../store/types.js';
import type { FlushPlan, GroupRow } from './decide.js';

export interface GroupSnapshot {
  v: 1;
  group: NotificationGroup;
  /** A repeat of an unchanged, still firing group (the router's repeatInterval). */
  reminder: boolean;
}

function memberOf(m: ListedMember): GroupMember[] {
  if (!m.event || !isEventType(m.event.type)) return [];
  return [{ eventId: m.eventId, event: { type: m.event.type, data: m.event.data }, occurredAt: m.event.receivedAt }];
}

/** The snapshot of a send: `firing` and `resolved` are the newest members of each state (at most 20), newest first. */
export function snapshotOf(
  group: GroupRow,
  send: NonNullable<FlushPlan['send']>,
  firing: ListedMember[],
  resolved: ListedMember[],
): GroupSnapshot {
  return {
    v: 1,
    group: {
      key: group.key,
      labels: { ...group.labels },
      firing: send.allResolved ? [] : firing.flatMap(memberOf),
      resolved: send.kind === 'repeat' ? [] : resolved.flatMap(memberOf),
      firingCount: send.firingCount,
      resolvedCount: send.resolvedCount,
      allResolved: send.allResolved,
    },
    reminder: send.reminder,
  };
}

/** The snapshot stored with a delivery, or null when it is unreadable (a row written by a newer version). */
export function parseSnapshot(text: string): GroupSnapshot | null {
  try {
    const v = JSON.parse(text) as Partial<GroupSnapshot> | null;
    if (
      !v ||
      v.v !== 1 ||
      !v.group ||
      typeof v.group.key !== 'string' ||
      !Array.isArray(v.group.firing) ||
      !Array.isArray(v.group.resolved)
    )
      return null;
    return { v: 1, group: v.group, reminder: v.reminder === true };
  } catch {
    return null;
  }
}
