/**
 * The contracts between the serving parts of the agent (docs/serving.md): discovery gives endpoints per TLS
 * Secret, the prober turns them into verdicts, and the health controller and the inventory reporter read the
 * verdicts. Types only.
 */
import type { ServingSource, ServingStatus } from '../../model/serving.js';

/** `<namespace>/<secretName>` of the TLS Secret an endpoint is configured with. */
export type SecretKey = string;

export const secretKeyOf = (namespace: string, name: string): SecretKey => `${namespace}/${name}`;

/** One endpoint found by discovery (an Ingress spec.tls[] host, a Gateway listener). */
export interface Endpoint {
  /** the TLS server name (SNI) */
  host: string;
  /** `<host or IP>:<port>` to connect to; null: not probed (see reason) */
  address: string | null;
  /** why there is no address */
  reason?: string;
  source: ServingSource;
  /** the TLS Secret the endpoint is configured with */
  secret: { namespace: string; name: string };
}

/** A certificate as compared: the Secret's leaf, or the served one (times in ms epoch). */
export interface LeafIdentity {
  serial: string;
  issuer: string;
  subject: string;
  dnsNames: readonly string[];
  notBefore: number;
  notAfter: number;
}

/** What the prober concluded about one endpoint. */
export interface EndpointVerdict {
  host: string;
  address: string | null;
  source: ServingSource;
  status: ServingStatus;
  /** ms epoch: when the current status began (the start of a non-ok episode) */
  since: number;
  /** ms epoch of the last probe; undefined when never probed */
  checkedAt?: number;
  /** ms epoch: the first of the handshakes failing since the last one that succeeded (verdict.ts's grace) */
  failingSince?: number;
  /** the served leaf of the last successful handshake */
  served?: LeafIdentity | undefined;
  /** the Secret's leaf it was held against */
  expected?: LeafIdentity | undefined;
  /** `notProbed` / `unreachable`: why (one line) */
  reason?: string;
  /** workloads mounting the Secret (`Deployment/web`, `Pod/x`), looked up when the verdict turned non-ok */
  consumers?: readonly string[] | undefined;
}

/** The verdicts by Secret, for the health controller and the inventory reporter. */
export interface ServingVerdicts {
  of(namespace: string, secretName: string): readonly EndpointVerdict[];
  /** called (synchronously, cheaply) whenever a Secret's verdicts change */
  onChange(listener: (namespace: string, secretName: string) => void): void;
}
