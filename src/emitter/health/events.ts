/**
 * Builders of the spec's health events (exact field sets per type; `validateEvent` accepts what they return).
 * - issuer (Issuer and ClusterIssuer; a ClusterIssuer's namespace is ''): clusterId, clusterName, issuerName,
 *   namespace, resourceId, statusMessage, statusReason, statusTransition; `.active` adds unhealthyDuration.
 * - certificate (Certificates, and TLS Secrets no Certificate manages: certificateName is the Secret's name,
 *   issuerName ''): clusterName, clusterId, certificateName, namespace, issuerName, statusMessage,
 *   unhealthyDuration, statusReason, statusTransition, subject, SANs; `.active` adds resourceId.
 * - both: runbookUrl when the resource has a `notify.certmgr.io/runbook-url` (hub extension, docs/annotations.md).
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
import type { ResourceIdentity } from './observe.js';

export interface ClusterIdentity {
  /** UUID */
  id: string;
  name: string;
}

export interface HealthStatusFields {
  statusReason: string;
  statusMessage: string;
  statusTransition: string;
  unhealthyDuration: string;
}

const isCertificateFamily = (kind: ResourceIdentity['kind']): boolean => kind === 'Certificate' || kind === 'Secret';

function healthEventType(kind: ResourceIdentity['kind'], state: 'notready' | 'active'): EventType {
  return isCertificateFamily(kind) ? `evt.healthstatus.certmgr-certificate-resource.${state}` : `evt.healthstatus.certmgr-issuer.${state}`;
}

/** The internal event for a resource's health change. */
export function healthEvent(
  state: 'notready' | 'active',
  id: ResourceIdentity,
  cluster: ClusterIdentity,
  f: HealthStatusFields,
): InternalEvent {
  const type = healthEventType(id.kind, state);
  if (isCertificateFamily(id.kind)) {
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
    // exactly the spec's fields: runbookUrl only with a value
    if (id.runbookUrl) data.runbookUrl = id.runbookUrl;
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
  if (id.runbookUrl) data.runbookUrl = id.runbookUrl;
  if (state === 'notready') return sanitizeEvent({ type, data: { ...data } });
  const active: IssuerActiveData = { ...data, unhealthyDuration: f.unhealthyDuration };
  return sanitizeEvent({ type, data: { ...active } });
}
