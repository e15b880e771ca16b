/**
 * The certificate inventory: what an agent reports about each TLS certificate of its cluster, and the wire
 * protocol of `POST /v1/inventory` (docs/topology.md, "Inventory protocol"). Shared by the agent (sender), the
 * hub (receiver, store, expiry evaluation) and the client. Types and limits only: the hub's decisions live in
 * src/inventory/, the agent's in src/emitter/.
 *
 * Protocol, in short: an agent reports a cluster as a sequence of reports within an `epoch` (a UUID the agent
 * draws for each full sync). `seq` counts reports from 1 within the epoch. A full sync is one or more
 * `snapshot` reports (the last has `final: true`); after it, `delta` reports carry changes. The hub applies a
 * report once: an already-applied seq is answered `duplicate` (harmless replay), a gap or an unknown epoch is
 * answered 409 `RESYNC_REQUIRED` and the agent starts a new epoch with a full snapshot. When a snapshot's final
 * report is applied, the cluster's rows not seen in that epoch are removed.
 */

import type { ExpiryThreshold } from './expiry-thresholds.js';
import type { ServingEndpointFacts } from './serving.js';

export const INVENTORY_PROTOCOL = 1;

/** A cluster without a report for this long counts as silent, unless configured (clusterSilenceAfter). */
export const DEFAULT_CLUSTER_SILENCE_AFTER_MS = 15 * 60_000;

/** Upserts + deletes in one report (a snapshot of more certificates is sent in several reports). */
export const MAX_INVENTORY_ITEMS_PER_REPORT = 1000;

/**
 * Bounds of every field of a report (code points; list lengths). The hub refuses a report past them; the agent
 * cuts what it reads from its cluster to them first (src/emitter/inventory/facts.ts), so one odd Secret never
 * blocks a cluster's whole inventory.
 */
export const INVENTORY_LIMITS = {
  /** object names (DNS subdomains) */
  name: 253,
  /** namespaces (DNS labels) */
  namespace: 63,
  agentVersion: 64,
  /** hex digits of a serial (RFC 5280: at most 20 octets; some CAs emit a little more) */
  serial: 64,
  /** subject and issuer DNs, one line */
  dn: 1024,
  commonName: 256,
  dnsNames: 100,
  dnsName: 253,
  applicationIds: 100,
  applicationId: 256,
  labels: 64,
  /** prefix (253) + '/' + name (63) */
  labelKey: 317,
  labelValue: 63,
  issuerKind: 63,
  readyReason: 1024,
  formatted: 64,
  /** expiryThresholds: the monitoring configuration's limits (src/model/monitoring.ts) */
  expiryThresholds: 3,
  expiryThresholdDays: 3650,
  /** runbookUrl (src/validation/formats.ts MAX_RUNBOOK_URL_CHARS) */
  runbookUrl: 2048,
} as const;

/** Where a certificate lives: a TLS Secret of a cluster. The unit of the inventory (one row per location). */
export interface CertificateLocation {
  namespace: string;
  secretName: string;
}

/** What an agent knows of one TLS Secret's certificate. Never the private key. */
export interface CertificateFacts extends CertificateLocation {
  /** the cert-manager Certificate that manages the Secret, when there is one */
  certificateName?: string | undefined;
  certificateUid?: string | undefined;
  /** the leaf's serial number, hex upper case (null: the Secret holds no parsable certificate) */
  serial: string | null;
  /** RFC 3339 UTC (`…Z`), from the X.509 itself */
  notBefore: string | null;
  notAfter: string | null;
  /** the leaf's subject DN, one line (`CN=a.example, O=Example`) and its common name */
  subject: string | null;
  commonName?: string | undefined;
  dnsNames: string[];
  /** the X.509 issuer DN, one line */
  issuer: string | null;
  /** the Certificate's spec.issuerRef */
  issuerRef?: { name: string; kind?: string | undefined; group?: string | undefined } | undefined;
  /** the Certificate's Ready condition */
  ready?: { status: 'True' | 'False' | 'Unknown'; reason?: string | undefined } | undefined;
  /** from the `notify.certmgr.io/application-ids` annotation (Secret, else Certificate) */
  applicationIds: string[];
  /** the Secret's labels */
  labels: Record<string, string>;
  /** the earliest notAfter of the whole chain in tls.crt (leaf and intermediates), RFC 3339 UTC */
  chainNotAfter: string | null;
  /**
   * Per-resource policy (docs/annotations.md), from the `notify.certmgr.io/*` annotations (Secret, else
   * Certificate). Optional: absent means no policy. `ignore`: no expiry events for this row.
   */
  ignore?: boolean | undefined;
  /**
   * the certificate's own expiry thresholds (distinct, 1 to MAX_THRESHOLDS of them): whole days, or a whole
   * percent of the lifetime as `"33%"` (src/model/expiry-thresholds.ts); they replace the company's
   */
  expiryThresholds?: ExpiryThreshold[] | undefined;
  /** http(s) URL, carried to the certificate's expiration events as data.runbookUrl */
  runbookUrl?: string | undefined;
  /**
   * the endpoints configured with this Secret (Ingress / Gateway hosts) and what each serves (docs/serving.md);
   * at most SERVING_LIMITS.endpoints. Absent: the agent does not probe.
   */
  serving?: ServingEndpointFacts[];
}

export interface InventoryReport {
  protocol: typeof INVENTORY_PROTOCOL;
  cluster: { id: string; name: string };
  agentVersion: string;
  /** UUID, drawn by the agent for each full sync */
  epoch: string;
  /** 1, 2, 3… within the epoch */
  seq: number;
  kind: 'snapshot' | 'delta';
  /** snapshot only: the last report of the snapshot */
  final?: boolean | undefined;
  upserts: CertificateFacts[];
  deletes: CertificateLocation[];
}

/** 200 answer of `POST /v1/inventory`. A 409 answer has `extensions.code` / `code` `RESYNC_REQUIRED`. */
export interface InventoryAck {
  status: 'applied' | 'duplicate';
  clusterId: string;
  epoch: string;
  seq: number;
}

export const RESYNC_REQUIRED = 'RESYNC_REQUIRED';
