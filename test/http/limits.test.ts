/** Pure request-limit decisions: JSON depth, store-outage classification, metrics route labels, the deadline's answer. */
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/store/errors.js';
import { MAX_JSON_DEPTH, deadlineAnswer, isStoreUnavailable, jsonDepthViolation, routeLabel } from '../../src/http/limits.js';

const nest = (n: number): unknown => JSON.parse('['.repeat(n) + ']'.repeat(n));

describe('jsonDepthViolation', () => {
  const cases: [string, unknown, number, string | null][] = [
    ['a scalar', 7, 2, null],
    ['null', null, 2, null],
    ['an empty object at the limit', {}, 1, null],
    ['nested arrays within the limit', nest(MAX_JSON_DEPTH), MAX_JSON_DEPTH, null],
    ['one level too deep', nest(3), 2, '[0][0]'],
    ['the path names keys and indexes', { a: { b: [{ c: {} }] } }, 3, 'a.b[0]'],
    ['odd keys are quoted', { 'DNS Names': [[]] }, 2, '["DNS Names"][0]'],
    ['long keys are cut', { ['k'.repeat(100)]: {} }, 1, `["${'k'.repeat(40)}"]`],
    ['the first too-deep member in document order', { ok: 1, x: [[1]], y: [[[1]]] }, 3, 'y[0][0]'],
  ];
  it.each(cases)('%s', (_n, v, max, expected) => expect(jsonDepthViolation(v, max)).toBe(expected));

  it('does not overflow the stack on 500,000 levels', () => {
    expect(jsonDepthViolation(nest(500_000))).toBe(`${'[0]'.repeat(MAX_JSON_DEPTH)}`);
  });
});

describe('isStoreUnavailable', () => {
  const err = (props: Record<string, unknown>, message = 'x') => Object.assign(new Error(message), props);
  const cases: [string, unknown, boolean][] = [
    ['connection refused', err({ code: 'ECONNREFUSED' }), true],
    ['DNS failure', err({ code: 'ENOTFOUND' }), true],
    ['pg connection exception 08006', err({ code: '08006' }), true],
    ['pg too many connections 53300', err({ code: '53300' }), true],
    ['pg admin shutdown 57P01', err({ code: '57P01' }), true],
    ['pg connection terminated', new Error('Connection terminated unexpectedly'), true],
    ['pg pool timeout', new Error('timeout exceeded when trying to connect'), true],
    ['a closed store', new StoreError('postgres store is closed'), true],
    ['wrapped in cause', new Error('query failed', { cause: err({ code: 'ECONNRESET' }) }), true],
    ['inside an AggregateError', new AggregateError([err({ code: 'ECONNREFUSED' })]), true],
    ['pg syntax error 42601', err({ code: '42601' }), false],
    ['pg unique violation 23505', err({ code: '23505' }), false],
    ['a TypeError', new TypeError('x is undefined'), false],
    ['not an error', 'ECONNREFUSED', false],
  ];
  it.each(cases)('%s → %s', (_n, e, expected) => expect(isStoreUnavailable(e)).toBe(expected));
});

describe('routeLabel', () => {
  const cases: [string, Parameters<typeof routeLabel>[0], string][] = [
    ['unmatched', undefined, 'other'],
    ['an app route', { baseUrl: '', routePath: '/graphql' }, '/graphql'],
    [
      'a mounted route keeps its pattern',
      { baseUrl: '/outagedetection/v1/inventorymonitoringconfig', routePath: '/:type' },
      '/outagedetection/v1/inventorymonitoringconfig/:type',
    ],
    ['a regexp route is not a label', { baseUrl: '', routePath: /x/ }, 'other'],
  ];
  it.each(cases)('%s', (_n, m, expected) => expect(routeLabel(m)).toBe(expected));
});

describe('deadlineAnswer', () => {
  it.each([
    ['the body is still arriving: the client was slow', false, { status: 408, code: 'REQUEST_TIMEOUT', closeConnection: true }],
    ['received whole: the service was slow', true, { status: 503, code: 'DEADLINE_EXCEEDED', closeConnection: false }],
  ])('%s', (_n, received, want) => expect(deadlineAnswer(received)).toEqual(want));
});
