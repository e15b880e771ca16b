/**
 * What the expiry integration tests share: a router of the expiration family to one integration, a delivery worker
 * to a loopback receiver, and an expiry scanner over the store (clock passed in) that kicks that worker.
 */
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ExpiryScanner } from '../../src/expiry/scanner.js';
import { createNotifier, Notifiers } from '../../src/integrations/index.js';
import { integrationOptions } from '../../src/integrations/types.js';
import type { Logger } from '../../src/log/logger.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';
import { createRoutingMetrics } from '../../src/routing/metrics.js';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import type { Clock } from '../../src/runtime/timers.js';
import type { Store } from '../../src/store/types.js';
import { LOOPBACK_EGRESS } from '../delivery/support.js';

/** A router of `cert-expiry-ext-notification-config` to `integrationId`, with `filter` ('' for every event). */
export async function routeExpirations(
  store: Store,
  companyId: string,
  integrationId: string,
  opts: { name: string; filter: string; at: number },
): Promise<void> {
  await store.createRouter({
    id: randomUUID(),
    companyId,
    name: opts.name,
    eventTypeId: 'cert-expiry-ext-notification-config',
    enabled: true,
    filter: opts.filter,
    integrationId,
    templateId: null,
    generation: 'ROUTER',
    ...ROUTER_POLICY_DEFAULTS,
    managedBy: null,
    createdAt: opts.at,
    updatedAt: opts.at,
  });
}

/** A started delivery worker with short retries, its sends allowed to loopback receivers. */
export function startExpiryWorker(store: Store, logger: Logger, clock?: () => number): DeliveryWorker {
  const worker = new DeliveryWorker({
    store,
    notifiers: new Notifiers((type) =>
      createNotifier(type, integrationOptions({ timeoutMs: 2_000, userAgent: 'test', egress: LOOPBACK_EGRESS })),
    ),
    logger,
    metrics: new Registry(),
    ...(clock ? { clock } : {}),
    options: { pollIntervalMs: 20, baseDelayMs: 20, maxDelayMs: 200, attemptTimeoutMs: 2_000 },
  });
  worker.start();
  return worker;
}

/** An expiry scanner over `store` whose accepted events kick `worker`. */
export function expiryScanner(
  store: Store,
  worker: DeliveryWorker,
  logger: Logger,
  clock: Clock,
  opts: { pageSize?: number; minGapMs?: number } = {},
): ExpiryScanner {
  return new ExpiryScanner({
    ...(opts.minGapMs !== undefined ? { minGapMs: opts.minGapMs } : {}),
    ...(opts.pageSize !== undefined ? { pageSize: opts.pageSize } : {}),
    store,
    ingest: {
      snapshots: new RoutingSnapshots(store),
      metrics: createRoutingMetrics(new Registry()),
      log: logger,
      deliverySignal: { notify: () => worker.kick() },
    },
    log: logger,
    clock,
  });
}
