/**
 * Pure functions that turn an internal event into the normalized view and the texts every notifier
 * uses (title, summary, severity, facts), so PagerDuty, webhook, email, Slack and Teams say the same.
 *
 * Internal event data is loosely typed (Record<string, unknown>); everything here reads it
 * defensively and never throws on a missing or mistyped field.
 */
import { createHash } from 'node:crypto';
import type { EventType, InternalEvent } from '../events/families.js';
import { truncateChars } from './http.js';
import type { Notification } from './types.js';

export type EventKind = 'issuer' | 'certificate' | 'agent' | 'certificateExpiration';
export type EventState = 'unhealthy' | 'restored' | 'expiring';
/** The incident management severities, also used by the webhook payload and chat colours. */
export type Severity = 'critical' | 'error' | 'warning' | 'info';

export interface CertificateSubject {
  commonName: string | null;
  organizations: string[];
  organizationalUnits: string[];
  countries: string[];
  provinces: string[];
  localities: string[];
}

export interface HealthView {
  /** agent: the hub's own silent-cluster events (docs/inventory.md "Silent clusters as events") */
  kind: 'issuer' | 'certificate' | 'agent';
  state: 'unhealthy' | 'restored';
  type: EventType;
  cluster: { id: string; name: string };
  resource: { namespace: string; name: string; id: string | null };
  reason: string | null;
  message: string | null;
  statusTransition: string | null;
  unhealthyDuration: string | null;
  /** Certificate events only. */
  certificate: { issuerName: string | null; subject: CertificateSubject | null; dnsNames: string[] } | null;
  /** Agent events only. */
  agent: { version: string | null; lastSeenAt: string | null } | null;
}

export interface ExpirationView {
  kind: 'certificateExpiration';
  state: 'expiring';
  type: EventType;
  notificationName: string | null;
  message: string | null;
  applicationIds: string[];
  threshold: number | null;
  ruleId: number | null;
  notificationDate: string | null;
  /** Best-effort certificate identity, see certificateRef(). */
  certificateRef: string;
}

export type EventView = HealthView | ExpirationView;

const str = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);
const int = (v: unknown): number | null =>
  typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : null;
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const obj = (v: unknown): Record<string, unknown> | null =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * Identity of the certificate behind an expiration event. The spec's event has no certificate id
 * field; its `message` states the certificate name and id. In order of preference:
 * data.certificateId; the first UUID in `message` that is not one of `applicationIds`;
 * data.certificateName; the notification `name`; finally a hash of `message`.
 */
export function certificateRef(data: Record<string, unknown>): string {
  const explicit = str(data['certificateId']);
  if (explicit) return explicit;
  const apps = new Set(strings(data['applicationIds']).map((a) => a.toLowerCase()));
  const message = str(data['message']) ?? '';
  const fromMessage = (message.match(UUID) ?? []).find((u) => !apps.has(u.toLowerCase()));
  if (fromMessage) return fromMessage.toLowerCase();
  const name = str(data['certificateName']) ?? str(data['name']);
  if (name) return `name:${name}`;
  return `message:${createHash('sha256').update(message).digest('hex').slice(0, 32)}`;
}

export function viewOf(event: InternalEvent): EventView {
  const d = event.data ?? {};
  if (event.type === 'evt.policy.expiringcertificates.failed') {
    return {
      kind: 'certificateExpiration',
      state: 'expiring',
      type: event.type,
      notificationName: str(d['name']),
      message: str(d['message']),
      applicationIds: strings(d['applicationIds']),
      threshold: int(d['threshold']),
      ruleId: int(d['ruleId']),
      notificationDate: str(d['notificationDate']),
      certificateRef: certificateRef(d),
    };
  }
  const isCert = event.type.startsWith('evt.healthstatus.certmgr-certificate-resource.');
  const isAgent = event.type.startsWith('evt.healthstatus.certmgr-agent.');
  const subj = obj(d['subject']);
  const sans = obj(d['SANs']);
  return {
    kind: isCert ? 'certificate' : isAgent ? 'agent' : 'issuer',
    state: event.type.endsWith('.active') ? 'restored' : 'unhealthy',
    type: event.type,
    cluster: { id: str(d['clusterId']) ?? '', name: str(d['clusterName']) ?? '' },
    // an agent event is about the cluster itself: no resource inside it
    resource: isAgent
      ? { namespace: '', name: '', id: null }
      : {
          namespace: str(d['namespace']) ?? '',
          name: (isCert ? str(d['certificateName']) : str(d['issuerName'])) ?? '',
          id: str(d['resourceId']),
        },
    reason: str(d['statusReason']),
    message: str(d['statusMessage']),
    statusTransition: str(d['statusTransition']),
    unhealthyDuration: str(d['unhealthyDuration']),
    certificate: isCert
      ? {
          issuerName: str(d['issuerName']),
          subject: subj
            ? {
                commonName: str(subj['commonName']),
                organizations: strings(subj['organizations']),
                organizationalUnits: strings(subj['organizationalUnits']),
                countries: strings(subj['countries']),
                provinces: strings(subj['provinces']),
                localities: strings(subj['localities']),
              }
            : null,
          dnsNames: sans ? strings(sans['DNS Names']) : [],
        }
      : null,
    agent: isAgent ? { version: str(d['agentVersion']), lastSeenAt: str(d['lastSeenAt']) } : null,
  };
}

/**
 * Severity policy:
 * - issuer not ready: critical (every certificate of that issuer stops renewing);
 * - certificate not ready: error (one certificate at risk);
 * - agent silent: error (the cluster's certificates are no longer watched by the hub's inventory);
 * - expiration: warning (a threshold crossed; the certificate still works);
 * - restored: info (the matching incident is resolved).
 */
export function severityOf(v: EventView): Severity {
  if (v.kind === 'certificateExpiration') return 'warning';
  if (v.state === 'restored') return 'info';
  return v.kind === 'issuer' ? 'critical' : 'error';
}

function clusterLabel(v: HealthView): string {
  return v.cluster.name || v.cluster.id || 'unknown';
}

/** Short headline: email subject (after the prefix), chat header, incident title. */
export function titleOf(v: EventView): string {
  if (v.kind === 'certificateExpiration') {
    const within = v.threshold !== null ? ` within ${v.threshold} day${v.threshold === 1 ? '' : 's'}` : '';
    return `Certificate expiring${within}${v.notificationName ? `: ${v.notificationName}` : ''}`;
  }
  if (v.kind === 'agent')
    return `Agent of cluster ${clusterLabel(v)} ${v.state === 'unhealthy' ? 'stopped reporting' : 'is reporting again'}`;
  const what = v.kind === 'issuer' ? 'Issuer' : 'Certificate';
  const state = v.state === 'unhealthy' ? 'is not ready' : 'is ready again';
  return `${what} ${v.resource.name || 'unknown'} in cluster ${clusterLabel(v)} ${state}`;
}

/** One line with the headline and the reason; `max` code points (PagerDuty allows 1024). */
export function summaryOf(v: EventView, max = 1024): string {
  let s = titleOf(v);
  if (v.kind === 'certificateExpiration') {
    if (v.message) s += `: ${v.message}`;
  } else {
    if (v.resource.namespace) s += ` (namespace ${v.resource.namespace})`;
    const detail = [v.reason, v.message].filter(Boolean).join(': ');
    if (detail) s += `: ${detail}`;
  }
  return truncateChars(s.replace(/\s+/g, ' ').trim(), max);
}

export interface Fact {
  name: string;
  value: string;
}

/** Labelled values shown by email, Slack and Teams, in display order; empty values are left out. */
export function factsOf(v: EventView, router?: { name: string }): Fact[] {
  const facts: Array<[string, string | null | undefined]> = [];
  if (v.kind === 'certificateExpiration') {
    facts.push(
      ['Notification', v.notificationName],
      ['Threshold', v.threshold !== null ? `${v.threshold} days` : null],
      ['Rule', v.ruleId !== null ? String(v.ruleId) : null],
      ['Applications', v.applicationIds.length ? v.applicationIds.join(', ') : 'unassigned'],
      ['Notification date', v.notificationDate],
      ['Details', v.message],
    );
  } else {
    facts.push(
      ['Cluster', v.cluster.name && v.cluster.id ? `${v.cluster.name} (${v.cluster.id})` : v.cluster.name || v.cluster.id],
      ['Namespace', v.resource.namespace],
      [v.kind === 'issuer' ? 'Issuer' : 'Certificate', v.resource.name],
    );
    if (v.agent) facts.push(['Agent version', v.agent.version], ['Last report', v.agent.lastSeenAt]);
    if (v.certificate) {
      facts.push(
        ['Issuer', v.certificate.issuerName],
        ['Common name', v.certificate.subject?.commonName],
        ['DNS names', v.certificate.dnsNames.join(', ')],
      );
    }
    facts.push(
      ['Reason', v.reason],
      ['Message', v.message],
      [
        v.state === 'unhealthy' ? (v.agent ? 'Silent since' : 'Not ready since') : v.agent ? 'Reporting since' : 'Ready since',
        v.statusTransition,
      ],
      [v.state === 'unhealthy' ? 'Unhealthy for' : 'Was unhealthy for', v.unhealthyDuration],
    );
  }
  if (router?.name) facts.push(['Router', router.name]);
  return facts.filter((f): f is [string, string] => typeof f[1] === 'string' && f[1] !== '').map(([name, value]) => ({ name, value }));
}

export interface Rendered {
  view: EventView;
  title: string;
  summary: string;
  severity: Severity;
  facts: Fact[];
}

export function render(event: InternalEvent, router?: { name: string }): Rendered {
  const view = viewOf(event);
  return { view, title: titleOf(view), summary: summaryOf(view), severity: severityOf(view), facts: factsOf(view, router) };
}

/**
 * The texts of one notification, for every notifier (issue 11): today its event's. docs/signal.md: a group's
 * notification speaks for its members, a reminder says so, and a template's parts (n.rendered) replace the title
 * and text. Notifiers call this, never render() directly, so every integration type says the same.
 */
export function renderNotification(n: Notification): Rendered {
  const r = render(n.event, n.router);
  // templates (minimal, until the messages work lands): the rendered title and text replace the defaults; the
  // summary keeps its 1024-code-point contract (incident Events v2, webhook payload schema)
  const text = n.rendered?.text;
  return { ...r, title: n.rendered?.title ?? r.title, summary: text ? truncateChars(text, 1024) : r.summary };
}

/**
 * The key an incident or alert of this notification is opened and closed under (incident dedup_key, Opsgenie
 * alias): the group's key for a group notification, else the event's correlation key.
 */
export function incidentKeyOf(n: Notification): string {
  return n.group ? n.group.key : correlationKeyOf(viewOf(n.event));
}

/**
 * Whether the notification opens (or re-opens, or reminds of) an incident, or closes it: a group closes when
 * every member has recovered; a single event when it is a recovery (`.active`). Expiration never closes.
 */
export function incidentActionOf(n: Notification): 'trigger' | 'resolve' {
  if (n.group) return n.group.allResolved ? 'resolve' : 'trigger';
  const v = viewOf(n.event);
  return v.kind !== 'certificateExpiration' && v.state === 'restored' ? 'resolve' : 'trigger';
}

/** Longest correlation key: the Events v2 dedup_key limit. */
const MAX_CORRELATION_KEY = 255;

/**
 * Stable key of "the thing this event is about", shared by an unhealthy event and its restored
 * event. Used as the incident dedup_key and exposed in the webhook payload as correlationKey.
 * - health: certmgr:<issuer|certificate>:<clusterId, else clusterName>:<namespace>:<name>
 * - agent: certmgr:agent:<clusterId, else clusterName>
 * - expiration: certmgr:certificateExpiration:<certificateRef>:rule:<ruleId>
 * Keys longer than 255 characters become certmgr:<kind>:sha256:<hex of the long key>.
 */
export function correlationKeyOf(v: EventView): string {
  const parts =
    v.kind === 'certificateExpiration'
      ? ['certmgr', v.kind, v.certificateRef, 'rule', v.ruleId === null ? 'none' : String(v.ruleId)]
      : v.kind === 'agent'
        ? ['certmgr', v.kind, v.cluster.id || v.cluster.name]
        : ['certmgr', v.kind, v.cluster.id || v.cluster.name, v.resource.namespace, v.resource.name];
  const key = parts.join(':');
  if (key.length <= MAX_CORRELATION_KEY) return key;
  return `certmgr:${v.kind}:sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/** Hex colour per severity (Slack attachment bar, email accent). */
export const SEVERITY_COLOR: Record<Severity, string> = {
  critical: '#b3261e',
  error: '#e8590c',
  warning: '#f2b705',
  info: '#2e7d32',
};
