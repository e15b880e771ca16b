/**
 * The CEL evaluation budget: estimated cost at compile time from the event
 * schema's size limits, the run-time budget with the event's real sizes, and literal-only parts folded at
 * compile time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FILTER_LIMITS, FilterCompileError, compileFilter, validateFilter } from '../../src/cel/index.js';
import { UNBOUNDED, estimateCost, shapeOfField, shapeOfValue } from '../../src/cel/cost.js';
import { toSourceTree } from '../../src/cel/ast.js';
import { parse } from '@bufbuild/cel';
import type { EventTypeId } from '../../src/events/families.js';
import type { FieldNode } from '../../src/events/field-tree.js';
import { EVENT_SIZE_LIMITS, EVENT_TYPE_FIELD_TREES, FAMILY_FIELD_TREES, validateEvent } from '../../src/events/schemas.js';
import { certificateResourceNotReady, expiringCertificate, issuerNotReady } from '../fixtures/events.js';

const ISSUER: EventTypeId = 'certmgr-issuer-health-notification-config';
const CERT: EventTypeId = 'certmgr-cert-resource-health-notification-config';
const EXPIRY: EventTypeId = 'cert-expiry-ext-notification-config';

const NAMES = "data.SANs['DNS Names']";
/** Quadratic in the names: the worst shape of filter over one event. */
const MAP_OF_MAP = `${NAMES}.map(x, ${NAMES}.map(y, x + y)).size() > 0`;

function rejection(expression: string, id: EventTypeId): FilterCompileError {
  try {
    compileFilter(expression, id);
  } catch (e) {
    if (e instanceof FilterCompileError) return e;
    throw e;
  }
  throw new Error(`accepted: ${expression}`);
}

function names(n: number, length = 40): string[] {
  return Array.from({ length: n }, (_, i) => `${i}.`.padEnd(length - 12, 'a') + '.example.com');
}

describe('estimated cost at compile time', () => {
  it.each([
    ['map of map over the DNS names', MAP_OF_MAP, CERT, 1, 24],
    ['two-level exists over the DNS names', `${NAMES}.exists(x, ${NAMES}.exists(y, x == y))`, CERT, 1, 24],
    ['exists with size() of the status message in the body', `${NAMES}.exists(x, size(data.statusMessage) == 0)`, CERT, 1, 24],
    ['two-level exists over the application ids', 'data.applicationIds.exists(a, data.applicationIds.exists(b, a != b))', EXPIRY, 1, 21],
    [
      'exists over a list built by map (quadratic in @bufbuild/cel)',
      "data.applicationIds.map(a, a + '-x').exists(b, b == 'x')",
      EXPIRY,
      1,
      38,
    ],
  ])('rejects %s with the position, the estimate and the limit', (_name, expression, id, line, column) => {
    const err = rejection(expression, id);
    expect(err.code).toBe('INVALID_FILTER_EXPRESSION');
    expect({ line: err.line, column: err.column }).toEqual({ line, column });
    expect(err.reason).toMatch(/^estimated cost [\d,]+ exceeds the limit of 1,000,000 /);
  });

  it.each([
    ["type.endsWith('.notready') && (data.clusterId == 'a' || data.clusterId == 'b')", ISSUER],
    ["'payments-app' in data.applicationIds", EXPIRY],
    ['data.ruleId == 2', EXPIRY],
    [`${NAMES}.exists(n, n.endsWith('.example.com'))`, CERT],
    [`${NAMES}.exists(n, n.matches('^api'))`, CERT],
    ["data.statusMessage.contains('timeout') || data.statusMessage.matches('refused|reset')", ISSUER],
    ['data.subject.countries.exists(a, data.subject.localities.exists(b, a != b))', CERT],
  ])('accepts %s', (expression, id) => {
    expect(validateFilter(expression, id)).toEqual({ ok: true });
    expect(compileFilter(expression, id).estimatedCost).toBeLessThanOrEqual(FILTER_LIMITS.maxEstimatedCost);
  });

  it('every list and string of every event type has a size limit (the estimate needs them)', () => {
    const unbounded: string[] = [];
    const walk = (node: FieldNode, path: string): void => {
      if (node.kind === 'object') for (const [name, child] of node.fields) walk(child, `${path}.${name}`);
      else if (node.kind === 'array') {
        if (node.maxItems === undefined) unbounded.push(path);
        walk(node.items, `${path}[]`);
      } else if (node.kind === 'string' && node.maxLength === undefined) unbounded.push(path);
    };
    for (const [type, tree] of Object.entries(EVENT_TYPE_FIELD_TREES)) walk(tree, type);
    expect(unbounded).toEqual([]);
  });

  it('event validation enforces the limits, naming the field', () => {
    const tooMany = certificateResourceNotReady({ SANs: { 'DNS Names': names(EVENT_SIZE_LIMITS.dnsNames + 1) } });
    const r = validateEvent(tooMany);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.map((e) => e.path)).toContain("data.SANs['DNS Names']");
    const long = issuerNotReady({ statusMessage: 'm'.repeat(EVENT_SIZE_LIMITS.statusMessage + 1) });
    const r2 = validateEvent(long);
    expect(r2.ok).toBe(false);
    if (!r2.ok) expect(r2.errors.map((e) => e.path)).toEqual(['data.statusMessage']);
    expect(validateEvent(certificateResourceNotReady({ SANs: { 'DNS Names': names(EVENT_SIZE_LIMITS.dnsNames) } })).ok).toBe(true);
  });
});

describe('run-time budget', () => {
  // Accepted by the compile-time limit, but over the per-evaluation budget for the largest events.
  const expensive = `${NAMES}.exists(n, n.matches('^ap'))`;

  it('the filter is accepted though its worst case is over the evaluation budget', () => {
    const f = compileFilter(expensive, CERT);
    expect(f.estimatedCost).toBeGreaterThan(FILTER_LIMITS.maxEvaluationCost);
  });

  it('evaluates small events and refuses, without evaluating, an event that would exceed the budget', () => {
    const f = compileFilter(expensive, CERT);
    const small = certificateResourceNotReady({ SANs: { 'DNS Names': ['api.x.example.com', 'www.example.com'] } });
    expect(f.evaluate(small)).toEqual({ matched: true });
    const big = certificateResourceNotReady({
      SANs: { 'DNS Names': [...names(EVENT_SIZE_LIMITS.dnsNames - 1, 253), 'api.x.example.com'] },
    });
    const r = f.evaluate(big);
    expect(r.matched).toBe(false);
    expect(r.error).toMatch(/^evaluation cost [\d,]+ for this event exceeds the budget of 20,000; not evaluated$/);
  });

  it('the cost with an event is never above the estimate, for events within the schema limits', () => {
    const filters = [
      expensive,
      `${NAMES}.exists(x, size(x) > 3) && data.subject.countries.all(c, c != data.namespace)`,
      `${NAMES}.filter(x, x.startsWith('a')).exists(y, y == data.clusterName)`,
      `${NAMES}.map(x, x + data.namespace).exists(y, y in data.subject.organizations)`,
      `string(data.subject) == data.statusMessage || data.statusMessage.contains(data.statusReason)`,
    ].map((e) => {
      const tree = toSourceTree(parse(e), e);
      return { e, tree, estimate: estimateCost(tree.root, shapeOfField(FAMILY_FIELD_TREES[CERT]), 60).cost };
    });
    const text = (max: number) => fc.string({ maxLength: max, unit: 'grapheme-ascii' });
    const event = fc.record({
      names: fc.array(text(EVENT_SIZE_LIMITS.dnsName), { maxLength: EVENT_SIZE_LIMITS.dnsNames }),
      countries: fc.array(text(EVENT_SIZE_LIMITS.subjectText), { maxLength: EVENT_SIZE_LIMITS.subjectList }),
      message: text(EVENT_SIZE_LIMITS.statusMessage),
      namespace: text(EVENT_SIZE_LIMITS.namespace),
    });
    fc.assert(
      fc.property(event, (v) => {
        const e = certificateResourceNotReady({
          SANs: { 'DNS Names': v.names },
          statusMessage: v.message,
          namespace: v.namespace,
          subject: { ...certificateResourceNotReady().data.subject, countries: v.countries },
        });
        expect(validateEvent(e).ok).toBe(true);
        for (const f of filters)
          expect(estimateCost(f.tree.root, shapeOfValue(e.data), e.type.length).cost).toBeLessThanOrEqual(f.estimate);
      }),
      { numRuns: 30 },
    );
  });

  it('fields the schema would leave unbounded are priced as huge, not as free', () => {
    expect(shapeOfField({ kind: 'string' }).len).toBe(UNBOUNDED);
    expect(shapeOfField({ kind: 'array', items: { kind: 'string' } }).len).toBe(UNBOUNDED);
  });

  it('an empty filter costs nothing and matches', () => {
    const f = compileFilter('  ', EXPIRY);
    expect(f.estimatedCost).toBe(0);
    expect(f.evaluate(expiringCertificate())).toEqual({ matched: true });
  });
});

describe('literal-only parts are evaluated at compile time', () => {
  it.each([
    ['1 / 0 == 0', 1, 3, /division by zero/],
    ["int('x') == 0", 1, 1, /type conversion failed/],
    ['uint(-1) == 0u', 1, 1, /numeric overflow|type conversion failed/],
    ['[1][1] == 1', 1, 4, /list index out of bounds/],
    ['[[1]][0][1] == 1', 1, 9, /list index out of bounds/],
    ["data.namespace == 'a' && 10 % 0 == 1", 1, 29, /modulus by zero/],
    ["data.namespace == 'a' || [1, 2].exists(x, x / 0 == 1)", 1, 33, /division by zero/],
  ])('rejects %s at %i:%i', (expression, line, column, reason) => {
    const err = rejection(expression, ISSUER);
    expect(err.reason).toMatch(reason);
    expect(err.reason).toMatch(/uses only literals and fails for every event/);
    expect({ line: err.line, column: err.column }).toEqual({ line, column });
  });

  it.each([
    'false && 1 / 0 == 0',
    "[1, 2, 3].exists(x, x == 2) && data.namespace == 'a'",
    "type(1) == int && data.namespace == 'a'",
    "data.SANs['DNS Names'].exists(int, int == 'a')",
    "timestamp('2030-01-01T00:00:00Z') > timestamp('2029-01-01T00:00:00Z')",
  ])('keeps %s', (expression) => {
    const id = expression.includes('SANs') ? CERT : ISSUER;
    expect(validateFilter(expression, id)).toEqual({ ok: true });
  });
});
