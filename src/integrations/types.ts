/**
 * The contract between the delivery engine and the integrations (notifiers).
 *
 * A notifier turns one Notification into one outbound request (HTTP POST or SMTP message) and
 * classifies the result. It never retries by itself: the engine owns scheduling, backoff and
 * persistence, and uses `outcome` / `retryAfterMs` to decide what to do next.
 */
import type { InternalEvent } from '../events/families.js';
import { EgressPolicy } from './egress.js';
import type { IntegrationMeta, IntegrationType } from '../model/integration-types.js';
import type { IntegrationRecord } from '../model/records.js';

export type { IntegrationMeta, IntegrationType, ParamField, ParamKind } from '../model/integration-types.js';

export interface Notification {
  /** Delivery id: stable across retries and redeliveries -> webhook-id, CloudEvents id, email Message-ID. */
  id: string;
  eventId: string;
  event: InternalEvent;
  /** Epoch ms the event was accepted. */
  occurredAt: number;
  router: { id: string; name: string };
  integration: IntegrationRecord;
  /** 1-based attempt number. */
  attempt: number;
  /**
   * Grouping (docs/signal.md): set when this notification speaks for a group of events of a router
   * with `groupBy`. `event` is then the group's newest member, so a notifier that ignores groups still says
   * something true.
   */
  group?: NotificationGroup | undefined;
  /** A reminder (the router's repeatInterval): the resource (or group) is still unhealthy; nothing new happened. */
  reminder?: boolean | undefined;
  /**
   * The router's template, rendered for this integration's type; a part left out keeps the
   * notifier's own text. Rendered by the worker before send (bounded output), never by a notifier.
   */
  rendered?: RenderedMessage;
}

/** The parts a template gives (docs/templates.md): title, text, and the whole body of a generic JSON webhook. */
export interface RenderedMessage {
  title?: string;
  text?: string;
  /** GENERIC_WEBHOOK: the request body (JSON text, checked after rendering). */
  body?: string;
}

/** One member of a group: a resource's newest event in the group. */
export interface GroupMember {
  eventId: string;
  event: InternalEvent;
  /** Epoch ms the event was accepted. */
  occurredAt: number;
}

export interface NotificationGroup {
  /**
   * Stable per (router, group labels): the incident dedup_key of the group's incident, the webhook's
   * correlation key; never contains the labels' raw values (hashed).
   */
  key: string;
  /** The router's groupBy fields and this group's values, e.g. { 'data.issuerName': 'letsencrypt-prod' }. */
  labels: Record<string, string>;
  /** Members unhealthy (or expiring) now, newest first, at most 20 (the counts tell the rest). */
  firing: GroupMember[];
  /** Members that recovered since the group's previous notification, newest first, at most 20 (the counts tell the rest). */
  resolved: GroupMember[];
  firingCount: number;
  resolvedCount: number;
  /** No member is firing any more: incident management resolves the group's incident; chat says "all recovered". */
  allResolved: boolean;
}

export type DeliveryOutcome = 'delivered' | 'retry' | 'dead';

export interface DeliveryResult {
  outcome: DeliveryOutcome;
  /** HTTP status, or the SMTP reply code for email. */
  statusCode?: number;
  /** Parsed from Retry-After (seconds or HTTP date). */
  retryAfterMs?: number;
  /** Short; never contains secrets (no URLs with tokens, no keys). */
  error?: string;
  /**
   * Truncated to 1 KiB; secrets and secret URL parts are redacted. For the notifiers' own use (the
   * incident 400 detail); never returned to API callers: a receiver's answer is not reflected.
   */
  responseBody?: string;
}

export interface Notifier {
  readonly type: IntegrationType;
  send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult>;
  /**
   * Why this process can deliver nothing of this type whatever the integration says (e.g. email without
   * --smtp-url), or null. Creating or testing such an integration is refused instead of dead-lettering later.
   */
  unavailable?(): string | null;
}

export interface IntegrationOptions {
  /** Base URL of the incident management Events API v2; default DEFAULT_INCIDENT_EVENTS_URL. */
  incidentEventsUrl: string;
  /** Base URL of the Opsgenie API (--opsgenie-api-url); default DEFAULT_OPSGENIE_API_URL. Trusted like the above. */
  opsgenieApiUrl?: string;
  /** SMTP URL for nodemailer, e.g. smtp://user:pass@mail:587 or smtps://...; email is 'dead' when unset. */
  smtpUrl?: string | undefined;
  /** Default sender when an EMAIL integration has no config.from. */
  smtpFrom?: string;
  /**
   * Sender domains a config.from may use (parseSenderDomains: `example.com`, `*.example.com`); absent: the domain
   * of smtpFrom only.
   */
  smtpSenderDomains?: readonly string[];
  /** Per-attempt timeout in ms; default 10000. */
  timeoutMs: number;
  userAgent: string;
  /** Epoch-ms clock (webhook-timestamp, Retry-After dates). Default Date.now. */
  clock?: () => number;
  /**
   * Egress policy for tenant-given URLs (webhook, Slack, Teams). Default DEFAULT_EGRESS: the deny-list
   * with no allow-list. The operator's own destinations (incident events URL, SMTP URL) are trusted.
   */
  egress?: EgressPolicy | undefined;
  /** --public-url (no trailing slash): a notifier may link to the console (ALERTMANAGER's generatorURL). */
  publicUrl?: string | undefined;
}

/**
 * Order per key (delivery/order.ts): 'supersede' for a type whose notifications carry state (only the newest
 * matters), 'in-order' for the others.
 */
export type OrderMode = 'supersede' | 'in-order';

/** A token bucket's shape (delivery/rate-limit.ts). */
export interface RateLimit {
  /** Sustained rate, in sends per second (> 0). */
  ratePerSec: number;
  /** Bucket size: how many can go at once after a quiet period (>= 1). */
  burst: number;
}

/**
 * Everything the service knows about one integration type, in the type's own file: its entry of
 * INTEGRATION_META (src/model/integration-types.ts: API names, parameters, provider type, console form) and what
 * needs the notifier. src/integrations/registry.ts lists them and every other module (validation, delivery order,
 * rate limits, API, notifiers) reads it there.
 */
export interface IntegrationDescriptor extends IntegrationMeta {
  readonly type: IntegrationType;
  /** Non-secret config derived from the validated secrets (WEBHOOK: whether it signs). */
  deriveConfig?(secrets: Readonly<Record<string, string>>): Record<string, unknown>;
  /** The secrets to store when an update replaces `current` with `next` (WEBHOOK: signing-secret rotation). */
  updateSecrets?(current: Readonly<Record<string, string>>, next: Readonly<Record<string, string>>, now: number): Record<string, string>;
  /**
   * A check across the validated parameters (ALERTMANAGER: bearer token or basic auth, not both), by secret key:
   * the params input field at fault and why, or null.
   */
  checkParams?(secrets: Readonly<Record<string, string>>): { input: string; problem: string } | null;
  readonly orderMode: OrderMode;
  /** Default per-integration rate limit, from the vendor's documented limit (the comment says which); an integration may set its own. */
  readonly rateLimit: RateLimit;
  createNotifier(opts: IntegrationOptions): Notifier;
}

/** The default policy: loopback, private, link-local, metadata and other special ranges refused. */
export const DEFAULT_EGRESS = new EgressPolicy();

export const DEFAULT_INCIDENT_EVENTS_URL = 'https://events.pagerduty.com';
export const DEFAULT_OPSGENIE_API_URL = 'https://api.opsgenie.com';
export const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_USER_AGENT = 'certmgr-notify';

/** Fills the documented defaults for anything not given. */
export function integrationOptions(partial: Partial<IntegrationOptions> = {}): IntegrationOptions {
  return {
    ...partial,
    incidentEventsUrl: partial.incidentEventsUrl || DEFAULT_INCIDENT_EVENTS_URL,
    timeoutMs: partial.timeoutMs && partial.timeoutMs > 0 ? partial.timeoutMs : DEFAULT_TIMEOUT_MS,
    userAgent: partial.userAgent || DEFAULT_USER_AGENT,
  };
}
