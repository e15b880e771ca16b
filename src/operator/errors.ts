/** Service API failures → the conditions a reconciler reports. */
import { Reason } from '../api/meta.js';
import { TerminalError, WaitError } from '../runtime/controller.js';
import type { SecretRole, SecretUse } from './desired.js';
import { ServiceApiError } from '../client/errors.js';

/** Fields of the service's inputs that carry values read from Secrets. */
const SECRET_FIELD = /IntegrationKey|\burl\b|signingSecret|webhookUrl/i;

/** The Secret role a service input field (`input.url`, `input.slackParams.webhookUrl`, …) carries. */
const ROLE_OF_FIELD: readonly [RegExp, SecretRole][] = [
  [/IntegrationKey$/i, 'integrationKey'],
  [/signingSecret$/, 'signingSecret'],
  [/webhookUrl$/, 'webhookUrl'],
  [/\burl$/, 'url'],
];

/**
 * The condition message for a service rejection of a value read from a Secret: the spec field and the Secret
 * it came from, then the service's reason (which never repeats the value). Falls back to the service's
 * message when the field cannot be matched to the spec.
 */
export function secretValueMessage(e: ServiceApiError, uses: readonly SecretUse[]): string {
  const field = typeof e.details['field'] === 'string' ? e.details['field'] : '';
  const role = ROLE_OF_FIELD.find(([re]) => re.test(field))?.[1];
  const use = role ? uses.find((u) => u.role === role) : undefined;
  if (!use) return e.message;
  // the service's messages read "<field> <what is wrong>": say it of the spec field instead
  const reason = e.serviceMessage.startsWith(`${field} `) ? `it ${e.serviceMessage.slice(field.length + 1)}` : e.serviceMessage;
  return `${use.field} (Secret ${use.ref.name}, key ${use.ref.key}): the service refused the value: ${reason} (service field ${field})`;
}

/** `line L, column C: reason` from the service's INVALID_FILTER_EXPRESSION error. */
export function invalidFilterMessage(e: ServiceApiError, specField = 'spec.filter'): string {
  const line = e.details['line'];
  const column = e.details['column'];
  // the service's message is "<field>: <line>:<column>: <reason>"
  const reason = e.serviceMessage.replace(/^[\w.[\]]+:\s*/, '').replace(/^\d+:\d+:\s*/, '');
  return typeof line === 'number' && typeof column === 'number'
    ? `${specField}: line ${line}, column ${column}: ${reason}`
    : `${specField}: ${reason}`;
}

/**
 * Throws the condition error for a failed service call. `secretUses`: the provider's Secret references, so a
 * rejected Secret value is reported by its spec field.
 */
export function throwServiceFailure(
  e: unknown,
  context: 'provider' | 'router' | 'monitoring' | 'template' | 'silence',
  secretUses: readonly SecretUse[] = [],
): never {
  if (!(e instanceof ServiceApiError)) throw e;
  switch (e.kind) {
    case 'unavailable':
    case 'unauthenticated':
      throw new WaitError(Reason.ServiceUnavailable, e.message);
    case 'invalid-filter':
      throw new TerminalError(Reason.InvalidFilter, invalidFilterMessage(e, context === 'silence' ? 'spec.matcher' : 'spec.filter'));
    case 'bad-input': {
      const field = typeof e.details['field'] === 'string' ? e.details['field'] : '';
      if (context === 'provider' && SECRET_FIELD.test(field)) {
        // The value came from a Secret (e.g. a URL the egress policy refuses): the same value fails the same
        // way, so no retry loop. A Secret change (watched) or the periodic resync (e.g. after the service's
        // --egress-allow changed) tries again. The message names the field and Secret, never the value.
        throw new TerminalError(Reason.InvalidSecret, secretValueMessage(e, secretUses));
      }
      if (context === 'provider' && field.startsWith('input.rateLimit'))
        // spec.rateLimit goes to the service as input.rateLimit: say it of the spec field
        throw new TerminalError(
          Reason.InvalidSpec,
          `${e.serviceMessage.replace(/^input\.rateLimit/, 'spec.rateLimit')} (service field ${field})`,
        );
      throw new TerminalError(Reason.InvalidSpec, e.message);
    }
    case 'quota-exceeded':
      // the company holds its limit: retrying with backoff cannot help; the resync finds room once records go
      throw new TerminalError(Reason.QuotaExceeded, e.message);
    case 'smtp-not-configured':
      // a setting of the service, not of this object: no backoff loop; the periodic resync retries, so the
      // provider turns Ready once the service runs with --smtp-url
      throw new TerminalError(Reason.SmtpNotConfigured, e.message);
    default:
      throw new WaitError(Reason.ServiceError, e.message);
  }
}
