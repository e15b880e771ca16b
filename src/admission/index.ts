/**
 * Validating admission webhook for the operator's CRDs: `kubectl apply` of a NotificationRouter whose CEL
 * filter does not compile fails at once with the compile error, instead of the object going Stalled.
 *
 * ```ts
 * const wh = await startAdmissionWebhook({ port: 9443, certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key`, logger });
 * wh.url; wh.port; await wh.close();
 * ```
 */
export { startAdmissionWebhook, type RunningAdmissionWebhook } from './server.js';
export { BadAdmissionReviewError, reviewAdmission, type AdmissionResponse } from './review.js';
