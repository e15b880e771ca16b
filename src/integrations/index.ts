/**
 * Integrations: one notifier per IntegrationType (its descriptor in registry.ts). The delivery engine calls
 * createNotifier(type, opts) once per type and then notifier.send(notification, signal).
 */
import { redact, secretFragments, truncateChars } from './http.js';
import { descriptorOf } from './registry.js';
import type { DeliveryResult, IntegrationOptions, IntegrationType, Notification, Notifier } from './types.js';

export * from './types.js';

/**
 * The notifier for one integration type. The returned send() never throws: a notification of
 * another integration type is 'dead', and an unexpected exception is 'retry' with a redacted message.
 */
export function createNotifier(type: IntegrationType, opts: IntegrationOptions): Notifier {
  const inner = notifierOf(type, opts);
  return {
    type,
    unavailable: () => inner.unavailable?.() ?? null,
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      if (n.integration.type !== type) {
        return { outcome: 'dead', error: `integration type ${n.integration.type} cannot be sent by the ${type} notifier` };
      }
      try {
        return await inner.send(n, signal);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        const fragments = secretFragments([...Object.values(n.integration.secrets), opts.smtpUrl]);
        return { outcome: 'retry', error: truncateChars(`internal error: ${redact(message, fragments)}`, 300) };
      }
    },
  };
}

function notifierOf(type: IntegrationType, opts: IntegrationOptions): Notifier {
  const d = descriptorOf(type);
  if (!d) throw new Error(`unknown integration type ${String(type)}`);
  return d.createNotifier(opts);
}
