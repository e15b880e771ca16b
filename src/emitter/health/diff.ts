/**
 * The health decision, pure: given what was emitted before (HealthState) and what a resource says now
 * (Observation, or undefined when it is gone), the next state and at most one event.
 *
 * - An unhealthy episode starts when Ready leaves True (its lastTransitionTime). `.notready` is emitted once
 *   per episode, only after the episode has lasted the grace period (Unknown and routine issuance have
 *   longer ones), so blips and flapping inside the grace period send nothing.
 * - `.active` is emitted when Ready is True again (and, for a Certificate, its renewal neither failing nor
 *   overdue), only if `.notready` was emitted for the episode; it carries unhealthyDuration (episode start →
 *   Ready's lastTransitionTime, or now when that is before the episode: Ready never left True).
 * - A stale condition (observedGeneration < generation) changes nothing.
 * - A resource deleted (or replaced: another uid) while `.notready` was emitted gets an `.active` with
 *   statusReason `Deleted`, so the open incident is resolved instead of staying open forever.
 * - An ignored resource (`notify.certmgr.io/ignore`, docs/annotations.md) emits nothing, with one exception:
 *   ignored while its `.notready` was emitted, it gets a final `.active` with statusReason `Ignored`, so the
 *   open incident is closed rather than left open forever. Its state is dropped: un-ignored while still
 *   unhealthy, it starts over (a `.notready` once the grace period since Ready's transition has passed).
 * - An episode whose `.notready` named a serving problem (`Serving…`, serving.ts) ends with an `.active` whose
 *   statusReason is `ServingOk`, so a router that filters on `data.statusReason.startsWith('Serving')` gets both.
 */
import type { InternalEvent } from '../../events/families.js';
import { isoUtc, unhealthyDurationOf } from '../../events/wire-formats.js';
import { healthEvent, type ClusterIdentity } from './events.js';
import { HEALTH_RESOURCE_KINDS, type Observation, type ResourceIdentity } from './observe.js';
import { SERVING_OK_REASON, isServingReason } from './serving.js';

export interface HealthState {
  uid: string;
  /** start of the open unhealthy episode (ms epoch) */
  unhealthySince?: number;
  /** `.notready` was emitted for this episode (only such states are persisted) */
  notified: boolean;
  /** what the last event was about: enough to resolve a deleted resource */
  id: ResourceIdentity;
  /** statusTransition of the emitted `.notready` */
  notifiedTransition?: string;
  /** the emitted `.notready` named a serving problem: its `.active` says `ServingOk` */
  serving?: true;
}

/** Ready=False this long before `.notready`, unless configured. */
export const DEFAULT_HEALTH_GRACE_PERIOD_MS = 5 * 60_000;
/** Ready=Unknown or no Ready condition this long before `.notready`, unless configured. */
export const DEFAULT_HEALTH_UNKNOWN_GRACE_PERIOD_MS = 10 * 60_000;
/** A first issuance in progress this long before `.notready`, unless configured. */
export const DEFAULT_HEALTH_ISSUING_GRACE_PERIOD_MS = 15 * 60_000;

export interface HealthOptions {
  cluster: ClusterIdentity;
  /** Ready=False for at least this long before `.notready` */
  gracePeriodMs: number;
  /** Ready=Unknown or no Ready condition for at least this long before `.notready` */
  unknownGracePeriodMs: number;
  /** Certificates being issued (Issuing=True, no failure yet): at least this long before `.notready` */
  issuingGracePeriodMs: number;
  /** Ready=True Certificates: renewalTime passed this long ago without a new certificate is unhealthy (default DEFAULT_RENEWAL_OVERDUE_GRACE_MS) */
  renewalOverdueGraceMs?: number;
}

export interface HealthDiff {
  next: HealthState | undefined;
  event?: InternalEvent;
  /** look again at this time (ms epoch): the grace period ends, a Certificate reaches notAfter or its renewal becomes overdue */
  recheckAt?: number;
}

const DELETED_REASON = 'Deleted';
export const IGNORED_REASON = 'Ignored';

function deletedEvent(prev: HealthState, now: number, opts: HealthOptions): InternalEvent {
  const what = prev.id.kind === 'ClusterIssuer' ? `ClusterIssuer ${prev.id.name}` : `${prev.id.kind} ${prev.id.namespace}/${prev.id.name}`;
  return healthEvent('active', prev.id, opts.cluster, {
    statusReason: DELETED_REASON,
    statusMessage: `${what} was deleted while not ready`,
    statusTransition: isoUtc(now),
    unhealthyDuration: unhealthyDurationOf(now - (prev.unhealthySince ?? now)),
  });
}

function ignoredEvent(prev: HealthState, obs: Observation, now: number, opts: HealthOptions): InternalEvent {
  const id = { ...prev.id, ...obs.id };
  const what = id.kind === 'ClusterIssuer' ? `ClusterIssuer ${id.name}` : `${id.kind} ${id.namespace}/${id.name}`;
  return healthEvent('active', id, opts.cluster, {
    statusReason: IGNORED_REASON,
    statusMessage: `${what} is now ignored (annotation notify.certmgr.io/ignore) while not ready; no further health events are sent for it`,
    statusTransition: isoUtc(now),
    unhealthyDuration: unhealthyDurationOf(now - (prev.unhealthySince ?? now)),
  });
}

function graceOf(obs: Observation, opts: HealthOptions): number {
  if (obs.status === 'Unknown') return opts.unknownGracePeriodMs;
  if (obs.issuing) return Math.max(opts.gracePeriodMs, opts.issuingGracePeriodMs);
  return opts.gracePeriodMs;
}

/** The next health state of one resource and the event to emit, if any. */
export function diffReady(prev: HealthState | undefined, obs: Observation | undefined, now: number, opts: HealthOptions): HealthDiff {
  // gone
  if (!obs) return prev?.notified ? { next: undefined, event: deletedEvent(prev, now, opts) } : { next: undefined };
  // replaced by another object of the same name: resolve the old one first, then look at the new one
  if (prev && prev.uid !== obs.id.uid) {
    if (prev.notified) return { next: undefined, event: deletedEvent(prev, now, opts), recheckAt: now };
    prev = undefined;
  }
  // ignored: nothing more, after closing what was open
  if (obs.ignored) return prev?.notified ? { next: undefined, event: ignoredEvent(prev, obs, now, opts) } : { next: undefined };
  // a condition computed for an older spec says nothing about the current one
  if (obs.stale) return { next: prev ? { ...prev, id: obs.id } : undefined };

  if (obs.status === 'True') {
    // the clock alone changes a healthy Certificate at notAfter (Expired) and when its renewal becomes overdue
    const ahead = [obs.notAfter, obs.renewalOverdueAt].filter((t): t is number => t !== undefined && t > now);
    const base: HealthDiff = ahead.length ? { next: undefined, recheckAt: Math.min(...ahead) } : { next: undefined };
    if (!prev?.notified) return base;
    const start = prev.unhealthySince ?? now;
    // Ready's lastTransitionTime is when it recovered; fall back to now when it is missing or out of range (an
    // episode Ready never saw, such as a failing renewal, recovers when it is observed to)
    const end = obs.since !== undefined && obs.since >= start && obs.since <= now ? obs.since : now;
    const event = healthEvent('active', obs.id, opts.cluster, {
      statusReason: prev.serving ? SERVING_OK_REASON : obs.reason,
      statusMessage: prev.serving ? (obs.servingOk ?? obs.message) : obs.message,
      statusTransition: isoUtc(end),
      unhealthyDuration: unhealthyDurationOf(end - start),
    });
    return { ...base, event };
  }

  // unhealthy (False, or Unknown after its grace)
  if (prev?.notified) return { next: { ...prev, id: obs.id } };
  const start = prev?.unhealthySince ?? Math.min(obs.since ?? now, now);
  const dueAt = start + graceOf(obs, opts);
  if (now < dueAt) return { next: { uid: obs.id.uid, unhealthySince: start, notified: false, id: obs.id }, recheckAt: dueAt };
  const statusTransition = isoUtc(obs.since ?? start);
  const event = healthEvent('notready', obs.id, opts.cluster, {
    statusReason: obs.reason,
    statusMessage: obs.message,
    statusTransition,
    unhealthyDuration: unhealthyDurationOf(now - start),
  });
  const next: HealthState = { uid: obs.id.uid, unhealthySince: start, notified: true, id: obs.id, notifiedTransition: statusTransition };
  if (isServingReason(obs.reason)) next.serving = true;
  return { next, event };
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A stored HealthState as this version writes it; anything else is undefined (the state store drops it with a warning). */
export function decodeHealthState(raw: unknown): HealthState | undefined {
  if (!isObj(raw) || typeof raw['uid'] !== 'string' || typeof raw['notified'] !== 'boolean' || !isObj(raw['id'])) return undefined;
  const id = raw['id'] as unknown as ResourceIdentity;
  if (!(HEALTH_RESOURCE_KINDS as readonly string[]).includes(id.kind) || typeof id.name !== 'string' || typeof id.namespace !== 'string')
    return undefined;
  return raw as unknown as HealthState;
}
