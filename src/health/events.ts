/**
 * Builders of the spec's health events (exact field sets per type; `validateEvent` accepts what they return).
 * - issuer (Issuer and ClusterIssuer; a ClusterIssuer's namespace is ''): clusterId, clusterName, issuerName,
 *   namespace, resourceId, statusMessage, statusReason, statusTransition; `.active` adds unhealthyDuration.
 * - certificate: clusterName, clusterId, certificateName, namespace, issuerName, statusMessage,
 *   unhealthyDuration, statusReason, statusTransition, subject, SANs; `.active` adds resourceId.
 */
import type { EventType, InternalEvent } from '../events/families.js';
import type {
  CertificateResourceActiveData,
  CertificateResourceNotReadyData,
  IssuerActiveData,
  IssuerNotReadyData,
} from '../events/types.js';
import type { ResourceIdentity } from './observe.js';

export interface ClusterIdentity {
  /** UUID */
  id: string;
  name: string;
}

/** `<h>h<m>m<s>s` with fractional seconds (milliseconds, trailing zeros dropped), e.g. `0h5m3.25s`, `26h0m0s`. */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const sMs = total % 60_000;
  const whole = Math.floor(sMs / 1000);
  const frac = sMs % 1000;
  const s = frac ? `${whole}.${String(frac).padStart(3, '0').replace(/0+$/, '')}` : String(whole);
  return `${h}h${m}m${s}s`;
}

/** ISO 8601 in UTC with `Z`; whole seconds are written without a fraction, like Kubernetes timestamps. */
export function isoUtc(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

export interface HealthStatusFields {
  statusReason: string;
  statusMessage: string;
  statusTransition: string;
  unhealthyDuration: string;
}

export function healthEventType(kind: ResourceIdentity['kind'], state: 'notready' | 'active'): EventType {
  return kind === 'Certificate' ? `evt.healthstatus.certmgr-certificate-resource.${state}` : `evt.healthstatus.certmgr-issuer.${state}`;
}

/** The internal event for a resource's health change. */
export function healthEvent(state: 'notready' | 'active', id: ResourceIdentity, cluster: ClusterIdentity, f: HealthStatusFields): InternalEvent {
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
    if (state === 'notready') return { type, data: { ...data } };
    const active: CertificateResourceActiveData = { ...data, resourceId: id.uid };
    return { type, data: { ...active } };
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
  if (state === 'notready') return { type, data: { ...data } };
  const active: IssuerActiveData = { ...data, unhealthyDuration: f.unhealthyDuration };
  return { type, data: { ...active } };
}
