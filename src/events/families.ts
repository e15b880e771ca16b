/**
 * The event families: event type identifiers (API), CEL `type` prefixes and concrete types.
 * One registry; everything else (CEL validation, ingestion, routing, GraphQL eventTypes, the router CRD's enum)
 * reads it. The spec's three families are exact; the hub's own family (`origin: 'hub'`, docs/inventory.md
 * "Silent clusters as events") is added after them and only ever emitted by the hub itself.
 */
export const EVENT_TYPE_IDS = [
  'certmgr-issuer-health-notification-config',
  'certmgr-cert-resource-health-notification-config',
  'cert-expiry-ext-notification-config',
  // hub extension (not in the spec): an agent that stopped reporting its cluster's inventory
  'certmgr-agent-health-notification-config',
] as const;
export type EventTypeId = (typeof EVENT_TYPE_IDS)[number];

export const EVENT_TYPES = [
  'evt.healthstatus.certmgr-issuer.notready',
  'evt.healthstatus.certmgr-issuer.active',
  'evt.healthstatus.certmgr-certificate-resource.notready',
  'evt.healthstatus.certmgr-certificate-resource.active',
  'evt.policy.expiringcertificates.failed',
  'evt.healthstatus.certmgr-agent.notready',
  'evt.healthstatus.certmgr-agent.active',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface EventFamily {
  eventTypeId: EventTypeId;
  displayName: string;
  /** The `type` prefix used in CEL. */
  typePrefix: string;
  types: readonly EventType[];
  /** spec: a family of the spec, accepted from clients (POST /v1/events); hub: emitted by the hub only. */
  origin: 'spec' | 'hub';
}

export const EVENT_FAMILIES: readonly EventFamily[] = [
  {
    eventTypeId: 'certmgr-issuer-health-notification-config',
    displayName: 'Issuer resource health',
    typePrefix: 'evt.healthstatus.certmgr-issuer',
    types: ['evt.healthstatus.certmgr-issuer.notready', 'evt.healthstatus.certmgr-issuer.active'],
    origin: 'spec',
  },
  {
    eventTypeId: 'certmgr-cert-resource-health-notification-config',
    displayName: 'Certificate resource health',
    typePrefix: 'evt.healthstatus.certmgr-certificate-resource',
    types: ['evt.healthstatus.certmgr-certificate-resource.notready', 'evt.healthstatus.certmgr-certificate-resource.active'],
    origin: 'spec',
  },
  {
    eventTypeId: 'cert-expiry-ext-notification-config',
    displayName: 'Certificate expiration',
    typePrefix: 'evt.policy.expiringcertificates',
    types: ['evt.policy.expiringcertificates.failed'],
    origin: 'spec',
  },
  {
    eventTypeId: 'certmgr-agent-health-notification-config',
    displayName: 'Agent reporting (hub extension: a cluster whose agent fell silent)',
    typePrefix: 'evt.healthstatus.certmgr-agent',
    types: ['evt.healthstatus.certmgr-agent.notready', 'evt.healthstatus.certmgr-agent.active'],
    origin: 'hub',
  },
];

export function isEventTypeId(v: unknown): v is EventTypeId {
  return typeof v === 'string' && (EVENT_TYPE_IDS as readonly string[]).includes(v);
}

export function isEventType(v: unknown): v is EventType {
  return typeof v === 'string' && (EVENT_TYPES as readonly string[]).includes(v);
}

export function familyOf(id: EventTypeId): EventFamily {
  const f = EVENT_FAMILIES.find((x) => x.eventTypeId === id);
  if (!f) throw new Error(`unknown event type identifier ${id}`);
  return f;
}

export function familyOfType(type: EventType): EventFamily {
  const f = EVENT_FAMILIES.find((x) => x.types.includes(type));
  if (!f) throw new Error(`unknown event type ${type}`);
  return f;
}

export interface InternalEvent {
  type: EventType;
  data: Record<string, unknown>;
}
