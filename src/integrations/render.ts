/**
 * Pure functions that turn the event view (src/model/event-view.ts) into the texts every notifier uses (title,
 * summary, severity, facts, group and member lines, incident key and action), so PagerDuty, webhook, email, Slack
 * and Teams say the same. Never throws on a view read from missing or mistyped event data.
 */
import type { EventType, InternalEvent } from '../events/families.js';
import { correlationKeyOf } from '../model/correlation.js';
import { daysLeftPhrase } from '../model/days-left.js';
import { viewOf, type EventKind, type EventState, type EventView, type HealthView } from '../model/event-view.js';
import { truncateChars } from './http.js';
import type { Notification, NotificationGroup } from './types.js';

/** The incident management severities, also used by the webhook payload and chat colours. */
export type Severity = 'critical' | 'error' | 'warning' | 'info';

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
      ['Certificate', v.certificateName ? (v.namespace ? `${v.namespace}/${v.certificateName}` : v.certificateName) : null],
      ['Cluster', v.clusterName],
      ['DNS names', v.dnsNames.join(', ')],
      ['Days until expiry', v.daysUntilExpiry !== null ? String(v.daysUntilExpiry) : null],
      ['Not after', v.notAfter],
      ['Threshold', v.threshold !== null ? `${v.threshold} days` : null],
      ['Rule', v.ruleId !== null ? String(v.ruleId) : null],
      ['Applications', v.applicationIds.length ? v.applicationIds.join(', ') : 'unassigned'],
      ['Notification date', v.notificationDate],
      ['Runbook', v.runbookUrl],
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
      // before the times: a channel that shows only the first facts (Slack: 10 fields) keeps them
      ['Root cause', v.rootCause ? `${v.rootCause.class}${v.rootCause.resource ? ` (${v.rootCause.resource})` : ''}` : null],
      ['Next step', v.rootCause?.hint],
      [
        v.state === 'unhealthy' ? (v.agent ? 'Silent since' : 'Not ready since') : v.agent ? 'Reporting since' : 'Ready since',
        v.statusTransition,
      ],
      [v.state === 'unhealthy' ? 'Unhealthy for' : 'Was unhealthy for', v.unhealthyDuration],
      ['Runbook', v.runbookUrl],
    );
  }
  if (router?.name) facts.push(['Router', router.name]);
  return facts.filter((f): f is [string, string] => typeof f[1] === 'string' && f[1] !== '').map(([name, value]) => ({ name, value }));
}

export interface Rendered {
  /** The event's view; for a group, its newest member's (n.event). */
  view: EventView;
  /** Headline: the template's title, else computed ("Reminder: " first for a reminder). */
  title: string;
  /** One line, at most 1024 code points (incident summary, webhook summary, chat fallback). */
  summary: string;
  severity: Severity;
  /** Labelled values in display order; a group's are its labels, counts and member listing ("Details"). */
  facts: Fact[];
  /**
   * Body text, plain (each notifier escapes it): the template's text, else the event's message; null for a group
   * without a template (its members are the body: `group`, and the "Details" fact for notifiers that show facts).
   */
  text: string | null;
  /** An http(s) runbook link (data.runbookUrl); for a group, the one its named members share. */
  runbookUrl: string | null;
  reminder: boolean;
  group: RenderedGroup | null;
}

/** One group member as a message names it. */
export interface MemberLine {
  /** e.g. "Certificate shop/shop-tls in cluster prod"; at most 300 code points. */
  name: string;
  /** The reason, or "expires in 3 days"; at most 200 code points. */
  detail: string | null;
  kind: EventKind;
  state: EventState;
  eventId: string;
  eventType: EventType;
  correlationKey: string;
  cluster: string | null;
  namespace: string | null;
  resourceName: string | null;
  runbookUrl: string | null;
}

export interface RenderedGroup {
  key: string;
  /** The group's labels with display names ("Issuer", "Cluster", or the groupBy field itself). */
  labels: Fact[];
  firingCount: number;
  resolvedCount: number;
  allResolved: boolean;
  /** At most MAX_NAMED_MEMBERS each; `moreFiring` / `moreResolved` count the rest. */
  firing: MemberLine[];
  resolved: MemberLine[];
  moreFiring: number;
  moreResolved: number;
  /** "Not ready", "Expiring", "Silent" or "Unhealthy": what the firing members are. */
  firingLabel: string;
}

/** Resources named per list (firing, recovered) in a group message; the counts tell the rest ("and N more"). */
export const MAX_NAMED_MEMBERS = 10;
const MAX_MEMBER_NAME = 300;
const MAX_MEMBER_DETAIL = 200;
/** A template's parts are bounded by the template engine; this only keeps a runaway one from reaching a channel. */
const MAX_TITLE = 1024;
const MAX_TEXT = 32_768;
const MAX_LABEL_VALUE = 256;

/** `facts` false: no facts (the webhook payload has none; they are a third of a rendering's cost). */
export function render(event: InternalEvent, router?: { name: string }, facts = true): Rendered {
  const view = viewOf(event);
  return {
    view,
    // names are bounded by the event schemas, not short: a headline stays one
    title: truncateChars(titleOf(view), MAX_TITLE),
    summary: summaryOf(view),
    severity: severityOf(view),
    facts: facts ? factsOf(view, router) : [],
    text: view.message,
    runbookUrl: view.runbookUrl,
    reminder: false,
    group: null,
  };
}

const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();
/** The first `units` UTF-16 units, never ending in half a surrogate pair (and keeping the ellipsis of a cut). */
function head(s: string, units: number): string {
  if (s.length <= units) return s;
  const code = s.charCodeAt(units - 1);
  return s.slice(0, code >= 0xd800 && code <= 0xdbff ? units - 1 : units) + '…';
}
const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;
const SEVERITY_RANK: Record<Severity, number> = { info: 0, warning: 1, error: 2, critical: 3 };

/** A member as one line: what it is, where (unless the group is one cluster's: `inCluster` false), and why. */
export function memberLineOf(eventId: string, event: InternalEvent, inCluster = true): MemberLine {
  const v = viewOf(event);
  let name: string;
  let detail: string | null;
  let cluster: string | null;
  let namespace: string | null;
  let resourceName: string | null;
  if (v.kind === 'certificateExpiration') {
    cluster = v.clusterName;
    namespace = v.namespace;
    resourceName = v.certificateName;
    const what = v.certificateName ? `${v.namespace ? `${v.namespace}/` : ''}${v.certificateName}` : v.notificationName || v.certificateRef;
    name = `Certificate ${what}${cluster && inCluster ? ` in cluster ${cluster}` : ''}`;
    detail =
      v.daysUntilExpiry !== null
        ? daysLeftPhrase(v.daysUntilExpiry)
        : v.threshold !== null
          ? `expires within ${plural(v.threshold, 'day')}`
          : null;
  } else {
    cluster = clusterLabel(v);
    namespace = v.resource.namespace || null;
    resourceName = v.resource.name || null;
    name =
      v.kind === 'agent'
        ? `Agent of cluster ${cluster}`
        : `${v.kind === 'issuer' ? 'Issuer' : 'Certificate'} ${namespace ? `${namespace}/` : ''}${resourceName ?? 'unknown'}${inCluster ? ` in cluster ${cluster}` : ''}`;
    detail = v.state === 'restored' ? (v.unhealthyDuration ? `was unhealthy for ${v.unhealthyDuration}` : null) : v.reason || v.message;
  }
  return {
    // cut before collapsing whitespace: a 32 KB status message costs no more than a short one
    name: truncateChars(oneLine(head(name, 4 * MAX_MEMBER_NAME)), MAX_MEMBER_NAME),
    detail: detail ? truncateChars(oneLine(head(detail, 4 * MAX_MEMBER_DETAIL)), MAX_MEMBER_DETAIL) : null,
    kind: v.kind,
    state: v.state,
    eventId,
    eventType: event.type,
    correlationKey: correlationKeyOf(v),
    cluster,
    namespace,
    resourceName,
    runbookUrl: v.runbookUrl,
  };
}

/** Display names of the usual groupBy fields (written `data.x`, or `x`); any other field is shown as written. */
const LABEL_NAMES: Record<string, string> = {
  issuerName: 'Issuer',
  clusterName: 'Cluster',
  clusterId: 'Cluster id',
  namespace: 'Namespace',
  certificateName: 'Certificate',
  statusReason: 'Reason',
  type: 'Event type',
};
const fieldOf = (label: string): string => label.replace(/^data\./, '');
const labelName = (label: string): string => LABEL_NAMES[fieldOf(label)] ?? label;

/** What the group is about, from its labels: "Issuer letsencrypt-prod in cluster prod", else "Router <name>". */
function groupScope(labels: Record<string, string>, clusterNames: Map<string, string>, router: string): string {
  const byField = new Map(Object.entries(labels).map(([k, v]) => [fieldOf(k), v]));
  const get = (field: string) => {
    const v = byField.get(field);
    return v ? truncateChars(oneLine(v), MAX_LABEL_VALUE) : null;
  };
  const issuer = get('issuerName');
  const namespace = get('namespace');
  const clusterId = get('clusterId');
  const cluster = get('clusterName') ?? (clusterId ? (clusterNames.get(clusterId) ?? clusterId) : null);
  const known = new Set(['issuerName', 'namespace', 'clusterId', 'clusterName']);
  const parts: string[] = [];
  if (issuer) parts.push(`Issuer ${issuer}`);
  if (namespace) parts.push(parts.length ? `in namespace ${namespace}` : `Namespace ${namespace}`);
  if (cluster) parts.push(parts.length ? `in cluster ${cluster}` : `Cluster ${cluster}`);
  const others = Object.entries(labels)
    .filter(([k, v]) => !known.has(fieldOf(k)) && v !== '')
    .map(([k, v]) => `${labelName(k)} ${truncateChars(oneLine(v), MAX_LABEL_VALUE)}`);
  if (others.length) parts.push(parts.length ? `(${others.join(', ')})` : others.join(', '));
  return parts.length ? parts.join(' ') : `Router ${router}`;
}

/** Labels shown or sent: the router's groupBy is short; this only bounds what a careless caller could pass. */
const MAX_LABELS = 20;

/** A group's labels with at most MAX_LABELS entries, names and values cut at 256 code points. */
export function boundedLabels(labels: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels ?? {}).slice(0, MAX_LABELS)) {
    out[truncateChars(k, MAX_LABEL_VALUE)] = truncateChars(typeof v === 'string' ? v : String(v), MAX_LABEL_VALUE);
  }
  return out;
}

const KIND_NOUN: Record<EventKind, [string, string]> = {
  issuer: ['issuer', 'issuers'],
  certificate: ['certificate', 'certificates'],
  agent: ['cluster agent', 'cluster agents'],
  certificateExpiration: ['certificate', 'certificates'],
};
const KIND_FIRING: Record<EventKind, string> = {
  issuer: 'not ready',
  certificate: 'not ready',
  agent: 'silent',
  certificateExpiration: 'expiring',
};

function renderGroup(n: Notification, g: NotificationGroup): Rendered {
  const view = viewOf(n.event);
  const firingAll = Array.isArray(g.firing) ? g.firing : [];
  const resolvedAll = Array.isArray(g.resolved) ? g.resolved : [];
  // counts are the group's truth; the lists are at most 20 (the contract) and only the first few are named
  const firingCount = Math.max(firingAll.length, Number.isSafeInteger(g.firingCount) ? g.firingCount : 0);
  const resolvedCount = Math.max(resolvedAll.length, Number.isSafeInteger(g.resolvedCount) ? g.resolvedCount : 0);
  // a group of one cluster names it in its title: its members need not repeat it
  const inCluster = !Object.entries(g.labels ?? {}).some(([k, v]) => v && (fieldOf(k) === 'clusterName' || fieldOf(k) === 'clusterId'));
  const firing = firingAll.slice(0, MAX_NAMED_MEMBERS).map((m) => memberLineOf(m.eventId, m.event, inCluster));
  const resolved = resolvedAll.slice(0, MAX_NAMED_MEMBERS).map((m) => memberLineOf(m.eventId, m.event, inCluster));
  const named = [...firing, ...resolved];
  const kinds = new Set(named.map((m) => m.kind));
  if (kinds.size === 0) kinds.add(view.kind);
  const kind = kinds.size === 1 ? [...kinds][0]! : null;
  const [one, many] = kind ? KIND_NOUN[kind] : ['resource', 'resources'];
  const firingWord = kind ? KIND_FIRING[kind] : 'unhealthy';
  const clusterNames = new Map<string, string>();
  for (const m of [...firingAll, ...resolvedAll].slice(0, 2 * MAX_NAMED_MEMBERS)) {
    const v = viewOf(m.event);
    if (v.kind !== 'certificateExpiration' && v.cluster.id && v.cluster.name) clusterNames.set(v.cluster.id, v.cluster.name);
  }
  const scope = groupScope(boundedLabels(g.labels), clusterNames, n.router.name);
  const allResolved = g.allResolved === true;
  const state = allResolved
    ? resolvedCount === 1
      ? `1 ${one} recovered`
      : `all ${resolvedCount} recovered`
    : `${firingCount} ${firingCount === 1 ? one : many} ${firingWord}${resolvedCount ? `, ${resolvedCount} recovered` : ''}`;
  const title = truncateChars(`${scope}: ${state}`, MAX_TITLE);

  let severity: Severity = 'info';
  if (!allResolved && firingCount > 0) {
    const sevs = firingAll.slice(0, 20).map((m) => severityOf(viewOf(m.event)));
    severity = sevs.length ? sevs.reduce((a, b) => (SEVERITY_RANK[b] > SEVERITY_RANK[a] ? b : a)) : 'error';
  }
  const runbooks = new Set(named.map((m) => m.runbookUrl).filter((u): u is string => u !== null));
  const runbookUrl = runbooks.size === 1 ? [...runbooks][0]! : null;
  const labelFacts = Object.entries(boundedLabels(g.labels)).map(([k, v]) => ({
    name: labelName(k),
    value: oneLine(v) || '(none)',
  }));
  const group: RenderedGroup = {
    key: g.key,
    labels: labelFacts,
    firingCount,
    resolvedCount,
    allResolved,
    firing,
    resolved,
    moreFiring: Math.max(0, firingCount - firing.length),
    moreResolved: Math.max(0, resolvedCount - resolved.length),
    firingLabel: firingWord.charAt(0).toUpperCase() + firingWord.slice(1),
  };
  const listing = memberListing(group);
  const facts: Fact[] = [
    ...labelFacts,
    { name: group.firingLabel, value: String(firingCount) },
    { name: 'Recovered', value: String(resolvedCount) },
  ];
  if (runbookUrl) facts.push({ name: 'Runbook', value: runbookUrl });
  if (n.router.name) facts.push({ name: 'Router', value: n.router.name });
  if (listing) facts.push({ name: 'Details', value: listing });
  const first = (firing.length ? firing : resolved).slice(0, 3).map((m) => m.name);
  const more = (firing.length ? firingCount : resolvedCount) - first.length;
  const summary = first.length ? `${title} (${first.join(', ')}${more > 0 ? `, and ${more} more` : ''})` : title;
  return {
    view,
    title,
    summary: truncateChars(oneLine(summary), 1024),
    severity,
    facts,
    text: null,
    runbookUrl,
    reminder: false,
    group,
  };
}

/** One line per named member ("- <name>: <detail>"), then "and N more". */
export function memberLines(lines: readonly MemberLine[], more: number): string[] {
  const out = lines.map((m) => `- ${m.name}${m.detail ? `: ${m.detail}` : ''}`);
  if (more > 0) out.push(`and ${more} more`);
  return out;
}

/** The plain-text listing of a group's members (text email body, the "Details" fact). */
function memberListing(g: RenderedGroup): string {
  const out: string[] = [];
  if (g.firingCount > 0) out.push(`${g.firingLabel} (${g.firingCount}):`, ...memberLines(g.firing, g.moreFiring));
  if (g.resolvedCount > 0) out.push(`Recovered (${g.resolvedCount}):`, ...memberLines(g.resolved, g.moreResolved));
  return out.join('\n');
}

function reminderFact(r: Rendered): Fact {
  if (r.group) return { name: 'Reminder', value: `still ${r.group.firingLabel.toLowerCase()}: ${r.group.firingCount}` };
  const v = r.view;
  if (v.kind === 'certificateExpiration') return { name: 'Reminder', value: 'still expiring' };
  const since = v.statusTransition ? ` since ${v.statusTransition}` : '';
  return { name: 'Reminder', value: `still ${v.kind === 'agent' ? 'silent' : 'not ready'}${since}` };
}

const isReminderTitle = (t: string) => /^reminder\b/i.test(t);

/**
 * The texts of one notification, for every notifier, so every integration type says the same:
 * - a group (n.group): one message for its members: scope and counts in the title ("Issuer letsencrypt-prod in
 *   cluster prod: 200 certificates not ready" / "...: all 200 recovered"), the labels and counts as facts, the
 *   first MAX_NAMED_MEMBERS firing and recovered members named and the rest counted; severity the worst firing
 *   member's, info once all recovered;
 * - a reminder: the title starts with "Reminder:" and a "Reminder" fact says since when;
 * - a template (n.rendered): its title and text replace the title and the body text (plain text: each notifier
 *   escapes it for its markup, like event text).
 * Notifiers call this, never render() directly. `facts` false: a single event's facts are left out (the webhook
 * payload, which has none).
 */
export function renderNotification(n: Notification, facts = true): Rendered {
  const r = n.group ? renderGroup(n, n.group) : render(n.event, n.router, facts);
  if (n.reminder) {
    r.reminder = true;
    r.title = `Reminder: ${r.title}`;
    r.summary = truncateChars(`Reminder: ${r.summary}`, 1024);
    r.facts = [reminderFact(r), ...r.facts];
  }
  const tTitle = n.rendered?.title?.trim();
  const tText = n.rendered?.text?.trim();
  if (tTitle) r.title = truncateChars(n.reminder && !isReminderTitle(tTitle) ? `Reminder: ${tTitle}` : tTitle, MAX_TITLE);
  if (tText) r.text = truncateChars(tText, MAX_TEXT);
  // a template's text is the one-line summary (incident, webhook), as docs/templates.md says; a title alone leads it
  if (tTitle || tText) r.summary = truncateChars(oneLine(tText ? tText : r.text ? `${r.title}: ${r.text}` : r.title), 1024);
  return r;
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

/** Hex colour per severity (Slack attachment bar, email accent). */
export const SEVERITY_COLOR: Record<Severity, string> = {
  critical: '#b3261e',
  error: '#e8590c',
  warning: '#f2b705',
  info: '#2e7d32',
};
