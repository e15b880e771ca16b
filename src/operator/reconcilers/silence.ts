/**
 * NotificationSilence → a silence in the service (docs/silences.md): created, updated in place while it has not
 * ended, expired when the CR is deleted (or its endsAt has passed). Status: Ready with the silence's id and
 * state; Stalled when the matcher does not compile (line and column) or the spec is refused.
 */
import type { Logger } from 'pino';
import { validateSilenceSpec } from '../../api/index.js';
import { Reason } from '../../api/meta.js';
import { NotificationSilenceKind, type NotificationSilence, type NotificationSilenceSpec } from '../../api/notificationsilence.js';
import { resourceOf } from '../../kube/client.js';
import type { ResilientInformer } from '../../kube/informer.js';
import { managedByKey, pickOwned, type ObjectId } from '../desired.js';
import { throwServiceFailure } from '../errors.js';
import { TerminalError, type Applied, type Cleaned, type ResourceHandler } from '../../runtime/controller.js';
import type { ServiceApi } from '../../client/service-api.js';
import type { SilenceInput, SilenceView } from '../../client/silences.js';

export interface SilenceHandlerDeps {
  service: ServiceApi;
  silences: ResilientInformer<NotificationSilence>;
  /** suffix of managedBy when several clusters share one service */
  cluster?: string | undefined;
  now?: () => number;
}

const idOf = (s: NotificationSilence): ObjectId => ({
  kind: NotificationSilenceKind.kind,
  namespace: s.metadata?.namespace ?? '',
  name: s.metadata?.name ?? '',
});

/** Pure: the silence the spec describes. startsAt omitted: null (the service's now at create; kept on update). */
export function desiredSilence(o: ObjectId, spec: NotificationSilenceSpec, cluster?: string): SilenceInput {
  return {
    matcher: spec.matcher.trim(),
    eventTypeId: spec.eventTypeId ?? null,
    startsAt: spec.startsAt ?? null,
    endsAt: spec.endsAt,
    comment: spec.comment.trim(),
    createdBy: spec.createdBy?.trim() || `k8s:${o.namespace ? `${o.namespace}/` : ''}${o.name}`,
    managedBy: managedByKey(o, cluster),
  };
}

const sameTime = (a: string | null, b: string) => a === null || Date.parse(a) === Date.parse(b);

/** Pure: the fields of `actual` that differ from `desired` (times compared as instants), or undefined when in sync. */
export function planSilenceUpdate(desired: SilenceInput, actual: SilenceView): Partial<SilenceInput> | undefined {
  const u: Partial<SilenceInput> = {};
  if (actual.matcher !== desired.matcher) u.matcher = desired.matcher;
  if (actual.eventTypeId !== desired.eventTypeId) {
    u.eventTypeId = desired.eventTypeId;
    u.matcher = desired.matcher; // checked again against the family
  }
  if (!sameTime(desired.startsAt, actual.startsAt)) u.startsAt = desired.startsAt;
  if (!sameTime(desired.endsAt, actual.endsAt)) u.endsAt = desired.endsAt;
  if (actual.comment !== desired.comment) u.comment = desired.comment;
  if (actual.createdBy !== desired.createdBy) u.createdBy = desired.createdBy;
  if (actual.managedBy !== desired.managedBy) u.managedBy = desired.managedBy;
  return Object.keys(u).length ? u : undefined;
}

/** Pure: when the status must be looked at again (the silence starts or ends), capped at the resync's order. */
export function nextTransitionIn(view: Pick<SilenceView, 'startsAt' | 'endsAt'>, now: number): number | undefined {
  const next = [Date.parse(view.startsAt), Date.parse(view.endsAt)].filter((t) => t > now).sort((a, b) => a - b)[0];
  return next === undefined ? undefined : Math.min(next - now + 1_000, 3_600_000);
}

export function silenceHandler(deps: SilenceHandlerDeps): ResourceHandler<NotificationSilence> {
  const { service } = deps;
  const now = deps.now ?? Date.now;

  async function owned(s: NotificationSilence): Promise<{ current: SilenceView | undefined; stale: SilenceView[] }> {
    let all;
    try {
      all = await service.listSilences();
    } catch (e) {
      throwServiceFailure(e, 'silence');
    }
    return pickOwned(all, s.status?.silenceId, managedByKey(idOf(s), deps.cluster));
  }

  async function expireAll(records: SilenceView[], log: Logger): Promise<void> {
    for (const rec of records) {
      try {
        await service.expireSilence(rec.id);
        log.info({ silenceId: rec.id }, 'silence expired');
      } catch (e) {
        throwServiceFailure(e, 'silence');
      }
    }
  }

  return {
    kind: NotificationSilenceKind,
    resource: resourceOf(NotificationSilenceKind),
    cache: deps.silences,
    needsFinalizer: () => true,

    async apply(s: NotificationSilence, log: Logger): Promise<Applied> {
      const o = idOf(s);
      const v = validateSilenceSpec(s.spec);
      if (!v.ok) throw new TerminalError(Reason.InvalidSpec, v.errors.join('; '));
      const desired = desiredSilence(o, v.value, deps.cluster);
      const { current, stale } = await owned(s);
      if (Date.parse(desired.endsAt) <= now()) {
        // the window is over: nothing to create, and one still running (endsAt moved back) ends now
        await expireAll([...(current ? [current] : []), ...stale], log);
        return { message: `silence ended at ${desired.endsAt}`, fields: { state: 'EXPIRED' } };
      }
      let view: SilenceView;
      try {
        if (!current) {
          view = await service.createSilence(desired);
          log.info({ silenceId: view.id }, 'silence created');
        } else {
          const update = planSilenceUpdate(desired, current);
          view = update ? await service.updateSilence(current.id, update) : current;
          if (update) log.info({ silenceId: view.id, drift: Object.keys(update) }, 'silence updated');
        }
      } catch (e) {
        throwServiceFailure(e, 'silence');
      }
      await expireAll(stale, log);
      const requeueAfter = nextTransitionIn(view, now());
      return {
        message: `silence ${view.id} ${view.state.toLowerCase()}: ${view.startsAt} to ${view.endsAt}`,
        fields: { silenceId: view.id, state: view.state },
        requeueAfter,
      };
    },

    async cleanup(s: NotificationSilence, log: Logger): Promise<Cleaned> {
      const { current, stale } = await owned(s);
      await expireAll([...(current ? [current] : []), ...stale], log);
      return { done: true };
    },
  };
}
