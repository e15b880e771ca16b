/**
 * Claim stage: the integration each claimed delivery goes to, and the claims that end before any sending
 * (integration gone or disabled, poisoned, unknown event type, unreadable secrets).
 */
import { isEventType } from '../events/families.js';
import type { Notification } from '../integrations/types.js';
import type { ClaimedDelivery, IntegrationRecord } from '../store/types.js';
import { SecretKeyError } from '../store/secret-box.js';
import { POISON_AFTER_ABANDONED, poisonedError } from './poison.js';

/** The integration record of a claimed delivery (null: deleted since the event was accepted). */
export type IntegrationOf = (d: ClaimedDelivery) => Promise<IntegrationRecord | null>;

/**
 * For one claim batch: the record the claim read (no round trip), else one read per integration per batch (the
 * record decrypts its secrets once). `ownReads`: getIntegration was given, so the claims' records are not used.
 */
export function integrationsOfBatch(
  getIntegration: (companyId: string, integrationId: string) => Promise<IntegrationRecord | null>,
  ownReads: boolean,
): IntegrationOf {
  const integrations = new Map<string, Promise<IntegrationRecord | null>>();
  return (d) => {
    if (d.integration !== undefined && !ownReads) return Promise.resolve(d.integration);
    const key = `${d.companyId}/${d.integrationId}`;
    let p = integrations.get(key);
    if (!p) integrations.set(key, (p = getIntegration(d.companyId, d.integrationId)));
    return p;
  };
}

/** The dead letter of a delivery whose integration no longer exists. */
export function integrationGone(d: ClaimedDelivery): string {
  return `integration ${d.integrationId} no longer exists (deleted after the event was accepted)`;
}

/**
 * Whether a claimed delivery goes on to be sent (with its event, of a known type), or why not: dead (`poisoned` when
 * its claims were abandoned too often) or retried later.
 */
export type ClaimCheck =
  { kind: 'send'; event: Notification['event'] } | { kind: 'dead'; error: string; poisoned: boolean } | { kind: 'retry'; error: string };

/** The first reason, in order, that this claimed delivery cannot be sent to its integration, else its event. */
export function checkClaim(d: ClaimedDelivery, integration: IntegrationRecord): ClaimCheck {
  const { type, data } = d.event;
  if (d.abandonedClaims >= POISON_AFTER_ABANDONED) return { kind: 'dead', error: poisonedError(d.abandonedClaims), poisoned: true };
  if (!integration.enabled)
    return { kind: 'dead', error: `integration "${integration.name}" (${integration.id}) is disabled`, poisoned: false };
  if (!isEventType(type)) return { kind: 'dead', error: `unknown event type ${type}`, poisoned: false };
  // wrong or missing key (an operator's mistake): retried with backoff, so fixing the key file delivers it
  const unreadable = unreadableSecrets(integration);
  return unreadable ? { kind: 'retry', error: unreadable } : { kind: 'send', event: { type, data } };
}

/** Why the integration's secrets (decrypted on first access) cannot be read, or null. The message names row and key id only. */
function unreadableSecrets(integration: IntegrationRecord): string | null {
  try {
    void integration.secrets;
    return null;
  } catch (err) {
    if (err instanceof SecretKeyError) return `cannot decrypt the integration's secrets: ${err.message}`;
    throw err;
  }
}
