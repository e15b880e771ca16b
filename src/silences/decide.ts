/**
 * Silences (docs/silences.md): the pure decisions. Which state a silence is in at a time, which
 * silence applies to an event, and the recovery exception (a recovery whose trigger was sent is never silenced).
 * Compiling matchers is here too: deterministic, no I/O (src/cel/).
 */
import { compileFilter, FilterCompileError, type CompiledFilter } from '../cel/index.js';
import { EVENT_TYPE_IDS, familyOfType, type EventTypeId, type InternalEvent } from '../events/families.js';
import type { SilenceRecord } from '../model/records.js';
import { compareOrder } from '../delivery/order.js';

export type SilenceState = 'PENDING' | 'ACTIVE' | 'EXPIRED';

/** Bounds of one silence (docs/security.md, limits). The matcher's are the filters' (FILTER_LIMITS). */
export const SILENCE_LIMITS = {
  /** Characters (code points) of the comment. */
  maxCommentLength: 1024,
  /** Characters (code points) of createdBy. */
  maxCreatedByLength: 256,
  /** endsAt - startsAt. */
  maxDurationMs: 366 * 86_400_000,
  /** How far in the future a silence may start. */
  maxStartAheadMs: 366 * 86_400_000,
} as const;

/** When the silence stops applying: its end, or when it was expired if earlier. */
export function effectiveEnd(s: Pick<SilenceRecord, 'endsAt' | 'expiredAt'>): number {
  return s.expiredAt === null ? s.endsAt : Math.min(s.endsAt, s.expiredAt);
}

/** PENDING before startsAt, ACTIVE in [startsAt, end), EXPIRED from the end (endsAt or expiredAt) on. */
export function silenceState(s: Pick<SilenceRecord, 'startsAt' | 'endsAt' | 'expiredAt'>, t: number): SilenceState {
  if (t >= effectiveEnd(s)) return 'EXPIRED';
  return t < s.startsAt ? 'PENDING' : 'ACTIVE';
}

/** A stored silence with its matcher compiled for each family it applies to. */
export interface CompiledSilence {
  record: SilenceRecord;
  /** The families the silence applies to, each with its compiled matcher. Empty: applies to nothing. */
  matchers: ReadonlyMap<EventTypeId, CompiledFilter>;
  /** Set when the silence applies to nothing (its matcher no longer compiles for its family or any family). */
  compileError?: string;
}

/**
 * The families a matcher applies to: `eventTypeId` given, that family (throws FilterCompileError when it does
 * not compile there); omitted, every family it compiles for (throws the first family's error when none).
 */
export function compileMatcher(
  matcher: string,
  eventTypeId: EventTypeId | null,
  compile: (expression: string, eventTypeId: EventTypeId) => CompiledFilter = compileFilter,
  families: readonly EventTypeId[] = EVENT_TYPE_IDS,
): Map<EventTypeId, CompiledFilter> {
  const out = new Map<EventTypeId, CompiledFilter>();
  if (eventTypeId !== null) {
    out.set(eventTypeId, compile(matcher, eventTypeId));
    return out;
  }
  let first: FilterCompileError | undefined;
  for (const id of families) {
    try {
      out.set(id, compile(matcher, id));
    } catch (e) {
      if (!(e instanceof FilterCompileError)) throw e;
      first ??= e;
    }
  }
  if (out.size === 0 && first) throw first;
  return out;
}

/**
 * compileMatcher for a stored silence: a matcher that no longer compiles makes a silence that applies to nothing.
 * `compile`: the routing snapshot's cached compiler (the same filters cache as routers).
 */
export function compileSilence(
  record: SilenceRecord,
  compile?: (expression: string, eventTypeId: EventTypeId) => CompiledFilter,
): CompiledSilence {
  try {
    // only the families found when it was stored (a compile of a long matcher costs tens of ms per family)
    const families = record.eventTypeIds.length ? record.eventTypeIds : EVENT_TYPE_IDS;
    return { record, matchers: compileMatcher(record.matcher, record.eventTypeId, compile, families) };
  } catch (e) {
    if (!(e instanceof FilterCompileError)) throw e;
    return { record, matchers: new Map(), compileError: e.message };
  }
}

export interface SilenceMatch {
  /** The silence that applies, if any. */
  silence: SilenceRecord | null;
  /** Matchers that could not decide for this event (evaluation error, cost budget): they do not silence. */
  errors: { silence: SilenceRecord; error: string }[];
}

/**
 * The active silence that applies to the event at `now`: among the active ones whose matcher for the event's
 * family is exactly true, the one that ends last (then the smallest id), so the answer does not depend on
 * list order. A matcher that errors does not silence (the notification goes out: failing open is the safe side).
 */
export function silenceFor(event: InternalEvent, silences: readonly CompiledSilence[], now: number): SilenceMatch {
  const family = familyOfType(event.type).eventTypeId;
  let best: SilenceRecord | null = null;
  const errors: SilenceMatch['errors'] = [];
  for (const s of silences) {
    if (silenceState(s.record, now) !== 'ACTIVE') continue;
    const m = s.matchers.get(family);
    if (!m) continue;
    const r = m.evaluate(event);
    if (r.error !== undefined) errors.push({ silence: s.record, error: r.error });
    else if (r.matched && (best === null || ranksBefore(s.record, best))) best = s.record;
  }
  return { silence: best, errors };
}

/** The answer over two parts of a silence list (silenceFor of a list = merge of silenceFor of its parts). */
export function mergeSilenceMatches(a: SilenceMatch, b: SilenceMatch): SilenceMatch {
  const silence = a.silence === null ? b.silence : b.silence === null || ranksBefore(a.silence, b.silence) ? a.silence : b.silence;
  return { silence, errors: [...a.errors, ...b.errors] };
}

function ranksBefore(a: SilenceRecord, b: SilenceRecord): boolean {
  const ea = effectiveEnd(a);
  const eb = effectiveEnd(b);
  return ea !== eb ? ea > eb : a.id < b.id;
}

/** Status of the newest earlier delivery of the same (integration, order key); null when there is none. */
export type PreviousDelivery = string | null;

/** A delivery of a key with its position in key order (delivery/order.ts). */
export interface KeyedDelivery {
  status: string;
  orderAt: number;
  orderSeq: number;
  id: string;
}

/**
 * The status of the newest of `candidates` older than `self` in key order: the stored one (the store's newest
 * earlier) and those planned in the same request, whose events may come in any order.
 */
export function newestEarlierStatus(self: Omit<KeyedDelivery, 'status'>, candidates: readonly (KeyedDelivery | null)[]): PreviousDelivery {
  let best: KeyedDelivery | null = null;
  for (const c of candidates) if (c && compareOrder(c, self) < 0 && (best === null || compareOrder(c, best) > 0)) best = c;
  return best?.status ?? null;
}

/**
 * The recovery exception: a recovery (`.active`) whose trigger was sent, i.e. the newest earlier delivery of
 * its (integration, order key) exists and was not SILENCED, is never silenced: the receiver holds an open
 * incident (or message) that only this recovery closes.
 */
export function isSentRecovery(eventType: string, previous: PreviousDelivery): boolean {
  return eventType.endsWith('.active') && previous !== null && previous !== 'SILENCED';
}

/** Per (event, router): the silence to record the delivery under, or null to deliver it. */
export function silenceVerdict(eventType: string, match: SilenceRecord | null, previous: PreviousDelivery): SilenceRecord | null {
  if (match === null) return null;
  return isSentRecovery(eventType, previous) ? null : match;
}
