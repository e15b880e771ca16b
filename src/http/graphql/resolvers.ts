/**
 * GraphQL root resolvers. Thin: argument shaping and view mapping; rules live in src/service/.
 * Views never carry secrets.
 */
import { formatInterval } from '../../validation/interval.js';
import { EVENT_FAMILIES, familyOf, familyOfType } from '../../events/families.js';
import { descriptorOf, INTEGRATIONS } from '../../integrations/registry.js';
import type { IntegrationRecord, RouterRecord } from '../../store/types.js';
import type { ServiceContext } from '../../service/context.js';
import * as integrations from '../../service/integrations.js';
import { rateLimitView } from '../../service/rate-limits.js';
import * as routers from '../../service/routers.js';
import * as deliveries from '../../service/deliveries.js';
import type { CertificatePlace, ClusterRecord, DeliveryRecord, ListedCertificate, ServingEndpointRecord } from '../../store/types.js';
import { byWorst, worstServingStatus } from '../../inventory/serving.js';
import { SERVING_LIMITS } from '../../model/serving.js';
import * as inventory from '../../service/inventory.js';
import * as templates from '../../service/templates.js';
import { TEMPLATE_PART_KEYS, type TemplateRecord } from '../../model/records.js';
import * as silences from '../../service/silences.js';
import { effectiveEnd, silenceState } from '../../silences/decide.js';
import type { SilenceRecord } from '../../store/types.js';
import { ServiceError } from '../../model/errors.js';
import * as consoleOps from '../../service/console.js';
import type { EventRecord, UnhealthyResourceRecord } from '../../store/types.js';

const iso = (ms: number) => new Date(ms).toISOString();

function integrationView(r: IntegrationRecord) {
  return {
    id: r.id,
    name: r.name,
    enabled: r.enabled,
    type: r.type,
    emailTo: r.type === 'EMAIL' ? (r.config.to as string[]) : null,
    emailFrom: r.type === 'EMAIL' ? ((r.config.from as string | undefined) ?? null) : null,
    webhookSigned: r.type === 'WEBHOOK' || r.type === 'GENERIC_WEBHOOK' ? Boolean(r.config.signed) : null,
    managedBy: r.managedBy,
    rateLimit: rateLimitView(r.rateLimit, descriptorOf(r.type)?.rateLimit ?? { ratePerSec: 0, burst: 1 }),
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
  };
}

function eventTypeView(id: RouterRecord['eventTypeId']) {
  const f = familyOf(id);
  return { id: f.eventTypeId, displayName: f.displayName, types: f.types };
}

function routerView(r: RouterRecord) {
  return {
    id: r.id,
    name: r.name,
    enabled: r.enabled,
    eventType: eventTypeView(r.eventTypeId),
    notificationRouterFilterConfig: { advancedFilterExpression: r.filter },
    notificationRouterIntegrationConfig: {
      notificationRouterIntegrationID: r.integrationId,
      notificationRouterTemplateID: r.templateId,
    },
    notificationRouterPolicyConfig: {
      groupBy: r.groupBy,
      groupWait: formatInterval(r.groupWaitMs),
      groupInterval: formatInterval(r.groupIntervalMs),
      repeatInterval: r.repeatIntervalMs === null ? null : formatInterval(r.repeatIntervalMs),
      holdUnderIssuer: r.holdUnderIssuer,
    },
    generation: r.generation,
    managedBy: r.managedBy,
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
  };
}

function templateView(t: TemplateRecord) {
  const part = (k: (typeof TEMPLATE_PART_KEYS)[number]) => {
    const p = t.parts[k];
    return p ? { title: p.title ?? null, text: p.text ?? null, body: p.body ?? null } : null;
  };
  return {
    id: t.id,
    name: t.name,
    parts: Object.fromEntries(TEMPLATE_PART_KEYS.map((k) => [k, part(k)])),
    managedBy: t.managedBy,
    createdAt: iso(t.createdAt),
    updatedAt: iso(t.updatedAt),
  };
}

function deliveryView(d: DeliveryRecord, ctx: ServiceContext) {
  const open = d.status === 'PENDING' || d.status === 'IN_FLIGHT';
  return {
    id: d.id,
    status: d.status,
    attempts: d.attempts,
    lastError: d.lastError,
    lastStatusCode: d.lastStatusCode,
    nextAttemptAt: open ? iso(d.nextAttemptAt) : null,
    createdAt: iso(d.createdAt),
    updatedAt: iso(d.updatedAt),
    deliveredAt: d.deliveredAt === null ? null : iso(d.deliveredAt),
    routerId: d.routerId,
    routerName: d.routerName,
    integrationId: d.integrationId,
    reminder: d.reminder,
    silenceId: d.silenceId,
    event: async () => {
      const e = await ctx.store.getEvent(ctx.companyId, d.eventId);
      if (!e) return null;
      const { kind, namespace, name, cluster } = consoleOps.resourceOf(e);
      return { id: e.id, type: e.type, receivedAt: iso(e.receivedAt), resource: { kind, namespace, name, cluster } };
    },
    integration: async () => {
      const i = await ctx.store.getIntegration(ctx.companyId, d.integrationId);
      return i ? integrationView(i) : null;
    },
  };
}

function clusterView(c: ClusterRecord, ctx: ServiceContext, now: number) {
  return {
    id: c.id,
    name: c.name,
    agentVersion: c.agentVersion,
    firstSeenAt: iso(c.firstSeenAt),
    lastSeenAt: iso(c.lastSeenAt),
    silent: inventory.isSilent(c, now, ctx.clusterSilenceAfterMs ?? inventory.DEFAULT_CLUSTER_SILENCE_AFTER_MS),
    snapshotComplete: c.snapshotComplete,
    certificateCount: c.certificateCount,
  };
}

const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

function silenceView(s: SilenceRecord, now: number) {
  return {
    id: s.id,
    matcher: s.matcher,
    eventTypeId: s.eventTypeId,
    eventTypeIds: s.eventTypeId !== null ? [s.eventTypeId] : s.eventTypeIds,
    startsAt: iso(s.startsAt),
    endsAt: iso(s.endsAt),
    comment: s.comment,
    createdBy: s.createdBy,
    managedBy: s.managedBy,
    state: silenceState(s, now),
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
    expiredAt: isoOrNull(s.expiredAt),
  };
}

/** The places of a page's certificates, read in one query when the first node's `places` is resolved. */
function placesLoader(ctx: ServiceContext, page: ListedCertificate[]) {
  let loaded: Promise<Map<string, CertificatePlace[]>> | undefined;
  const key = (issuer: string, serial: string) => `${issuer}\u0000${serial}`;
  const load = async () => {
    const certs = page.flatMap((c) => (c.issuer !== null && c.serial !== null ? [{ issuer: c.issuer, serial: c.serial }] : []));
    const rows = await ctx.store.listCertificatePlaces(ctx.companyId, certs, inventory.MAX_PLACES);
    const m = new Map<string, CertificatePlace[]>();
    for (const r of rows) {
      const list = m.get(key(r.issuer, r.serial)) ?? [];
      if (list.length < inventory.MAX_PLACES) list.push(r);
      m.set(key(r.issuer, r.serial), list);
    }
    return m;
  };
  return async (c: ListedCertificate) => {
    if (c.issuer === null || c.serial === null)
      return [{ clusterId: c.clusterId, clusterName: c.clusterName, namespace: c.namespace, secretName: c.secretName }];
    return ((await (loaded ??= load())).get(key(c.issuer, c.serial)) ?? []).map((p) => ({
      clusterId: p.clusterId,
      clusterName: p.clusterName,
      namespace: p.namespace,
      secretName: p.secretName,
    }));
  };
}

function servingEndpointView(e: ServingEndpointRecord) {
  return {
    host: e.host,
    address: e.address,
    source: e.source,
    status: inventory.servingStatusName(e.status),
    reason: e.reason,
    servedSerial: e.servedSerial,
    servedNotAfter: isoOrNull(e.servedNotAfter),
    checkedAt: isoOrNull(e.checkedAt),
  };
}

function certificateView(c: ListedCertificate, now: number, places: (c: ListedCertificate) => Promise<unknown[]>) {
  const worst = worstServingStatus(c.serving);
  return {
    places: async (a: { first?: number | null }) => {
      const first = a.first ?? inventory.MAX_PLACES;
      if (!Number.isInteger(first) || first < 1 || first > inventory.MAX_PLACES)
        throw new ServiceError('BAD_USER_INPUT', `places(first:) must be between 1 and ${inventory.MAX_PLACES}`, 'first');
      return (await places(c)).slice(0, first);
    },
    clusterId: c.clusterId,
    clusterName: c.clusterName,
    namespace: c.namespace,
    secretName: c.secretName,
    certificateName: c.certificateName,
    certificateUid: c.certificateUid,
    serial: c.serial,
    notBefore: isoOrNull(c.notBefore),
    notAfter: isoOrNull(c.notAfter),
    daysUntilExpiry: inventory.daysUntilExpiry(c.notAfter, now),
    subject: c.subject,
    commonName: c.commonName,
    dnsNames: c.dnsNames,
    issuer: c.issuer,
    issuerRef: c.issuerRef,
    readyStatus: c.readyStatus,
    readyReason: c.readyReason,
    health: inventory.healthOf(c.readyStatus),
    applicationIds: c.applicationIds,
    labels: c.labels,
    chainNotAfter: isoOrNull(c.chainNotAfter),
    updatedAt: iso(c.updatedAt),
    serving: (a: { first?: number | null }) => {
      const first = a.first ?? SERVING_LIMITS.endpoints;
      if (!Number.isInteger(first) || first < 1 || first > SERVING_LIMITS.endpoints)
        throw new ServiceError('BAD_USER_INPUT', `serving(first:) must be between 1 and ${SERVING_LIMITS.endpoints}`, 'first');
      return byWorst(c.serving ?? [])
        .slice(0, first)
        .map(servingEndpointView);
    },
    servingStatus: worst === null ? null : inventory.servingStatusName(worst),
    servingEndpointCount: c.serving?.length ?? 0,
  };
}

function storedEventView(e: EventRecord) {
  return { id: e.id, type: e.type, data: e.data, receivedAt: iso(e.receivedAt) };
}

function unhealthyView(r: UnhealthyResourceRecord, ctx: ServiceContext) {
  return {
    ...consoleOps.resourceOf(r.event),
    type: r.event.type,
    since: iso(r.since),
    latestEvent: storedEventView(r.event),
    // read only when selected: one query per resource (the cost model counts them, cost.ts)
    deliveries: async () => (await consoleOps.streakDeliveries(ctx, r)).map((d) => deliveryView(d, ctx)),
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- GraphQL validated the arguments against the schema
type Args = Record<string, any>;
type Resolver = (args: Args, ctx: ServiceContext) => unknown;

const connection = <T>(nodes: T[]) => ({ nodes, totalCount: nodes.length });

/**
 * One create mutation per integration type, from the registry (the SDL names them; a drift test keeps the two
 * equal). The input goes to the service as sent (a flat one, WEBHOOK's url and signingSecret at the top, too), so
 * a refusal names the field the client sent.
 */
function createIntegrationResolvers(): Record<string, Resolver> {
  const out: Record<string, Resolver> = {};
  for (const d of Object.values(INTEGRATIONS)) {
    out[d.api.createMutation] = async (a, ctx) => integrationView(await integrations.createIntegration(ctx, d.type, a.input));
  }
  return out;
}

export const rootValue: Record<string, Resolver> = {
  // queries
  integrations: async (_a, ctx) => connection((await integrations.listIntegrations(ctx)).map(integrationView)),
  integration: async (a, ctx) => {
    const r = await ctx.store.getIntegration(ctx.companyId, a.id);
    return r ? integrationView(r) : null;
  },
  searchNotificationRoutingConfigurations: async (_a, ctx) => connection((await routers.listRouters(ctx)).map(routerView)),
  notificationRouter: async (a, ctx) => {
    const r = await ctx.store.getRouter(ctx.companyId, a.id);
    return r ? routerView(r) : null;
  },
  eventTypes: () => EVENT_FAMILIES.map((f) => eventTypeView(f.eventTypeId)),
  clusters: async (a, ctx) => {
    const now = ctx.now();
    const page = await inventory.listClusters(ctx, a);
    const last = page.nodes.at(-1);
    return {
      nodes: page.nodes.map((c) => clusterView(c, ctx, now)),
      pageInfo: { hasNextPage: page.hasNextPage, endCursor: last ? last.id : null },
    };
  },
  certificates: async (a, ctx) => {
    const now = ctx.now();
    const page = await inventory.listCertificates(ctx, inventory.certificateFilter(a.filter, now), a);
    const last = page.nodes.at(-1);
    const places = placesLoader(ctx, page.nodes);
    return {
      nodes: page.nodes.map((c) => certificateView(c, now, places)),
      pageInfo: { hasNextPage: page.hasNextPage, endCursor: last ? inventory.encodeCertificateCursor(last) : null },
    };
  },
  deliveries: async (a, ctx) => {
    const page = await deliveries.listDeliveries(ctx, a);
    const last = page.nodes[page.nodes.length - 1];
    return {
      nodes: page.nodes.map((d) => deliveryView(d, ctx)),
      pageInfo: { hasNextPage: page.hasNextPage, endCursor: last ? deliveries.encodeDeliveryCursor(last) : null },
    };
  },
  simulateRouting: async (a, ctx) => {
    const sim = await deliveries.simulateRouting(ctx, a.event);
    return {
      eventType: sim.event.type,
      eventTypeId: eventTypeView(familyOfType(sim.event.type).eventTypeId).id,
      monitored: sim.monitored,
      routers: sim.decisions.map((d) => ({
        router: routerView(d.router),
        wouldNotify: d.verdict === 'MATCHED',
        verdict: d.verdict,
        error: d.error ?? null,
        rendered: d.rendered
          ? {
              title: d.rendered.title ?? null,
              text: d.rendered.text ?? null,
              body: d.rendered.body ?? null,
              error: d.rendered.error ?? null,
            }
          : null,
        silencedBy: d.silence ? { id: d.silence.id, comment: d.silence.comment, endsAt: iso(effectiveEnd(d.silence)) } : null,
      })),
    };
  },
  silences: async (a, ctx) => {
    const now = ctx.now();
    const page = await silences.listSilences(ctx, a);
    const last = page.nodes.at(-1);
    return {
      nodes: page.nodes.map((s) => silenceView(s, now)),
      pageInfo: { hasNextPage: page.hasNextPage, endCursor: last ? silences.encodeSilenceCursor(last) : null },
    };
  },
  silence: async (a, ctx) => {
    const s = await silences.getSilence(ctx, a.id);
    return s ? silenceView(s, ctx.now()) : null;
  },
  createSilence: async (a, ctx) => silenceView(await silences.createSilence(ctx, a.input), ctx.now()),
  expireSilence: async (a, ctx) => silenceView(await silences.expireSilence(ctx, a.id), ctx.now()),
  updateSilence: async (a, ctx) => silenceView(await silences.updateSilence(ctx, a.id, a.input), ctx.now()),
  // the console
  viewer: (_a, ctx) => consoleOps.viewer(ctx),
  validateFilter: (a) => consoleOps.validateFilter(a.eventTypeId, a.expression),
  events: async (a, ctx) => {
    const page = await consoleOps.listEvents(ctx, a);
    const last = page.nodes.at(-1);
    return {
      nodes: page.nodes.map(storedEventView),
      pageInfo: { hasNextPage: page.hasNextPage, endCursor: last ? consoleOps.encodeEventCursor(last) : null },
    };
  },
  unhealthyResources: async (a, ctx) => {
    const page = await consoleOps.listUnhealthyResources(ctx, a);
    const last = page.nodes.at(-1);
    return {
      nodes: page.nodes.map((r) => unhealthyView(r, ctx)),
      pageInfo: { hasNextPage: page.hasNextPage, endCursor: last ? consoleOps.encodeUnhealthyCursor(last) : null },
    };
  },
  retryDelivery: async (a, ctx) => deliveryView(await consoleOps.retryDelivery(ctx, a.id), ctx),
  testIntegration: async (a, ctx) => {
    const r = await deliveries.testIntegration(ctx, a.id);
    // responseBody stays in the schema for old clients but is always null: receivers' answers are not reflected.
    return { outcome: r.outcome, statusCode: r.statusCode ?? null, error: r.error ?? null, responseBody: null, latencyMs: r.latencyMs };
  },

  // integrations
  ...createIntegrationResolvers(),
  updateIntegration: async (a, ctx) => integrationView(await integrations.updateIntegration(ctx, a.id, a.input)),
  deleteIntegrations: async (a, ctx) => ({ ids: await integrations.deleteIntegrations(ctx, a.ids) }),
  deleteClusters: async (a, ctx) => ({ ids: await inventory.deleteClusters(ctx, a.ids) }),

  // notification templates
  notificationTemplates: async (_a, ctx) => connection((await templates.listTemplates(ctx)).map(templateView)),
  notificationTemplate: async (a, ctx) => {
    const t = await templates.getTemplate(ctx, a.id);
    return t ? templateView(t) : null;
  },
  createNotificationTemplate: async (a, ctx) => templateView(await templates.createTemplate(ctx, a.input)),
  updateNotificationTemplate: async (a, ctx) => templateView(await templates.updateTemplate(ctx, a.id, a.input)),
  deleteNotificationTemplates: async (a, ctx) => ({ ids: await templates.deleteTemplates(ctx, a.ids) }),
  previewNotificationTemplate: async (a, ctx) => {
    const r = await templates.previewTemplate(ctx, a.parts, a.event, a.integrationType);
    return { title: r.title ?? null, text: r.text ?? null, body: r.body ?? null, error: r.error ?? null };
  },

  // routers, current generation
  createNotificationRouter: async (a, ctx) =>
    routerView(
      await routers.createRouter(
        ctx,
        'ROUTER',
        {
          name: a.details.name,
          eventTypeId: a.details.eventTypeId,
          enabled: a.details.enabled,
          managedBy: a.details.managedBy,
          advancedFilterExpression: a.filterConfig.advancedFilterExpression,
          integrationId: a.integrationConfig.integrationId,
          templateId: a.integrationConfig.templateId,
          ...(a.policyConfig ?? {}),
        },
        {
          name: 'details.name',
          eventTypeId: 'details.eventTypeId',
          enabled: 'details.enabled',
          filter: 'filterConfig.advancedFilterExpression',
          integrationId: 'integrationConfig.integrationId',
          templateId: 'integrationConfig.templateId',
          policy: 'policyConfig',
        },
      ),
    ),
  updateNotificationRouter: async (a, ctx) =>
    routerView(
      await routers.updateRouter(
        ctx,
        'ROUTER',
        a.id,
        a.updateNotificationRouterConfigurationInput,
        'updateNotificationRouterConfigurationInput',
      ),
    ),
  deleteNotificationRouter: async (a, ctx) => ({ ids: await routers.deleteRouters(ctx, a.ids ?? []) }),

  // routers, older generation
  createNotificationRoutingConfiguration: async (a, ctx) =>
    routerView(
      await routers.createRouter(ctx, 'ROUTING_CONFIGURATION', a as routers.NewRouterInput, {
        name: 'name',
        eventTypeId: 'eventTypeId',
        enabled: 'enabled',
        filter: 'advancedFilterExpression',
        integrationId: 'integrationId',
        templateId: 'templateId',
        policy: '',
      }),
    ),
  updateNotificationRoutingConfiguration: async (a, ctx) =>
    routerView(await routers.updateRouter(ctx, 'ROUTING_CONFIGURATION', a.id, { enabled: a.enabled }, 'enabled')),
};
