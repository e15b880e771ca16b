/**
 * Pure reading of cert-manager objects: what the Ready condition says about an Issuer, ClusterIssuer or
 * Certificate right now, as an Observation that `diffReady` (diff.ts) turns into state and events.
 *
 * Rules (see docs/emitter.md):
 * - Ready=True is healthy, Ready=False unhealthy, Ready=Unknown or no Ready condition "unknown" (unhealthy
 *   after its own, longer grace period; cert-manager's own metric treats a missing condition as Unknown).
 * - A condition whose observedGeneration is lower than metadata.generation is stale: it describes an older
 *   spec, so it is held (neither an alert nor a recovery).
 * - A Certificate whose status.notAfter is in the past is unhealthy (reason Expired) even when Ready=True:
 *   cert-manager does not re-check readiness at notAfter, so Ready=True can be stale after expiry.
 * - A Certificate being issued for the first time or re-issued after a spec change (Issuing=True and no
 *   failed attempt yet) is "issuing": routine issuance gets a longer grace period than a failure.
 * - A Certificate that is Ready=True (and not expired) is unhealthy when its renewal is failing or overdue
 *   (renewal.ts): cert-manager keeps Ready=True while the current certificate is valid.
 * - A Certificate that is Ready=True, not expired and renewing fine is unhealthy when an endpoint configured with
 *   its Secret serves another certificate or none (serving.ts): Ready says nothing about what is served.
 */
import type { CertificateSans, CertificateSubject } from '../../events/types.js';
import type { CertManagerCondition, CertManagerObject } from './condition.js';
import { DEFAULT_RENEWAL_OVERDUE_GRACE_MS, renewalHealth, rfc1123 } from './renewal.js';
import type { EndpointVerdict } from '../serving/types.js';
import { CERTIFICATE_NAME_ANNOTATION, type TlsSecretFacts } from '../inventory/facts.js';
import { SERVING_OK_REASON, managedSecretMessage, secretResourceId, servingOkMessage, servingProblem, subjectOfDn } from './serving.js';

/** The cert-manager kinds watched (informers, metrics). */
export const HEALTH_KINDS = ['Issuer', 'ClusterIssuer', 'Certificate'] as const;
export type HealthKind = (typeof HEALTH_KINDS)[number];
/**
 * What a health event can be about: the cert-manager kinds, and a TLS Secret that no Certificate manages whose
 * endpoints serve another certificate (serving.ts; certificate family). Keys `Secret/<namespace>/<name>`.
 */
export const HEALTH_RESOURCE_KINDS = [...HEALTH_KINDS, 'Secret'] as const;
export type HealthResourceKind = (typeof HEALTH_RESOURCE_KINDS)[number];

export type { CertManagerCondition, CertManagerObject };

/** Who an event is about; kept in the durable state so a deleted resource can still be resolved. */
export interface ResourceIdentity {
  kind: HealthResourceKind;
  /** '' for ClusterIssuers */
  namespace: string;
  name: string;
  uid: string;
  /** Certificates: spec.issuerRef.name ('' for a Secret) */
  issuerName?: string;
  subject?: CertificateSubject | undefined;
  SANs?: CertificateSans;
  /** `notify.certmgr.io/runbook-url` (docs/annotations.md), carried to every health event as data.runbookUrl */
  runbookUrl?: string;
}

export type ReadyStatus = 'True' | 'False' | 'Unknown';

export interface Observation {
  id: ResourceIdentity;
  status: ReadyStatus;
  reason: string;
  message: string;
  /** ms epoch: when the status last flipped (lastTransitionTime; notAfter for an expiry; else creation) */
  since?: number | undefined;
  /** the Ready condition describes an older generation of the spec */
  stale: boolean;
  /** Certificate issuance in progress without a failure yet (Issuing=True, no failedIssuanceAttempts) */
  issuing: boolean;
  /** Certificates: status.notAfter (ms epoch) */
  notAfter?: number;
  /** Certificates: when the renewal becomes overdue if nothing changes (ms epoch, still ahead) */
  renewalOverdueAt?: number;
  /** `notify.certmgr.io/ignore` (docs/annotations.md): no health events; an open episode is resolved once */
  ignored?: boolean;
  /** healthy with endpoint verdicts: what they serve (the message of the `.active` that ends a serving episode) */
  servingOk?: string;
}

/** What the resource's annotations ask for (src/emitter/policy.ts). */
export interface ObservedPolicy {
  ignore: boolean;
  runbookUrl?: string;
}

export const NO_CONDITION_REASON = 'NoReadyCondition';
const NO_CONDITION_MESSAGE = 'No Ready condition has been reported (is cert-manager running?)';
const EXPIRED_REASON = 'Expired';

/** ms epoch of an RFC 3339 string or Date (client-node may give either), undefined when absent/invalid. */
function toMillis(v: string | Date | undefined | null): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const ms = v instanceof Date ? v.getTime() : Date.parse(v);
  return Number.isFinite(ms) ? ms : undefined;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** subject of the event from the Certificate spec (commonName '' when unset). */
function subjectOf(obj: CertManagerObject): CertificateSubject {
  const s = obj.spec?.subject ?? {};
  return {
    commonName: typeof obj.spec?.commonName === 'string' ? obj.spec.commonName : '',
    countries: strings(s.countries),
    localities: strings(s.localities),
    organizationalUnits: strings(s.organizationalUnits),
    organizations: strings(s.organizations),
    provinces: strings(s.provinces),
  };
}

/** SANs of the event: `{ 'DNS Names': [...] }`, or `{}` when the Certificate has no DNS names. */
function sansOf(obj: CertManagerObject): CertificateSans {
  const dns = strings(obj.spec?.dnsNames);
  return dns.length ? { 'DNS Names': dns } : {};
}

function identityOf(kind: HealthKind, obj: CertManagerObject): ResourceIdentity {
  const id: ResourceIdentity = {
    kind,
    namespace: kind === 'ClusterIssuer' ? '' : (obj.metadata?.namespace ?? ''),
    name: obj.metadata?.name ?? '',
    uid: obj.metadata?.uid ?? '',
  };
  if (kind === 'Certificate') {
    id.issuerName = obj.spec?.issuerRef?.name ?? '';
    id.subject = subjectOf(obj);
    id.SANs = sansOf(obj);
  }
  return id;
}

function condition(obj: CertManagerObject, type: string): CertManagerCondition | undefined {
  return (obj.status?.conditions ?? []).find((c) => c?.type === type);
}

function asStatus(s: string | undefined): ReadyStatus {
  return s === 'True' || s === 'False' ? s : 'Unknown';
}

/** The rules' settings observe() needs (HealthOptions carries them). */
export interface ObserveOptions {
  /** a Certificate whose renewalTime passed this long ago without a new certificate is unhealthy; default 1 h */
  renewalOverdueGraceMs?: number | undefined;
}

/**
 * What the object says about its health at `now`, under its annotations' policy. `serving`: the verdicts on the
 * endpoints configured with a Certificate's Secret (undefined: not known).
 */
export function observe(
  kind: HealthKind,
  obj: CertManagerObject,
  now: number,
  policy?: ObservedPolicy,
  opts: ObserveOptions = {},
  serving?: readonly EndpointVerdict[],
): Observation {
  const id = identityOf(kind, obj);
  if (policy?.runbookUrl) id.runbookUrl = policy.runbookUrl;
  const ready = condition(obj, 'Ready');
  const generation = obj.metadata?.generation;
  const stale = ready?.observedGeneration !== undefined && generation !== undefined && ready.observedGeneration < generation;
  const created = toMillis(obj.metadata?.creationTimestamp as string | Date | undefined);
  let obs: Observation = ready
    ? {
        id,
        status: asStatus(ready.status),
        reason: ready.reason ?? '',
        message: ready.message ?? '',
        since: toMillis(ready.lastTransitionTime) ?? created,
        stale,
        issuing: false,
      }
    : { id, status: 'Unknown', reason: NO_CONDITION_REASON, message: NO_CONDITION_MESSAGE, since: created, stale: false, issuing: false };
  if (kind === 'Certificate') {
    const notAfter = toMillis(obj.status?.notAfter);
    if (notAfter !== undefined) obs.notAfter = notAfter;
    const issuing = condition(obj, 'Issuing');
    obs.issuing = obs.status !== 'True' && issuing?.status === 'True' && !(obj.status?.failedIssuanceAttempts ?? 0);
    // expired is a fact of our own clock, whatever a (possibly stale) condition says
    if (notAfter !== undefined && notAfter <= now && obs.status !== 'False') {
      obs = {
        ...obs,
        status: 'False',
        reason: EXPIRED_REASON,
        message: `Certificate expired on ${rfc1123(notAfter)}`,
        since: notAfter,
        stale: false,
        issuing: false,
      };
    } else if (obs.status === 'True' && !obs.stale) {
      // Ready=True says the current certificate is fine; its renewal may not be
      const r = renewalHealth(
        {
          issuing,
          failedIssuanceAttempts: obj.status?.failedIssuanceAttempts,
          lastFailureTime: toMillis(obj.status?.lastFailureTime),
          renewalTime: toMillis(obj.status?.renewalTime),
          notAfter,
        },
        now,
        opts.renewalOverdueGraceMs ?? DEFAULT_RENEWAL_OVERDUE_GRACE_MS,
      );
      const secret = { namespace: id.namespace, name: obj.spec?.secretName ?? '' };
      const served = r.healthy && serving ? servingProblem(secret, serving) : undefined;
      if (!r.healthy) obs = { ...obs, status: 'False', reason: r.reason, message: r.message, since: r.since, issuing: false };
      else if (served)
        obs = { ...obs, status: 'False', reason: served.reason, message: served.message, since: served.since, issuing: false };
      else {
        if (r.overdueAt !== undefined) obs.renewalOverdueAt = r.overdueAt;
        if (serving) obs.servingOk = servingOkMessage(secret, serving);
      }
    }
  }
  if (policy?.ignore) obs.ignored = true;
  return obs;
}

/**
 * What a TLS Secret that no Certificate manages says about its endpoints at `now`. Managed by a Certificate (its
 * `cert-manager.io/certificate-name` annotation), the Secret is healthy here: that Certificate's events carry its
 * serving problems.
 */
export function observeSecret(secret: TlsSecretFacts, verdicts: readonly EndpointVerdict[], policy?: ObservedPolicy): Observation {
  const { namespace, name } = secret.metadata;
  const chain = secret.chain;
  const id: ResourceIdentity = {
    kind: 'Secret',
    namespace,
    name,
    uid: secret.metadata.uid || secretResourceId(namespace, name),
    issuerName: '',
    subject: subjectOfDn(chain?.subject ?? '', chain?.commonName),
    SANs: (chain?.dnsNames.length ? { 'DNS Names': [...chain.dnsNames] } : {}) satisfies CertificateSans,
  };
  if (policy?.runbookUrl) id.runbookUrl = policy.runbookUrl;
  const managedBy = secret.metadata.annotations?.[CERTIFICATE_NAME_ANNOTATION];
  const problem = managedBy ? undefined : servingProblem({ namespace, name }, verdicts);
  const obs: Observation = problem
    ? { id, status: 'False', reason: problem.reason, message: problem.message, since: problem.since, stale: false, issuing: false }
    : {
        id,
        status: 'True',
        reason: SERVING_OK_REASON,
        message: managedBy ? managedSecretMessage({ namespace, name }, managedBy) : servingOkMessage({ namespace, name }, verdicts),
        stale: false,
        issuing: false,
      };
  if (policy?.ignore) obs.ignored = true;
  return obs;
}
