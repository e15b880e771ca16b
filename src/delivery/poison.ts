/**
 * Poisoned deliveries: one whose claim keeps being abandoned (its process died holding it, or its lease ran out)
 * may be what kills the process. The worker sends a delivery with an abandoned claim alone, so a death while it is
 * sent is charged to it and to nothing else, and dead-letters it as POISONED at the POISON_AFTER_ABANDONED-th
 * abandoned claim instead of sending it again: a delivery cannot crash-loop the hub.
 */
import type { ClaimedDelivery } from '../store/types.js';

/** Abandoned claims after which a delivery is dead-lettered unsent. */
export const POISON_AFTER_ABANDONED = 2;

/** The dead letter's reason, first word of its lastError. */
const POISONED = 'POISONED';

export function poisonedError(abandonedClaims: number): string {
  return `${POISONED}: its process died or stalled while it was in flight ${abandonedClaims} times; not sent again (retry it by hand once the cause is fixed)`;
}

export interface ClaimTriage {
  /** Dead-lettered unsent. */
  poisoned: ClaimedDelivery[];
  /** Sent alone, with nothing else in flight (null: none in this batch). */
  alone: ClaimedDelivery | null;
  /** Sent as usual; with `alone`, handed back instead (uncounted), to be claimed again after it. */
  rest: ClaimedDelivery[];
}

/** Splits a claimed batch: poisoned ones, the first suspect (an abandoned claim), the rest in claim order. */
export function triageClaims(batch: readonly ClaimedDelivery[]): ClaimTriage {
  const out: ClaimTriage = { poisoned: [], alone: null, rest: [] };
  for (const d of batch) {
    if (d.abandonedClaims >= POISON_AFTER_ABANDONED) out.poisoned.push(d);
    else if (d.abandonedClaims > 0 && out.alone === null) out.alone = d;
    else out.rest.push(d);
  }
  return out;
}
