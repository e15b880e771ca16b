import type { KubernetesObject } from '@kubernetes/client-node';

/** A cert-manager status condition as the emitter reads it (Ready, Issuing): every field may be missing. */
export interface CertManagerCondition {
  type?: string | undefined;
  status?: string | undefined;
  reason?: string | undefined;
  message?: string | undefined;
  lastTransitionTime?: string | Date | undefined;
  observedGeneration?: number | undefined;
}

/** The parts of cert-manager.io/v1 Issuer / ClusterIssuer / Certificate objects the emitter reads. */
export interface CertManagerObject extends KubernetesObject {
  spec?:
    | {
        commonName?: string;
        dnsNames?: string[];
        secretName?: string;
        issuerRef?: { name?: string | undefined; kind?: string | undefined; group?: string | undefined };
        secretTemplate?: { annotations?: Record<string, string>; labels?: Record<string, string> };
        subject?: {
          organizations?: string[];
          countries?: string[];
          organizationalUnits?: string[];
          localities?: string[];
          provinces?: string[];
        };
        [k: string]: unknown;
      }
    | undefined;
  status?:
    | {
        conditions?: CertManagerCondition[];
        notAfter?: string | Date;
        notBefore?: string | Date;
        failedIssuanceAttempts?: number;
        lastFailureTime?: string | Date;
        renewalTime?: string | Date;
        [k: string]: unknown;
      }
    | undefined;
}
