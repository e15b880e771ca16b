/**
 * API group constants, condition types and reasons, and the schema pieces shared by every kind.
 * Reason constants live next to the API types (they are part of the API: tools match on them).
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { defineSchema, type Infer, type Schema } from './schema.js';

export const GROUP = 'notify.certmgr.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** The operator's finalizer on every object whose deletion must remove a record in the service. */
export const FINALIZER = `${GROUP}/finalizer`;
/** Field manager of the operator's server-side-apply and patch writes. */
export const FIELD_MANAGER = 'certmgr-notify-operator';
/** Category for `kubectl get certmgr-notify`. */
export const CATEGORY = 'certmgr-notify';

export const ConditionType = {
  Ready: 'Ready',
  Reconciling: 'Reconciling',
  Stalled: 'Stalled',
} as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

/** Reasons the operator puts on conditions (and on the Kubernetes Events of transitions). */
export const Reason = {
  /** Ready=True: the record in the service matches the spec. */
  Reconciled: 'Reconciled',
  /** Reconciling=True: work in progress (first reconcile, spec change). */
  Progressing: 'Progressing',
  /** Stalled: the spec fails the schema (e.g. a provider type without its settings block). */
  InvalidSpec: 'InvalidSpec',
  /** Stalled: the router's CEL filter does not compile; the message carries the error and line:column. */
  InvalidFilter: 'InvalidFilter',
  /** The router's providerRef names no NotificationProvider in the namespace (or it is being deleted). */
  ProviderNotFound: 'ProviderNotFound',
  /** The referenced provider exists but is not Ready (no integration in the service yet). */
  ProviderNotReady: 'ProviderNotReady',
  /** The router's templateRef names no NotificationTemplate in the namespace (or it is being deleted). */
  TemplateNotFound: 'TemplateNotFound',
  /** The referenced template exists but is not Ready (no template in the service yet). */
  TemplateNotReady: 'TemplateNotReady',
  /** Stalled: a NotificationTemplate part does not compile; the message names the part and its line:column. */
  InvalidTemplate: 'InvalidTemplate',
  /** A secretRef names a missing Secret or a key the Secret does not have. */
  SecretNotFound: 'SecretNotFound',
  /**
   * Stalled: the service rejected a value taken from a Secret (not an http(s) URL, refused by the egress
   * policy, …); the message names the spec field and the Secret, never the value. Retried when the Secret
   * changes (watched) and on the periodic resync, not with backoff.
   */
  InvalidSecret: 'InvalidSecret',
  /**
   * Stalled: the service refused a create because the company holds its quota of routers or integrations
   * (`QUOTA_EXCEEDED`); the message names the limit and the count. No retry with backoff: the periodic
   * resync (and any spec change) tries again, so the object recovers once records are deleted.
   */
  QuotaExceeded: 'QuotaExceeded',
  /**
   * Stalled: an Email provider, but the service has no SMTP server configured (`--smtp-url` unset:
   * `SMTP_NOT_CONFIGURED`), so every email would be dead-lettered. The periodic resync tries again.
   */
  SmtpNotConfigured: 'SmtpNotConfigured',
  /** The service API is unreachable or failed (5xx, network); retried with backoff. */
  ServiceUnavailable: 'ServiceUnavailable',
  /** The service rejected the request for another reason; retried with backoff. */
  ServiceError: 'ServiceError',
  /**
   * Stalled: the company's monitoring configuration is managed by another MonitoringConfig (another cluster) or
   * was taken over through the API; the message names the manager and the drift. Not reverted; the periodic
   * resync looks again.
   */
  ManagedElsewhere: 'ManagedElsewhere',
  /** MonitoringConfig not named `default`: not applied. */
  Ignored: 'Ignored',
  /** Deletion waits: routers outside the operator still use this provider's integration. */
  DeletionBlocked: 'DeletionBlocked',
  /** An unexpected error; retried with backoff. */
  ReconcileError: 'ReconcileError',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

export const conditionSchema = defineSchema({
  type: 'object',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: {
    type: { type: 'string', maxLength: 316, description: 'Ready, Reconciling or Stalled.' },
    status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    observedGeneration: { type: 'integer', minimum: 0, description: 'The metadata.generation this condition was set for.' },
    lastTransitionTime: { type: 'string', format: 'date-time', description: 'When status last changed.' },
    reason: { type: 'string', maxLength: 1024, description: 'CamelCase reason, e.g. InvalidFilter, ProviderNotFound.' },
    message: { type: 'string', maxLength: 32768, description: 'Human-readable details. Never carries secret values.' },
  },
});
export type Condition = Infer<typeof conditionSchema>;

export const conditionsSchema = defineSchema({
  type: 'array',
  description: 'kstatus conditions: Ready, Reconciling, Stalled.',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  items: conditionSchema,
});

export const observedGenerationSchema = defineSchema({
  type: 'integer',
  description: 'The metadata.generation the status describes (set on success or a terminal failure).',
});

export const localObjectRefSchema = defineSchema({
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 253, description: 'Name of an object in the same namespace.' },
  },
});

export const secretKeyRefSchema = defineSchema({
  type: 'object',
  required: ['name', 'key'],
  description: 'A key of a Secret in the same namespace as the referring object.',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 253, description: 'Secret name (same namespace).' },
    key: { type: 'string', minLength: 1, maxLength: 253, description: 'Key in the Secret data.' },
  },
});
export type SecretKeyRef = Infer<typeof secretKeyRefSchema>;

/** A printer column of a CRD version (wire form). */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export const readyColumn: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  description: 'Ready condition status',
};
export const reasonColumn: PrinterColumn = {
  name: 'Reason',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  description: 'Ready condition reason',
  priority: 1,
};
export const messageColumn: PrinterColumn = {
  name: 'Message',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].message',
  priority: 1,
};
export const ageColumn: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

/** Everything the generator, the validators and the controllers need to know about one kind. */
export interface KindDef {
  kind: string;
  plural: string;
  singular: string;
  listKind: string;
  shortNames: string[];
  scope: 'Namespaced' | 'Cluster';
  description: string;
  specSchema: Schema;
  statusSchema: Schema;
  printerColumns: PrinterColumn[];
}

/** `<plural>.<group>`, the CRD name. */
export function crdName(k: Pick<KindDef, 'plural'>): string {
  return `${k.plural}.${GROUP}`;
}

/** Object metadata as client-node types it (timestamps are Date after list, strings after watch). */
export type ObjectMeta = V1ObjectMeta;

export interface CustomResource<Spec, Status> {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: Spec;
  status?: Status;
}
