/**
 * OPSGENIE: the Opsgenie Alert API v2 (docs.opsgenie.com "Alert API").
 *
 * - trigger (incidentActionOf): create `POST <base>/v2/alerts` with `Authorization: GenieKey <key>`; alias =
 *   incidentKeyOf(n), so Opsgenie de-duplicates repeats of an open alert (its count grows) and a close finds it;
 * - resolve: close `POST <base>/v2/alerts/<alias>/close?identifierType=alias`.
 * The base is the operator's (--opsgenie-api-url, default DEFAULT_OPSGENIE_API_URL; EU accounts
 * https://api.eu.opsgenie.com): trusted like --incident-events-url, not under the tenant egress policy.
 * Both requests are asynchronous on Opsgenie's side: 202 (any 2xx) delivered. 429, 5xx and network errors retry
 * (Retry-After honoured); other 4xx dead, except a close answered 404: no such open alert, nothing to close.
 */
import { INTEGRATION_META } from '../model/integration-types.js';
import { createHash } from 'node:crypto';
import { checkTargetUrl, postAndClassify, truncateChars, type HttpContext } from './http.js';
import { incidentActionOf, incidentKeyOf, memberLines, renderNotification, type Rendered, type Severity } from './render.js';
import {
  DEFAULT_OPSGENIE_API_URL,
  type DeliveryResult,
  type IntegrationDescriptor,
  type IntegrationOptions,
  type Notification,
  type Notifier,
} from './types.js';

/** The Alert API's documented field limits (characters). */
export const OPSGENIE_LIMITS = {
  message: 130,
  alias: 512,
  description: 15_000,
  source: 100,
  entity: 512,
  note: 25_000,
  tags: 20,
  tag: 50,
  /** details: the whole map, keys and values together */
  details: 8_000,
} as const;

/** Severity to Opsgenie priority: an issuer down is P1, one certificate P2, an expiry warning P3. */
const OPSGENIE_PRIORITY: Record<Severity, 'P1' | 'P2' | 'P3' | 'P4' | 'P5'> = {
  critical: 'P1',
  error: 'P2',
  warning: 'P3',
  info: 'P5',
};

export interface OpsgenieAlert {
  message: string;
  alias: string;
  description: string;
  priority: string;
  source: string;
  entity: string;
  tags: string[];
  details: Record<string, string>;
}

/** An alias within the limit: the key itself, or a hash of it when longer (never expected: keys are ≤ 255). */
function opsgenieAlias(n: Notification): string {
  const key = incidentKeyOf(n);
  return key.length <= OPSGENIE_LIMITS.alias ? key : `certmgr:sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/** Details within the documented 8000-character budget: facts in display order, the last ones left out. */
function boundedDetails(entries: Array<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  let used = 0;
  for (const [k, raw] of entries) {
    const key = truncateChars(k, 100);
    const value = truncateChars(raw, 1000);
    if (used + key.length + value.length > OPSGENIE_LIMITS.details) break;
    out[key] = value;
    used += key.length + value.length;
  }
  return out;
}

/**
 * The description (plain text, 15,000): the summary, a template's text, a group's firing and recovered members
 * ("and N more"), the runbook, then the facts. Members come before the facts so a cut drops facts first.
 */
function opsgenieDescription(r: Rendered): string {
  const out = [r.summary];
  if (r.text) out.push('', truncateChars(r.text, 4000));
  const g = r.group;
  if (g && g.firingCount > 0) out.push('', `${g.firingLabel} (${g.firingCount}):`, ...memberLines(g.firing, g.moreFiring));
  if (g && g.resolvedCount > 0) out.push('', `Recovered (${g.resolvedCount}):`, ...memberLines(g.resolved, g.moreResolved));
  if (r.runbookUrl) out.push('', `Runbook: ${r.runbookUrl}`);
  const facts = r.facts.filter((f) => f.name !== 'Details' && f.name !== 'Runbook');
  if (facts.length) out.push('', ...facts.map((f) => `${f.name}: ${f.value}`));
  return out.join('\n');
}

/** A group's key and counts as details (Opsgenie filters and integrations read details). */
function groupDetails(r: Rendered): Array<[string, string]> {
  const g = r.group;
  if (!g) return [];
  return [
    ['groupKey', g.key],
    ['firingCount', String(g.firingCount)],
    ['resolvedCount', String(g.resolvedCount)],
    ['allResolved', String(g.allResolved)],
  ];
}

/** A tag: Opsgenie refuses spaces and commas in tags; at most 50 characters. */
const tag = (s: string): string => truncateChars(s.replace(/[\s,]+/g, '_'), OPSGENIE_LIMITS.tag);

/** The create-alert body (pure), every field within its documented limit. */
export function buildOpsgenieAlert(n: Notification): OpsgenieAlert {
  const r = renderNotification(n);
  const v = r.view;
  const health = v.kind !== 'certificateExpiration';
  const description = opsgenieDescription(r);
  const tags = ['certmgr-notify', v.kind, r.severity];
  if (health && (v.cluster.name || v.cluster.id)) tags.push(`cluster:${v.cluster.name || v.cluster.id}`);
  if (n.reminder) tags.push('reminder');
  if (n.group) tags.push('group');
  return {
    message: truncateChars(r.title, OPSGENIE_LIMITS.message),
    alias: opsgenieAlias(n),
    description: truncateChars(description, OPSGENIE_LIMITS.description),
    priority: OPSGENIE_PRIORITY[r.severity],
    source: 'certmgr-notify',
    entity: truncateChars(
      health ? [v.cluster.name || v.cluster.id, v.resource.namespace, v.resource.name].filter(Boolean).join('/') : v.certificateRef,
      OPSGENIE_LIMITS.entity,
    ),
    tags: [...new Set(tags.map(tag))].slice(0, OPSGENIE_LIMITS.tags),
    details: boundedDetails([
      ['eventType', n.event.type],
      ['eventId', n.eventId],
      ['router', n.router.name],
      ...groupDetails(r),
      ...(r.runbookUrl ? [['runbookUrl', r.runbookUrl] as [string, string]] : []),
      ...(r.reminder ? [['reminder', 'true'] as [string, string]] : []),
      // the member listing is in the description; details keep the short facts
      ...r.facts.filter((f) => f.name !== 'Details' && f.name !== 'Runbook').map((f): [string, string] => [f.name, f.value]),
    ]),
  };
}

/** The close body (pure): who closed it and why. */
function buildOpsgenieClose(n: Notification): { source: string; user: string; note: string } {
  return { source: 'certmgr-notify', user: 'certmgr-notify', note: truncateChars(renderNotification(n).summary, OPSGENIE_LIMITS.note) };
}

/**
 * `<base><path>`, keeping a base path and query (https://h/og?x=1 -> https://h/og/v2/alerts?x=1); extra query
 * parameters appended. Null when the base is not a URL.
 */
export function opsgenieUrl(base: string, path: string, query: Record<string, string> = {}): string | null {
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    return null;
  }
  u.pathname = u.pathname.replace(/\/+$/, '') + path;
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  u.hash = '';
  return u.toString();
}

/**
 * A dead answer's reason from Opsgenie's body (`{ message, errors? }`, already redacted): the operator's own trusted
 * destination, like the incident events API, so its words help ("Key format is not valid!"). Never for 429/5xx.
 */
function withOpsgenieDetail(result: DeliveryResult): DeliveryResult {
  if (result.outcome !== 'dead' || !result.responseBody) return result;
  try {
    const message = (JSON.parse(result.responseBody) as { message?: unknown }).message;
    if (typeof message === 'string' && message.trim()) result.error = truncateChars(`${result.error}: ${message.trim()}`, 300);
  } catch {
    /* not JSON: the status alone */
  }
  return result;
}

function createOpsgenieNotifier(opts: IntegrationOptions): Notifier {
  const base = opts.opsgenieApiUrl ?? DEFAULT_OPSGENIE_API_URL;
  const badBase = opsgenieUrl(base, '') ? checkTargetUrl(base, 'Opsgenie API URL') : 'Opsgenie API URL is not a valid URL';
  return {
    type: 'OPSGENIE',
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      const key = n.integration.secrets['apiKey'];
      if (!key) return { outcome: 'dead', error: 'Opsgenie API key is not configured' };
      if (badBase) return { outcome: 'dead', error: badBase };
      const ctx: HttpContext = { timeoutMs: opts.timeoutMs, userAgent: opts.userAgent, clock: opts.clock ?? Date.now, signal };
      const headers = { authorization: `GenieKey ${key}` };
      const secrets = Object.values(n.integration.secrets);
      if (incidentActionOf(n) === 'resolve') {
        const url = opsgenieUrl(base, `/v2/alerts/${encodeURIComponent(opsgenieAlias(n))}/close`, { identifierType: 'alias' })!;
        const result = await postAndClassify({ url, body: JSON.stringify(buildOpsgenieClose(n)), headers, secrets }, ctx);
        // no open alert under this alias (never created, already closed, or deleted): the goal is reached
        if (result.statusCode === 404) return { outcome: 'delivered', statusCode: 404 };
        return withOpsgenieDetail(result);
      }
      const url = opsgenieUrl(base, '/v2/alerts')!;
      return withOpsgenieDetail(await postAndClassify({ url, body: JSON.stringify(buildOpsgenieAlert(n)), headers, secrets }, ctx));
    },
  };
}

/**
 * State-carrying like incident management (create/close of one alias): only the newest matters, so a newer
 * notification supersedes an unsent older one. Rate: Opsgenie's Alert-domain budget is per account and plan (token
 * bucket, 429 beyond it; https://docs.opsgenie.com/docs/api-rate-limiting); 1/s with a burst of 10 stays within the
 * smallest plan's alert-API rate.
 */
export const opsgenie: IntegrationDescriptor = {
  type: 'OPSGENIE',
  ...INTEGRATION_META.OPSGENIE,
  orderMode: 'supersede',
  rateLimit: { ratePerSec: 1, burst: 10 },
  createNotifier: createOpsgenieNotifier,
};
