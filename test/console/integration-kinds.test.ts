import { buildSchema, parse, validate } from 'graphql';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  createIntegrationCall,
  formatRateLimit,
  INTEGRATION_KINDS,
  parseHeaders,
  rateLimitValue,
} from '../../src/console/integration-kinds.js';

const schema = buildSchema(readFileSync(new URL('../../src/http/graphql/schema.graphql', import.meta.url), 'utf8'));
const values = {
  url: 'https://h.example/x',
  signingSecret: '',
  integrationKey: 'ik',
  to: 'a@x.example, b@x.example',
  apiKey: 'k',
  webhookUrl: 'https://c.example/w',
  headers: '',
};

describe('createIntegrationCall', () => {
  it('offers every IntegrationType of the schema', () => {
    const types = (schema.getType('IntegrationType') as unknown as { getValues(): { name: string }[] }).getValues().map((v) => v.name);
    expect(INTEGRATION_KINDS.map((k) => k.type).sort()).toEqual([...types].sort());
  });
  it.each(INTEGRATION_KINDS.map((k) => k.type))('%s: the mutation is valid against the schema', (type) => {
    const call = createIntegrationCall(type, 'n', values);
    expect(validate(schema, parse(call.mutation))).toEqual([]);
    expect(call.variables).toMatchObject({ input: { name: 'n' } });
  });
  it('leaves empty optional fields out and splits email recipients', () => {
    expect(JSON.parse(JSON.stringify(createIntegrationCall('WEBHOOK', 'w', values).variables))).toEqual({
      input: { name: 'w', url: 'https://h.example/x' },
    });
    expect(createIntegrationCall('EMAIL', 'e', values).variables).toMatchObject({
      input: { emailParams: { to: ['a@x.example', 'b@x.example'] } },
    });
  });
  it('sends generic webhook headers', () => {
    const v = createIntegrationCall('GENERIC_WEBHOOK', 'g', { ...values, headers: 'X-Team: sre\n\nAuthorization: Bearer t:1' }).variables;
    expect(v).toMatchObject({
      input: {
        genericWebhookParams: {
          headers: [
            { name: 'X-Team', value: 'sre' },
            { name: 'Authorization', value: 'Bearer t:1' },
          ],
        },
      },
    });
  });
  it.each(INTEGRATION_KINDS.map((k) => k.type))('%s: a rate limit goes with the create input, valid against the schema', (type) => {
    const call = createIntegrationCall(type, 'n', { ...values, 'rateLimit.perSecond': '0.5', 'rateLimit.burst': '4' });
    expect(validate(schema, parse(call.mutation))).toEqual([]);
    expect(call.variables).toMatchObject({ input: { name: 'n', rateLimit: { perSecond: 0.5, burst: 4 } } });
    expect(createIntegrationCall(type, 'n', values).variables['input']).not.toHaveProperty('rateLimit');
  });
  it.each([
    ['', '', undefined],
    ['  ', '3', undefined],
    ['0', '', { perSecond: 0 }],
    ['5', '', { perSecond: 5 }],
    ['2.5', ' 10 ', { perSecond: 2.5, burst: 10 }],
  ])('rateLimitValue(%j, %j)', (ps, b, want) => expect(rateLimitValue(ps, b)).toEqual(want));
  it.each([
    ['fast', '', /sends per second must be a number, 0 for unlimited \(got "fast"\)/],
    ['-1', '', /sends per second must be a number/],
    ['5', '1.5', /burst must be a whole number of at least 1 \(got "1.5"\)/],
    ['5', '0', /burst must be a whole number/],
  ])('rateLimitValue(%j, %j) refuses, naming the field', (ps, b, message) => expect(() => rateLimitValue(ps, b)).toThrow(message));
  it('formatRateLimit', () => {
    expect(formatRateLimit({ perSecond: 1, burst: 3, typeDefault: true })).toBe('1/s, burst 3 (type default)');
    expect(formatRateLimit({ perSecond: 0, burst: 1, typeDefault: false })).toBe('unlimited');
    expect(formatRateLimit(undefined)).toBe('');
  });
  it('refuses an unknown type and a header line without a colon, naming the line', () => {
    expect(() => createIntegrationCall('FAX', 'f', values)).toThrow(/unknown integration type FAX/);
    expect(() => parseHeaders('A: 1\nbroken')).toThrow(/line 2/);
  });
});
