/**
 * GraphQL request generators: documents shaped like the API's (aliases, big `first:`, many ids, nested
 * selections, fragments, inline hostile literals), garbage documents (token soup, unbalanced nesting), variables of
 * the right and wrong types, and JSON bodies that are not GraphQL requests at all.
 */
import fc from 'fast-check';
import { hostileJson, hostileNumber, weirdString } from './arbitraries.js';

/** Ids the generators pick from; the test fills in real ones (A's and B's records) before running. */
export interface IdPool {
  aIntegration: string;
  aRouter: string;
  bIntegration: string;
  bRouter: string;
}
const ID_SLOTS = ['aIntegration', 'aRouter', 'bIntegration', 'bRouter', 'random', 'nil', 'bad'] as const;
type IdSlot = (typeof ID_SLOTS)[number];

function resolveId(slot: IdSlot, pool: IdPool): string {
  switch (slot) {
    case 'random':
      return 'f3a8b6e2-1c4d-4e5f-9a0b-1c2d3e4f5a6b';
    case 'nil':
      return '00000000-0000-0000-0000-000000000000';
    case 'bad':
      return 'not-a-uuid';
    default:
      return pool[slot];
  }
}

/** A GraphQL string literal (escaped), from any JS string. */
const gqlString = (s: string): string => JSON.stringify(s);

/** Placeholders `@@id:<slot>@@` stand for ids resolved at run time, keeping printed counterexamples readable. */
const idRef = fc.constantFrom(...ID_SLOTS).map((s) => `@@id:${s}@@`);
const idLiteral = idRef.map((r) => `"${r}"`);

const FIELDS_INTEGRATION = 'id name enabled type emailTo emailFrom webhookSigned managedBy createdAt updatedAt';
const FIELDS_ROUTER =
  'id name enabled generation managedBy eventType { id displayName types } notificationRouterFilterConfig { advancedFilterExpression } notificationRouterIntegrationConfig { notificationRouterIntegrationID }';
const FIELDS_DELIVERY =
  'id status attempts lastError lastStatusCode nextAttemptAt createdAt event { id type receivedAt } routerId routerName integrationId integration { id name }';

const EVENT_TYPE_IDS = [
  'certmgr-issuer-health-notification-config',
  'certmgr-cert-resource-health-notification-config',
  'cert-expiry-ext-notification-config',
  'certmgr-agent-health-notification-config',
];
const eventTypeId = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...EVENT_TYPE_IDS) }, weirdString());
const bigInt = fc.oneof(fc.constantFrom(0, 1, 50, 500, 501, 10_000, 2_147_483_647, -1, -2_147_483_648), fc.integer());
const webhookUrl = fc.constantFrom(
  'http://127.0.0.1:9/hook',
  'http://[::1]:9/',
  'http://0x7f000001:9/',
  'http://2130706433:9/',
  'http://169.254.169.254/latest/meta-data/',
  'http://user:pass@127.0.0.1:9/',
  'https://hooks.example.invalid/x',
  'file:///etc/passwd',
  'javascript:alert(1)',
  '',
);
const filter = fc.oneof(
  fc.constantFrom(
    '',
    "type.endsWith('.notready')",
    'data.ruleId == 1',
    '1 / 0 == 0',
    "int('x') == 0",
    'true',
    "data.SANs['DNS Names'].exists(x, x == 'a')",
  ),
  weirdString(),
);
const name = fc.oneof(
  { weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z][A-Za-z0-9 -]{0,20}$/) },
  weirdString(),
  fc.constantFrom('a'.repeat(300), 'x\u0000y', '\u202eevil', 'zero\u200bwidth'),
);

/** One top-level field with arguments as inline literals. */
const queryField: fc.Arbitrary<string> = fc.oneof(
  fc.constant(`integrations { totalCount nodes { ${FIELDS_INTEGRATION} } }`),
  idLiteral.map((id) => `integration(id: ${id}) { ${FIELDS_INTEGRATION} }`),
  fc.constant(`searchNotificationRoutingConfigurations { totalCount nodes { ${FIELDS_ROUTER} } }`),
  idLiteral.map((id) => `notificationRouter(id: ${id}) { ${FIELDS_ROUTER} }`),
  fc.constant('eventTypes { id displayName types }'),
  fc
    .tuple(bigInt, fc.option(fc.oneof(weirdString(), fc.constant('MTow')), { nil: undefined }))
    .map(
      ([first, after]) =>
        `deliveries(first: ${first}${after === undefined ? '' : `, after: ${gqlString(after)}`}) { nodes { ${FIELDS_DELIVERY} } pageInfo { hasNextPage endCursor } }`,
    ),
  fc
    .tuple(
      fc.constantFrom('evt.healthstatus.certmgr-issuer.notready', 'evt.policy.expiringcertificates.failed', 'nope'),
      fc.oneof(fc.constant('{}'), fc.constant('{ clusterId: 1 }'), fc.constant('null'), fc.constant('[1, 2]')),
    )
    .map(
      ([t, d]) =>
        `simulateRouting(event: { type: ${gqlString(t)}, data: ${d} }) { eventType eventTypeId monitored routers { verdict error wouldNotify router { id } } }`,
    ),
  fc
    .tuple(fc.constantFrom('ACTIVE', 'PENDING', 'EXPIRED'), fc.constantFrom(1, 100, 500, 501, 100000))
    .map(([st, n]) => `silences(state: ${st}, first: ${n}) { nodes { id matcher comment state } pageInfo { hasNextPage endCursor } }`),
  fc.constant('__typename'),
  fc.constant('__schema { types { name fields { name args { name } } } }'),
);

const mutationField: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(name, weirdString())
    .map(
      ([n, k]) =>
        `createIncidentMgmtIntegration(input: { name: ${gqlString(n)}, incidentMgmtParams: { IntegrationKey: ${gqlString(k)} } }) { id }`,
    ),
  fc
    .tuple(name, webhookUrl, fc.option(weirdString(), { nil: undefined }))
    .map(
      ([n, u, s]) =>
        `createWebhookIntegration(input: { name: ${gqlString(n)}, url: ${gqlString(u)}${s === undefined ? '' : `, signingSecret: ${gqlString(s)}`} }) { id webhookSigned }`,
    ),
  fc
    .tuple(name, fc.array(fc.oneof(fc.emailAddress(), weirdString()), { maxLength: 3 }))
    .map(
      ([n, to]) =>
        `createEmailIntegration(input: { name: ${gqlString(n)}, emailParams: { to: [${to.map(gqlString).join(', ')}] } }) { id }`,
    ),
  fc
    .tuple(name, webhookUrl)
    .map(([n, u]) => `createSlackIntegration(input: { name: ${gqlString(n)}, slackParams: { webhookUrl: ${gqlString(u)} } }) { id }`),
  fc
    .tuple(idLiteral, name, fc.boolean())
    .map(([id, n, e]) => `updateIntegration(id: ${id}, input: { name: ${gqlString(n)}, enabled: ${e} }) { id name enabled }`),
  fc.array(idLiteral, { maxLength: 5 }).map((ids) => `deleteIntegrations(ids: [${ids.join(', ')}]) { ids }`),
  fc
    .tuple(name, eventTypeId, filter, idLiteral)
    .map(
      ([n, t, f, i]) =>
        `createNotificationRouter(details: { name: ${gqlString(n)}, eventTypeId: ${gqlString(t)} }, filterConfig: { advancedFilterExpression: ${gqlString(f)} }, integrationConfig: { integrationId: ${i} }) { id }`,
    ),
  fc
    .tuple(idLiteral, fc.boolean(), filter)
    .map(
      ([id, e, f]) =>
        `updateNotificationRouter(id: ${id}, updateNotificationRouterConfigurationInput: { enabled: ${e}, advancedFilterExpression: ${gqlString(f)} }) { id enabled }`,
    ),
  fc.array(idLiteral, { maxLength: 5 }).map((ids) => `deleteNotificationRouter(ids: [${ids.join(', ')}]) { ids }`),
  fc
    .tuple(name, eventTypeId, idLiteral, filter)
    .map(
      ([n, t, i, f]) =>
        `createNotificationRoutingConfiguration(name: ${gqlString(n)}, eventTypeId: ${gqlString(t)}, integrationId: ${i}, advancedFilterExpression: ${gqlString(f)}) { id }`,
    ),
  idLiteral.map((id) => `testIntegration(id: ${id}) { outcome statusCode error responseBody latencyMs }`),
  fc
    .tuple(filter, weirdString(), fc.option(eventTypeId, { nil: undefined }), fc.oneof(fc.constant('2099-01-01T00:00:00Z'), weirdString()))
    .map(
      ([m, c, t, e]) =>
        `createSilence(input: { matcher: ${gqlString(m)}, comment: ${gqlString(c)}, endsAt: ${gqlString(e)}${t === undefined ? '' : `, eventTypeId: ${gqlString(t)}`} }) { id state eventTypeIds }`,
    ),
  fc
    .tuple(idLiteral, filter, weirdString())
    .map(([id, m, c]) => `updateSilence(id: ${id}, input: { matcher: ${gqlString(m)}, comment: ${gqlString(c)} }) { id }`),
  idLiteral.map((id) => `expireSilence(id: ${id}) { id state expiredAt }`),
);

/** A field repeated under `n` aliases (an amplification: a small request, a large answer). */
const aliased = (field: fc.Arbitrary<string>) =>
  fc.tuple(field, fc.constantFrom(1, 2, 10, 100)).map(([f, n]) => Array.from({ length: n }, (_, i) => `a${i}: ${f}`).join('\n'));

/** A document shaped like the API's: one operation, several fields, some aliased many times. */
const shapedDocument: fc.Arbitrary<string> = fc.oneof(
  fc
    .array(fc.oneof({ weight: 3, arbitrary: queryField }, aliased(queryField)), { minLength: 1, maxLength: 3 })
    .map((fs) => `query Fuzz {\n${fs.join('\n')}\n}`),
  fc
    .array(fc.oneof({ weight: 3, arbitrary: mutationField }, aliased(mutationField)), { minLength: 1, maxLength: 3 })
    .map((fs) => `mutation Fuzz {\n${fs.join('\n')}\n}`),
);

/** Hostile but parseable structures: deep selections, fragment cycles, directive spam, huge lists. */
const structuralDocument: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(10, 100, 1000, 5000).map((d) => `{ ${'integrations { nodes { '.repeat(d)}id${' } }'.repeat(d)} }`),
  fc.constant('query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }'),
  fc.constantFrom(10, 1000, 10000).map((n) => `query { __typename ${'@include(if: true) '.repeat(n)} }`),
  fc
    .constantFrom(10, 1000, 20000)
    .map(
      (n) =>
        `mutation { deleteIntegrations(ids: [${Array.from({ length: n }, () => '"f3a8b6e2-1c4d-4e5f-9a0b-1c2d3e4f5a6b"').join(',')}]) { ids } }`,
    ),
  fc
    .constantFrom(10, 1000, 20000)
    .map(
      (n) =>
        `mutation { deleteNotificationRouter(ids: [${Array.from({ length: n }, () => '"f3a8b6e2-1c4d-4e5f-9a0b-1c2d3e4f5a6b"').join(',')}]) { ids } }`,
    ),
  fc
    .constantFrom(2, 20, 100)
    .map(
      (n) => `query { ${Array.from({ length: n }, (_, i) => `f${i}: deliveries(first: 500) { nodes { ${FIELDS_DELIVERY} } }`).join(' ')} }`,
    ),
  fc.constantFrom(1, 2, 50).map((n) => `query A { __typename } query B { __typename }${' query C { __typename }'.repeat(n)}`),
  fc.constant('subscription { __typename }'),
);

/** Token soup: GraphQL punctuation, keywords and names in random order, plus raw weird strings. */
const garbageDocument: fc.Arbitrary<string> = fc.oneof(
  fc
    .array(
      fc.constantFrom(
        '{',
        '}',
        '(',
        ')',
        '[',
        ']',
        ':',
        '$',
        '@',
        '...',
        '!',
        '=',
        'query',
        'mutation',
        'fragment',
        'on',
        'integrations',
        'nodes',
        'id',
        '"s"',
        '"""',
        '1',
        '1e999',
        'null',
        '#',
        '\u0000',
        '\u202e',
        '\n',
      ),
      { maxLength: 40 },
    )
    .map((ts) => ts.join(' ')),
  weirdString(60),
  fc.constant(''),
);

/** Operations with declared variables, for variables of right and wrong types. */
const VARIABLE_OPS: { doc: string; vars: fc.Arbitrary<Record<string, unknown>> }[] = [
  {
    doc: 'mutation M($name: String!, $integrationKey: String!) { createIncidentMgmtIntegration(input: { name: $name, incidentMgmtParams: { IntegrationKey: $integrationKey } }) { id } }',
    vars: fc.record({ name: fc.oneof(name, hostileJson), integrationKey: fc.oneof(weirdString(), hostileJson) }, { requiredKeys: [] }),
  },
  {
    doc: 'mutation M($ids: [UUID!]!) { deleteIntegrations(ids: $ids) { ids } }',
    vars: fc.record({
      ids: fc.oneof(
        fc.array(idRef, { maxLength: 5 }),
        hostileJson,
        fc.constantFrom(100, 5000, 25000).map((n) => Array.from({ length: n }, () => '@@id:random@@')),
      ),
    }),
  },
  {
    doc: 'mutation M($ids: [UUID!]) { deleteNotificationRouter(ids: $ids) { ids } }',
    vars: fc.record({
      ids: fc.oneof(
        fc.array(idRef, { maxLength: 5 }),
        hostileJson,
        fc.constantFrom(100, 5000, 25000).map((n) => Array.from({ length: n }, () => '@@id:aRouter@@')),
      ),
    }),
  },
  {
    doc: 'mutation M($details: NotificationRouterConfigDetailsInput!, $filterConfig: NotificationRouterFilterConfigInput!, $integrationConfig: NotificationRouterIntegrationConfigurationInput!) { createNotificationRouter(details: $details, filterConfig: $filterConfig, integrationConfig: $integrationConfig) { id } }',
    vars: fc.record({
      details: fc.oneof(fc.record({ name, eventTypeId }), hostileJson),
      filterConfig: fc.oneof(fc.record({ advancedFilterExpression: filter }), hostileJson),
      integrationConfig: fc.oneof(fc.record({ integrationId: idRef }), hostileJson),
    }),
  },
  {
    doc: 'query Q($first: Int, $after: String) { deliveries(first: $first, after: $after) { nodes { id } pageInfo { hasNextPage } } }',
    vars: fc.record(
      { first: fc.oneof(bigInt, hostileNumber, hostileJson), after: fc.oneof(weirdString(), hostileJson) },
      { requiredKeys: [] },
    ),
  },
  {
    doc: 'query Q($event: EventInput!) { simulateRouting(event: $event) { monitored routers { verdict error } } }',
    vars: fc.record({ event: fc.oneof(fc.record({ type: weirdString(), data: hostileJson }), hostileJson) }),
  },
  {
    doc: 'mutation M($id: UUID!, $input: UpdateIntegrationInput!) { updateIntegration(id: $id, input: $input) { id } }',
    vars: fc.record({
      id: fc.oneof(idRef, hostileJson),
      input: fc.oneof(fc.record({ name, enabled: fc.boolean() }, { requiredKeys: [] }), hostileJson),
    }),
  },
  {
    // the secret-carrying params: a refused update must leave the stored secrets as they were
    doc: 'mutation M($id: UUID!, $input: UpdateIntegrationInput!) { updateIntegration(id: $id, input: $input) { id updatedAt } }',
    vars: fc.record({
      id: fc.oneof({ weight: 4, arbitrary: idRef }, hostileJson),
      input: fc.record(
        {
          name: fc.oneof(name, hostileJson),
          incidentMgmtParams: fc.oneof(
            fc.record({ IntegrationKey: fc.oneof(weirdString(), fc.constant('k-0123456789abcdef'), hostileJson) }, { requiredKeys: [] }),
            hostileJson,
          ),
          webhookParams: fc.oneof(
            fc.record(
              {
                url: fc.oneof(webhookUrl, hostileJson),
                signingSecret: fc.oneof(weirdString(), fc.constant('whsec_AAAAAAAAAAAAAAAAAAAAAAAA'), hostileJson),
              },
              { requiredKeys: [] },
            ),
            hostileJson,
          ),
          slackParams: fc.oneof(fc.record({ webhookUrl: fc.oneof(webhookUrl, hostileJson) }, { requiredKeys: [] }), hostileJson),
          teamsParams: fc.oneof(fc.record({ webhookUrl: fc.oneof(webhookUrl, hostileJson) }, { requiredKeys: [] }), hostileJson),
          emailParams: fc.oneof(fc.record({ to: fc.array(fc.oneof(fc.emailAddress(), weirdString()), { maxLength: 3 }) }), hostileJson),
        },
        { requiredKeys: [] },
      ),
    }),
  },
];
const withVariables = fc
  .constantFrom(...VARIABLE_OPS.keys())
  .chain((i) => VARIABLE_OPS[i]!.vars.map((v) => ({ query: VARIABLE_OPS[i]!.doc, variables: v as unknown })));

/** The whole HTTP body: a request object, or JSON that is not one (null, 0, false, "": each must be answered). */
export type GraphqlBody =
  { kind: 'request'; query: unknown; variables?: unknown; operationName?: unknown } | { kind: 'json'; body: unknown };
/** The request classes, fuzzed as separate properties so that one finding does not hide the others. */
export const GRAPHQL_CLASSES: Record<string, fc.Arbitrary<GraphqlBody>> = {
  'API-shaped documents (aliases, big first:, hostile literals)': shapedDocument.map((query) => ({ kind: 'request' as const, query })),
  'structural attacks (depth, fragment cycles, directives, long id lists, many operations)': structuralDocument.map((query) => ({
    kind: 'request' as const,
    query,
  })),
  'garbage documents': garbageDocument.map((query) => ({ kind: 'request' as const, query })),
  'variables of right and wrong types': fc.oneof(
    { weight: 4, arbitrary: withVariables.map((r) => ({ kind: 'request' as const, ...r })) },
    fc.record({
      kind: fc.constant('request' as const),
      query: fc.oneof(hostileJson, shapedDocument),
      variables: hostileJson,
      operationName: fc.oneof(weirdString(), hostileJson),
    }),
  ),
  'JSON bodies that are not requests (null, 0, false, "", arrays)': fc
    .oneof(fc.constantFrom(null, 0, false, '', [], {}, 'query { __typename }', [{ query: '{ __typename }' }]), hostileJson)
    .map((body) => ({ kind: 'json' as const, body })),
};

/** Replaces `@@id:<slot>@@` placeholders everywhere in the serialized body. */
export function serializeGraphqlBody(b: GraphqlBody, pool: IdPool): string {
  const raw =
    JSON.stringify(b.kind === 'json' ? b.body : { query: b.query, variables: b.variables, operationName: b.operationName }) ?? 'null';
  return raw.replace(/@@id:([a-zA-Z]+)@@/g, (_, slot: string) => resolveId(slot as IdSlot, pool));
}
