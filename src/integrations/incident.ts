/**
 * INCIDENT_MGMT: the PagerDuty Events API v2 contract (POST <base>/v2/enqueue).
 *
 * - `.notready` and expiration (`.failed`) events trigger; `.active` events resolve; a group resolves when every
 *   member has recovered (incidentActionOf).
 * - dedup_key = incidentKeyOf(n) (render.ts): the resource's correlation key, or the group's key (one incident
 *   per group), so a resolve closes the incident its trigger opened.
 * - The runbook (data.runbookUrl) is an Events v2 `links` entry; a group's members are in custom_details.
 * - 202 (any 2xx) delivered; 400 dead; 429, 5xx and network errors retry.
 */
import { INTEGRATION_META } from '../model/integration-types.js';
import { checkTargetUrl, postAndClassify, truncateChars, type HttpContext } from './http.js';
import {
  boundedLabels,
  incidentActionOf,
  incidentKeyOf,
  memberLineOf,
  renderNotification,
  type Rendered,
  type Severity,
} from './render.js';
import type {
  DeliveryResult,
  GroupMember,
  IntegrationDescriptor,
  IntegrationOptions,
  Notification,
  NotificationGroup,
  Notifier,
} from './types.js';

const ENQUEUE_PATH = '/v2/enqueue';
/** PagerDuty rejects events above 512 KB; custom_details is replaced by a note beyond this. */
export const MAX_EVENT_BYTES = 512_000;

export interface IncidentEvent {
  routing_key: string;
  event_action: 'trigger' | 'resolve';
  dedup_key: string;
  client: string;
  payload: {
    summary: string;
    source: string;
    severity: Severity;
    timestamp: string;
    component: string;
    group: string;
    class: string;
    custom_details: Record<string, unknown>;
  };
  /** Events v2 `links`: the runbook, when the event (or the group's named members) carry one. */
  links?: Array<{ href: string; text: string }>;
}

/** Members listed in a group's custom_details (the notification carries at most 20 per list). */
const MAX_DETAIL_MEMBERS = 20;
/** Events v2 field limits: component, group and class are short strings; source at most 255. */
const MAX_SHORT = 255;

const compactMember = (m: GroupMember) => {
  const l = memberLineOf(m.eventId, m.event);
  return { name: l.name, detail: l.detail, eventType: l.eventType, eventId: l.eventId, correlationKey: l.correlationKey };
};

/** The incident class of a firing group, by what its members are (RenderedGroup.firingLabel). */
const GROUP_CLASS: Record<string, string> = { 'Not ready': 'NotReady', Silent: 'AgentSilent', Expiring: 'CertificateExpiring' };

/** A group's incident: one per group key (incidentKeyOf), resolved when every member has recovered. */
function groupParts(n: Notification, g: NotificationGroup, r: Rendered) {
  const labels = boundedLabels(g.labels);
  // a group of one cluster is that cluster's (its newest member tells the name); a wider group is the hub's
  const oneCluster = Object.keys(labels).some((k) => /^(data\.)?cluster(Name|Id)$/.test(k));
  const view = r.view;
  const cluster = !oneCluster ? null : view.kind !== 'certificateExpiration' ? view.cluster.name || view.cluster.id : view.clusterName;
  return {
    source: cluster || 'certmgr-notify',
    component: `group/${Object.values(labels).join('/') || n.router.name}`,
    group: Object.values(labels)[0] || 'group',
    class: r.group?.allResolved ? 'Recovered' : (GROUP_CLASS[r.group?.firingLabel ?? ''] ?? 'Unhealthy'),
    custom_details: {
      eventType: n.event.type,
      router: n.router.name,
      reminder: n.reminder || undefined,
      text: n.rendered?.text ? r.text : undefined,
      group: {
        key: g.key,
        labels,
        firingCount: r.group?.firingCount ?? g.firingCount,
        resolvedCount: r.group?.resolvedCount ?? g.resolvedCount,
        allResolved: g.allResolved,
        firing: (g.firing ?? []).slice(0, MAX_DETAIL_MEMBERS).map(compactMember),
        resolved: (g.resolved ?? []).slice(0, MAX_DETAIL_MEMBERS).map(compactMember),
      },
      runbookUrl: r.runbookUrl || undefined,
    } as Record<string, unknown>,
    timestamp: new Date(n.occurredAt).toISOString(),
  };
}

/** Builds the Events v2 body (without size capping). */
export function buildIncidentEvent(n: Notification, routingKey: string): IncidentEvent {
  const r = renderNotification(n);
  const v = r.view;
  let parts: {
    source: string;
    component: string;
    group: string;
    class: string;
    custom_details: Record<string, unknown>;
    timestamp: string;
  };
  if (n.group) {
    parts = groupParts(n, n.group, r);
  } else {
    const health = v.kind !== 'certificateExpiration';
    const reported = health ? v.statusTransition : v.notificationDate;
    const details: Record<string, unknown> = { eventType: n.event.type, eventId: n.eventId, router: n.router.name, ...n.event.data };
    if (n.reminder) details['reminder'] = true;
    if (n.rendered?.text) details['text'] = r.text;
    // read from the message when a client-sent expiration event lacks the hub's fields
    if (!health && details['daysUntilExpiry'] === undefined && v.daysUntilExpiry !== null) details['daysUntilExpiry'] = v.daysUntilExpiry;
    if (!health && details['notAfter'] === undefined && v.notAfter !== null) details['notAfter'] = v.notAfter;
    parts = {
      source: health ? v.cluster.name || v.cluster.id || 'unknown-cluster' : v.clusterName || 'certificate-monitoring',
      component: health
        ? `${v.kind}/${v.resource.namespace ? `${v.resource.namespace}/` : ''}${v.resource.name}`
        : v.notificationName || v.certificateRef,
      group: health ? v.resource.namespace || 'cluster-scoped' : v.applicationIds.join(',') || 'unassigned',
      class: health ? v.reason || (v.state === 'restored' ? 'Ready' : 'NotReady') : 'CertificateExpiring',
      custom_details: details,
      timestamp: reported && !Number.isNaN(Date.parse(reported)) ? reported : new Date(n.occurredAt).toISOString(),
    };
  }
  const ev: IncidentEvent = {
    routing_key: routingKey,
    event_action: incidentActionOf(n),
    dedup_key: incidentKeyOf(n),
    client: 'certmgr-notify',
    payload: {
      summary: r.summary, // at most 1024 code points, the Events v2 limit
      source: truncateChars(parts.source, MAX_SHORT),
      severity: r.severity,
      timestamp: parts.timestamp,
      component: truncateChars(parts.component, MAX_SHORT),
      group: truncateChars(parts.group, MAX_SHORT),
      class: truncateChars(parts.class, MAX_SHORT),
      custom_details: parts.custom_details,
    },
  };
  if (r.runbookUrl) ev.links = [{ href: r.runbookUrl, text: 'Runbook' }];
  return ev;
}

/** The Events API 400 body is { status, message, errors[] }; the (already redacted) text explains the rejection. */
function invalidEventDetail(body: string): string | null {
  try {
    const b = JSON.parse(body) as { message?: unknown; errors?: unknown };
    const parts = [typeof b.message === 'string' ? b.message : null];
    if (Array.isArray(b.errors)) parts.push(b.errors.filter((e) => typeof e === 'string').join('; '));
    return parts.filter(Boolean).join(': ') || null;
  } catch {
    return null;
  }
}

/** Serializes, replacing custom_details by a note when the event would exceed the size limit. */
export function serializeIncidentEvent(ev: IncidentEvent): string {
  const body = JSON.stringify(ev);
  if (Buffer.byteLength(body) <= MAX_EVENT_BYTES) return body;
  return JSON.stringify({
    ...ev,
    payload: {
      ...ev.payload,
      custom_details: { eventType: ev.payload.custom_details['eventType'], note: 'event data too large; omitted' },
    },
  });
}

/**
 * <base>/v2/enqueue, built with the URL API so a base with a path or a query string stays valid
 * (https://h/pd?x=1 -> https://h/pd/v2/enqueue?x=1); null when the base is not a URL.
 */
export function enqueueUrl(base: string): string | null {
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    return null;
  }
  u.pathname = u.pathname.replace(/\/+$/, '') + ENQUEUE_PATH;
  u.hash = '';
  return u.toString();
}

/** The incident events URL is the operator's (--incident-events-url): trusted, not under the egress policy. */
function createIncidentNotifier(opts: IntegrationOptions): Notifier {
  const url = enqueueUrl(opts.incidentEventsUrl) ?? '';
  const badUrl = url ? checkTargetUrl(url, 'incident events URL') : 'incident events URL is not a valid URL';
  return {
    type: 'INCIDENT_MGMT',
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      const routingKey = n.integration.secrets['integrationKey'];
      if (!routingKey) return { outcome: 'dead', error: 'integration key is not configured' };
      if (badUrl) return { outcome: 'dead', error: badUrl };
      const ctx: HttpContext = { timeoutMs: opts.timeoutMs, userAgent: opts.userAgent, clock: opts.clock ?? Date.now, signal };
      const result = await postAndClassify(
        { url, body: serializeIncidentEvent(buildIncidentEvent(n, routingKey)), secrets: Object.values(n.integration.secrets) },
        ctx,
      );
      if (result.statusCode === 400 && result.responseBody) {
        const detail = invalidEventDetail(result.responseBody);
        if (detail) result.error = truncateChars(`${result.error}: ${detail}`, 300);
      }
      return result;
    },
  };
}

/**
 * Incident management carries state (trigger/resolve on one dedup_key): only the newest state matters, so a
 * newer notification supersedes an unsent older one. Rate: PagerDuty's Events API v2 allows 120 events per minute
 * per integration key (https://developer.pagerduty.com/docs/events-api-v2-overview, "Rate limits"): 2/s, burst 10.
 */
export const incident: IntegrationDescriptor = {
  type: 'INCIDENT_MGMT',
  ...INTEGRATION_META.INCIDENT_MGMT,
  orderMode: 'supersede',
  rateLimit: { ratePerSec: 2, burst: 10 },
  createNotifier: createIncidentNotifier,
};
