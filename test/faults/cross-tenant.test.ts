/**
 * Fault suite, cross-tenant: company A calls every operation that takes an id with company B's ids.
 *
 * The operations are enumerated mechanically: every GraphQL query/mutation field with an argument (or an input
 * field, recursively) of type UUID/ID, and every REST route with a path parameter. Each id slot must have an
 * entry in ID_SLOTS (which kind of object it names) and its operation a valid base in BASE, or the coverage test
 * fails: a new id-taking operation cannot go untested.
 *
 * For each slot and each of B's objects of that kind, A's call must be refused exactly as for an id that does not
 * exist (same answer once the id is replaced), must not carry any of B's data, and must change neither B's state
 * (snapshot via B's key) nor A's (no partial write for id lists mixing A's and B's ids).
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLOutputType,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MONITORING_CONFIG_PATH } from '../../src/client/operations.js';
import { createApp } from '../../src/http/app.js';
import { ApiKeyRing } from '../../src/http/auth.js';
import { buildApiSchema } from '../../src/http/graphql/schema.js';
import { pino } from 'pino';
import { issuerNotReady } from '../fixtures/events.js';
import { KEY_A, KEY_B, startTestService, type StoreKind, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- arbitrary GraphQL JSON, walked by path
type Json = any;

// ---------------------------------------------------------------------------------------------------------------
// Enumeration (pure)

const schema = buildApiSchema();
const ID_SCALARS = new Set(['UUID', 'ID']);

/** Paths (`arg.field.sub`, lists transparent) of every UUID/ID-typed argument or input field of a root field. */
export function idPaths(field: GraphQLField<unknown, unknown>): string[] {
  const out: string[] = [];
  const walk = (t: GraphQLInputType, path: string, seen: Set<string>) => {
    const named = getNamedType(t);
    if (isScalarType(named) && ID_SCALARS.has(named.name)) out.push(path);
    if (isInputObjectType(named) && !seen.has(named.name)) {
      const s = new Set(seen).add(named.name);
      for (const f of Object.values(named.getFields())) walk(f.type, `${path}.${f.name}`, s);
    }
  };
  for (const a of field.args) walk(a.type, a.name, new Set());
  return out;
}

/** `Query.integration.id`-style keys of every id slot of the schema. */
function schemaIdSlots(): { op: string; path: string; field: GraphQLField<unknown, unknown> }[] {
  const out: { op: string; path: string; field: GraphQLField<unknown, unknown> }[] = [];
  for (const root of [schema.getQueryType(), schema.getMutationType()]) {
    if (!root) continue;
    for (const f of Object.values(root.getFields()))
      for (const p of idPaths(f)) out.push({ op: `${root.name}.${f.name}`, path: p, field: f });
  }
  return out;
}

/** Every route of the express app (method-independent), with mount prefixes: `/a/:b`. */
function restRoutes(app: express.Express): string[] {
  const out: string[] = [];
  type Layer = { route?: { path: string }; rawPath?: unknown; handle?: { stack?: Layer[] } };
  const walk = (stack: Layer[], prefix: string) => {
    for (const l of stack) {
      if (l.route) out.push(prefix + l.route.path);
      else if (l.handle?.stack && typeof l.rawPath === 'string') walk(l.handle.stack, prefix + (l.rawPath === '/' ? '' : l.rawPath));
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  return out;
}

/** A selection set of every leaf reachable within `depth` object levels (fields with required args skipped). */
function selection(t: GraphQLOutputType, depth = 3): string {
  const named = getNamedType(t);
  if (!isObjectType(named)) return '';
  const parts: string[] = ['__typename'];
  for (const f of Object.values(named.getFields())) {
    if (f.args.some((a) => isNonNullType(a.type))) continue;
    if (f.deprecationReason) continue;
    const inner = getNamedType(f.type);
    if (isScalarType(inner) || isEnumType(inner)) parts.push(f.name);
    else if (depth > 0) parts.push(`${f.name} ${selection(f.type, depth - 1)}`);
  }
  return `{ ${parts.join(' ')} }`;
}

function documentFor(op: string): string {
  const [rootName, fieldName] = op.split('.') as [string, string];
  const root = rootName === 'Query' ? schema.getQueryType()! : schema.getMutationType()!;
  const f = root.getFields()[fieldName]!;
  const vars = f.args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
  const args = f.args.map((a) => `${a.name}: $${a.name}`).join(', ');
  return `${rootName === 'Query' ? 'query' : 'mutation'}${vars ? `(${vars})` : ''} { ${fieldName}${args ? `(${args})` : ''} ${selection(f.type)} }`;
}

/** Sets the value at `path` (lists: replaces the list with `value` when value is an array). */
function setPath(vars: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(vars);
  const keys = path.split('.');
  let o = copy as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
  o[keys.at(-1)!] = value;
  return copy;
}

function isListSlot(op: string, path: string): boolean {
  const [rootName, fieldName] = op.split('.') as [string, string];
  const root = rootName === 'Query' ? schema.getQueryType()! : schema.getMutationType()!;
  let args: readonly { name: string; type: GraphQLInputType }[] = root.getFields()[fieldName]!.args;
  let t: GraphQLInputType | undefined;
  for (const k of path.split('.')) {
    const a = args.find((x) => x.name === k);
    if (!a) return false;
    t = a.type;
    const named = getNamedType(t);
    args = isInputObjectType(named) ? Object.values(named.getFields()) : [];
  }
  return t !== undefined && isListType(getNullableType(t));
}

// ---------------------------------------------------------------------------------------------------------------
// What each id slot names, and a valid base call per operation (A's own ids where an id is needed)

type Kind = 'integration' | 'router' | 'routingConfiguration' | 'event' | 'template' | 'cluster' | 'silence' | 'delivery';
const ID_SLOTS: Record<string, Kind[]> = {
  'Query.integration.id': ['integration'],
  'Query.notificationRouter.id': ['router', 'routingConfiguration'],
  'Query.deliveries.filter.integrationId': ['integration'],
  'Query.deliveries.filter.eventId': ['event'],
  'Mutation.updateIntegration.id': ['integration'],
  'Mutation.deleteIntegrations.ids': ['integration'],
  'Mutation.createNotificationRouter.integrationConfig.integrationId': ['integration'],
  'Mutation.createNotificationRouter.integrationConfig.templateId': ['template'],
  'Mutation.updateNotificationRouter.id': ['router'],
  'Mutation.updateNotificationRouter.updateNotificationRouterConfigurationInput.integrationId': ['integration'],
  'Mutation.updateNotificationRouter.updateNotificationRouterConfigurationInput.templateId': ['template'],
  'Mutation.deleteNotificationRouter.ids': ['router', 'routingConfiguration'],
  'Mutation.createNotificationRoutingConfiguration.integrationId': ['integration'],
  'Mutation.updateNotificationRoutingConfiguration.id': ['routingConfiguration'],
  'Mutation.testIntegration.id': ['integration'],
  'Query.certificates.filter.clusterId': ['cluster'],
  'Mutation.deleteClusters.ids': ['cluster'],
  'Query.notificationTemplate.id': ['template'],
  'Mutation.updateNotificationTemplate.id': ['template'],
  'Mutation.deleteNotificationTemplates.ids': ['template'],
  'Query.silence.id': ['silence'],
  'Mutation.expireSilence.id': ['silence'],
  'Mutation.updateSilence.id': ['silence'],
  'Mutation.retryDelivery.id': ['delivery'],
};

interface Objects {
  integrations: { id: string; type: string }[];
  router: string;
  routingConfiguration: string;
  event: string;
  template: string;
  /** a template no router uses (the base of deleteNotificationTemplates) */
  spareTemplate: string;
  /** an inventory cluster (agent-reported id) */
  cluster: string;
  silence: string;
  /** the delivery of `event` (PENDING: no worker runs) */
  delivery: string;
  names: string[];
}

const ISSUER = 'certmgr-issuer-health-notification-config';
/** A call that A could make with its own ids (`own`); the slot under test is then replaced by B's id. */
const BASE: Record<string, (own: Objects) => Record<string, unknown>> = {
  'Query.integration': (a) => ({ id: a.integrations[0]!.id }),
  'Query.notificationRouter': (a) => ({ id: a.router }),
  'Query.deliveries': () => ({ filter: {}, first: 200 }), // every field selected: within the query cost limit,
  'Mutation.updateIntegration': (a) => ({ id: a.integrations[0]!.id, input: { name: 'renamed by A' } }),
  // the Teams integration: no router uses it, so only the foreign id can make this delete fail
  'Mutation.deleteIntegrations': (a) => ({ ids: [a.integrations[4]!.id] }),
  'Mutation.createNotificationRouter': (a) => ({
    details: { name: 'A steals', eventTypeId: ISSUER },
    filterConfig: { advancedFilterExpression: '' },
    integrationConfig: { integrationId: a.integrations[0]!.id },
  }),
  'Mutation.updateNotificationRouter': (a) => ({ id: a.router, updateNotificationRouterConfigurationInput: { enabled: false } }),
  'Mutation.deleteNotificationRouter': (a) => ({ ids: [a.router] }),
  'Mutation.createNotificationRoutingConfiguration': (a) => ({
    name: 'A steals',
    eventTypeId: ISSUER,
    integrationId: a.integrations[0]!.id,
  }),
  'Mutation.updateNotificationRoutingConfiguration': (a) => ({ id: a.routingConfiguration, enabled: false }),
  'Mutation.testIntegration': (a) => ({ id: a.integrations[0]!.id }),
  // a page of 10: every field selected, the endpoints' lists too (serving, up to 32 each), stays within the cost limit
  'Query.certificates': (a) => ({ filter: { clusterId: a.cluster }, first: 10 }),
  'Mutation.deleteClusters': (a) => ({ ids: [a.cluster] }),
  'Query.notificationTemplate': (a) => ({ id: a.template }),
  'Mutation.updateNotificationTemplate': (a) => ({ id: a.template, input: { name: 'renamed by A' } }),
  'Mutation.deleteNotificationTemplates': (a) => ({ ids: [a.spareTemplate] }),
  'Query.silence': (a) => ({ id: a.silence }),
  'Mutation.expireSilence': (a) => ({ id: a.silence }),
  'Mutation.updateSilence': (a) => ({ id: a.silence, input: { comment: 'changed by A' } }),
  'Mutation.retryDelivery': (a) => ({ id: a.delivery }),
};

/** REST routes: their path parameters, and whether each names a stored object (none does today). */
const REST_PARAMS: Record<string, Record<string, 'not an id'>> = {
  '/outagedetection/v1/inventorymonitoringconfig/:type': { type: 'not an id' }, // the configuration type; scoped by the key
};

// ---------------------------------------------------------------------------------------------------------------
// Fixture: both companies get one object of every kind

async function gqlRaw(
  svc: TestService,
  key: string,
  query: string,
  variables: Record<string, unknown>,
): Promise<{ status: number; text: string; json: Json }> {
  const r = await svc.rest('/graphql', {
    key,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const text = await r.text();
  return { status: r.status, text, json: JSON.parse(text) };
}

async function must(svc: TestService, key: string, query: string, variables: Record<string, unknown> = {}): Promise<Json> {
  const r = await gqlRaw(svc, key, query, variables);
  if (r.status !== 200 || r.json.errors) throw new Error(`fixture: ${r.text.slice(0, 400)}`);
  return r.json.data;
}

async function populate(svc: TestService, key: string, tag: string): Promise<Objects> {
  const name = (what: string) => `${tag}-${what}-${randomUUID().slice(0, 8)}`;
  const names: string[] = [];
  const n = (w: string) => {
    const s = name(w);
    names.push(s);
    return s;
  };
  const integrations: { id: string; type: string }[] = [];
  const create = async (field: string, input: Record<string, unknown>, type: string) => {
    const d = await must(svc, key, `mutation($i: ${field[0]!.toUpperCase()}${field.slice(1)}Input!) { ${field}(input: $i) { id } }`, {
      i: input,
    });
    integrations.push({ id: d[field].id, type });
  };
  await create(
    'createWebhookIntegration',
    { name: n('webhook'), url: 'http://127.0.0.1:9/hook', signingSecret: `whsec_${Buffer.alloc(24, 3).toString('base64')}` },
    'WEBHOOK',
  );
  await create(
    'createIncidentMgmtIntegration',
    { name: n('incident'), incidentMgmtParams: { IntegrationKey: `${tag}-routing-key-0123456789` } },
    'INCIDENT_MGMT',
  );
  await create('createEmailIntegration', { name: n('email'), emailParams: { to: [`oncall@${tag.toLowerCase()}.example.com`] } }, 'EMAIL');
  await create('createSlackIntegration', { name: n('slack'), slackParams: { webhookUrl: 'http://127.0.0.1:9/slack' } }, 'SLACK');
  await create('createTeamsIntegration', { name: n('teams'), teamsParams: { webhookUrl: 'http://127.0.0.1:9/teams' } }, 'TEAMS');
  const newTemplate = async () =>
    (
      await must(svc, key, `mutation($i: CreateNotificationTemplateInput!) { createNotificationTemplate(input: $i) { id } }`, {
        i: { name: n('template'), parts: { default: { title: `${tag} {{ title }}` } } },
      })
    ).createNotificationTemplate.id as string;
  const template = await newTemplate();
  const spareTemplate = await newTemplate();
  const r = await must(
    svc,
    key,
    `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) { createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
    {
      d: { name: n('router'), eventTypeId: ISSUER },
      f: { advancedFilterExpression: '' },
      i: { integrationId: integrations[0]!.id, templateId: template },
    },
  );
  const rc = await must(
    svc,
    key,
    `mutation($n: String!, $e: String!, $i: UUID!) { createNotificationRoutingConfiguration(name: $n, eventTypeId: $e, integrationId: $i) { id } }`,
    {
      n: n('routing-config'),
      e: ISSUER,
      i: integrations[1]!.id,
    },
  );
  const put = await svc.rest(MONITORING_CONFIG_PATH, {
    key,
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      inventoryMonitoringConfiguration: {
        inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
        enabled: true,
        thresholds: [7],
        applicationIds: [n('app')],
        includeUnassignedCertificates: false,
      },
    }),
  });
  if (put.status !== 200) throw new Error(`fixture: monitoring config ${put.status}`);
  const ev = await svc.rest('/v1/events', {
    key,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([issuerNotReady({ issuerName: n('issuer') })]),
  });
  if (ev.status !== 202) throw new Error(`fixture: events ${ev.status} ${await ev.text()}`);
  const event = ((await ev.json()) as { events: { id: string }[] }).events[0]!.id;
  const cluster = randomUUID();
  const inv = await svc.rest('/v1/inventory', {
    key,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      protocol: 1,
      cluster: { id: cluster, name: n('cluster') },
      agentVersion: '1.0.0',
      epoch: randomUUID(),
      seq: 1,
      kind: 'snapshot',
      final: true,
      upserts: [
        {
          namespace: 'default',
          secretName: n('secret'),
          serial: '0A',
          notBefore: '2026-01-01T00:00:00Z',
          notAfter: '2027-01-01T00:00:00Z',
          subject: `CN=${n('cn')}`,
          dnsNames: [],
          issuer: 'CN=Shared CA',
          applicationIds: [n('inventory-app')],
          labels: {},
          chainNotAfter: null,
        },
      ],
      deletes: [],
    }),
  });
  if (inv.status !== 200) throw new Error(`fixture: inventory ${inv.status} ${await inv.text()}`);
  const sil = await must(svc, key, `mutation($i: CreateSilenceInput!) { createSilence(input: $i) { id } }`, {
    i: {
      matcher: `data.issuerName == "${n('silenced-issuer')}"`,
      endsAt: new Date(Date.now() + 86_400_000).toISOString(),
      comment: n('maintenance'),
    },
  });
  const delivery = (await must(svc, key, `query($e: UUID) { deliveries(filter: { eventId: $e }) { nodes { id } } }`, { e: event }))
    .deliveries.nodes[0].id as string;
  return {
    cluster,
    delivery,
    silence: sil.createSilence.id,
    integrations,
    router: r.createNotificationRouter.id,
    routingConfiguration: rc.createNotificationRoutingConfiguration.id,
    event,
    template,
    spareTemplate,
    names,
  };
}

// deliveries: more than a company here has, within the query cost limit with every field selected
const STATE = `query {
  integrations { totalCount nodes ${selection(schema.getType('Integration') as GraphQLOutputType)} }
  searchNotificationRoutingConfigurations ${selection(schema.getType('NotificationRouterConnection') as GraphQLOutputType)}
  deliveries(first: 200) { nodes ${selection(schema.getType('Delivery') as GraphQLOutputType, 2)} pageInfo { hasNextPage } }
}`;
const TEMPLATE_STATE = `query { notificationTemplates ${selection(schema.getType('NotificationTemplateConnection') as GraphQLOutputType)} }`;
const INVENTORY_STATE = `query {
  clusters { nodes { id name agentVersion certificateCount snapshotComplete firstSeenAt lastSeenAt } }
  certificates(first: 20) { nodes { clusterId clusterName namespace secretName serial subject issuer applicationIds places { clusterId secretName } } }
  silences(first: 10) { nodes ${selection(schema.getType('Silence') as GraphQLOutputType)} }
}`;

/** A company's whole state as its own key sees it (integrations, routers, deliveries with their events, monitoring). */
async function snapshot(svc: TestService, key: string): Promise<unknown> {
  const data = { ...(await must(svc, key, STATE)), ...(await must(svc, key, INVENTORY_STATE)), ...(await must(svc, key, TEMPLATE_STATE)) };
  const m = await svc.rest(MONITORING_CONFIG_PATH, { key });
  return { ...data, monitoring: await m.json() };
}

// ---------------------------------------------------------------------------------------------------------------

describe('enumeration', () => {
  it('every id slot of the GraphQL schema has a kind and a base call; every REST path parameter is classified', () => {
    const slots = schemaIdSlots().map((s) => `${s.op}.${s.path}`);
    expect(
      slots.filter((s) => !(s in ID_SLOTS)),
      'id-taking operations without a cross-tenant attempt (add them to ID_SLOTS and BASE)',
    ).toEqual([]);
    expect(
      Object.keys(ID_SLOTS).filter((s) => !slots.includes(s)),
      'ID_SLOTS entries that are no longer in the schema',
    ).toEqual([]);
    const ops = new Set(schemaIdSlots().map((s) => s.op));
    expect([...ops].filter((o) => !(o in BASE))).toEqual([]);
    // sanity of the walker itself: it finds ids inside input objects and lists
    expect(slots).toContain('Query.deliveries.filter.eventId');
    expect(slots).toContain('Mutation.deleteIntegrations.ids');

    const app = createApp({
      store: {} as never,
      keys: new ApiKeyRing([]),
      logger: pino({ level: 'silent' }),
      runtime: {} as never,
      requestTimeoutMs: 30_000,
    });
    const routes = restRoutes(app);
    expect(routes).toContain('/outagedetection/v1/inventorymonitoringconfig/:type');
    expect(routes).toContain('/graphql');
    for (const r of routes) {
      const params = [...r.matchAll(/[:*]([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
      for (const p of params)
        expect(
          REST_PARAMS[r]?.[p],
          `REST route ${r} takes :${p}: classify it in REST_PARAMS (and attempt it cross-tenant if it names an object)`,
        ).toBeDefined();
    }
  });
});

describe.each<StoreKind>(['sqlite', 'postgres'])('cross-tenant attempts (%s)', (kind) => {
  let svc: TestService;
  let a: Objects;
  let b: Objects;
  const figures = { slots: 0, attempts: 0, refused: 0 };

  beforeAll(async () => {
    svc = await startTestService(kind, [...limitsFile({ deliveryWorkers: 0 })]);
    a = await populate(svc, KEY_A, 'CoA');
    b = await populate(svc, KEY_B, 'CoB');
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
  });

  const idsOf = (o: Objects, k: Kind): string[] => (k === 'integration' ? o.integrations.map((i) => i.id) : [o[k]]);

  /** The answer with every occurrence of `id` replaced, for comparison with the answer for a non-existent id. */
  const normalise = (text: string, id: string) => text.replaceAll(id, '<ID>').replace(/"requestId":"[^"]*"/g, '');

  it(
    "A calling every id-taking operation with B's ids is refused like a non-existent id; neither B nor A changes",
    { timeout: 120_000 },
    async () => {
      const beforeB = await snapshot(svc, KEY_B);
      // positive controls: with A's own ids the read operations find A's objects, so a refusal below is the tenancy check
      expect((await must(svc, KEY_A, documentFor('Query.integration'), BASE['Query.integration']!(a))).integration.id).toBe(
        a.integrations[0]!.id,
      );
      expect(
        (await must(svc, KEY_A, documentFor('Query.notificationRouter'), BASE['Query.notificationRouter']!(a))).notificationRouter.id,
      ).toBe(a.router);
      expect(
        (await must(svc, KEY_A, documentFor('Query.deliveries'), { filter: { eventId: a.event } })).deliveries.nodes.length,
      ).toBeGreaterThan(0);
      // the same certificate (issuer, serial) is in both companies: A's places never list B's
      const own = await must(svc, KEY_A, documentFor('Query.certificates'), BASE['Query.certificates']!(a));
      expect(own.certificates.nodes.length).toBe(1);
      expect(own.certificates.nodes[0].places).toHaveLength(1);
      const beforeA = await snapshot(svc, KEY_A);
      for (const { op, path } of schemaIdSlots()) {
        figures.slots++;
        const doc = documentFor(op);
        const base = BASE[op]!(a);
        const list = isListSlot(op, path);
        for (const k of ID_SLOTS[`${op}.${path}`]!) {
          for (const bid of idsOf(b, k)) {
            const missing = randomUUID();
            const variants: [unknown, unknown][] = list
              ? [
                  [[bid], [missing]],
                  // A's own id first: refused as a whole, A's own record not deleted (no partial write)
                  [
                    [...((base as Json)[path] ?? []), bid],
                    [...((base as Json)[path] ?? []), missing],
                  ],
                ]
              : [[bid, missing]];
            for (const [withB, withMissing] of variants) {
              figures.attempts++;
              const what = `${op}(${path}=B's ${k} ${bid})`;
              const rb = await gqlRaw(svc, KEY_A, doc, setPath(base, path, withB));
              const rm = await gqlRaw(svc, KEY_A, doc, setPath(base, path, withMissing));
              expect(rb.status, `${what}: ${rb.text.slice(0, 300)}`).toBeLessThan(500);
              // B's data never shows (names, type-specific fields, its other ids)
              for (const s of [
                ...b.names,
                ...b.integrations.map((i) => i.id),
                b.router,
                b.routingConfiguration,
                b.event,
                b.template,
                b.spareTemplate,
              ])
                expect(rb.text.includes(s) && s !== bid, `${what} leaked ${s}: ${rb.text.slice(0, 300)}`).toBe(false);
              // refused exactly as a non-existent id
              expect(normalise(rb.text, bid), `${what}: differs from a non-existent id`).toEqual(normalise(rm.text, missing));
              const refused =
                rb.json.errors?.[0]?.extensions?.code === 'NOT_FOUND' ||
                (op.startsWith('Query.') &&
                  !rb.json.errors &&
                  (rb.json.data[op.split('.')[1]!] === null || rb.json.data[op.split('.')[1]!]?.nodes?.length === 0));
              expect(refused, `${what}: not refused: ${rb.text.slice(0, 300)}`).toBe(true);
              if (refused) figures.refused++;
              if (op.startsWith('Mutation.'))
                expect(await snapshot(svc, KEY_A), `${what}: changed A's own state (partial write?)`).toEqual(beforeA);
            }
          }
        }
      }
      // ids inside strings: a deliveries cursor built from B's delivery is only a position in A's own list
      const bDeliveries = (await must(svc, KEY_B, `{ deliveries(first: 5) { nodes { id } pageInfo { endCursor } } }`)).deliveries;
      expect(bDeliveries.nodes.length).toBeGreaterThan(0);
      const viaCursor = await gqlRaw(
        svc,
        KEY_A,
        `query($a: String) { deliveries(first: 500, after: $a) { nodes { id routerName integrationId } } }`,
        {
          a: bDeliveries.pageInfo.endCursor ?? Buffer.from(`${Date.now() + 1000}:${bDeliveries.nodes[0].id}`).toString('base64url'),
        },
      );
      figures.attempts++;
      const bDeliveryIds = new Set(
        (await must(svc, KEY_B, `{ deliveries(first: 500) { nodes { id } } }`)).deliveries.nodes.map((n: { id: string }) => n.id),
      );
      expect(viaCursor.status).toBeLessThan(500);
      for (const node of viaCursor.json.data?.deliveries?.nodes ?? [])
        expect(bDeliveryIds.has(node.id), "a cursor from B listed B's delivery").toBe(false);
      figures.refused++;

      expect(await snapshot(svc, KEY_B), "B's state changed").toEqual(beforeB);
      expect(figures.refused).toBe(figures.attempts);
      console.log(
        `cross-tenant ${kind}: ${figures.slots} id slots in ${new Set(schemaIdSlots().map((s) => s.op)).size} operations, ${figures.attempts} attempts, ${figures.refused} refused`,
      );
    },
  );

  it('REST and events: A sees only its own monitoring configuration; events A posts never reach B', async () => {
    const beforeB = await snapshot(svc, KEY_B);
    const ma = (await (await svc.rest(MONITORING_CONFIG_PATH, { key: KEY_A })).json()) as {
      id: string;
      configuration: { applicationIds: string[] };
    };
    const mb = (await (await svc.rest(MONITORING_CONFIG_PATH, { key: KEY_B })).json()) as { id: string };
    expect(ma.id).not.toBe(mb.id);
    expect(JSON.stringify(ma)).not.toContain('CoB-');
    // an event naming B's ids (as data) is A's event, routed by A's routers only
    const ev = issuerNotReady({ issuerName: b.names[0]!, resourceId: b.router, clusterId: b.integrations[0]!.id });
    const r = await svc.rest('/v1/events', {
      key: KEY_A,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([ev]),
    });
    expect(r.status).toBe(202);
    expect(await snapshot(svc, KEY_B)).toEqual(beforeB);
  });
});
