/**
 * Ingestion stage route: the company's compiled router filters (routing/match.ts) evaluated in time slices; each
 * match becomes a planned delivery row. A filter that fails to evaluate is logged and sends nothing.
 */
import type { EventOrder } from '../delivery/order.js';
import type { EventTypeId, InternalEvent } from '../events/families.js';
import type { RouterRecord } from '../model/records.js';
import { eventMonitored, matchRoutersSliced } from '../routing/match.js';
import type { NewDelivery } from '../store/types.js';
import type { IngestRun } from './stage.js';

export interface Routed {
  matched: RouterRecord[];
  /** one planned row per matched router */
  deliveries: NewDelivery[];
}

export async function routeEvent(
  run: IngestRun,
  event: InternalEvent,
  eventId: string,
  family: EventTypeId,
  order: EventOrder,
): Promise<Routed> {
  const { ctx, snap, deps, now } = run;
  if (!eventMonitored(event, snap.monitoring)) deps.metrics.notMonitored.inc();
  const { matched, errors } = await matchRoutersSliced(event, snap, run.slicer);
  for (const e of errors) {
    deps.metrics.celErrors.inc({ event_type_id: family });
    if (deps.logLimiter && !deps.logLimiter.admit(deps.log, 'warn', ctx.companyId, 'filter_evaluation')) continue;
    deps.log.warn(
      { companyId: ctx.companyId, routerId: e.router.id, eventId, eventType: event.type, error: e.error },
      'filter evaluation failed; no notification',
    );
  }
  const deliveries: NewDelivery[] = matched.map((r) => ({
    id: ctx.newId(),
    companyId: ctx.companyId,
    eventId,
    routerId: r.id,
    routerName: r.name,
    integrationId: r.integrationId,
    createdAt: now,
    ...order,
  }));
  return { matched, deliveries };
}
