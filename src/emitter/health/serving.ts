/**
 * Served truth in the certificate health family, pure: what the endpoints' verdicts (src/emitter/serving/) say
 * about the certificate in one TLS Secret, as the reason, message and episode start observe() puts in an
 * Observation, and the Observation of a TLS Secret that no cert-manager Certificate manages (docs/serving.md).
 *
 * - `ok`, `pending` and `notProbed` are fine; `expired`, `stale`, `mismatch` and `unreachable` are problems.
 * - The reason is the worst problem's (SERVING_SEVERITY: expired > mismatch > stale > unreachable); the episode
 *   starts at the earliest `since` of the problems, so the normal grace period applies (a consumer that reloads
 *   within it never alerts).
 * - The message names the worst endpoint (host, address, source), the served serial and notAfter and the
 *   expected ones, how many other endpoints have problems, and the workloads mounting the Secret with the hint
 *   that they need a reload: the product never restarts anything. Every part is bounded.
 */
import { SERVING_REASONS, SERVING_SEVERITY, type ServingProblem, type ServingStatus } from '../../model/serving.js';
import type { CertificateSubject } from '../../events/types.js';
import { cutToCodePoints } from '../../validation/formats.js';
import { isoUtc } from '../../events/wire-formats.js';
import type { EndpointVerdict, LeafIdentity } from '../serving/types.js';
import { derivedClusterId } from '../cluster.js';

/** statusReason of the `.active` that ends an episode notified with a Serving reason (routers filtering on Serving see both). */
export const SERVING_OK_REASON = 'ServingOk';

const REASONS: ReadonlySet<string> = new Set(Object.values(SERVING_REASONS));

/** A statusReason that opens a serving episode. */
export const isServingReason = (reason: string): boolean => REASONS.has(reason);

const isProblem = (s: ServingStatus): s is ServingProblem => Object.hasOwn(SERVING_REASONS, s);

/** Bounds of the message's parts (code points; list entries). */
const MAX = { host: 253, address: 261, source: 320, serial: 128, dn: 256, reason: 512, consumer: 253, consumers: 10, name: 253 };

const clip = (s: string, max: number): string => cutToCodePoints(s.replace(/[\r\n]+/g, ' '), max);

/** What a serving problem makes of a healthy Certificate (or Secret). */
export interface ServingFinding {
  reason: string;
  message: string;
  /** ms epoch: the earliest `since` of the problems */
  since: number;
}

export interface SecretRef {
  namespace: string;
  name: string;
}

function leafText(l: LeafIdentity | undefined): string {
  if (!l) return 'no certificate';
  const notAfter = Number.isFinite(l.notAfter) ? isoUtc(l.notAfter) : 'unknown';
  return `serial ${clip(l.serial, MAX.serial)} (notAfter ${notAfter})`;
}

function whatIsServed(v: EndpointVerdict & { status: ServingProblem }): string {
  const served = leafText(v.served);
  switch (v.status) {
    case 'expired':
      return `serves an expired certificate, ${served}`;
    case 'stale':
      return `serves an older certificate with the same names, ${served}`;
    case 'mismatch': {
      const who = v.served ? ` (subject ${clip(v.served.subject, MAX.dn)}, issuer ${clip(v.served.issuer, MAX.dn)})` : '';
      return `serves another certificate, ${served}${who}`;
    }
    case 'unreachable': {
      const why = v.reason ? `: ${clip(v.reason, MAX.reason)}` : '';
      return `is unreachable${why}${v.served ? `; it last served ${served}` : ''}`;
    }
  }
}

function hint(v: EndpointVerdict & { status: ServingProblem }, secret: SecretRef): string {
  if (v.status === 'unreachable')
    return 'Check that the address is right (annotation notify.certmgr.io/probe-address on the Ingress or Gateway) and that the agent can reach it.';
  const reload = 'a reload (certmgr-notify never restarts anything)';
  const c = v.consumers;
  if (c === undefined) return `Whatever serves the Secret needs ${reload}.`;
  if (c.length === 0)
    return `No pod in namespace ${clip(secret.namespace, MAX.name)} mounts the Secret: whatever serves it (such as an ingress controller or gateway reading it through the API) needs ${reload}.`;
  const shown = c.slice(0, MAX.consumers).map((x) => clip(x, MAX.consumer));
  const more = c.length > shown.length ? ` and ${c.length - shown.length} more` : '';
  return `The workloads that mount the Secret (${shown.join(', ')}${more}) need ${reload}.`;
}

/** The worst problem among the verdicts, or undefined when every endpoint is fine. */
export function servingProblem(secret: SecretRef, verdicts: readonly EndpointVerdict[]): ServingFinding | undefined {
  const problems = verdicts.filter((v): v is EndpointVerdict & { status: ServingProblem } => isProblem(v.status));
  if (problems.length === 0) return undefined;
  const rank = (v: { status: ServingProblem }): number => SERVING_SEVERITY.indexOf(v.status);
  const worst = problems.reduce((a, b) =>
    rank(b) < rank(a) || (rank(b) === rank(a) && (b.since < a.since || (b.since === a.since && b.host < a.host))) ? b : a,
  );
  const since = Math.min(...problems.map((v) => v.since));
  const where = [
    worst.address ? clip(worst.address, MAX.address) : 'no address',
    clip(`${worst.source.kind} ${worst.source.namespace}/${worst.source.name}`, MAX.source),
  ].join(', ');
  const secretName = `${clip(secret.namespace, MAX.name)}/${clip(secret.name, MAX.name)}`;
  const expected = worst.expected
    ? `expected the certificate in Secret ${secretName}, ${leafText(worst.expected)}`
    : `Secret ${secretName} holds no readable certificate to compare with`;
  const others = problems.length - 1;
  const otherText =
    others > 0
      ? ` ${others} other endpoint${others === 1 ? '' : 's'} of the Secret ha${others === 1 ? 's' : 've'} a serving problem too.`
      : '';
  const message = `${clip(worst.host, MAX.host)} (${where}) ${whatIsServed(worst)}; ${expected}.${otherText} ${hint(worst, secret)}`;
  return { reason: SERVING_REASONS[worst.status], message, since };
}

/** The message of the `.active` that ends a serving episode: what the endpoints serve now. */
export function servingOkMessage(secret: SecretRef, verdicts: readonly EndpointVerdict[]): string {
  const secretName = `${clip(secret.namespace, MAX.name)}/${clip(secret.name, MAX.name)}`;
  const ok = verdicts.filter((v) => v.status === 'ok');
  if (ok.length === 0) return `No endpoint configured with Secret ${secretName} has a serving problem any more`;
  const leaf = ok[0]!.served ?? ok[0]!.expected;
  const n = ok.length === 1 ? `${clip(ok[0]!.host, MAX.host)} serves` : `${ok.length} endpoints serve`;
  return `${n} the certificate in Secret ${secretName} again${leaf ? `, ${leafText(leaf)}` : ''}`;
}

/**
 * resourceId of a Secret-only event: the TLS Secret cache keeps no uid (memory at 100,000 Secrets), so a
 * name-based UUID of the namespace and name (cluster.ts's derivation) stands in for it, stable per Secret.
 */
export function secretResourceId(namespace: string, name: string): string {
  return derivedClusterId(`Secret ${namespace}/${name}`);
}

/** The subject lists of a one-line DN as the leaf facts give it (`C=DE, O=Example Corp, CN=shop.example.com`). */
export function subjectOfDn(dn: string, commonName: string | undefined): CertificateSubject {
  const s: CertificateSubject = {
    commonName: commonName ?? '',
    countries: [],
    localities: [],
    organizationalUnits: [],
    organizations: [],
    provinces: [],
  };
  const lists: Record<string, string[]> = {
    C: s.countries,
    L: s.localities,
    OU: s.organizationalUnits,
    O: s.organizations,
    ST: s.provinces,
  };
  for (const part of dn.split(/, (?=[A-Za-z][\w.]*=)/)) {
    const i = part.indexOf('=');
    if (i > 0) lists[part.slice(0, i)]?.push(part.slice(i + 1));
  }
  return s;
}

/** The healthy Secret's message when a Certificate manages it: that Certificate's events carry its serving problems. */
export function managedSecretMessage(secret: SecretRef, certificateName: string): string {
  return `Secret ${secret.namespace}/${secret.name} is managed by Certificate ${clip(certificateName, MAX.name)}: its serving problems are reported on the Certificate`;
}
