import { Counter, Gauge, type Registry } from 'prom-client';
import { interpretedFilterCount } from '../cel/index.js';
import type { RoutingCacheStats } from './snapshot.js';

export interface RoutingMetrics {
  eventsReceived: Counter<'type'>;
  matches: Counter<'event_type_id'>;
  celErrors: Counter<'event_type_id'>;
  notMonitored: Counter;
  /** (event, router) notifications recorded SILENCED. */
  silenced: Counter<'event_type_id'>;
  /** Grouping (docs/grouping.md): events past their group's member limit (counted, no member row). */
  groupMembersCapped: Counter;
}

export function createRoutingMetrics(registry: Registry): RoutingMetrics {
  return {
    eventsReceived: new Counter({
      name: 'certmgr_notify_events_received_total',
      help: 'Events accepted, by type',
      labelNames: ['type'],
      registers: [registry],
    }),
    matches: new Counter({
      name: 'certmgr_notify_router_matches_total',
      help: '(event, router) matches, by event type identifier',
      labelNames: ['event_type_id'],
      registers: [registry],
    }),
    celErrors: new Counter({
      name: 'certmgr_notify_cel_evaluation_errors_total',
      help: 'Filter evaluations that errored (no notification)',
      labelNames: ['event_type_id'],
      registers: [registry],
    }),
    silenced: new Counter({
      name: 'certmgr_notify_notifications_silenced_total',
      help: '(event, router) notifications and reminders recorded SILENCED by an active silence, by event type identifier',
      labelNames: ['event_type_id'],
      registers: [registry],
    }),
    notMonitored: new Counter({
      name: 'certmgr_notify_events_not_monitored_total',
      help: 'Expiration events dropped because the monitoring configuration does not monitor them',
      registers: [registry],
    }),
    groupMembersCapped: new Counter({
      name: 'certmgr_notify_group_members_capped_total',
      help: 'Events of new group members past the per-group member limit: counted in the group, no member row kept',
      registers: [registry],
    }),
  };
}

/** Size of the routing caches (compiled filters, snapshots), read at scrape time; evictions by reason. */
export function registerRoutingCacheMetrics(registry: Registry, stats: () => RoutingCacheStats): void {
  const caches = ['filters', 'snapshots'] as const;
  new Gauge({
    name: 'certmgr_notify_routing_cache_entries',
    help: 'Entries in a routing cache (filters: compiled filters; snapshots: companies)',
    labelNames: ['cache'],
    registers: [registry],
    collect() {
      const s = stats();
      for (const c of caches) this.set({ cache: c }, s[c].entries);
    },
  });
  new Gauge({
    name: 'certmgr_notify_routing_cache_bytes',
    help: 'Estimated heap bytes held by a routing cache',
    labelNames: ['cache'],
    registers: [registry],
    collect() {
      const s = stats();
      for (const c of caches) this.set({ cache: c }, s[c].bytes);
    },
  });
  new Gauge({
    name: 'certmgr_notify_routing_cache_companies',
    help: 'Companies with entries in a routing cache',
    labelNames: ['cache'],
    registers: [registry],
    collect() {
      const s = stats();
      for (const c of caches) this.set({ cache: c }, s[c].tenants);
    },
  });
  // src/cel counts the filters it could not compile to closures; the counter catches up at scrape time
  let interpretedSeen = 0;
  new Counter({
    name: 'certmgr_notify_cel_interpreted_filters_total',
    help: 'Filters compiled for the CEL interpreter because they use something the JavaScript compiler does not cover (uint, timestamp, duration, type values, map literals)',
    registers: [registry],
    collect() {
      const n = interpretedFilterCount();
      if (n > interpretedSeen) this.inc(n - interpretedSeen);
      interpretedSeen = n;
    },
  });
  // the caches count evictions themselves; the counter catches up with them at scrape time
  const seen = new Map<string, number>();
  new Counter({
    name: 'certmgr_notify_routing_cache_evictions_total',
    help: "Entries evicted from a routing cache, by reason (tenant_cap: the company's own cap; global_cap: the whole cache; deleted: router deleted or changed)",
    labelNames: ['cache', 'reason'],
    registers: [registry],
    collect() {
      const s = stats();
      for (const c of caches)
        for (const [reason, n] of Object.entries(s.evictions[c])) {
          const k = `${c}/${reason}`;
          const delta = n - (seen.get(k) ?? 0);
          if (delta > 0) this.inc({ cache: c, reason }, delta);
          seen.set(k, n);
        }
    },
  });
}
