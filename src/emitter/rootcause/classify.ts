/**
 * The root cause of an unhealthy Certificate, pure: given the objects cert-manager made for its current issuance
 * (the CertificateRequest, and for ACME issuers its Order and the Order's Challenges), the deepest failure there
 * is, in the words of whoever failed (the CA, the DNS provider, cert-manager's self check), with a class and a
 * next step (docs/emitter.md "Root cause").
 *
 * Deepest first: a denied request; a Challenge's reason (a failed one before a waiting one); the Order's reason;
 * the request's own failure; and when nothing has failed yet, the object that is still waiting (class `pending`).
 * The class is read from the words (a rate limit, a DNS or HTTP-01 problem, refused credentials), else it is
 * `ca-error` for a failure and `pending` for a wait.
 */
import { ROOT_CAUSE_LIMITS, type RootCauseClass } from '../../events/root-cause.js';

export { ROOT_CAUSE_CLASSES, type RootCauseClass } from '../../events/root-cause.js';

/** The next step per class: short, one line, the same in every message. */
export const ROOT_CAUSE_HINTS: Readonly<Record<RootCauseClass, string>> = {
  'dns-propagation':
    "Check that the _acme-challenge TXT record is published at the zone's authoritative nameservers and visible to cert-manager's DNS-01 resolvers.",
  'http-self-check':
    'Check that http://<domain>/.well-known/acme-challenge/ reaches the solver from inside and outside the cluster (DNS record, ingress class, load balancer, no redirect or auth in front).',
  'rate-limited':
    "The CA is rate limiting this account or domain: stop re-creating the Certificate or its Secret and wait for the CA's limit window; use a staging CA for tests.",
  credentials:
    'Check the credentials the issuer or DNS-01 solver uses: the referenced Secret exists in the right namespace and its token or role still has the needed permissions.',
  'ca-error': 'The CA refused or failed the request: read its message, then check the issuer configuration and the CA status.',
  'approval-denied':
    'An approver denied the CertificateRequest: check the approval policy (e.g. approver-policy) against the Certificate spec.',
  pending: 'Issuance is waiting, not failing: if it stays so, look at the Order and Challenges (kubectl describe) and cert-manager logs.',
};

/** Longest deepest-failure text kept, in code points (it goes into statusMessage and its own field). */
export const MAX_ROOT_CAUSE_MESSAGE = ROOT_CAUSE_LIMITS.message;
/** Longest object reference ("Challenge <namespace>/<name> (HTTP-01 <dnsName>)"). */
const MAX_ROOT_CAUSE_RESOURCE = ROOT_CAUSE_LIMITS.resource;

export interface RootCause {
  class: RootCauseClass;
  hint: string;
  /** the deepest failure, one line, at most MAX_ROOT_CAUSE_MESSAGE code points */
  message: string;
  /** which object said it, e.g. "Challenge api/api-tls-1-2976254157-1825524577 (HTTP-01 api.example.com)" */
  resource: string;
}

export interface ConditionFacts {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
}

/** What the classifier reads of a CertificateRequest. */
export interface RequestFacts {
  namespace: string;
  name: string;
  conditions: readonly ConditionFacts[];
}

/** What the classifier reads of an ACME Order (status.state and status.reason). */
export interface OrderFacts {
  namespace: string;
  name: string;
  state?: string | undefined;
  reason?: string | undefined;
}

/** What the classifier reads of an ACME Challenge. */
export interface ChallengeFacts {
  namespace: string;
  name: string;
  /** spec.type: HTTP-01 or DNS-01 */
  type?: string | undefined;
  dnsName?: string | undefined;
  state?: string | undefined;
  reason?: string | undefined;
  presented?: boolean | undefined;
  processing?: boolean | undefined;
}

export interface IssuanceChain {
  request?: RequestFacts;
  order?: OrderFacts;
  challenges?: readonly ChallengeFacts[];
}

/** ACME states after which nothing more happens (cert-manager's acme.IsFailureState, plus expired). */
const FAILED_STATES = new Set(['invalid', 'errored', 'expired']);

const RATE_LIMITED = /rateLimited|rate[- ]limit|too many (certificates|requests|failed authorizations|new orders|registrations)|\b429\b/i;
/** The CA failed to validate a challenge, or cert-manager's own propagation check waits (never a credentials problem). */
const VALIDATION = /urn:ietf:params:acme:error:(unauthorized|connection|dns|incorrectResponse)\b|challenge propagation/i;
const DNS =
  /DNS-01|dns01|not yet propagated|TXT record|authoritative nameservers|NXDOMAIN|SERVFAIL|_acme-challenge|urn:ietf:params:acme:error:dns\b/i;
const HTTP =
  /HTTP-01|http01|self[- ]check|\.well-known\/acme-challenge|wrong status code|Timeout during connect|Invalid response from http/i;
const CREDENTIALS =
  /secret\b.*\bnot found|access ?denied|\bforbidden\b|\b401\b|\b403\b|unauthori[sz]ed|not authorized|invalid (api )?(token|credentials|key)|authentication (failed|error)|permission denied|NoCredentialProviders|InvalidClientTokenId|SignatureDoesNotMatch|expired ?token/i;

/**
 * The class the words point to, if any. A rate limit wins (it is what blocks every retry); the CA failing to
 * validate a challenge (ACME `unauthorized` with a 403) is a DNS or HTTP-01 problem, not credentials; then a refused
 * or missing credential (a DNS provider's API, a Secret); then DNS and HTTP-01 words.
 */
export function classOfMessage(text: string): RootCauseClass | undefined {
  if (RATE_LIMITED.test(text)) return 'rate-limited';
  if (VALIDATION.test(text)) return DNS.test(text) ? 'dns-propagation' : 'http-self-check';
  if (CREDENTIALS.test(text)) return 'credentials';
  if (DNS.test(text)) return 'dns-propagation';
  if (HTTP.test(text)) return 'http-self-check';
  return undefined;
}

const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();
function cut(s: string, max: number): string {
  const cps = [...s];
  return cps.length <= max ? s : `${cps.slice(0, max - 1).join('')}\u2026`;
}

function cause(cls: RootCauseClass, message: string, resource: string): RootCause {
  return {
    class: cls,
    hint: ROOT_CAUSE_HINTS[cls],
    message: cut(oneLine(message), MAX_ROOT_CAUSE_MESSAGE),
    resource: cut(oneLine(resource), MAX_ROOT_CAUSE_RESOURCE),
  };
}

const cond = (r: RequestFacts, type: string): ConditionFacts | undefined => r.conditions.find((c) => c.type === type);
const ref = (kind: string, o: { namespace: string; name: string }): string => `${kind} ${o.namespace}/${o.name}`;

function challengeRef(c: ChallengeFacts): string {
  const what = [c.type, c.dnsName].filter(Boolean).join(' ');
  return `${ref('Challenge', c)}${what ? ` (${what})` : ''}`;
}

/** A failed Challenge first, then one that says why it waits; among equals the first by name (stable). */
function deepestChallenge(challenges: readonly ChallengeFacts[]): ChallengeFacts | undefined {
  const open = challenges.filter((c) => c.state !== 'valid').sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return (
    open.find((c) => FAILED_STATES.has(c.state ?? '') && c.reason) ??
    open.find((c) => c.reason) ??
    open.find((c) => FAILED_STATES.has(c.state ?? ''))
  );
}

/** The deepest failure of the chain, or undefined when it says nothing (no request, or it was issued). */
export function rootCauseOf(chain: IssuanceChain): RootCause | undefined {
  const { request, order } = chain;
  if (!request) return undefined;
  const ready = cond(request, 'Ready');
  if (ready?.status === 'True') return undefined;
  const denied = cond(request, 'Denied');
  if (denied?.status === 'True' || ready?.reason === 'Denied') {
    const words = [denied?.reason, denied?.message ?? ready?.message].filter(Boolean).join(': ');
    return cause('approval-denied', words || 'The CertificateRequest was denied', ref('CertificateRequest', request));
  }
  const ch = deepestChallenge(chain.challenges ?? []);
  if (ch) {
    const failed = FAILED_STATES.has(ch.state ?? '');
    const message = ch.reason || `Challenge is ${ch.state}`;
    return cause(classOfMessage(message) ?? (failed ? 'ca-error' : 'pending'), message, challengeRef(ch));
  }
  if (order && (order.reason || FAILED_STATES.has(order.state ?? ''))) {
    const failed = FAILED_STATES.has(order.state ?? '');
    const message = order.reason || `Order is ${order.state}`;
    return cause(classOfMessage(message) ?? (failed ? 'ca-error' : 'pending'), message, ref('Order', order));
  }
  const invalid = cond(request, 'InvalidRequest');
  if (invalid?.status === 'True') {
    const message = [invalid.reason, invalid.message].filter(Boolean).join(': ');
    return cause(classOfMessage(message) ?? 'ca-error', message, ref('CertificateRequest', request));
  }
  if (ready?.status === 'False' && ready.reason === 'Failed') {
    const message = ready.message || 'The CertificateRequest failed';
    return cause(classOfMessage(message) ?? 'ca-error', message, ref('CertificateRequest', request));
  }
  // nothing failed: the deepest object still waiting
  const open = (chain.challenges ?? []).filter((c) => c.state !== 'valid');
  if (open.length) {
    const c = open[0]!;
    const flags = [c.presented ? 'presented' : 'not presented', c.processing ? 'processing' : 'not processing'].join(', ');
    return cause('pending', `Challenge is ${c.state || 'pending'} (${flags})`, challengeRef(c));
  }
  if (order && order.state !== 'valid') return cause('pending', `Order is ${order.state || 'pending'}`, ref('Order', order));
  const message = ready?.message || 'Waiting for the CertificateRequest to be approved and signed';
  return cause(classOfMessage(message) ?? 'pending', message, ref('CertificateRequest', request));
}
