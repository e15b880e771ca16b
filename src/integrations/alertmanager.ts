/**
 * ALERTMANAGER: notifications become alerts posted to a Prometheus Alertmanager (`POST <url>/api/v2/alerts`, a
 * JSON array of one alert), so Alertmanager's own routes, grouping, silences and inhibition apply to them.
 *
 * - One alert per resource (or per group of a router with groupBy). Its labels identify it and stay the same for
 *   its whole life, so the recovery finds the alert its trigger opened: alertname (family and unhealthy state:
 *   CertmgrIssuerNotReady, CertmgrCertificateNotReady, CertmgrAgentSilent, CertmgrCertificateExpiring), severity
 *   (the unhealthy state's), kind, cluster, namespace, name, issuer; an expiry alert adds certificate_ref, a group
 *   alert its groupBy labels and group_key. What changes while the alert is open (the reason, the message) is an
 *   annotation: summary, description, reason, runbook_url, router, event_type. Label names are
 *   `[a-zA-Z_][a-zA-Z0-9_]*`, values well-formed text of at most 256 characters; empty values are left out.
 * - A trigger (`.notready`, an expiry, a firing group, a reminder) posts endsAt = now + the hold: HEALTH_HOLD_MS
 *   for health alerts, which their recovery ends, EXPIRY_HOLD_MS for expiry alerts, which no event ends (the hub
 *   is not told of a renewal). endsAt is never left unset: Alertmanager then ends the alert resolve_timeout
 *   (5 minutes by default) after it was last posted, and the hub posts again only on a change or a reminder.
 *   A recovery (`.active`, a group with every member recovered) posts the same labels with endsAt = now: the
 *   alert is resolved.
 * - generatorURL: the console's page of the event (--public-url), when the hub has one.
 * - Optional bearer token or basic auth (write-only). The URL is a tenant destination (egress policy).
 * 2xx delivered; 429/5xx/network retry; other 4xx (400 an alert Alertmanager refused, 401/403, 404) and 3xx dead.
 */
import { INTEGRATION_META } from '../model/integration-types.js';
import { consoleUrlOf } from '../templates/variables.js';
import { checkTenantUrl, postAndClassify, truncateChars } from './http.js';
import { viewOf, type EventView } from '../model/event-view.js';
import { boundedLabels, incidentActionOf, memberLines, renderNotification, severityOf, type Rendered } from './render.js';
import {
  DEFAULT_EGRESS,
  type DeliveryResult,
  type IntegrationDescriptor,
  type IntegrationOptions,
  type Notification,
  type Notifier,
} from './types.js';

/** An open health alert lasts this long unless re-posted (a reminder) or resolved: the longest repeatInterval. */
export const HEALTH_HOLD_MS = 90 * 24 * 3600_000;
/** An expiry alert lasts a day: no event says the certificate was renewed, and each threshold crossed posts it again. */
export const EXPIRY_HOLD_MS = 24 * 3600_000;

const ALERTS_PATH = '/api/v2/alerts';
const MAX_LABEL_VALUE = 256;
const MAX_LABEL_NAME = 64;
const MAX_ANNOTATION = 1024;
const MAX_DESCRIPTION = 8000;

export interface AlertmanagerAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt?: string | undefined;
  endsAt: string;
  generatorURL?: string;
}

/** The alert name of each kind: its family and the unhealthy state (a recovery keeps it: it ends that alert). */
const ALERT_NAMES: Record<EventView['kind'], string> = {
  issuer: 'CertmgrIssuerNotReady',
  certificate: 'CertmgrCertificateNotReady',
  agent: 'CertmgrAgentSilent',
  certificateExpiration: 'CertmgrCertificateExpiring',
};

/** Lone surrogates become U+FFFD: Alertmanager requires label values to be valid UTF-8. */
const wellFormed = (s: string): string => s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
const labelValue = (s: string): string => truncateChars(wellFormed(s.replace(/\s+/g, ' ').trim()), MAX_LABEL_VALUE);
const annotation = (s: string, max = MAX_ANNOTATION): string => truncateChars(wellFormed(s.trim()), max);

/** Label names of the usual groupBy fields; any other field is sanitized (`data.subject.commonName` → subject_commonName). */
const GROUP_LABEL_NAMES: Record<string, string> = {
  issuerName: 'issuer',
  clusterName: 'cluster',
  clusterId: 'cluster_id',
  namespace: 'namespace',
  certificateName: 'name',
  statusReason: 'reason',
  type: 'event_type',
};

/**
 * A valid Alertmanager label name for a field (pure): `[a-zA-Z_][a-zA-Z0-9_]*`, without the reserved leading `__`,
 * at most 64 characters; null when nothing is left.
 */
export function labelNameOf(field: string): string | null {
  const f = field.replace(/^data\./, '');
  // own keys only: a field named like object machinery (constructor, __proto__) is sanitized like any other
  if (Object.hasOwn(GROUP_LABEL_NAMES, f)) return GROUP_LABEL_NAMES[f]!;
  let name = f.replace(/[^a-zA-Z0-9_]+/g, '_').replace(/^_+/, '');
  if (/^[0-9]/.test(name)) name = `f_${name}`;
  name = name.slice(0, MAX_LABEL_NAME).replace(/_+$/, '');
  return name === '' ? null : name;
}

/** The identifying labels of a single event's alert (pure). */
function eventLabels(v: EventView): Record<string, string> {
  if (v.kind === 'certificateExpiration')
    return {
      cluster: v.clusterName ?? '',
      namespace: v.namespace ?? '',
      name: v.certificateName ?? v.notificationName ?? '',
      certificate_ref: v.certificateRef,
    };
  return {
    cluster: v.cluster.name || v.cluster.id,
    namespace: v.resource.namespace,
    name: v.resource.name,
    issuer: v.kind === 'issuer' ? v.resource.name : (v.certificate?.issuerName ?? ''),
  };
}

/** Severity of the alert's unhealthy state, the same on its recovery (a label may not change). */
function alertSeverity(v: EventView): string {
  return severityOf(v.kind === 'certificateExpiration' ? v : { ...v, state: 'unhealthy' });
}

/** The labels of a notification's alert (pure): fixed ones win over a group's labels of the same name. */
export function alertLabels(n: Notification): Record<string, string> {
  const v = viewOf(n.event);
  const raw: Record<string, string> = {};
  if (n.group) {
    for (const [field, value] of Object.entries(boundedLabels(n.group.labels))) {
      const name = labelNameOf(field);
      if (name) raw[name] = value;
    }
    raw['group_key'] = n.group.key;
  } else Object.assign(raw, eventLabels(v));
  Object.assign(raw, { alertname: ALERT_NAMES[v.kind], severity: alertSeverity(v), kind: v.kind });
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(raw)) {
    const val = labelValue(value);
    if (val !== '') out[k] = val;
  }
  return out;
}

/** The description: a template's text or the event's message, a group's members, the facts. */
function description(r: Rendered): string {
  const out: string[] = [];
  if (r.text) out.push(r.text, '');
  const g = r.group;
  if (g && g.firingCount > 0) out.push(`${g.firingLabel} (${g.firingCount}):`, ...memberLines(g.firing, g.moreFiring), '');
  if (g && g.resolvedCount > 0) out.push(`Recovered (${g.resolvedCount}):`, ...memberLines(g.resolved, g.moreResolved), '');
  out.push(...r.facts.filter((f) => f.name !== 'Details' && f.name !== 'Runbook').map((f) => `${f.name}: ${f.value}`));
  return out.join('\n');
}

/** When the unhealthy state began: the event's own time when it is one and not in the future, else its acceptance. */
function startOf(n: Notification, now: number): number {
  const v = viewOf(n.event);
  const own = v.kind === 'certificateExpiration' ? v.notificationDate : v.statusTransition;
  const t = own === null ? NaN : Date.parse(own);
  const first = n.group?.firing.reduce((min, m) => Math.min(min, m.occurredAt), Infinity) ?? Infinity;
  const at = Math.min(Number.isFinite(t) ? t : n.occurredAt, first);
  return Math.min(at, now);
}

/** The alert of one notification at `now` (pure); `publicUrl` is --public-url (no trailing slash). */
export function buildAlertmanagerAlert(n: Notification, now: number, publicUrl?: string): AlertmanagerAlert {
  // a reminder refreshes the alert: Alertmanager repeats by its own repeat_interval, so no "Reminder:" text
  const r = renderNotification({ ...n, reminder: false });
  const v = r.view;
  const annotations: Record<string, string> = { summary: annotation(r.title), description: annotation(description(r), MAX_DESCRIPTION) };
  const reason = v.kind === 'certificateExpiration' ? null : v.reason;
  if (reason && !n.group) annotations['reason'] = annotation(reason, MAX_LABEL_VALUE);
  if (r.runbookUrl) annotations['runbook_url'] = r.runbookUrl;
  annotations['router'] = annotation(n.router.name, MAX_LABEL_VALUE);
  annotations['event_type'] = n.event.type;
  const resolve = incidentActionOf(n) === 'resolve';
  const hold = v.kind === 'certificateExpiration' ? EXPIRY_HOLD_MS : HEALTH_HOLD_MS;
  const alert: AlertmanagerAlert = {
    labels: alertLabels(n),
    annotations,
    // a recovery leaves startsAt out: Alertmanager keeps the open alert's (and startsAt ≤ endsAt always holds)
    startsAt: resolve ? undefined : new Date(startOf(n, now)).toISOString(),
    endsAt: new Date(resolve ? now : now + hold).toISOString(),
  };
  const console = consoleUrlOf(publicUrl, v.kind);
  if (console) alert.generatorURL = console;
  return alert;
}

/**
 * `<url>/api/v2/alerts`, keeping a path prefix (--web.route-prefix) and a query; a URL that already names the
 * endpoint is kept. Null when it is not a URL.
 */
export function alertsUrl(base: string): string | null {
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    return null;
  }
  const path = u.pathname.replace(/\/+$/, '');
  if (!path.endsWith(ALERTS_PATH)) u.pathname = path + ALERTS_PATH;
  u.hash = '';
  return u.toString();
}

/** The Authorization header of the stored credentials, if any. */
function authorization(secrets: Readonly<Record<string, string>>): string | undefined {
  if (secrets['bearerToken']) return `Bearer ${secrets['bearerToken']}`;
  if (secrets['username'] !== undefined && secrets['password'] !== undefined)
    return `Basic ${Buffer.from(`${secrets['username']}:${secrets['password']}`, 'utf8').toString('base64')}`;
  return undefined;
}

/** A bearer token goes into a header as is: visible ASCII, no spaces (RFC 6750 b64token is narrower still). */
const BEARER = /^[\x21-\x7e]+$/;

/** Checks across the parameters (pure): bearer token or basic auth, not both; a username needs a password. */
function checkAlertmanagerParams(s: Readonly<Record<string, string>>): { input: string; problem: string } | null {
  const basic = s['username'] !== undefined || s['password'] !== undefined;
  if (s['bearerToken'] !== undefined) {
    if (basic) return { input: 'bearerToken', problem: 'cannot be combined with username/password: use a bearer token or basic auth' };
    if (!BEARER.test(s['bearerToken']))
      return { input: 'bearerToken', problem: 'must be visible ASCII without spaces (it is sent as a header)' };
  }
  if (s['username'] !== undefined && s['password'] === undefined)
    return { input: 'password', problem: 'is required with username (basic auth)' };
  if (s['password'] !== undefined && s['username'] === undefined)
    return { input: 'username', problem: 'is required with password (basic auth)' };
  if (s['username']?.includes(':')) return { input: 'username', problem: "must not contain ':' (basic auth)" };
  return null;
}

function createAlertmanagerNotifier(opts: IntegrationOptions): Notifier {
  const clock = opts.clock ?? Date.now;
  const egress = opts.egress ?? DEFAULT_EGRESS;
  return {
    type: 'ALERTMANAGER',
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      const base = n.integration.secrets['url'];
      const url = base ? alertsUrl(base) : null;
      const bad = checkTenantUrl(url ?? undefined, 'Alertmanager URL', egress);
      if (bad || !url) return { outcome: 'dead', error: bad ?? 'Alertmanager URL is not configured' };
      const auth = authorization(n.integration.secrets);
      const body = JSON.stringify([buildAlertmanagerAlert(n, clock(), opts.publicUrl)]);
      return postAndClassify(
        {
          url,
          body,
          contentType: 'application/json',
          headers: auth ? { authorization: auth } : undefined,
          secrets: [...Object.values(n.integration.secrets), ...(auth ? [auth] : [])],
        },
        { timeoutMs: opts.timeoutMs, userAgent: opts.userAgent, clock, signal, dispatcher: egress.dispatcher() },
      );
    },
  };
}

/**
 * A notification carries the alert's whole state (labels, endsAt), so only the newest matters: supersede.
 * Alertmanager documents no API rate limit and is the tenant's own receiver, which groups and throttles what it
 * sends by its own route (group_wait, group_interval); 100/s with a burst of 500 lets a storm of a few hundred
 * resources in at once and only bounds a runaway.
 */
export const alertmanager: IntegrationDescriptor = {
  type: 'ALERTMANAGER',
  ...INTEGRATION_META.ALERTMANAGER,
  checkParams: checkAlertmanagerParams,
  orderMode: 'supersede',
  rateLimit: { ratePerSec: 100, burst: 500 },
  createNotifier: createAlertmanagerNotifier,
};
