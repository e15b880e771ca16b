/**
 * Variable coercion errors never reflect the value (found by test/faults/secret-search.int.test.ts: a routing key
 * sent with the wrong type came back in the error message; a literal in the document did too). Table tests of the pure redaction over the messages
 * graphql-js really produces for our schema, then the same through the real service.
 */
import { graphql, GraphQLError } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactCoercionReason, redactLiteralError, redactVariableError } from '../../src/http/graphql/handler.js';
import { buildApiSchema } from '../../src/http/graphql/schema.js';
import { startTestService, type TestService } from '../support/service.js';

const SECRET = 'rk-secret-9f8e7d6c5b4a';
const schema = buildApiSchema();

const INCIDENT = `mutation($i: CreateIncidentMgmtIntegrationInput!) { createIncidentMgmtIntegration(input: $i) { id } }`;
const WEBHOOK = `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`;
const DELETE = `mutation($ids: [UUID!]!) { deleteIntegrations(ids: $ids) { ids } }`;
const DELIVERIES = `query($f: DeliveryFilterInput) { deliveries(filter: $f) { nodes { id } } }`;
const UPDATE = `mutation($id: UUID!, $e: Boolean) { updateNotificationRoutingConfiguration(id: $id, enabled: $e) { id } }`;

/** [what, document, variables, the redacted message expected] */
const CASES: [string, string, Record<string, unknown>, string][] = [
  [
    'string field given a list',
    INCIDENT,
    { i: { name: 'x', incidentMgmtParams: { IntegrationKey: [SECRET] } } },
    'Variable "$i" got invalid value at "i.incidentMgmtParams.IntegrationKey"; String cannot represent a non string value',
  ],
  [
    'string field given an object',
    WEBHOOK,
    { i: { name: 'x', url: { token: SECRET } } },
    'Variable "$i" got invalid value at "i.url"; String cannot represent a non string value',
  ],
  [
    'unknown field next to a secret',
    INCIDENT,
    { i: { name: 'x', incidentMgmtParams: { IntegrationKey: SECRET, extra: 1 } } },
    'Variable "$i" got invalid value at "i.incidentMgmtParams"; Field "extra" is not defined by type "IncidentMgmtParamsInput".',
  ],
  [
    'missing field next to a secret',
    WEBHOOK,
    { i: { name: 'x', signingSecret: SECRET } },
    'Variable "$i" got invalid value; Field "url" of required type "String!" was not provided.',
  ],
  [
    'params not an object',
    INCIDENT,
    { i: { name: 'x', incidentMgmtParams: SECRET } },
    'Variable "$i" got invalid value at "i.incidentMgmtParams"; Expected type "IncidentMgmtParamsInput" to be an object.',
  ],
  [
    'UUID list item',
    DELETE,
    { ids: [SECRET] },
    'Variable "$ids" got invalid value at "ids[0]"; UUID cannot represent the value: must be a UUID in the canonical 8-4-4-4-12 hex form, e.g. 123e4567-e89b-12d3-a456-426614174000 (no urn:uuid: prefix, no braces)',
  ],
  [
    'UUID given a number',
    DELETE,
    { ids: [12] },
    'Variable "$ids" got invalid value at "ids[0]"; UUID cannot represent the value: must be a string',
  ],
  [
    'enum value',
    DELIVERIES,
    { f: { status: SECRET } },
    'Variable "$f" got invalid value at "f.status"; Value does not exist in "DeliveryStatus" enum.',
  ],
  [
    'boolean',
    UPDATE,
    { id: '123e4567-e89b-42d3-a456-426614174000', e: SECRET },
    'Variable "$e" got invalid value; Boolean cannot represent a non boolean value',
  ],
  [
    'value holding a fake path',
    INCIDENT,
    { i: { name: 'x', incidentMgmtParams: [`${SECRET} at "i.x"`] } },
    'Variable "$i" got invalid value at "i.incidentMgmtParams"; Expected type "IncidentMgmtParamsInput" to be an object.',
  ],
];

describe('redactVariableError over graphql-js messages (table)', () => {
  it.each(CASES)('%s', async (_what, source, variableValues, want) => {
    const r = await graphql({ schema, source, variableValues });
    const e = r.errors?.[0] as GraphQLError;
    expect(e, 'graphql-js rejected the variables').toBeDefined();
    const got = redactVariableError(e.message, e.originalError?.message ?? '');
    expect(got).toBe(want);
    expect(got).not.toContain(SECRET);
  });

  it.each([
    ['String cannot represent a non string value: ["x"]', 'String cannot represent a non string value'],
    ['Int cannot represent non 32-bit signed integer value: 1e+99', 'Int cannot represent non 32-bit signed integer value'],
    ['ID cannot represent a non-string and non-integer value: {}', 'ID cannot represent a non-string and non-integer value'],
    ['Enum "DeliveryStatus" cannot represent non-string value: 1.', 'Enum "DeliveryStatus" cannot represent non-string value'],
    ['UUID cannot represent "a: must leak": must be a UUID', 'UUID cannot represent the value: must be a UUID'],
    ['Field "url" of required type "String!" was not provided.', 'Field "url" of required type "String!" was not provided.'],
  ])('reason %s', (reason, want) => {
    expect(redactCoercionReason(reason)).toBe(want);
  });

  it('leaves other messages alone', () => {
    expect(redactVariableError('Variable "$i" of required type "X!" was not provided.', 'x')).toBe(
      'Variable "$i" of required type "X!" was not provided.',
    );
    expect(redactVariableError('Syntax Error: Expected Name, found <EOF>.', 'Syntax Error: Expected Name, found <EOF>.')).toBe(
      'Syntax Error: Expected Name, found <EOF>.',
    );
  });
});

/** [what, document with the secret as a literal, the redacted message expected] */
const LITERALS: [string, string, string][] = [
  [
    'string field given a list',
    `mutation { createIncidentMgmtIntegration(input: { name: "x", incidentMgmtParams: { IntegrationKey: ["${SECRET}"] } }) { id } }`,
    'String cannot represent a non string value',
  ],
  [
    'string field given an object',
    `mutation { createWebhookIntegration(input: { name: "x", url: { a: "${SECRET}" } }) { id } }`,
    'String cannot represent a non string value',
  ],
  [
    'object given a string',
    `mutation { createIncidentMgmtIntegration(input: { name: "x", incidentMgmtParams: "${SECRET}" }) { id } }`,
    'Expected value of type "IncidentMgmtParamsInput!", found a value of another type.',
  ],
  [
    'UUID',
    `mutation { deleteIntegrations(ids: ["${SECRET}"]) { ids } }`,
    'UUID cannot represent the value: must be a UUID in the canonical 8-4-4-4-12 hex form, e.g. 123e4567-e89b-12d3-a456-426614174000 (no urn:uuid: prefix, no braces)',
  ],
  [
    'enum given a string',
    `query { deliveries(filter: { status: "${SECRET}" }) { nodes { id } } }`,
    'Enum "DeliveryStatus" cannot represent non-enum value',
  ],
  [
    'boolean given a string',
    `mutation { updateNotificationRoutingConfiguration(id: "123e4567-e89b-42d3-a456-426614174000", enabled: "${SECRET}") { id } }`,
    'Boolean cannot represent a non boolean value',
  ],
];

describe('redactLiteralError over graphql-js validation messages (table)', () => {
  it.each(LITERALS)('%s', async (_what, source, want) => {
    const r = await graphql({ schema, source });
    const got = redactLiteralError(r.errors![0]!.message);
    expect(got).toBe(want);
    expect(got).not.toContain(SECRET);
  });
  it('keeps "found null" and other messages', () => {
    expect(redactLiteralError('Expected value of type "String!", found null.')).toBe('Expected value of type "String!", found null.');
    expect(redactLiteralError('Cannot query field "x" on type "Query".')).toBe('Cannot query field "x" on type "Query".');
  });
});

describe('through the real service', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService('sqlite');
  });
  afterAll(async () => {
    await svc?.close();
  });

  it.each(CASES)('%s: BAD_USER_INPUT naming the path, the value not in the answer', async (_what, query, variables, want) => {
    const res = await svc.rest('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain(SECRET);
    const body = JSON.parse(text) as { errors: { message: string; extensions: { code: string } }[] };
    expect(body.errors[0]).toMatchObject({ message: want, extensions: { code: 'BAD_USER_INPUT' } });
    expect(svc.logs.join('')).not.toContain(SECRET);
  });

  it.each(LITERALS)('literal %s: refused, the value not in the answer', async (_what, query, want) => {
    const res = await svc.rest('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    const text = await res.text();
    expect(res.status).toBeLessThan(500);
    expect(text).not.toContain(SECRET);
    expect((JSON.parse(text) as { errors: { message: string }[] }).errors[0]!.message).toBe(want);
  });
});
