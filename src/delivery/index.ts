/**
 * Durable delivery: the worker that drains the store's outbox into the integrations.
 *
 *   const signal = new DeliverySignal();   // handed to whoever commits deliveries (ingestion, the group flusher, ...)
 *   const worker = new DeliveryWorker({ store, notifiers: new Notifiers((t) => createNotifier(t, opts)), signal, logger });
 *   worker.start();            // at startup
 *   signal.notify();           // after deliveries were committed (optional: polling finds them too)
 *   await worker.stop();       // at shutdown, before store.close()
 */
export * from './backoff.js';
export * from './rate-limit.js';
export * from './worker.js';
