import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { endpointLine, servedFilter, servedHeadline, SERVED_FILTERS, type ServedEndpoint } from '../../src/console/serving.js';
import { GRAPHQL_LIMITS, measureRequest, parseLimited } from '../../src/http/graphql/cost.js';
import { buildApiSchema } from '../../src/http/graphql/schema.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('servedHeadline', () => {
  it.each<[string | null, string | null, string | null]>([
    [null, '2026-03-01T11:48:00Z', null],
    ['OK', '2026-03-01T11:48:00Z', 'ok'],
    ['STALE', '2026-03-01T11:48:00Z', 'stale — renewed 12m ago'],
    ['STALE', '2026-02-27T09:00:00Z', 'stale — renewed 2d 3h ago'],
    ['STALE', null, 'stale'],
    ['MISMATCH', '2026-03-01T11:48:00Z', 'mismatch'],
    ['NOT_PROBED', null, 'not probed'],
  ])('%s, notBefore %s → %j', (status, notBefore, want) => {
    expect(servedHeadline({ servingStatus: status as never, notBefore }, NOW)).toBe(want);
  });
});

describe('endpointLine', () => {
  const e = (over: Partial<ServedEndpoint>): ServedEndpoint => ({
    host: 'www.shop.example',
    address: '203.0.113.7:443',
    status: 'STALE',
    reason: null,
    servedSerial: '0A1B',
    servedNotAfter: '2026-03-10T00:00:00.000Z',
    checkedAt: '2026-03-01T11:58:00.000Z',
    ...over,
  });
  it.each<[Partial<ServedEndpoint>, string]>([
    [{}, 'www.shop.example at 203.0.113.7:443: stale, serves 0A1B (until 2026-03-10 00:00 UTC), checked 2m ago'],
    [
      { status: 'UNREACHABLE', servedSerial: null, servedNotAfter: null, reason: 'connect ECONNREFUSED' },
      'www.shop.example at 203.0.113.7:443: unreachable, connect ECONNREFUSED, checked 2m ago',
    ],
    [
      { status: 'NOT_PROBED', address: null, servedSerial: null, servedNotAfter: null, checkedAt: null, reason: 'no address' },
      'www.shop.example: not probed, no address, never checked',
    ],
  ])('%j', (over, want) => {
    expect(endpointLine(e(over), NOW)).toBe(want);
  });
});

describe('the Served filter', () => {
  it('maps each choice to the API filter', () => {
    expect(servedFilter('')).toEqual({});
    expect(servedFilter('PROBLEM')).toEqual({ servingProblem: true });
    expect(servedFilter('NO_PROBLEM')).toEqual({ servingProblem: false });
    expect(servedFilter('STALE')).toEqual({ servingStatus: 'STALE' });
    const schema = buildApiSchema();
    const statuses = (schema.getType('ServingStatus') as unknown as { getValues(): { name: string }[] }).getValues().map((v) => v.name);
    expect(
      SERVED_FILTERS.map(([v]) => v)
        .filter((v) => !v.includes('PROBLEM'))
        .sort(),
    ).toEqual([...statuses].sort());
  });
});

describe("the certificates page's queries", () => {
  // the page's GraphQL documents, read from its source (as test/console/operations.test.ts does)
  const src = readFileSync(join(import.meta.dirname, '../../src/console/pages/certificates.tsx'), 'utf8');
  const doc = (name: string) => new RegExp(`\`(query ${name}\\b[^\`]*)\``).exec(src)![1]!;
  const schema = buildApiSchema();
  const cost = (query: string, filter: Record<string, unknown>) => {
    const parsed = parseLimited(query);
    if (!('doc' in parsed)) throw new Error('the query does not parse');
    const m = measureRequest(schema, parsed.doc, null, { filter });
    if (!('report' in m)) throw new Error(m.violation.message);
    return m.report.cost;
  };
  // every field of the form at once: a filter no single index serves is priced as a scan
  const everything = {
    clusterId: '00000000-0000-4000-8000-000000000001',
    namespace: 'web',
    applicationId: 'shop',
    health: 'READY',
    expiringWithinDays: 30,
    servingProblem: true,
  };
  it.each(['Certificates', 'CertificateServing'])('%s stays within the cost budget with every filter given', (name) => {
    expect(cost(doc(name), everything)).toBeLessThanOrEqual(GRAPHQL_LIMITS.maxCost);
    expect(cost(doc(name), {})).toBeLessThanOrEqual(GRAPHQL_LIMITS.maxCost - GRAPHQL_LIMITS.scanCost);
  });
});
