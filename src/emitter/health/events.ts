/**
 * Builders of the spec's health events (exact field sets per type; `validateEvent` accepts what they return).
 * - issuer (Issuer and ClusterIssuer; a ClusterIssuer's namespace is ''): clusterId, clusterName, issuerName,
 *   namespace, resourceId, statusMessage, statusReason, statusTransition; `.active` adds unhealthyDuration.
 * - certificate: clusterName, clusterId, certificateName, namespace, issuerName, statusMessage,
 *   unhealthyDuration, statusReason, statusTransition, subject, SANs; `.active` adds resourceId.
 * Every event goes through sanitizeEvent (src/events/sanitize.ts): whatever a cluster object holds, the event
 * fits the schema's limits and text rules, so an alert is never refused (and lost) for its content.
 */
import type { EventType, InternalEvent } from '../../events/families.js';
import type {
  CertificateResourceActiveData,
  CertificateResourceNotReadyData,
  IssuerActiveData,
  IssuerNotReadyData,
} from '../../events/types.js';
import { sanitizeEvent } from '../../events/sanitize.js';
import { MAX_DURATION_HOUR_DIGITS } from '../../validation/formats.js';
import type { ResourceIdentity } from './observe.js';

export interface ClusterIdentity {
  /** UUID */
  id: string;
  name: string;
}

/** The longest duration the format takes (hours have at most 6 digits): 999999h59m59.999s, about 114 years. */
const MAX_DURATION_MS = (10 ** MAX_DURATION_HOUR_DIGITS - 1) * 3_600_000 + 3_599_999;

/**
 * `<h>h<m>m<s>s` with fractional seconds (milliseconds, trailing zeros dropped), e.g. `0h5m3.25s`, `26h0m0s`.
 * Capped at MAX_DURATION_MS (a lastTransitionTime in year 0001 would otherwise give 8 hour digits).
 */
export function unhealthyDurationOf(ms: number): string {
  const total = Math.min(MAX_DURATION_MS, Math.max(0, Math.round(ms)));
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const sMs = total % 60_000;
  const whole = Math.floor(sMs / 1000);
  const frac = sMs % 1000;
  const s = frac ? `${whole}.${String(frac).padStart(3, '0').replace(/0+$/, '')}` : String(whole);
  return `${h}h${m}m${s}s`;
}

/** The timestamps the spec's format takes: years 0001 to 9999 (toISOString writes `+010000-…` past them). */
export const MIN_TIMESTAMP_MS = Date.parse('0001-01-01T00:00:00Z');
export const MAX_TIMESTAMP_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * ISO 8601 in UTC with `Z`; whole seconds are written without a fraction, like Kubernetes timestamps.
 * Clamped to years 0001-9999 (a cluster object may carry any lastTransitionTime).
 */
export function isoUtc(ms: number): string {
  const t = Number.isFinite(ms) ? Math.min(MAX_TIMESTAMP_MS, Math.max(MIN_TIMESTAMP_MS, ms)) : MIN_TIMESTAMP_MS;
  return new Date(t).toISOString().replace('.000Z', 'Z');
}

export interface HealthStatusFields {
  statusReason: string;
  statusMessage: string;
  statusTransition: string;
  unhealthyDuration: string;
}

function healthEventType(kind: ResourceIdentity['kind'], state: 'notready' | 'active'): EventType {
  return kind === 'Certificate' ? `evt.healthstatus.certmgr-certificate-resource.${state}` : `evt.healthstatus.certmgr-issuer.${state}`;
}

/** The internal event for a resource's health change. */
export function healthEvent(
  state: 'notready' | 'active',
  id: ResourceIdentity,
  cluster: ClusterIdentity,
  f: HealthStatusFields,
): InternalEvent {
  const type = healthEventType(id.kind, state);
  if (id.kind === 'Certificate') {
    const data: CertificateResourceNotReadyData = {
      clusterName: cluster.name,
      clusterId: cluster.id,
      certificateName: id.name,
      namespace: id.namespace,
      issuerName: id.issuerName ?? '',
      statusMessage: f.statusMessage,
      unhealthyDuration: f.unhealthyDuration,
      statusReason: f.statusReason,
      statusTransition: f.statusTransition,
      subject: id.subject ?? { commonName: '', countries: [], localities: [], organizationalUnits: [], organizations: [], provinces: [] },
      SANs: id.SANs ?? {},
    };
    if (state === 'notready') return sanitizeEvent({ type, data: { ...data } });
    const active: CertificateResourceActiveData = { ...data, resourceId: id.uid };
    return sanitizeEvent({ type, data: { ...active } });
  }
  const data: IssuerNotReadyData = {
    clusterId: cluster.id,
    clusterName: cluster.name,
    issuerName: id.name,
    namespace: id.namespace,
    resourceId: id.uid,
    statusMessage: f.statusMessage,
    statusReason: f.statusReason,
    statusTransition: f.statusTransition,
  };
  if (state === 'notready') return sanitizeEvent({ type, data: { ...data } });
  const active: IssuerActiveData = { ...data, unhealthyDuration: f.unhealthyDuration };
  return sanitizeEvent({ type, data: { ...active } });
}
