/**
 * Durable delivery: the worker that drains the store's outbox into the integrations.
 *
 *   const worker = new DeliveryWorker({ store, notifiers: (t) => createNotifier(t, integrationOpts), logger, metrics: registry });
 *   worker.start();            // at startup
 *   worker.kick();             // after ingestion committed deliveries (optional: polling finds them too)
 *   await worker.stop();       // at shutdown, before store.close()
 */
export * from './backoff.js';
export * from './rate-limit.js';
export * from './worker.js';
