import { Counter, type Registry } from 'prom-client';

export interface RoutingMetrics {
  eventsReceived: Counter<'type'>;
  matches: Counter<'event_type_id'>;
  celErrors: Counter<'event_type_id'>;
  notMonitored: Counter;
}

export function createRoutingMetrics(registry: Registry): RoutingMetrics {
  return {
    eventsReceived: new Counter({ name: 'certmgr_notify_events_received_total', help: 'Events accepted, by type', labelNames: ['type'], registers: [registry] }),
    matches: new Counter({ name: 'certmgr_notify_router_matches_total', help: '(event, router) matches, by event type identifier', labelNames: ['event_type_id'], registers: [registry] }),
    celErrors: new Counter({ name: 'certmgr_notify_cel_evaluation_errors_total', help: 'Filter evaluations that errored (no notification)', labelNames: ['event_type_id'], registers: [registry] }),
    notMonitored: new Counter({ name: 'certmgr_notify_events_not_monitored_total', help: 'Expiration events dropped because the monitoring configuration does not monitor them', registers: [registry] }),
  };
}
