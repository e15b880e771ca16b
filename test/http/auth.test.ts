/** The scope decision (a table) and the GraphQL operation a request would run. */
import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { allowed, ApiKeyRing, forbiddenMessage, type ApiOperation } from '../../src/http/auth.js';
import { graphqlOperation } from '../../src/http/graphql/handler.js';
import type { ApiKeyScope } from '../../src/config.js';

describe('allowed(scope, operation)', () => {
  const table: [ApiKeyScope, ApiOperation, boolean][] = [
    ['admin', 'query', true],
    ['admin', 'mutation', true],
    ['admin', 'events', true],
    ['admin', 'inventory', true],
    ['agent', 'query', false],
    ['agent', 'mutation', false],
    ['agent', 'events', true],
    ['agent', 'inventory', true],
    ['read', 'query', true],
    ['read', 'mutation', false],
    ['read', 'events', false],
    ['read', 'inventory', false],
  ];
  it.each(table)('%s may %s: %s', (scope, op, want) => {
    expect(allowed(scope, op)).toBe(want);
  });
});

describe('forbiddenMessage', () => {
  it.each([
    ['agent', 'query', /queries .* need an API key of scope 'admin' or 'read'; this key has scope 'agent'/],
    ['read', 'mutation', /changes .* need an API key of scope 'admin'; this key has scope 'read'/],
    ['read', 'events', /posting events need an API key of scope 'admin' or 'agent'; this key has scope 'read'/],
  ] as const)('%s doing %s', (scope, op, re) => {
    expect(forbiddenMessage(scope, op)).toMatch(re);
  });
});

describe('ApiKeyRing.identify', () => {
  const ring = new ApiKeyRing([
    { key: 'admin-key-0123456789', companyId: 'c1' },
    { key: 'agent-key-0123456789', companyId: 'c2', scope: 'agent' },
    { key: 'read-key-01234567890', companyId: 'c1', scope: 'read' },
  ]);
  it.each([
    ['admin-key-0123456789', { companyId: 'c1', scope: 'admin' }],
    ['agent-key-0123456789', { companyId: 'c2', scope: 'agent' }],
    ['read-key-01234567890', { companyId: 'c1', scope: 'read' }],
    ['other-key-0123456789', null],
    ['', null],
    [undefined, null],
  ])('%s', (key, want) => {
    const got = ring.identify(key);
    expect(got === null ? null : { companyId: got.companyId, scope: got.scope }).toEqual(want);
    // the key's id (a silence's default author): a short hash prefix, never the key
    if (got) expect(got.keyId).toMatch(/^api-key:[0-9a-f]{12}$/);
    if (got && key) expect(got.keyId).not.toContain(key.slice(0, 6));
  });
});

describe('graphqlOperation', () => {
  it.each([
    ['{ integrations { nodes { id } } }', undefined, 'query'],
    ['query Q { integrations { nodes { id } } }', 'Q', 'query'],
    ['mutation M { deleteIntegrations(ids: []) { ids } }', undefined, 'mutation'],
    ['mutation M { deleteIntegrations(ids: []) { ids } }', 'M', 'mutation'],
    ['query Q { a } mutation M { b }', 'Q', 'query'],
    ['query Q { a } mutation M { b }', 'M', 'mutation'],
    // no name with several operations, or a name that matches none: nothing runs, judged by the whole document
    ['query Q { a } mutation M { b }', undefined, 'mutation'],
    ['query Q { a } mutation M { b }', null, 'mutation'],
    ['query Q { a }', 'Other', 'query'],
    ['subscription S { a }', undefined, 'mutation'],
  ] as const)('%s (operationName %s) is a %s', (src, name, want) => {
    expect(graphqlOperation(parse(src), name)).toBe(want);
  });
});
