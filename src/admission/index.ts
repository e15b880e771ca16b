/**
 * Validating admission webhook for the operator's CRDs: `kubectl apply` of a NotificationRouter whose CEL
 * filter does not compile fails at once with the compile error, instead of the object going Stalled.
 *
 * ```ts
 * const wh = await startAdmissionWebhook({ port: 9443, certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key`, logger });
 * wh.url; wh.port; await wh.close();
 * ```
 */
export {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_WEBHOOK_PORT,
  HEALTHZ_PATH,
  VALIDATE_PATH,
  startAdmissionWebhook,
  type AdmissionWebhookOptions,
  type RunningAdmissionWebhook,
} from './server.js';
export {
  ADMISSION_V1,
  ADMISSION_V1BETA1,
  BadAdmissionReviewError,
  decideAdmission,
  filterError,
  parseAdmissionReview,
  reviewAdmission,
  toResponse,
  type AdmissionDecision,
  type AdmissionRequest,
  type AdmissionResponse,
  type AdmissionReviewResponse,
} from './review.js';
export { loadCertificatePair, watchCertificate, type CertificatePair, type CertificateWatcher } from './certs.js';
