/**
 * Holding under the issuer (docs/grouping.md "Held under the issuer"): the pure decisions. For a router with
 * `holdUnderIssuer`, a certificate that fails while the issuer it names is not ready is the issuer's problem, not its
 * own (Alertmanager's inhibition, by the known dependency issuer → certificate instead of label equality): its
 * events become members of one **hold** per (router, issuer) instead of a notification each. A hold notifies:
 * - once when it opens (the router's groupWait after its first certificate): the issuer's incident, counting the
 *   certificates held so far;
 * - once when it is released: every certificate recovered after the issuer did ("all N recovered", the incident
 *   resolves), or HOLD_GRACE_MS after the issuer recovered with certificates still not ready (the summary names
 *   them; the hold then stays open on them and resolves with one last "all N recovered" when they have).
 * Nothing in between: a certificate joining or recovering while the issuer is down changes counts, not pages.
 *
 * A hold is a row of notification_groups with `holdIssuer` set (migration 21), so members, locking, the flusher and
 * the notification's snapshot are grouping's.
 */
import { createHash } from 'node:crypto';
import { compareOrder } from '../delivery/order.js';
import type { InternalEvent } from '../events/families.js';
import { correlationKeyOf } from '../model/correlation.js';
import { viewOf } from '../model/event-view.js';
import type { FlushPlan, MemberCounts } from './decide.js';
import type { GroupRow } from './records.js';

/** How long after its issuer recovered a hold waits for its certificates before it says which stayed broken. */
export const HOLD_GRACE_MS = 10 * 60_000;

/** The label saying where the issuer stands (shown in the title: "(issuer not ready)", "(issuer ready again)"). */
const HOLD_STATE_LABEL = 'issuer';

/** Position of a resource's current unhealthy streak (resource_health's since), or null: it is healthy. */
export type Streak = { orderAt: number; orderSeq: number } | null;

/** The issuer a certificate event may depend on. */
export interface IssuerRef {
  /** the issuer's correlation key (its events' order key and resource_health key) */
  key: string;
  clusterId: string;
  clusterName: string;
  /** '' for a ClusterIssuer */
  namespace: string;
  name: string;
}

/**
 * The issuers a certificate event may name: the Issuer of that name in its namespace and the ClusterIssuer of that
 * name (the events carry issuerRef.name only, not its kind). Null for any other event or without an issuerName.
 */
export function issuerCandidatesOf(event: InternalEvent): [IssuerRef, IssuerRef] | null {
  if (!event.type.startsWith('evt.healthstatus.certmgr-certificate-resource.')) return null;
  const d = event.data;
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  const name = text(d['issuerName']);
  if (!name) return null;
  const clusterId = text(d['clusterId']);
  const clusterName = text(d['clusterName']);
  const ref = (namespace: string): IssuerRef => {
    const issuer: InternalEvent = {
      type: 'evt.healthstatus.certmgr-issuer.notready',
      data: { clusterId, clusterName, issuerName: name, namespace },
    };
    return { key: correlationKeyOf(viewOf(issuer)), clusterId, clusterName, namespace, name };
  };
  return [ref(text(d['namespace'])), ref('')];
}

/**
 * Which of the two candidates the certificate depends on: the namespaced Issuer when the hub knows it (it has a
 * health row, `health` has its key), else the ClusterIssuer when known, else none.
 */
export function pickIssuer(candidates: readonly [IssuerRef, IssuerRef], health: ReadonlyMap<string, Streak>): IssuerRef | null {
  const [namespaced, cluster] = candidates;
  if (namespaced.namespace !== '' && health.has(namespaced.key)) return namespaced;
  return health.has(cluster.key) ? cluster : null;
}

export interface HoldInput {
  /** the certificate event's state */
  state: 'firing' | 'resolved';
  /** the certificate is a member of this router's hold of one of its candidate issuers */
  member: boolean;
  /** the picked issuer's streak (null: ready or unknown) */
  issuer: Streak;
  /** the certificate's own streak after this batch (null: its newest event is an .active) */
  certificate: Streak;
}

/**
 * Where a certificate event of a holding router goes. A member stays with its hold (its recovery closes what the
 * hold opened). A failure is held when the issuer is not ready and the certificate's streak began at or after the
 * issuer's: a certificate already failing before the issuer went down has its own incident, which its own events
 * keep telling.
 */
export function holdVerdict(i: HoldInput): 'hold' | 'pass' {
  if (i.member) return 'hold';
  if (i.state !== 'firing' || !i.issuer || !i.certificate) return 'pass';
  return compareOrder({ ...i.certificate, id: '' }, { ...i.issuer, id: '' }) >= 0 ? 'hold' : 'pass';
}

/** The hold of (router, issuer): its key (hashed, like a group's) and labels (the issuer, where it stands). */
export function holdIdentity(routerId: string, issuer: IssuerRef): { key: string; labels: Record<string, string> } {
  const hash = createHash('sha256')
    .update(JSON.stringify(['hold', routerId, issuer.key]))
    .digest('hex');
  const labels: Record<string, string> = { 'data.issuerName': issuer.name };
  if (issuer.namespace) labels['data.namespace'] = issuer.namespace;
  if (issuer.clusterName) labels['data.clusterName'] = issuer.clusterName;
  else labels['data.clusterId'] = issuer.clusterId;
  return { key: `certmgr:hold:${hash}`, labels };
}

/**
 * The hold's next look after its members changed (ingestion) or its issuer did: while the issuer is down only the
 * opening is scheduled (createdAt + groupWait, once); once it is up, at once (the flusher decides whether to release).
 */
export function scheduleHold(g: GroupRow, now: number): GroupRow {
  const issuerDown = (g.issuerReadyAt ?? null) === null;
  let next: number | null;
  if (issuerDown) next = g.lastFlushAt === null ? g.createdAt + g.groupWaitMs : null;
  else next = g.changed ? now : (g.nextFlushAt ?? now);
  return { ...g, nextFlushAt: next };
}

/** The issuer's health changed (its newest state after a batch): recovered at `now`, or down again. */
export function onIssuerHealth(g: GroupRow, state: 'notready' | 'ready', now: number): GroupRow {
  const readyAt = g.issuerReadyAt ?? null;
  if (state === 'ready') return readyAt !== null ? g : scheduleHold({ ...g, issuerReadyAt: now }, now);
  return scheduleHold({ ...g, issuerReadyAt: null }, now);
}

export interface HoldFlushPlan extends FlushPlan {
  /** the labels the notification carries (the hold's, with where the issuer stands) */
  labels: Record<string, string>;
}

/**
 * The flusher, for a hold whose nextFlushAt has come. `eventId` is the event the notification is written under.
 * - issuer down: the opening once (when something is firing); then nothing until the issuer recovers;
 * - issuer up, nothing firing: "all N recovered" when a page went out (resolve), else nothing; the hold ends;
 * - issuer up, some still firing, not yet released: wait until HOLD_GRACE_MS after the recovery, then the summary
 *   (still firing and recovered, named); the hold stays open on what still fires, silent until it all recovered.
 */
export function planHoldFlush(group: GroupRow, counts: MemberCounts, now: number, eventId: string, graceMs = HOLD_GRACE_MS): HoldFlushPlan {
  const firing = counts.firing + group.overflowFiring;
  const readyAt = group.issuerReadyAt ?? null;
  const labels = { ...group.labels, [HOLD_STATE_LABEL]: readyAt === null ? 'not ready' : 'ready again' };
  let send: FlushPlan['send'] = null;
  const g: GroupRow = { ...group, changed: false };
  let deleteGroup = false;
  if (readyAt === null) {
    if (group.lastFlushAt === null && firing > 0)
      send = { kind: 'held', allResolved: false, reminder: false, firingCount: firing, resolvedCount: counts.resolved };
    g.nextFlushAt = null;
  } else if (firing === 0) {
    if (group.sentFiring)
      send = {
        kind: group.holdReleased ? 'resolved' : 'released',
        allResolved: true,
        reminder: false,
        firingCount: 0,
        resolvedCount: group.resolvedTold + counts.resolved,
      };
    deleteGroup = true;
  } else if (!group.holdReleased) {
    if (now >= readyAt + graceMs) {
      send = { kind: 'released', allResolved: false, reminder: false, firingCount: firing, resolvedCount: counts.resolved };
      g.holdReleased = true;
      g.nextFlushAt = null;
    } else g.nextFlushAt = readyAt + graceMs;
  } else g.nextFlushAt = null;
  if (send) {
    g.lastFlushAt = now;
    g.lastEventId = eventId;
    g.lastFlushEventId = eventId;
    g.sentFiring ||= firing > 0;
    g.resolvedTold += counts.resolved;
    g.memberCount = counts.firing;
  }
  return { send, dropSettled: send !== null, deleteGroup, group: g, labels };
}
