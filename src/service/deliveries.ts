/** Operating deliveries: listing, routing simulation and test sends. */
import type { InternalEvent } from '../events/families.js';
import { validateEvent } from '../events/schemas.js';
import { decideRoutersSliced, eventMonitored, silenceCandidates, type RouterDecision, type RoutingSnapshot } from '../routing/match.js';
import type { Notification } from '../integrations/types.js';
import { compileTemplate, renderTemplate, TemplateRenderError } from '../templates/engine.js';
import { templateVariables } from '../templates/variables.js';
import { TimeSlicer } from '../routing/slicer.js';
import type { DeliveryFilter, DeliveryRecord, DeliveryStatus, SilenceRecord } from '../store/types.js';
import { orderOfEvent } from '../delivery/order.js';
import { silenceFor, silenceVerdict } from '../silences/decide.js';
import type { ServiceContext, ServiceRuntime } from './context.js';
import { ServiceError, ValidationErrors } from '../model/errors.js';
import { getIntegration, requireDeliverable } from './integrations.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { isUuid, requirePageSize } from './validate.js';

function runtimeOf(ctx: ServiceContext): ServiceRuntime {
  if (!ctx.runtime) throw new ServiceError('BAD_USER_INPUT', 'event routing and delivery are not running in this process');
  return ctx.runtime;
}

export const encodeDeliveryCursor = (d: Pick<DeliveryRecord, 'createdAt' | 'id'>): string => encodeCursor(d.createdAt, d.id);

export async function listDeliveries(
  ctx: ServiceContext,
  args: {
    filter?: { integrationId?: string | null; status?: DeliveryStatus | null; eventId?: string | null } | null;
    first?: number | null;
    after?: string | null;
  },
): Promise<{ nodes: DeliveryRecord[]; hasNextPage: boolean }> {
  const first = requirePageSize(args.first, 50);
  const f: DeliveryFilter = { limit: first + 1 };
  if (args.filter?.integrationId) f.integrationId = args.filter.integrationId;
  if (args.filter?.status) f.status = args.filter.status;
  if (args.filter?.eventId) f.eventId = args.filter.eventId;
  if (args.after) {
    const c = decodeCursor(args.after, 'deliveries', isUuid);
    f.before = { createdAt: c.n, id: c.text };
  }
  const rows = await ctx.store.listDeliveries(ctx.companyId, f);
  return { nodes: rows.slice(0, first), hasNextPage: rows.length > first };
}

/** A MATCHED router's template, rendered for its integration (or why not). */
export interface SimulatedRender {
  title?: string;
  text?: string;
  body?: string;
  error?: string;
}

export interface Simulation {
  event: InternalEvent;
  monitored: boolean;
  /** MATCHED decisions a silence would mute carry verdict SILENCED and the silence; matched ones their rendered template. */
  decisions: (Omit<RouterDecision, 'verdict'> & {
    verdict: RouterDecision['verdict'] | 'SILENCED';
    silence?: SilenceRecord;
    rendered?: SimulatedRender;
  })[];
}

/** Templates rendered per simulateRouting call at most (each render is bounded; this bounds their number). */
const MAX_SIMULATED_RENDERS = 10;

/** The MATCHED routers' templates rendered as the worker would (first MAX_SIMULATED_RENDERS of them). */
async function renderSimulated(ctx: ServiceContext, event: InternalEvent, snap: RoutingSnapshot, decisions: Simulation['decisions']) {
  let budget = MAX_SIMULATED_RENDERS;
  const now = ctx.now();
  const out: Simulation['decisions'] = [];
  for (const d of decisions) {
    const integration = snap.integrations.get(d.router.integrationId);
    if (d.verdict !== 'MATCHED' || !d.router.templateId || !integration) {
      out.push(d);
      continue;
    }
    if (budget-- <= 0) {
      out.push({ ...d, rendered: { error: `not rendered: at most ${MAX_SIMULATED_RENDERS} templates per simulation` } });
      continue;
    }
    const t = await ctx.store.getTemplate(ctx.companyId, d.router.templateId);
    const compiled = t ? compileTemplate(t.parts) : undefined;
    if (!compiled?.ok) {
      out.push({ ...d, rendered: { error: t ? 'the stored template does not compile' : 'the template no longer exists' } });
      continue;
    }
    const n: Notification = {
      id: ctx.newId(),
      eventId: ctx.newId(),
      event,
      occurredAt: now,
      router: { id: d.router.id, name: d.router.name },
      integration,
      attempt: 1,
    };
    try {
      out.push({
        ...d,
        rendered: await renderTemplate(compiled.template, integration.type, templateVariables(n, { publicUrl: ctx.runtime?.publicUrl })),
      });
    } catch (err) {
      out.push({ ...d, rendered: { error: err instanceof TemplateRenderError ? err.message : 'render failed' } });
    }
  }
  return out;
}

export async function simulateRouting(ctx: ServiceContext, input: unknown): Promise<Simulation> {
  const rt = runtimeOf(ctx);
  const v = validateEvent(input);
  if (!v.ok)
    throw new ValidationErrors(
      v.errors.map((e) => ({ code: 'BAD_USER_INPUT', field: `event.${e.path}`, message: `event.${e.path} ${e.message}` })),
    );
  // the stored configuration, from the shared snapshot: invalidating it here made every call reload and
  // recompile all of the company's routers (and a tenant could keep the cache churning with it)
  const snap = await rt.snapshots.current(ctx.companyId);
  // Evaluates every router of the family: in time slices, like event ingestion.
  const decisions: Simulation['decisions'] = await decideRoutersSliced(v.event, snap, new TimeSlicer());
  // Step 1 of ingestion (silences), with the recovery exception read from the deliveries as they are now.
  const now = ctx.now();
  const match = snap.silences?.length ? silenceFor(v.event, silenceCandidates(snap, v.event), now) : null;
  if (match?.silence) {
    const order = orderOfEvent(v.event, now, 0);
    // one read per integration (at most the integrations quota), whatever the number of routers
    const previousOf = new Map<string, Promise<string | null>>();
    const previousFor = (integrationId: string) => {
      let p = previousOf.get(integrationId);
      if (!p) {
        p = ctx.store
          .previousDelivery(ctx.companyId, integrationId, order.orderKey, { ...order, id: 'ffffffff' })
          .then((x) => x?.status ?? null);
        previousOf.set(integrationId, p);
      }
      return p;
    };
    for (const [i, d] of decisions.entries()) {
      if (d.verdict !== 'MATCHED') continue;
      const previous = v.event.type.endsWith('.active') ? await previousFor(d.router.integrationId) : null;
      const silence = silenceVerdict(v.event.type, match.silence, previous);
      if (silence) decisions[i] = { ...d, verdict: 'SILENCED', silence };
    }
  }
  return {
    event: v.event,
    monitored: eventMonitored(v.event, snap.monitoring),
    decisions: await renderSimulated(ctx, v.event, snap, decisions),
  };
}

/** A realistic issuer-unhealthy event used by testIntegration. */
function testEvent(now: number): InternalEvent {
  return {
    type: 'evt.healthstatus.certmgr-issuer.notready',
    data: {
      clusterId: '00000000-0000-4000-8000-000000000000',
      clusterName: 'certmgr-notify-test',
      issuerName: 'test-issuer',
      namespace: 'certmgr-notify',
      resourceId: '00000000-0000-4000-8000-000000000000',
      statusMessage: 'This is a test notification from certmgr-notify; no action is needed.',
      statusReason: 'TestNotification',
      statusTransition: new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    },
  };
}

/** What testIntegration tells the caller: never the receiver's body or reason phrase (no reflection). */
export interface IntegrationTestResult {
  outcome: 'delivered' | 'retry' | 'dead';
  statusCode?: number;
  error?: string;
  latencyMs: number;
}

/**
 * Sends a test notification now, within the integration's rate limit (shared with the delivery
 * worker): past it nothing is sent and the result says when to try again, so a request with
 * 1,000 aliases of this mutation cannot turn into 1,000 outbound requests.
 */
export async function testIntegration(ctx: ServiceContext, id: string): Promise<IntegrationTestResult> {
  const rt = runtimeOf(ctx);
  const integ = await getIntegration(ctx, id);
  requireDeliverable(ctx, integ.type, 'id');
  const now = ctx.now();
  // the integration's own limit, except unlimited: test sends keep its type's, so aliases cannot multiply them
  const own = integ.rateLimit && integ.rateLimit.ratePerSec > 0 ? integ.rateLimit : null;
  const wait = rt.rateLimiter.take(integ.id, integ.type, now, undefined, { limit: own });
  if (wait > 0) {
    const l = rt.rateLimiter.effective(integ.type, own);
    return {
      outcome: 'retry',
      error: `not sent: the rate limit of this integration (${l.ratePerSec}/s, burst ${l.burst}) is reached; try again in ${wait} ms`,
      latencyMs: 0,
    };
  }
  const started = process.hrtime.bigint();
  const res = await rt.notifiers.of(integ.type).send({
    id: ctx.newId(),
    eventId: ctx.newId(),
    event: testEvent(now),
    occurredAt: now,
    router: { id: '00000000-0000-4000-8000-000000000000', name: 'testIntegration' },
    integration: integ,
    attempt: 1,
  });
  rt.log.info({ integrationId: id, outcome: res.outcome, statusCode: res.statusCode }, 'test notification sent');
  const out: IntegrationTestResult = { outcome: res.outcome, latencyMs: Math.round(Number(process.hrtime.bigint() - started) / 1e6) };
  if (res.statusCode !== undefined) out.statusCode = res.statusCode;
  if (res.error !== undefined) out.error = res.error;
  return out;
}
