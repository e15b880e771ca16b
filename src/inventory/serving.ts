/**
 * The hub's reading of the served truth (docs/serving.md): the endpoints an agent reports per certificate
 * (CertificateFacts.serving), their formats, and the one verdict that sums a certificate up for filters, the CSV
 * and the console. Pure functions.
 */
import { isIP } from 'node:net';
import { SERVING_REASONS, SERVING_SEVERITY, type ServingEndpointFacts, type ServingProblem, type ServingStatus } from '../model/serving.js';

// a certificate's verdict is its worst endpoint's (SERVING_SEVERITY)

const RANK = new Map(SERVING_SEVERITY.map((s, i) => [s, i]));

/** Whether the verdict makes the certificate unhealthy (a "serving problem"). */
export const isServingProblem = (s: ServingStatus | null): s is ServingProblem => s !== null && Object.hasOwn(SERVING_REASONS, s);

/** The worst status of the endpoints; null without any (none configured, or an agent that does not probe). */
export function worstServingStatus(endpoints: readonly Pick<ServingEndpointFacts, 'status'>[] | null | undefined): ServingStatus | null {
  let worst: ServingStatus | null = null;
  for (const e of endpoints ?? []) if (worst === null || RANK.get(e.status)! < RANK.get(worst)!) worst = e.status;
  return worst;
}

/** The endpoints worst first (stable: the agent's order within a status). */
export function byWorst<T extends Pick<ServingEndpointFacts, 'status'>>(endpoints: readonly T[]): T[] {
  return [...endpoints].sort((a, b) => RANK.get(a.status)! - RANK.get(b.status)!);
}

// ---------------------------------------------------------------------------------------------------------------
// Formats (the agent reads hosts from Ingress / Gateway objects, addresses from an annotation or the status)

/** A DNS label: letters, digits, hyphens inside, 1 to 63 characters (underscores allowed: some names have them). */
const LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
const DNS_NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*\\.?$`);
const WILDCARD_NAME = new RegExp(`^\\*\\.${LABEL}(?:\\.${LABEL})*$`);

/** `host`: a DNS name, or a wildcard `*.example.com` (an Ingress or listener may name one; it is not probed). */
export function servingHostProblem(v: string): string | undefined {
  if (DNS_NAME.test(v) || WILDCARD_NAME.test(v)) return undefined;
  return 'must be a DNS name like shop.example.com (or a wildcard *.example.com)';
}

/** `address`: `<DNS name or IPv4>:<port>` or `[<IPv6>]:<port>`, port 1 to 65535 without leading zeros. */
export function servingAddressProblem(v: string): string | undefined {
  const form = 'must be <host>:<port> like 203.0.113.7:443, shop.example.com:8443 or [2001:db8::1]:443';
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):([0-9]+)$/.exec(v);
  if (!m) return form;
  const [, v6, host, port] = m;
  if (v6 !== undefined && isIP(v6) !== 6) return `${form}: ${JSON.stringify(v6)} in brackets is not an IPv6 address`;
  if (host !== undefined && isIP(host) !== 4 && !DNS_NAME.test(host))
    return `${form}: ${JSON.stringify(host)} is neither a DNS name nor an IPv4 address`;
  if (!/^[1-9][0-9]{0,4}$/.test(port!) || Number(port) > 65535) return `${form}: the port is 1 to 65535`;
  return undefined;
}

/**
 * What one endpoint's fields say against each other (the schema checks each alone): no address only when not
 * probed; a verdict on a served leaf (`ok`, `stale`, `mismatch`, `expired`) names that leaf and when it was
 * read; a served serial and notAfter come together. Messages without the field's path (the caller adds it).
 */
export function servingEndpointProblems(e: ServingEndpointFacts): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  if (e.address === null && e.status !== 'notProbed')
    out.push({ field: 'address', message: `is null, which only a notProbed endpoint may be (status is ${e.status})` });
  if (['ok', 'stale', 'mismatch', 'expired'].includes(e.status))
    for (const k of ['servedSerial', 'servedNotAfter', 'checkedAt'] as const)
      if (e[k] === null) out.push({ field: k, message: `is null, but a ${e.status} verdict is about a served leaf read at a probe` });
  if (out.length === 0 && (e.servedSerial === null) !== (e.servedNotAfter === null))
    out.push({
      field: e.servedSerial === null ? 'servedSerial' : 'servedNotAfter',
      message: 'is null while servedSerial and servedNotAfter come together',
    });
  return out;
}
