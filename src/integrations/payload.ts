/**
 * The webhook payload: a CloudEvents 1.0 structured envelope whose `data` is our normalized,
 * versioned payload (v1), never the internal event. Schema: docs/webhook-payload.v1.schema.json.
 *
 * v1 is additive-only: new optional members may appear (consumers must ignore unknown members);
 * renaming, removing or retyping a member makes a v2 with a new dataschema.
 */
import type { EventType } from '../events/families.js';
import { correlationKeyOf } from '../model/correlation.js';
import type { CertificateSubject, EventKind, EventState, RootCause } from '../model/event-view.js';
import { boundedLabels, memberLineOf, renderNotification, type Severity } from './render.js';
import type { GroupMember, Notification } from './types.js';

const PAYLOAD_VERSION = 'v1';
export const PAYLOAD_SCHEMA_ID = 'urn:certmgr-notify:schema:webhook-payload:v1';
const CLOUDEVENT_TYPE_PREFIX = 'io.certmgr.notify.';
export const CLOUDEVENTS_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

export interface WebhookPayloadV1 {
  version: 'v1';
  kind: EventKind;
  state: EventState;
  /** The internal event type, e.g. evt.healthstatus.certmgr-issuer.notready. */
  eventType: EventType;
  eventId: string;
  severity: Severity;
  /** Human-readable one-line summary (same text as the incident summary). */
  summary: string;
  /** Same for an unhealthy event and its restored event; per certificate and rule for expiration. */
  correlationKey: string;
  /** Health events only. */
  cluster: { id: string; name: string } | null;
  /** Issuer and certificate health events only. */
  resource: { kind: 'Issuer' | 'Certificate'; namespace: string; name: string; id: string | null } | null;
  reason: string | null;
  message: string | null;
  statusTransition: string | null;
  unhealthyDuration: string | null;
  /** Certificate health events only. */
  certificate: { issuerName: string | null; subject: CertificateSubject | null; dnsNames: string[] } | null;
  /** Agent events only (hub extension, added in v1: additive). */
  agent: { version: string | null; lastSeenAt: string | null } | null;
  /** Expiration events only. */
  expiration: {
    notificationName: string | null;
    applicationIds: string[];
    threshold: number | null;
    ruleId: number | null;
    notificationDate: string | null;
    certificateRef: string;
    /** Added in v1 (additive): the hub's expiry-scan fields, else read from the message; null when unknown. */
    daysUntilExpiry: number | null;
    notAfter: string | null;
    certificateName: string | null;
    namespace: string | null;
    clusterName: string | null;
    dnsNames: string[];
  } | null;
  router: { id: string; name: string };
  /** When the event was accepted, RFC 3339. */
  occurredAt: string;
  /** Added in v1: a reminder (the router's repeatInterval): still unhealthy, nothing new happened. */
  reminder: boolean;
  /** Added in v1: the runbook link (notify.certmgr.io/runbook-url), http(s) only; a group's when its named members share one. */
  runbookUrl: string | null;
  /** Added in v1: set when this notification speaks for a group of events (a router with groupBy). */
  group: WebhookGroupV1 | null;
  /**
   * Added in v1: a certificate `.notready`'s root cause (docs/emitter.md "Root cause"): class, next-step hint, the
   * deepest failure and the object that says it; null when there is none (and for a group).
   */
  rootCause: RootCause | null;
}

/** A group member as a compact resource reference. */
export interface WebhookMemberV1 {
  eventId: string;
  eventType: EventType;
  kind: EventKind;
  state: EventState;
  correlationKey: string;
  cluster: string | null;
  namespace: string | null;
  name: string | null;
  /** The reason, or "expires in 3 days". */
  detail: string | null;
}

export interface WebhookGroupV1 {
  /** Also the payload's correlationKey: stable per (router, labels). */
  key: string;
  labels: Record<string, string>;
  firingCount: number;
  resolvedCount: number;
  allResolved: boolean;
  /** Newest first, at most 20 each; the counts tell the rest. */
  firing: WebhookMemberV1[];
  resolved: WebhookMemberV1[];
}

/** Members listed per list (the notification carries at most 20). */
const MAX_PAYLOAD_MEMBERS = 20;

function memberRef(m: GroupMember): WebhookMemberV1 {
  const l = memberLineOf(m.eventId, m.event);
  return {
    eventId: l.eventId,
    eventType: l.eventType,
    kind: l.kind,
    state: l.state,
    correlationKey: l.correlationKey,
    cluster: l.cluster,
    namespace: l.namespace,
    name: l.resourceName,
    detail: l.detail,
  };
}

export interface CloudEvent<T> {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  subject?: string | undefined;
  time: string;
  datacontenttype: 'application/json';
  dataschema: string;
  data: T;
}

/**
 * The event type and state a notification speaks for. A group's are the group's, not its newest member's: while a
 * member is firing, its newest firing member's (a group whose newest event is a recovery still fails), and once all
 * recovered, `restored` with the recovery's type.
 */
function stateOf(n: Notification, allResolved: boolean | undefined, own: EventState): { eventType: EventType; state: EventState } {
  const g = n.group;
  if (!g || allResolved === undefined) return { eventType: n.event.type, state: own };
  if (allResolved) return { eventType: n.event.type, state: 'restored' };
  const head = g.firing[0];
  if (head) return { eventType: head.event.type, state: memberLineOf(head.eventId, head.event).state };
  // firing members past the listed ones (counted, not named): the failing type of the newest event's family
  return { eventType: n.event.type.replace(/\.active$/, '.notready') as EventType, state: 'unhealthy' };
}

function buildPayload(n: Notification): WebhookPayloadV1 {
  const r = renderNotification(n, false); // the payload has no facts
  const v = r.view;
  const health = v.kind === 'certificateExpiration' ? null : v;
  const g = n.group;
  const { eventType, state } = stateOf(n, r.group?.allResolved, v.state);
  return {
    version: PAYLOAD_VERSION,
    kind: v.kind,
    state,
    eventType,
    eventId: n.eventId,
    severity: r.severity,
    summary: r.summary,
    correlationKey: g ? g.key : correlationKeyOf(v), // incidentKeyOf(n), without viewing the event again
    cluster: health ? health.cluster : null,
    resource: health && health.kind !== 'agent' ? { kind: health.kind === 'issuer' ? 'Issuer' : 'Certificate', ...health.resource } : null,
    reason: health ? health.reason : null,
    message: v.message,
    statusTransition: health ? health.statusTransition : null,
    unhealthyDuration: health ? health.unhealthyDuration : null,
    certificate: health ? health.certificate : null,
    agent: health ? health.agent : null,
    expiration:
      v.kind === 'certificateExpiration'
        ? {
            notificationName: v.notificationName,
            applicationIds: v.applicationIds,
            threshold: v.threshold,
            ruleId: v.ruleId,
            notificationDate: v.notificationDate,
            certificateRef: v.certificateRef,
            daysUntilExpiry: v.daysUntilExpiry,
            notAfter: v.notAfter,
            certificateName: v.certificateName,
            namespace: v.namespace,
            clusterName: v.clusterName,
            dnsNames: v.dnsNames,
          }
        : null,
    router: { id: n.router.id, name: n.router.name },
    occurredAt: new Date(n.occurredAt).toISOString(),
    reminder: r.reminder,
    runbookUrl: r.runbookUrl,
    rootCause: health && !g ? health.rootCause : null,
    group:
      g && r.group
        ? {
            key: g.key,
            labels: boundedLabels(g.labels),
            firingCount: r.group.firingCount,
            resolvedCount: r.group.resolvedCount,
            allResolved: r.group.allResolved,
            firing: (g.firing ?? []).slice(0, MAX_PAYLOAD_MEMBERS).map(memberRef),
            resolved: (g.resolved ?? []).slice(0, MAX_PAYLOAD_MEMBERS).map(memberRef),
          }
        : null,
  };
}

export function buildCloudEvent(n: Notification): CloudEvent<WebhookPayloadV1> {
  const data = buildPayload(n);
  const subject = data.resource
    ? [data.cluster?.name || data.cluster?.id, data.resource.namespace, data.resource.name].filter(Boolean).join('/')
    : data.agent
      ? data.cluster?.name || data.cluster?.id
      : data.expiration?.certificateRef;
  return {
    specversion: '1.0',
    id: n.id,
    source: `/certmgr-notify/routers/${encodeURIComponent(n.router.id)}`,
    type: CLOUDEVENT_TYPE_PREFIX + data.eventType,
    subject: subject || undefined,
    time: data.occurredAt,
    datacontenttype: 'application/json',
    dataschema: PAYLOAD_SCHEMA_ID,
    data,
  };
}
