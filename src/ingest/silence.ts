/**
 * Ingestion stage silence (docs/silences.md): decided for every matched router, grouped or not. An active
 * silence whose matcher accepts the event turns its deliveries SILENCED, except a recovery whose trigger was sent
 * (the newest earlier delivery of the same (integration, order key) exists and is not SILENCED). The store is
 * read only for a silenced recovery. The decisions are silences/decide.ts's.
 */
import type { InternalEvent } from '../events/families.js';
import { silenceCandidates } from '../routing/match.js';
import type { TimeSlicer } from '../routing/slicer.js';
import type { NewDelivery } from '../store/types.js';
import {
  mergeSilenceMatches,
  newestEarlierStatus,
  silenceFor,
  silenceVerdict,
  type CompiledSilence,
  type KeyedDelivery,
  type SilenceMatch,
} from '../silences/decide.js';
import type { IngestRun } from './stage.js';

/**
 * Sets `silenceId` on the silenced deliveries. `plannedByKey` holds the deliveries planned earlier in this request
 * per (integration, order key): the recovery exception looks at them too.
 */
export async function silenceDeliveries(
  run: IngestRun,
  event: InternalEvent,
  deliveries: NewDelivery[],
  plannedByKey: Map<string, KeyedDelivery[]>,
): Promise<void> {
  const { ctx, reader, snap, deps, now } = run;
  const keyOf = (d: NewDelivery) => `${d.integrationId}\u0000${d.orderKey ?? ''}`;
  const match =
    deliveries.length && snap.silences?.length ? await silenceForSliced(event, silenceCandidates(snap, event), now, run.slicer) : null;
  for (const e of match?.errors ?? []) {
    if (deps.logLimiter && !deps.logLimiter.admit(deps.log, 'warn', ctx.companyId, 'silence_evaluation')) continue;
    deps.log.warn(
      { companyId: ctx.companyId, silenceId: e.silence.id, eventType: event.type, error: e.error },
      'silence matcher failed; not silenced',
    );
  }
  for (const d of deliveries) {
    const key = keyOf(d);
    const self = { orderAt: d.orderAt ?? now, orderSeq: d.orderSeq ?? now * 1000, id: d.id };
    let planned = plannedByKey.get(key);
    if (!planned) plannedByKey.set(key, (planned = []));
    if (match?.silence) {
      const previous =
        event.type.endsWith('.active') && d.orderKey
          ? newestEarlierStatus(self, [await reader.previousDelivery(ctx.companyId, d.integrationId, d.orderKey, self), ...planned])
          : null;
      const silence = silenceVerdict(event.type, match.silence, previous);
      if (silence) d.silenceId = silence.id;
    }
    if (d.orderKey) planned.push({ ...self, status: d.silenceId ? 'SILENCED' : 'PENDING' });
  }
}

/** Silences evaluated per event: up to the company's quota, each within the CEL budget; yield between chunks. */
const SILENCE_CHUNK = 32;

async function silenceForSliced(
  event: InternalEvent,
  silences: readonly CompiledSilence[],
  now: number,
  slicer: TimeSlicer,
): Promise<SilenceMatch> {
  let m: SilenceMatch = { silence: null, errors: [] };
  for (let i = 0; i < silences.length; i += SILENCE_CHUNK) {
    m = mergeSilenceMatches(m, silenceFor(event, silences.slice(i, i + SILENCE_CHUNK), now));
    if (slicer.due()) await slicer.yield();
  }
  return m;
}
