/** A cert-manager status condition as the emitter reads it (Ready, Issuing): every field may be missing. */
export interface CertManagerCondition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string | Date;
  observedGeneration?: number;
}
