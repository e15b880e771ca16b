/**
 * Served truth: what an endpoint (an Ingress or Gateway host) serves, held against the certificate in the TLS
 * Secret it is configured with. Shared by the agent (discovery, probes, verdicts, health), the inventory's wire
 * format and the hub (store, GraphQL, CSV, console). Types and limits only: the agent's decisions live in
 * src/emitter/serving/, the hub's in src/inventory/. See docs/serving.md.
 */

/**
 * The verdict on one endpoint:
 * - `ok`: it serves the Secret's certificate (same serial and issuer);
 * - `stale`: it serves another certificate with the same subject and SANs that expires earlier than the
 *   Secret's: the consumer did not reload after a renewal;
 * - `mismatch`: it serves another certificate;
 * - `expired`: the served leaf is past its notAfter;
 * - `unreachable`: no TLS handshake completed for longer than the grace;
 * - `pending`: not probed yet, or failing within the unreachable grace;
 * - `notProbed`: no address to probe (see `reason`).
 */
export const SERVING_STATUSES = ['ok', 'stale', 'mismatch', 'expired', 'unreachable', 'pending', 'notProbed'] as const;
export type ServingStatus = (typeof SERVING_STATUSES)[number];

/**
 * Worst first: what users see (an expired leaf, then another certificate, then the old one), then an endpoint
 * not answering, then what is not known yet, then `ok`. The one order for the health event's reason, the inventory's
 * per-certificate verdict, its filters, the CSV and the console.
 */
export const SERVING_SEVERITY: readonly ServingStatus[] = ['expired', 'mismatch', 'stale', 'unreachable', 'pending', 'notProbed', 'ok'];

/** The verdicts that make the certificate unhealthy, and the health event's statusReason of each. */
export const SERVING_REASONS = {
  expired: 'ServingExpired',
  stale: 'ServingStale',
  mismatch: 'ServingMismatch',
  unreachable: 'ServingUnreachable',
} as const satisfies Partial<Record<ServingStatus, string>>;
export type ServingProblem = keyof typeof SERVING_REASONS;

/** Where an endpoint was found. */
export interface ServingSource {
  kind: 'Ingress' | 'Gateway';
  namespace: string;
  name: string;
}

/** One endpoint of a certificate, as the agent reports it in the inventory (CertificateFacts.serving). */
export interface ServingEndpointFacts {
  /** the TLS server name (SNI) probed: an Ingress spec.tls[].hosts entry, a Gateway listener's hostname */
  host: string;
  /** `<host or IP>:<port>` connected to; null when there is none (`notProbed`) */
  address: string | null;
  source: ServingSource;
  status: ServingStatus;
  /** why it is `notProbed` or `unreachable` (the last error), one line */
  reason?: string | undefined;
  /** the served leaf's serial (hex, upper case) and notAfter (RFC 3339 UTC); null before a handshake succeeded */
  servedSerial: string | null;
  servedNotAfter: string | null;
  /** RFC 3339 UTC: the last probe reported (a changed verdict at once, an unchanged one at least hourly); null: never probed */
  checkedAt: string | null;
}

/** Bounds of the serving facts (code points; list lengths), on the wire and in the store. */
export const SERVING_LIMITS = {
  /** endpoints reported per certificate (an Ingress may list many hosts; the rest are counted, not listed) */
  endpoints: 32,
  host: 253,
  /** `[IPv6]:port` or a DNS name and a port */
  address: 261,
  reason: 512,
} as const;
