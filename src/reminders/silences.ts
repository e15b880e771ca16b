/**
 * Silences for the reminder scanner (docs/reminders.md, "Silences"): the same decisions as ingestion step 1
 * (silenceCandidates, silenceFor) over the company's routing snapshot. The snapshot is read before the scanner's
 * transaction (it reads the store; SQLite serializes every store call through one mutex).
 */
import type { InternalEvent } from '../events/families.js';
import { silenceCandidates, type RoutingSnapshot } from '../routing/match.js';
import { silenceFor } from '../silences/decide.js';
import type { SilenceRecord } from '../store/types.js';

/** The silence under which a reminder of `event` at `now` is recorded, or null to send it. */
export type ReminderSilencer = (event: { type: string; data: Record<string, unknown> }, now: number) => SilenceRecord | null;

/**
 * The scanner's `silencer` option from the routing snapshots. `current` (not `get`): the store just said the
 * company has an active silence, so a silence created on another replica a moment ago must be in the snapshot.
 * Null when the company has no live silence (nothing to load per event).
 */
export function snapshotSilencer(snapshots: { current(companyId: string): Promise<RoutingSnapshot> }) {
  return async (companyId: string): Promise<ReminderSilencer | null> => {
    const snap = await snapshots.current(companyId);
    if (!snap.silences?.length) return null;
    return (event, now) => {
      // a stored event passed validation at ingestion; a reminder's is a `.notready`, so the recovery exception never applies
      const e = event as InternalEvent;
      // a matcher that errors does not silence (fail open, like ingestion)
      return silenceFor(e, silenceCandidates(snap, e), now).silence;
    };
  };
}
