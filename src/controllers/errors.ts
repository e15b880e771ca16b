/** Service API failures → the conditions a reconciler reports. */
import { Reason } from '../api/meta.js';
import { TerminalError, WaitError } from './runtime.js';
import { ServiceApiError } from './service-api.js';

/** Fields of the service's inputs that carry values read from Secrets. */
const SECRET_FIELD = /IntegrationKey|\burl\b|signingSecret|webhookUrl/i;

/** `line L, column C: reason` from the service's INVALID_FILTER_EXPRESSION error. */
export function invalidFilterMessage(e: ServiceApiError): string {
  const line = e.details['line'];
  const column = e.details['column'];
  // the service's message is "<field>: <line>:<column>: <reason>"
  const reason = e.serviceMessage.replace(/^[\w.[\]]+:\s*/, '').replace(/^\d+:\d+:\s*/, '');
  return typeof line === 'number' && typeof column === 'number' ? `spec.filter: line ${line}, column ${column}: ${reason}` : `spec.filter: ${reason}`;
}

/** Throws the condition error for a failed service call. */
export function throwServiceFailure(e: unknown, context: 'provider' | 'router' | 'monitoring'): never {
  if (!(e instanceof ServiceApiError)) throw e;
  switch (e.kind) {
    case 'unavailable':
    case 'unauthenticated':
      throw new WaitError(Reason.ServiceUnavailable, e.message);
    case 'invalid-filter':
      throw new TerminalError(Reason.InvalidFilter, invalidFilterMessage(e));
    case 'bad-input': {
      const field = typeof e.details['field'] === 'string' ? e.details['field'] : '';
      if (context === 'provider' && SECRET_FIELD.test(field)) {
        // the value came from a Secret: fixing the Secret (watched) retriggers; the message names the field only
        throw new WaitError(Reason.InvalidSecret, e.message, { requeueAfter: 60_000 });
      }
      throw new TerminalError(Reason.InvalidSpec, e.message);
    }
    default:
      throw new WaitError(Reason.ServiceError, e.message);
  }
}
