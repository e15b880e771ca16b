/**
 * TypeScript shapes of each concrete event type's `data` (spec, "Events").
 * The JSON Schemas in schemas.ts are typed against these, so the two cannot drift apart.
 */

/** `evt.healthstatus.certmgr-issuer.notready` */
export interface IssuerNotReadyData {
  clusterId: string;
  clusterName: string;
  issuerName: string;
  namespace: string;
  resourceId: string;
  statusMessage: string;
  statusReason: string;
  statusTransition: string;
  /** hub extension (docs/annotations.md): the issuer's `notify.certmgr.io/runbook-url` */
  runbookUrl?: string;
}

/** `evt.healthstatus.certmgr-issuer.active`: the unhealthy fields plus how long it was unhealthy. */
export interface IssuerActiveData extends IssuerNotReadyData {
  unhealthyDuration: string;
}

/** Subject of the certificate a cert-manager Certificate resource describes. */
export interface CertificateSubject {
  commonName: string;
  countries: string[];
  localities: string[];
  organizationalUnits: string[];
  organizations: string[];
  provinces: string[];
}

/** Subject alternative names; the object is empty when there are no names. */
export interface CertificateSans {
  'DNS Names'?: string[];
}

/** `evt.healthstatus.certmgr-certificate-resource.notready` (no `resourceId`). */
export interface CertificateResourceNotReadyData {
  clusterName: string;
  clusterId: string;
  certificateName: string;
  namespace: string;
  issuerName: string;
  statusMessage: string;
  unhealthyDuration: string;
  statusReason: string;
  statusTransition: string;
  subject: CertificateSubject;
  SANs: CertificateSans;
  /** hub extension (docs/annotations.md): the Certificate's (or its Secret's) `notify.certmgr.io/runbook-url` */
  runbookUrl?: string;
  // Hub extension (docs/emitter.md "Root cause"): `.notready` only, when the emitter found the deepest failure.
  /** its class: dns-propagation, http-self-check, rate-limited, credentials, ca-error, approval-denied or pending */
  rootCause?: string;
  /** the next step for that class */
  rootCauseHint?: string;
  /** the deepest failure in the words of whoever failed (a Challenge's, Order's or CertificateRequest's reason) */
  rootCauseMessage?: string;
  /** the object that says it, e.g. "Challenge api/api-tls-1-2976254157-1825524577 (HTTP-01 api.example.com)" */
  rootCauseResource?: string;
}

/** `evt.healthstatus.certmgr-certificate-resource.active` */
export interface CertificateResourceActiveData extends CertificateResourceNotReadyData {
  resourceId: string;
}

/** `evt.policy.expiringcertificates.failed` */
export interface ExpiringCertificateData {
  name: string;
  applicationIds: string[];
  message: string;
  notificationDate: string;
  threshold: number;
  ruleId: number;
  // Hub extension (docs/expiry.md "Event fields"): set by the hub's expiry scan, absent on client-sent events.
  /** the rule's share of the certificate's lifetime (`notify.certmgr.io/expiry-thresholds: "33%"`): 1..99 */
  thresholdPercent?: number;
  /** the certificate's `notify.certmgr.io/runbook-url` */
  runbookUrl?: string;
  /** the first place's Certificate (else Secret) name, namespace and cluster name */
  certificateName?: string;
  namespace?: string;
  clusterName?: string;
  /** RFC 3339 UTC */
  notAfter?: string;
  /** whole days until notAfter, rounded down (src/model/days-left.ts): 0 less than 24 h left, negative once expired */
  daysUntilExpiry?: number;
  dnsNames?: string[];
  /** rule 900 (docs/expiry.md "CA expiring before its certificates"): how many certificates the CA signed outlive it */
  outlivingCount?: number;
  /** the first 10 of them, `cluster/namespace/name` (the Certificate's name, else the Secret's) */
  outlivingCertificates?: string[];
}

/**
 * `evt.healthstatus.certmgr-agent.notready` (hub extension, docs/inventory.md "Silent clusters as events"): the
 * cluster's agent has not reported for clusterSilenceAfter (--limits-file). Field names follow the spec's health events.
 */
export interface AgentNotReadyData {
  clusterId: string;
  clusterName: string;
  /** the agent's last report, RFC 3339 UTC */
  lastSeenAt: string;
  /** when the cluster became silent (lastSeenAt + the silence period) or reports again */
  statusTransition: string;
  statusMessage: string;
  /** AgentSilent (.notready) or AgentReporting (.active) */
  statusReason: string;
  agentVersion: string;
}

/** `evt.healthstatus.certmgr-agent.active`: the agent reports again; how long the cluster was silent. */
export interface AgentActiveData extends AgentNotReadyData {
  unhealthyDuration: string;
}

/** The data shape of each concrete event type. */
export interface EventDataByType {
  'evt.healthstatus.certmgr-issuer.notready': IssuerNotReadyData;
  'evt.healthstatus.certmgr-issuer.active': IssuerActiveData;
  'evt.healthstatus.certmgr-certificate-resource.notready': CertificateResourceNotReadyData;
  'evt.healthstatus.certmgr-certificate-resource.active': CertificateResourceActiveData;
  'evt.policy.expiringcertificates.failed': ExpiringCertificateData;
  'evt.healthstatus.certmgr-agent.notready': AgentNotReadyData;
  'evt.healthstatus.certmgr-agent.active': AgentActiveData;
}
