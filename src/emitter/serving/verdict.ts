/**
 * The verdict on one endpoint, pure: what it served at the last probe held against the leaf of the TLS Secret
 * it is configured with, given the previous verdict and the time. See docs/serving.md.
 *
 * - no address → `notProbed` (discovery's reason);
 * - no probe yet → `pending`;
 * - a leaf past its notAfter → `expired`, whatever else holds;
 * - the Secret's certificate (same serial and issuer) → `ok`;
 * - another certificate while the Secret's changed less than the reload grace ago → `pending` (its consumers
 *   are reloading), or the previous problem while one was open;
 * - the same subject and DNS names, another serial, expiring earlier than the Secret's → `stale`;
 * - any other certificate → `mismatch`;
 * - no Secret leaf to compare with (the Secret is missing, or its tls.crt unparsable) → `pending`, saying so;
 * - a failed handshake → the previous verdict unchanged (a consumer restarting, a blip) until failures have
 *   lasted the unreachable grace, then `unreachable`; `pending` while there is no previous verdict to keep.
 *
 * `since` is the start of the current status; from one problem to another (stale → unreachable) it is kept:
 * one episode whose reason changed.
 */
import { SERVING_REASONS, type ServingStatus } from '../../model/serving.js';
import type { Endpoint, EndpointVerdict, LeafIdentity } from './types.js';

/** Handshakes failing for this long make an endpoint `unreachable`: a consumer's restart is not one. */
export const DEFAULT_UNREACHABLE_GRACE_MS = 10 * 60_000;
/**
 * After the Secret's certificate changes, its consumers get this long to serve it before another served
 * certificate counts as `stale` or `mismatch`: kubelet refreshes a mounted Secret within about a minute or two,
 * and the application then reloads.
 */
export const DEFAULT_RELOAD_GRACE_MS = 5 * 60_000;

/** One probe's result, at `at` (ms epoch). */
export type ProbeResult = { kind: 'served'; leaf: LeafIdentity; at: number } | { kind: 'failed'; error: string; at: number };

export interface VerdictInput {
  endpoint: Pick<Endpoint, 'host' | 'address' | 'reason' | 'source'>;
  /** the Secret's leaf; undefined: no Secret, or its tls.crt is unparsable */
  expected: LeafIdentity | undefined;
  /**
   * ms epoch: when the Secret's current certificate was first seen (a renewal); undefined when it was there
   * before the agent started. The leaf's notBefore counts too, whichever is later.
   */
  expectedSince?: number | undefined;
  /** the last probe; undefined: not probed yet */
  probe: ProbeResult | undefined;
  previous: EndpointVerdict | undefined;
  now: number;
  unreachableGraceMs: number;
  reloadGraceMs: number;
}

const isProblem = (s: ServingStatus): boolean => s in SERVING_REASONS;

/** DNS names as a set: case-insensitive, order and repeats ignored. */
function sameNames(a: readonly string[], b: readonly string[]): boolean {
  const x = new Set(a.map((d) => d.toLowerCase()));
  const y = new Set(b.map((d) => d.toLowerCase()));
  if (x.size !== y.size) return false;
  for (const d of x) if (!y.has(d)) return false;
  return true;
}

export const sameCertificate = (a: LeafIdentity, b: LeafIdentity): boolean => a.serial === b.serial && a.issuer === b.issuer;

/** What a served leaf is, held against the Secret's (no grace): ok, expired, stale or mismatch. */
export function classify(served: LeafIdentity, expected: LeafIdentity | undefined, now: number): ServingStatus | undefined {
  if (served.notAfter < now) return 'expired';
  if (!expected) return undefined;
  if (sameCertificate(served, expected)) return 'ok';
  if (served.subject === expected.subject && sameNames(served.dnsNames, expected.dnsNames) && served.notAfter < expected.notAfter)
    return 'stale';
  return 'mismatch';
}

const NOT_PROBED = 'no address to probe';
const NOT_YET = 'not probed yet';
const NO_EXPECTED = 'no certificate to compare with: the Secret is missing or its tls.crt is unparsable';

export function servingVerdict(i: VerdictInput): EndpointVerdict {
  const { endpoint: e, previous: prev, probe, now } = i;
  const base = { host: e.host, address: e.address, source: e.source };
  const sinceFor = (status: ServingStatus, start = now): number =>
    prev && (prev.status === status || (isProblem(prev.status) && isProblem(status))) ? prev.since : start;
  const expected = i.expected ? { expected: i.expected } : {};

  if (e.address === null) return { ...base, status: 'notProbed', since: sinceFor('notProbed'), reason: e.reason ?? NOT_PROBED };
  if (!probe) return { ...base, status: 'pending', since: sinceFor('pending'), reason: NOT_YET, ...expected };

  if (probe.kind === 'failed') {
    const failingSince = prev?.failingSince ?? probe.at;
    const kept = { checkedAt: probe.at, failingSince, served: prev?.served, ...expected };
    if (probe.at - failingSince >= i.unreachableGraceMs)
      return {
        ...base,
        status: 'unreachable',
        since: sinceFor('unreachable', failingSince),
        reason: probe.error,
        ...kept,
        ...consumers(prev, 'unreachable'),
      };
    // within the grace: what was known stands
    if (prev && prev.status !== 'pending' && prev.status !== 'notProbed' && prev.status !== 'unreachable' && prev.address === e.address)
      return { ...prev, ...base, ...kept };
    return { ...base, status: 'pending', since: sinceFor('pending'), reason: probe.error, ...kept };
  }

  const served = probe.leaf;
  const at = { checkedAt: probe.at };
  let status = classify(served, i.expected, now);
  if (status === undefined) return { ...base, status: 'pending', since: sinceFor('pending'), reason: NO_EXPECTED, ...at, served };
  // the Secret's own leaf object: one copy for both (most endpoints are ok)
  if (status === 'ok') return { ...base, status, since: sinceFor(status), ...at, served: i.expected!, ...expected };
  if (status !== 'expired') {
    const changedAt = Math.max(i.expectedSince ?? -Infinity, i.expected!.notBefore);
    if (now - changedAt < i.reloadGraceMs) {
      if (prev && isProblem(prev.status) && prev.status !== 'unreachable') status = prev.status;
      else
        return {
          ...base,
          status: 'pending',
          since: sinceFor('pending'),
          reason: `the Secret's certificate changed at ${new Date(changedAt).toISOString()}; its consumers have until ${new Date(changedAt + i.reloadGraceMs).toISOString()} to serve it`,
          ...at,
          served,
          ...expected,
        };
    }
  }
  return { ...base, status, since: sinceFor(status), ...at, served, ...expected, ...consumers(prev, status) };
}

/** The workloads looked up for an open problem stay with it; a new problem has none until the prober looks. */
function consumers(prev: EndpointVerdict | undefined, status: ServingStatus): Pick<EndpointVerdict, 'consumers'> {
  return prev?.consumers && isProblem(prev.status) && isProblem(status) ? { consumers: prev.consumers } : {};
}
