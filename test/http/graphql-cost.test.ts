/** GraphQL request cost (pure): table of documents → report or the limit they break. */
import { describe, expect, it } from 'vitest';
import { GRAPHQL_LIMITS, measureRequest, parseLimited, type CostLimit } from '../../src/http/graphql/cost.js';
import { buildApiSchema } from '../../src/http/graphql/schema.js';

const schema = buildApiSchema();

function measure(query: string, variables?: Record<string, unknown>, operationName?: string) {
  const p = parseLimited(query);
  if ('violation' in p) return { violation: p.violation };
  if ('syntaxError' in p) throw p.syntaxError;
  return measureRequest(schema, p.doc, operationName, variables);
}

const DELIVERY_ALL = `id status attempts lastError lastStatusCode nextAttemptAt createdAt updatedAt deliveredAt routerId routerName integrationId
  event { id type receivedAt } integration { id name enabled type emailTo emailFrom webhookSigned managedBy createdAt updatedAt }`;
const frags = (n: number) => {
  const f = ['fragment F0 on Query { eventTypes { id } }'];
  for (let i = 1; i <= n; i++) f.push(`fragment F${i} on Query { ...F${i - 1} ...F${i - 1} }`);
  return `{ ...F${n} } ${f.join(' ')}`;
};

describe('measureRequest', () => {
  const accepted: [
    string,
    string,
    Record<string, unknown> | undefined,
    Partial<{ cost: number; depth: number; aliases: number; fields: number }>,
  ][] = [
    ['a leaf', '{ eventTypes { id } }', undefined, { cost: 1 + 100, depth: 2, fields: 2 }],
    ['a connection: first applies to nodes once', '{ deliveries(first: 10) { nodes { id } } }', undefined, { cost: 1 + 1 + 10, depth: 3 }],
    ['the schema default of first', '{ deliveries { nodes { id } } }', undefined, { cost: 1 + 1 + 50 }],
    ['first from a variable', 'query($n: Int) { deliveries(first: $n) { nodes { id } } }', { n: 7 }, { cost: 1 + 1 + 7 }],
    [
      'the largest page with every field',
      `{ deliveries(first: 500) { nodes { ${DELIVERY_ALL} } pageInfo { hasNextPage endCursor } } }`,
      undefined,
      {},
    ],
    ['aliases counted', '{ a: eventTypes { id } b: eventTypes { x: id } }', undefined, { aliases: 3 }],
    ['introspection lists are not multiplied', '{ __schema { types { name fields { name args { name } } } } }', undefined, { cost: 7 }],
    ['unknown fields tolerated (validation reports them)', '{ nope { deeper } }', undefined, { cost: 2 }],
    [
      'fragment cycles do not loop',
      'query { ...A } fragment A on Query { ...B } fragment B on Query { ...A eventTypes { id } }',
      undefined,
      {},
    ],
    ['mutations', 'mutation { deleteIntegrations(ids: []) { ids } }', undefined, { cost: 2 }],
  ];
  it.each(accepted)('accepts %s', (_n, q, vars, expected) => {
    const r = measure(q, vars);
    expect(r).toHaveProperty('report');
    if ('report' in r) expect(r.report).toMatchObject(expected);
  });

  const rejected: [string, string, Record<string, unknown> | undefined, CostLimit][] = [
    ['31 aliases', `{ ${Array.from({ length: 31 }, (_, i) => `e${i}: eventTypes { id }`).join(' ')} }`, undefined, 'aliases'],
    [
      'two largest pages',
      `{ a: deliveries(first: 500) { nodes { ${DELIVERY_ALL} } } b: deliveries(first: 500) { nodes { ${DELIVERY_ALL} } } }`,
      undefined,
      'cost',
    ],
    ['first over the cap', '{ deliveries(first: 501) { nodes { id } } }', undefined, 'first'],
    ['first over the cap by variable', 'query($n: Int) { deliveries(first: $n) { nodes { id } } }', { n: 10 ** 9 }, 'first'],
    ['13 levels', `{ __schema { types { fields { type ${'{ ofType '.repeat(8)}{ name }${' }'.repeat(8)} } } } }`, undefined, 'depth'],
    ['a fragment bomb (2^20 expansions)', frags(20), undefined, 'fields'],
    ['too many tokens', `{ ${'eventTypes { id } '.repeat(2_000)} }`, undefined, 'tokens'],
    [
      'a deep input literal',
      `{ simulateRouting(event: { type: "x", data: ${'['.repeat(40)}${']'.repeat(40)} }) { eventType } }`,
      undefined,
      'valueDepth',
    ],
    [
      'a deep variable default',
      `query($e: EventInput = { type: "x", data: ${'['.repeat(40)}${']'.repeat(40)} }) { simulateRouting(event: $e) { eventType } }`,
      undefined,
      'valueDepth',
    ],
  ];
  it.each(rejected)('rejects %s', (_n, q, vars, limit) => {
    const r = measure(q, vars);
    expect(r).toHaveProperty('violation');
    if ('violation' in r) {
      expect(r.violation.limit).toBe(limit);
      expect(r.violation.actual).toBeGreaterThan(r.violation.max);
      expect(r.violation.message.length).toBeLessThan(300);
    }
  });

  it('measures the named operation only', () => {
    const q = `query Small { eventTypes { id } } query Big { ${Array.from({ length: 40 }, (_, i) => `e${i}: eventTypes { id }`).join(' ')} }`;
    expect(measure(q, undefined, 'Small')).toHaveProperty('report');
    expect(measure(q, undefined, 'Big')).toHaveProperty('violation');
  });

  it('defaults are documented figures', () => {
    expect(GRAPHQL_LIMITS).toEqual({
      maxTokens: 5000,
      maxDepth: 12,
      maxAliases: 30,
      maxFields: 500,
      maxFirst: 500,
      maxCost: 20000,
      assumedListSize: 100,
      maxValueDepth: 32,
      scanCost: 10000,
    });
  });
});

describe('list filters no index serves are priced (store work per request)', () => {
  const CERT = 'clusterId namespace secretName notAfter applicationIds';
  const aliases = (n: number, filter: string) =>
    `{ ${Array.from({ length: n }, (_, i) => `c${i}: certificates(first: 10, filter: ${filter}) { nodes { ${CERT} } }`).join(' ')} }`;

  it('the 30-alias applicationId attack is cheap: each alias is one page of an index range, no scan priced', () => {
    const r = measure(aliases(30, '{applicationId: "payments"}'));
    expect(r).toEqual({ report: expect.objectContaining({ cost: 30 * (1 + 1 + 10 * 5), aliases: 30 }) });
  });

  const cases: [string, string, Record<string, unknown> | undefined, 'scan' | 'page'][] = [
    ['certificates: one filter', '{ certificates(first: 10, filter: {namespace: "web"}) { nodes { secretName } } }', undefined, 'page'],
    [
      'certificates: one filter with expiringWithinDays (a range of the same index)',
      '{ certificates(first: 10, filter: {health: NOT_READY, expiringWithinDays: 30}) { nodes { secretName } } }',
      undefined,
      'page',
    ],
    [
      'certificates: two filters',
      '{ certificates(first: 10, filter: {applicationId: "a", namespace: "web"}) { nodes { secretName } } }',
      undefined,
      'scan',
    ],
    [
      'certificates: a null field is not given',
      '{ certificates(first: 10, filter: {applicationId: "a", namespace: null}) { nodes { secretName } } }',
      undefined,
      'page',
    ],
    [
      'certificates: two filters from a variable',
      'query($f: CertificateFilter) { certificates(first: 10, filter: $f) { nodes { secretName } } }',
      { f: { clusterId: '00000000-0000-4000-8000-000000000000', health: 'READY' } },
      'scan',
    ],
    [
      'certificates: fields from variables',
      'query($a: String, $n: String) { certificates(first: 10, filter: {applicationId: $a, namespace: $n}) { nodes { secretName } } }',
      { a: 'x', n: 'web' },
      'scan',
    ],
    [
      'certificates: an unset variable is not given',
      'query($a: String, $n: String) { certificates(first: 10, filter: {applicationId: $a, namespace: $n}) { nodes { secretName } } }',
      { a: 'x' },
      'page',
    ],
    ['deliveries: status', '{ deliveries(first: 10, filter: {status: SILENCED}) { nodes { id } } }', undefined, 'page'],
    [
      'deliveries: integrationId and status',
      '{ deliveries(first: 10, filter: {status: DEAD, integrationId: "00000000-0000-4000-8000-000000000000"}) { nodes { id } } }',
      undefined,
      'scan',
    ],
    [
      'deliveries: an eventId with anything',
      '{ deliveries(first: 10, filter: {eventId: "00000000-0000-4000-8000-000000000000", status: DEAD, integrationId: "00000000-0000-4000-8000-000000000000"}) { nodes { id } } }',
      undefined,
      'page',
    ],
  ];
  it.each(cases)('%s', (_name, query, variables, want) => {
    const r = measure(query, variables);
    if (!('report' in r)) throw new Error(`refused: ${JSON.stringify(r)}`);
    if (want === 'scan') expect(r.report.cost).toBeGreaterThan(GRAPHQL_LIMITS.scanCost);
    else expect(r.report.cost).toBeLessThan(100);
  });

  it('a request holds one scan: two are refused with the cost limit, saying what is priced', () => {
    expect(measure(aliases(1, '{applicationId: "a", health: READY}'))).toHaveProperty('report');
    const r = measure(aliases(2, '{applicationId: "a", health: READY}'));
    expect(r).toEqual({ violation: expect.objectContaining({ limit: 'cost', max: GRAPHQL_LIMITS.maxCost }) });
    if ('violation' in r) expect(r.violation.message).toMatch(/a list filter no index serves adds 10000/);
    expect(measure(aliases(30, '{applicationId: "a", namespace: "web"}'))).toEqual({
      violation: expect.objectContaining({ limit: 'cost' }),
    });
  });
});
