/** Record stage: an attempt's decision written to the store (batched), counted, and logged (rate-limited). */
import type { Logger } from '../log/logger.js';
import type { LogCause, LogLevel } from '../log/limiter.js';
import type { ClaimedDelivery, DeliveryOutcome, IntegrationType } from '../store/types.js';
import type { Decision } from './backoff.js';
import type { Batcher } from './batcher.js';
import { FailureLogWindow } from './failure-log.js';
import type { WorkerMetrics } from './metrics.js';

/** The integration type a delivery is counted under when its integration no longer exists. */
export const UNKNOWN_TYPE = 'unknown';

/** The store's outcome row for a decision on attempt `d.attempts`. */
function outcomeOf(d: ClaimedDelivery, decision: Decision): DeliveryOutcome {
  const { id, attempts: attemptNo } = d;
  return decision.kind === 'retry'
    ? { id, attemptNo, kind: 'retry', nextAttemptAt: decision.at, error: decision.error, statusCode: decision.statusCode }
    : decision.kind === 'dead'
      ? { id, attemptNo, kind: 'dead', error: decision.error, statusCode: decision.statusCode }
      : { id, attemptNo, kind: 'delivered', statusCode: decision.statusCode };
}

export interface RecorderDeps {
  /** Write-behind of the outcomes (batcher.ts): resolves whether the row was still this attempt's. */
  outcomes: Pick<Batcher<DeliveryOutcome, boolean>, 'add'>;
  metrics: WorkerMetrics | undefined;
  log: Logger;
  /** Whether a per-delivery log line of this level and cause may be written (rate-limited per tenant and cause). */
  admit: (level: LogLevel, d: ClaimedDelivery, cause: LogCause) => boolean;
  clock: () => number;
  /** A retry falls due at `at` (epoch ms): the worker wakes for it. */
  noteDue: (at: number) => void;
}

export class Recorder {
  readonly #deps: RecorderDeps;
  /** A failed attempt's warn line: at most one per integration per minute (failure-log.ts). */
  readonly #failureLog = new FailureLogWindow();

  constructor(deps: RecorderDeps) {
    this.#deps = deps;
  }

  async record(d: ClaimedDelivery, type: IntegrationType | typeof UNKNOWN_TYPE, decision: Decision): Promise<void> {
    const { outcomes, metrics, log, admit, clock, noteDue } = this.#deps;
    let applied: boolean;
    try {
      applied = await outcomes.add(outcomeOf(d, decision));
    } catch (err) {
      // Not recorded: the claim expires and the delivery is attempted again (at-least-once).
      if (admit('error', d, 'delivery_store_error'))
        log.error({ err, deliveryId: d.id, outcome: decision.kind }, 'delivery worker: could not record the outcome');
      return;
    }
    const labels = { integration_type: type };
    if (!applied) {
      metrics?.leaseLost.inc(labels);
      if (admit('warn', d, 'delivery_lease_lost'))
        log.warn(
          { deliveryId: d.id, attempt: d.attempts, outcome: decision.kind },
          'delivery worker: outcome not recorded; the claim had expired and the delivery was claimed again',
        );
      return;
    }
    metrics?.deliveries.inc({ ...labels, outcome: decision.kind });
    if (decision.kind === 'retry') noteDue(decision.at);
    const fields = {
      deliveryId: d.id,
      companyId: d.companyId,
      eventId: d.eventId,
      routerId: d.routerId,
      integrationId: d.integrationId,
      integrationType: type,
      attempts: d.attempts,
      statusCode: decision.statusCode,
    };
    if (decision.kind === 'dead') {
      metrics?.deadLetters.inc(labels);
      if (admit('warn', d, 'delivery_dead_letter')) log.warn({ ...fields, error: decision.error }, 'delivery dead-lettered');
    } else if (decision.kind === 'retry') {
      // why a notification has not arrived yet, long before its dead letter: the error as the notifier classified
      // it (a status code or a network error code, never the URL or a secret)
      const window = log.isLevelEnabled('warn') ? this.#failureLog.take(d.integrationId, clock()) : ({ ok: false } as const);
      if (window.ok && admit('warn', d, 'delivery_retry'))
        log.warn(
          {
            ...fields,
            error: decision.error,
            nextAttemptAt: new Date(decision.at).toISOString(),
            // this integration's failed attempts not logged since its previous line (at most one a minute)
            suppressed: window.suppressed || undefined,
          },
          'delivery attempt failed; will retry',
        );
    } else if (admit('debug', d, 'delivery_delivered')) {
      log.debug(fields, 'delivered');
    }
  }
}
