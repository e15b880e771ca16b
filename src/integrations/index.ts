/**
 * Integrations: one notifier per IntegrationType (its descriptor in registry.ts). A process keeps one Notifiers
 * (src/service/runtime.ts): createNotifier(type, opts) runs once per type, then notifier.send(notification, signal)
 * for every delivery and test send.
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

/**
 * The notifier of each integration type, made on first use and kept: the delivery worker and the service's test
 * sends share them (and so each type's egress connections).
 */
export class Notifiers {
  readonly #make: (type: IntegrationType) => Notifier;
  readonly #made = new Map<IntegrationType, Notifier>();

  constructor(make: (type: IntegrationType) => Notifier) {
    this.#make = make;
  }

  of(type: IntegrationType): Notifier {
    let n = this.#made.get(type);
    if (!n) this.#made.set(type, (n = this.#make(type)));
    return n;
  }
}

function notifierOf(type: IntegrationType, opts: IntegrationOptions): Notifier {
  const d = descriptorOf(type);
  if (!d) throw new Error(`unknown integration type ${String(type)}`);
  return d.createNotifier(opts);
}
