import { buildSchema, parse, validate } from 'graphql';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createIntegrationCall, INTEGRATION_KINDS, parseHeaders } from '../../src/console/integration-kinds.js';

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
  it('refuses an unknown type and a header line without a colon, naming the line', () => {
    expect(() => createIntegrationCall('FAX', 'f', values)).toThrow(/unknown integration type FAX/);
    expect(() => parseHeaders('A: 1\nbroken')).toThrow(/line 2/);
  });
});
