/** NotificationRouter: binds an event type, an optional CEL filter and a provider (a router in the service). */
import { EVENT_TYPE_IDS } from '../events/families.js';
import {
  ageColumn,
  conditionsSchema,
  localObjectRefSchema,
  messageColumn,
  observedGenerationSchema,
  readyColumn,
  reasonColumn,
  type CustomResource,
  type KindDef,
} from './meta.js';
import { defineSchema, type Infer } from './schema.js';
import { INTERVAL_PATTERN } from '../validation/interval.js';

/** Mirrors the service's limit; the service compiles the filter (errors come back with line:column). */
const FILTER_MAX_LENGTH = 2000;

export const routerSpecSchema = defineSchema({
  type: 'object',
  required: ['eventTypeId', 'providerRef'],
  properties: {
    eventTypeId: { type: 'string', enum: EVENT_TYPE_IDS, description: 'The event family this router receives.' },
    filter: {
      type: 'string',
      maxLength: FILTER_MAX_LENGTH,
      description: "CEL over `type` and `data`, e.g. type.endsWith('.notready'). Empty or omitted: every event of the family.",
    },
    providerRef: { ...localObjectRefSchema, description: 'The NotificationProvider (same namespace) that receives the events.' },
    displayName: {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description: 'Name of the router in the service. Default: <namespace>/<name>.',
    },
    enabled: { type: 'boolean', default: true },
    templateRef: {
      ...localObjectRefSchema,
      description:
        'The NotificationTemplate (same namespace) whose texts this router sends (docs/templates.md). Omitted: the default messages.',
    },
    groupBy: {
      type: 'array',
      maxItems: 8,
      items: { type: 'string', minLength: 1, maxLength: 256 },
      description:
        'Grouping (docs/signal.md): event fields whose values form a group, e.g. [data.clusterId, data.issuerName]. One notification per group instead of one per event. Omitted: no grouping.',
    },
    groupWait: {
      type: 'string',
      pattern: INTERVAL_PATTERN,
      description: 'How long a new group collects events before its first notification (0s to 1h; default 30s).',
    },
    groupInterval: {
      type: 'string',
      pattern: INTERVAL_PATTERN,
      description: 'At most one update of a group per this interval (1s to 24h; default 5m).',
    },
    repeatInterval: {
      type: 'string',
      pattern: INTERVAL_PATTERN,
      description: 'Reminders: while a resource or group stays unhealthy, notify again at this interval (1m to 90d). Omitted: none.',
    },
    holdUnderIssuer: {
      type: 'boolean',
      description:
        'Certificate health routers (docs/grouping.md): certificates failing while their Issuer or ClusterIssuer is not ready are held under one notification per issuer outage, released as one summary when it recovers. Omitted: false (one notification per event).',
    },
  },
});

export const routerStatusSchema = defineSchema({
  type: 'object',
  properties: {
    observedGeneration: observedGenerationSchema,
    conditions: conditionsSchema,
    routerId: { type: 'string', description: 'Id of the router in the service.' },
    integrationId: { type: 'string', description: 'Id of the integration the router sends to.' },
  },
});

export type NotificationRouterSpec = Infer<typeof routerSpecSchema>;
export type NotificationRouterStatus = Infer<typeof routerStatusSchema>;
export type NotificationRouter = CustomResource<NotificationRouterSpec, NotificationRouterStatus>;

export const NotificationRouterKind: KindDef = {
  kind: 'NotificationRouter',
  plural: 'notificationrouters',
  singular: 'notificationrouter',
  listKind: 'NotificationRouterList',
  shortNames: ['nrouter'],
  scope: 'Namespaced',
  description: 'Routes one event family, optionally filtered with CEL, to a NotificationProvider.',
  specSchema: routerSpecSchema,
  statusSchema: routerStatusSchema,
  printerColumns: [
    readyColumn,
    { name: 'Event Type', type: 'string', jsonPath: '.spec.eventTypeId' },
    { name: 'Provider', type: 'string', jsonPath: '.spec.providerRef.name' },
    { name: 'Enabled', type: 'boolean', jsonPath: '.spec.enabled' },
    { name: 'Filter', type: 'string', jsonPath: '.spec.filter', priority: 1 },
    { name: 'Router', type: 'string', jsonPath: '.status.routerId', priority: 1 },
    reasonColumn,
    messageColumn,
    ageColumn,
  ],
};
