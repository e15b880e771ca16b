/**
 * The service's records: what the store keeps and every role (service, routing, delivery, operator, emitter)
 * reasons about. Plain data, no behaviour; the store (src/store/) persists them.
 */
import type { EventTypeId } from '../events/families.js';
import { INTEGRATION_TYPES, type IntegrationType } from './integration-types.js';

export interface MonitoringConfigRecord {
  id: string;
  companyId: string;
  enabled: boolean;
  thresholds: number[];
  applicationIds: string[];
  includeUnassignedCertificates: boolean;
  updatedAt: number;
  /** who manages it (src/model/manager.ts); absent: nobody */
  manager?: string | undefined;
}

export interface IntegrationRecord {
  id: string;
  companyId: string;
  name: string;
  type: IntegrationType;
  enabled: boolean;
  /** Non-secret settings (e.g. email recipients). Returned by the API. */
  config: Record<string, unknown>;
  /** Write-only secrets (integration key, signing secret, webhook URL). Never returned by the API or logged. */
  secrets: Record<string, string>;
  /** Who owns this record: null for API-created, or e.g. "operator:<ns>/<name>" for CR-managed records. */
  managedBy: string | null;
  /**
   * Its own send rate (a token bucket: sends per second, burst), ratePerSec 0 meaning unlimited; null or absent:
   * its type's default (the descriptor's rateLimit).
   */
  rateLimit?: { ratePerSec: number; burst: number } | null;
  createdAt: number;
  updatedAt: number;
}

/** Which creation generation made the router; updates must use the matching mutation. */
export type RouterGeneration = 'ROUTER' | 'ROUTING_CONFIGURATION';

export interface RouterRecord {
  id: string;
  companyId: string;
  name: string;
  eventTypeId: EventTypeId;
  enabled: boolean;
  /** CEL filter; '' matches every event of the family. */
  filter: string;
  integrationId: string;
  templateId: string | null;
  /**
   * Grouping (docs/signal.md): event fields (CEL paths such as `data.issuerName`) whose values form a
   * group; empty = off (one notification per event, the spec's behaviour).
   */
  groupBy: string[];
  /** Grouping: how long a new group collects events before its first notification (Alertmanager's group_wait). */
  groupWaitMs: number;
  /** Grouping: at most one update of a group per this interval (Alertmanager's group_interval). */
  groupIntervalMs: number;
  /** Reminders: while a resource (or a group) stays unhealthy, notify again at this interval; null = off. */
  repeatIntervalMs: number | null;
  /**
   * Held under the issuer (docs/grouping.md): a certificate failing while its issuer is not ready is held under one
   * notification per issuer outage instead of one of its own; off = the spec's one notification per event.
   */
  holdUnderIssuer: boolean;
  generation: RouterGeneration;
  managedBy: string | null;
  createdAt: number;
  updatedAt: number;
}

/**
 * A router's notification policy when none is given: no grouping (the spec's one notification per event), no
 * reminders; the wait and interval are Alertmanager's defaults, used once `groupBy` is set.
 */
export const ROUTER_POLICY_DEFAULTS: Readonly<
  Pick<RouterRecord, 'groupBy' | 'groupWaitMs' | 'groupIntervalMs' | 'repeatIntervalMs' | 'holdUnderIssuer'>
> = {
  groupBy: [],
  groupWaitMs: 30_000,
  groupIntervalMs: 300_000,
  repeatIntervalMs: null,
  holdUnderIssuer: false,
};

/** A template's parts (docs/templates.md): one for every integration type, and `default` for the others. */
export const TEMPLATE_PART_KEYS = ['default', ...INTEGRATION_TYPES] as const;
export type TemplatePartKey = (typeof TEMPLATE_PART_KEYS)[number];
/** The integration type whose part may have a `body` (the generic JSON webhook's whole request body). */
export const TEMPLATE_BODY_PART = 'GENERIC_WEBHOOK';

/** Liquid sources of one part; a field left out keeps the default part's, then the notifier's own text. */
export interface TemplatePart {
  title?: string;
  text?: string;
  body?: string;
}

export type TemplateParts = Partial<Record<TemplatePartKey, TemplatePart>>;

/** A notification template, referenced by routers' templateId. */
export interface TemplateRecord {
  id: string;
  companyId: string;
  name: string;
  parts: TemplateParts;
  managedBy: string | null;
  createdAt: number;
  updatedAt: number;
}

/**
 * A silence (docs/silences.md): while active, notifications of events its CEL matcher accepts are
 * recorded SILENCED and not sent. `eventTypeId` null: the matcher applies to every family it compiles for.
 */
export interface SilenceRecord {
  id: string;
  companyId: string;
  /** CEL over `type` and `data`, the routers' dialect and limits; never empty. */
  matcher: string;
  eventTypeId: EventTypeId | null;
  /**
   * The families the silence applies to, found when it was stored (eventTypeId, or every family the matcher
   * compiles for): listings need no compile, and the routing snapshot compiles the matcher for these only.
   */
  eventTypeIds: EventTypeId[];
  startsAt: number;
  endsAt: number;
  comment: string;
  createdBy: string;
  managedBy: string | null;
  createdAt: number;
  updatedAt: number;
  /** Set by expireSilence (or the CR's deletion): the silence ends then, whatever endsAt said. */
  expiredAt: number | null;
}
