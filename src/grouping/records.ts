/** The grouping records (docs/grouping.md): what the store keeps per group and member. Plain data. */

/** One member of a group, as stored: a resource (its correlation key) and its newest event. */
export interface MemberRow {
  memberKey: string;
  eventId: string;
  state: 'firing' | 'resolved';
  transient: boolean;
  /** Order of its newest event (delivery/order.ts): an older event arriving late does not replace it. */
  orderAt: number;
  orderSeq: number;
  /** When its newest event was accepted. */
  acceptedAt: number;
}

/** A group's durable state (one row of notification_groups). */
export interface GroupRow {
  id: string;
  companyId: string;
  routerId: string;
  key: string;
  labels: Record<string, string>;
  /** The router's name, integration and timing as of its newest member (a later router change applies from then). */
  routerName: string;
  integrationId: string;
  groupWaitMs: number;
  groupIntervalMs: number;
  repeatIntervalMs: number | null;
  createdAt: number;
  /** When the flusher should look at the group next; null: nothing to do until a member changes. */
  nextFlushAt: number | null;
  /** When a notification for the group was last written; null: still in its groupWait. */
  lastFlushAt: number | null;
  /** Something changed since the last notification (a new member, a member's state). */
  changed: boolean;
  /** A notification with a (non-transient) firing member was sent: a later "all recovered" is meaningful. */
  sentFiring: boolean;
  /** Member rows stored. */
  memberCount: number;
  /** Past the member limit: health members firing without a row (+1 per `.notready`, -1 per `.active`, never < 0). */
  overflowFiring: number;
  /** Past the member limit: expiration events without a row since the last notification. */
  overflowTransient: number;
  /** Members told recovered by this group's notifications so far (their rows dropped): "all N recovered" counts them too. */
  resolvedTold: number;
  /** The newest event accepted into the group, and the one the last notification was written under. */
  lastEventId: string;
  lastFlushEventId: string | null;
  /**
   * Held under the issuer (migration 21, hold.ts): the issuer's correlation key when this row is a router's hold of
   * that issuer's certificates; null or absent for a group.
   */
  holdIssuer?: string | null | undefined;
  /** A hold: when its issuer was seen ready again; null while it is not ready. */
  issuerReadyAt?: number | null | undefined;
  /** A hold: its summary went out (the issuer recovered and certificates stayed broken past the grace). */
  holdReleased?: boolean | undefined;
}
