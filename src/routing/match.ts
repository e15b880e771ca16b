/**
 * Pure routing decisions: which routers fire for an event, and why the others don't.
 * An event matches a router when the router is enabled, binds the event's family, its integration exists, is
 * enabled and belongs to the same company, the event is monitored (expiration events) and the filter evaluates
 * to exactly true (an empty filter matches).
 */
import { familyOf, familyOfType, type EventTypeId, type InternalEvent } from '../events/families.js';
import type { IntegrationRecord, MonitoringConfigRecord, RouterRecord } from '../model/records.js';
import { isMonitored } from '../model/monitoring.js';
import type { CompiledRouter } from './compiled-router.js';
import type { CompiledSilence } from '../silences/decide.js';
import { buildPrefilterIndex, buildPrefilterIndexSliced, type PrefilterIndex } from './index-prefilter.js';
import type { TimeSlicer } from './slicer.js';

export type Verdict =
  'MATCHED' | 'ROUTER_DISABLED' | 'INTEGRATION_MISSING' | 'INTEGRATION_DISABLED' | 'NOT_MONITORED' | 'FILTER_FALSE' | 'FILTER_ERROR';

export interface RouterDecision {
  router: RouterRecord;
  verdict: Verdict;
  /** Filter evaluation error (or compile error), when verdict is FILTER_ERROR. */
  error?: string;
}

export interface RoutingSnapshot {
  companyId: string;
  /** Routers of the company, by family: the cost of routing grows with the family's routers only. */
  byFamily: ReadonlyMap<EventTypeId, readonly CompiledRouter[]>;
  integrations: ReadonlyMap<string, IntegrationRecord>;
  monitoring: Pick<MonitoringConfigRecord, 'enabled' | 'applicationIds' | 'includeUnassignedCertificates'>;
  /** Silences not ended when the snapshot was built; their state is decided at each event's time. */
  silences?: readonly CompiledSilence[];
}

const EXPIRATION_FAMILY: EventTypeId = 'cert-expiry-ext-notification-config';

/** Whether the event may notify at all under the monitoring configuration (expiration events only). */
export function eventMonitored(event: InternalEvent, monitoring: RoutingSnapshot['monitoring']): boolean {
  if (familyOfType(event.type).eventTypeId !== EXPIRATION_FAMILY) return true;
  const apps = Array.isArray(event.data.applicationIds) ? (event.data.applicationIds as string[]) : [];
  return isMonitored(monitoring, apps);
}

/** The verdict that does not depend on the event (router or integration unusable), if any. */
function staticVerdict(record: RouterRecord, snap: RoutingSnapshot): Verdict | undefined {
  if (!record.enabled) return 'ROUTER_DISABLED';
  const integ = snap.integrations.get(record.integrationId);
  if (!integ || integ.companyId !== record.companyId) return 'INTEGRATION_MISSING';
  if (!integ.enabled) return 'INTEGRATION_DISABLED';
  return undefined;
}

/** The filter's verdict for a router that passed every other check. */
function filterDecision({ record, filter, compileError }: CompiledRouter, event: InternalEvent): RouterDecision {
  if (!filter) return { router: record, verdict: 'FILTER_ERROR', error: compileError ?? 'filter does not compile' };
  const r = filter.evaluate(event);
  if (r.error !== undefined) return { router: record, verdict: 'FILTER_ERROR', error: r.error };
  return { router: record, verdict: r.matched ? 'MATCHED' : 'FILTER_FALSE' };
}

/** Every router of the event's family with its verdict, one at a time (each may evaluate a filter). */
function* eachDecision(event: InternalEvent, snap: RoutingSnapshot): Generator<RouterDecision, void> {
  const family = familyOfType(event.type).eventTypeId;
  const routers = snap.byFamily.get(family) ?? [];
  const monitored = eventMonitored(event, snap.monitoring);
  for (const cr of routers) {
    const verdict = staticVerdict(cr.record, snap);
    if (verdict) yield { router: cr.record, verdict };
    else if (!monitored) yield { router: cr.record, verdict: 'NOT_MONITORED' };
    else yield filterDecision(cr, event);
  }
}

/** Every router of the event's family with its verdict (simulateRouting shows these). Evaluates every filter. */
export function decideRouters(event: InternalEvent, snap: RoutingSnapshot): RouterDecision[] {
  return [...eachDecision(event, snap)];
}

/** decideRouters in time slices: yields to the event loop between evaluations (simulateRouting). */
export async function decideRoutersSliced(event: InternalEvent, snap: RoutingSnapshot, slicer: TimeSlicer): Promise<RouterDecision[]> {
  const out: RouterDecision[] = [];
  for (const d of eachDecision(event, snap)) {
    out.push(d);
    if (slicer.due()) await slicer.yield();
  }
  return out;
}

/** The decisions of the prefilter index's candidates, one evaluation at a time. */
function* eachCandidateDecision(event: InternalEvent, snap: RoutingSnapshot): Generator<RouterDecision, void> {
  if (!eventMonitored(event, snap.monitoring)) return;
  const index = routingIndex(snap, familyOfType(event.type).eventTypeId);
  for (const i of index.candidates(event)) {
    const cr = index.routers[i];
    if (cr) yield filterDecision(cr, event);
  }
}

type Matches = { matched: RouterRecord[]; errors: RouterDecision[] };

function collect(matches: Matches, d: RouterDecision): void {
  if (d.verdict === 'MATCHED') matches.matched.push(d.router);
  else if (d.verdict === 'FILTER_ERROR') matches.errors.push(d);
}

/**
 * The routers that fire, and the filter errors met on the way (no notification; counted and logged), in the
 * family's router order. The hot path: evaluates only the prefilter index's candidates, with the same result
 * as keeping the MATCHED and FILTER_ERROR decisions of decideRouters.
 */
export function matchRouters(event: InternalEvent, snap: RoutingSnapshot): Matches {
  const m: Matches = { matched: [], errors: [] };
  for (const d of eachCandidateDecision(event, snap)) collect(m, d);
  return m;
}

/** matchRouters in time slices: yields to the event loop between evaluations (event ingestion). */
export async function matchRoutersSliced(event: InternalEvent, snap: RoutingSnapshot, slicer: TimeSlicer): Promise<Matches> {
  const m: Matches = { matched: [], errors: [] };
  for (const d of eachCandidateDecision(event, snap)) {
    collect(m, d);
    if (slicer.due()) await slicer.yield();
  }
  return m;
}

/** Prefilter indexes by snapshot (snapshots are immutable; a configuration change makes a new one). */
const indexes = new WeakMap<RoutingSnapshot, Map<EventTypeId, PrefilterIndex>>();

/** The prefilter index of a family's routers in a snapshot, built on first use (RoutingSnapshots builds it on load). */
export function routingIndex(snap: RoutingSnapshot, family: EventTypeId): PrefilterIndex {
  let byFamily = indexes.get(snap);
  if (!byFamily) indexes.set(snap, (byFamily = new Map()));
  let index = byFamily.get(family);
  if (!index) {
    const include = (cr: CompiledRouter) => staticVerdict(cr.record, snap) === undefined;
    index = buildPrefilterIndex(snap.byFamily.get(family) ?? [], familyOf(family).types, include);
    byFamily.set(family, index);
  }
  return index;
}

/** routingIndex in time slices: builds the family's index, yielding between routers, unless it is built already. */
export async function buildRoutingIndexSliced(snap: RoutingSnapshot, family: EventTypeId, slicer: TimeSlicer): Promise<void> {
  let byFamily = indexes.get(snap);
  if (!byFamily) indexes.set(snap, (byFamily = new Map()));
  if (byFamily.has(family)) return;
  const include = (cr: CompiledRouter) => staticVerdict(cr.record, snap) === undefined;
  const index = await buildPrefilterIndexSliced(snap.byFamily.get(family) ?? [], familyOf(family).types, include, slicer);
  // a synchronous routingIndex call meanwhile built the same index: keep the one already in use
  if (!byFamily.has(family)) byFamily.set(family, index);
}

/** Per snapshot and family: the silences that apply to the family and a prefilter index over their matchers. */
const silenceIndexes = new WeakMap<RoutingSnapshot, Map<EventTypeId, { silences: CompiledSilence[]; index: PrefilterIndex }>>();

/**
 * The snapshot's silences whose matcher may be true for the event: the same prefilter index as the
 * routers', so an event is checked against the few silences that can match it, not all of the company's
 * (silenceFor over these gives the same answer as over all: the others evaluate to exactly false).
 */
export function silenceCandidates(snap: RoutingSnapshot, event: { type: string; data: unknown }): CompiledSilence[] {
  if (!snap.silences?.length) return [];
  const family = familyOfType(event.type as InternalEvent['type']).eventTypeId;
  let byFamily = silenceIndexes.get(snap);
  if (!byFamily) silenceIndexes.set(snap, (byFamily = new Map()));
  let entry = byFamily.get(family);
  if (!entry) {
    const silences = snap.silences.filter((s) => s.matchers.has(family));
    // the index reads only `filter`; a silence is not a router, its record is never looked at
    const asRouters = silences.map((s) => ({ record: s.record as unknown as RouterRecord, filter: s.matchers.get(family) ?? null }));
    entry = { silences, index: buildPrefilterIndex(asRouters, familyOf(family).types) };
    byFamily.set(family, entry);
  }
  const list = entry.silences;
  return entry.index.candidates(event).map((i) => list[i]!);
}
