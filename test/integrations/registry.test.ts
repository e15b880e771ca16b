/**
 * The integration-type registry: each descriptor's pure metadata (table), and drift tests keeping the spec-fixed
 * API surface (schema.graphql) and the operator's provider types equal to the registry, so that a new type
 * without its API or CRD surface fails here.
 */
import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLNonNull,
  GraphQLObjectType,
  buildSchema,
  getNamedType,
  type GraphQLInputType,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { PROVIDER_TYPES } from '../../src/api/notificationprovider.js';
import { createMutationOf } from '../../src/client/service-api.js';
import { INTEGRATION_KINDS } from '../../src/console/integration-kinds.js';
import { DEFAULT_RATE_LIMITS } from '../../src/delivery/rate-limit.js';
import { SDL } from '../../src/http/graphql/schema.js';
import { rootValue } from '../../src/http/graphql/resolvers.js';
import { INTEGRATIONS, descriptorOf } from '../../src/integrations/registry.js';
import { INTEGRATION_TYPES } from '../../src/model/integration-types.js';
import { INTEGRATION_TYPE } from '../../src/operator/desired.js';

const descriptors = Object.values(INTEGRATIONS);

describe('integration registry', () => {
  it('has one descriptor per type name, under its own name', () => {
    expect(Object.keys(INTEGRATIONS)).toEqual([...INTEGRATION_TYPES]);
    for (const [name, d] of Object.entries(INTEGRATIONS)) expect(d.type).toBe(name);
  });

  it.each([
    ['INCIDENT_MGMT', 'supersede', { ratePerSec: 2, burst: 10 }, 'IncidentManagement', 'incidentMgmtParams'],
    ['WEBHOOK', 'in-order', { ratePerSec: 20, burst: 40 }, 'Webhook', 'webhookParams'],
    ['EMAIL', 'in-order', { ratePerSec: 5, burst: 10 }, 'Email', 'emailParams'],
    ['SLACK', 'in-order', { ratePerSec: 1, burst: 3 }, 'Slack', 'slackParams'],
    ['TEAMS', 'in-order', { ratePerSec: 2, burst: 4 }, 'Teams', 'teamsParams'],
    ['OPSGENIE', 'supersede', { ratePerSec: 1, burst: 10 }, 'Opsgenie', 'opsgenieParams'],
    ['GOOGLE_CHAT', 'in-order', { ratePerSec: 1, burst: 3 }, 'GoogleChat', 'googleChatParams'],
    ['DISCORD', 'in-order', { ratePerSec: 0.5, burst: 5 }, 'Discord', 'discordParams'],
    ['GENERIC_WEBHOOK', 'in-order', { ratePerSec: 20, burst: 40 }, 'GenericWebhook', 'genericWebhookParams'],
    ['ALERTMANAGER', 'supersede', { ratePerSec: 100, burst: 500 }, 'Alertmanager', 'alertmanagerParams'],
  ] as const)('%s: order %s, rate %o, provider type %s, params %s', (type, mode, rate, provider, params) => {
    const d = INTEGRATIONS[type];
    expect([d.orderMode, d.rateLimit, d.providerType, d.api.paramsField]).toEqual([mode, rate, provider, params]);
    expect(DEFAULT_RATE_LIMITS[type]).toEqual(rate);
  });

  it('secrets are exactly the write-only fields (nothing secret is returned as config)', () => {
    const secretKeys = Object.fromEntries(descriptors.map((d) => [d.type, d.params.filter((p) => p.into === 'secrets').map((p) => p.key)]));
    expect(secretKeys).toEqual({
      INCIDENT_MGMT: ['integrationKey'],
      WEBHOOK: ['url', 'signingSecret'],
      EMAIL: [],
      SLACK: ['webhookUrl'],
      TEAMS: ['webhookUrl'],
      OPSGENIE: ['apiKey'],
      GOOGLE_CHAT: ['webhookUrl'],
      DISCORD: ['webhookUrl'],
      GENERIC_WEBHOOK: ['url', 'signingSecret', 'headers'],
      ALERTMANAGER: ['url', 'bearerToken', 'username', 'password'],
    });
  });

  it('descriptorOf: a known name, an unknown one, an inherited property', () => {
    expect(descriptorOf('SLACK')).toBe(INTEGRATIONS.SLACK);
    expect(descriptorOf('PAGER')).toBeUndefined();
    expect(descriptorOf('toString')).toBeUndefined();
  });
});

describe('drift: the spec SDL names every registered type and nothing else', () => {
  const schema = buildSchema(SDL);
  const mutation = schema.getMutationType() as GraphQLObjectType;
  const input = (name: string) => schema.getType(name) as GraphQLInputObjectType;
  const isRequired = (t: GraphQLInputType) => t instanceof GraphQLNonNull;

  it('enum IntegrationType equals the registry', () => {
    const e = schema.getType('IntegrationType') as GraphQLEnumType;
    expect(e.getValues().map((v) => v.name)).toEqual([...INTEGRATION_TYPES]);
  });

  it('the create*Integration mutations equal the descriptors, and each has a resolver', () => {
    const creates = Object.keys(mutation.getFields()).filter((f) => /^create\w*Integration$/.test(f));
    expect(creates.sort()).toEqual(descriptors.map((d) => d.api.createMutation).sort());
    for (const d of descriptors) expect(rootValue[d.api.createMutation], d.api.createMutation).toBeTypeOf('function');
  });

  it.each(descriptors.map((d) => [d.type, d] as const))('%s: create and update inputs carry its params as the descriptor says', (_t, d) => {
    const createInput = getNamedType(
      mutation.getFields()[d.api.createMutation]!.args.find((a) => a.name === 'input')!.type,
    ) as GraphQLInputObjectType;
    const update = input('UpdateIntegrationInput').getFields()[d.api.paramsField];
    expect(update, `UpdateIntegrationInput.${d.api.paramsField}`).toBeDefined();
    const paramsType = getNamedType(update!.type) as GraphQLInputObjectType;
    const where = d.api.flatCreateInput
      ? createInput.getFields()
      : (getNamedType(createInput.getFields()[d.api.paramsField]!.type) as GraphQLInputObjectType).getFields();
    for (const fields of [where, paramsType.getFields()]) {
      const declared = d.params.map((p) => p.input);
      if (fields === where && d.api.flatCreateInput) expect(declared.every((n) => n in fields)).toBe(true);
      else expect(Object.keys(fields).sort()).toEqual([...declared].sort());
      for (const p of d.params) expect(isRequired(fields[p.input]!.type), `${d.type}.${p.input} required`).toBe(p.required);
    }
  });
});

describe('drift: the operator provider types equal the registry', () => {
  it('PROVIDER_TYPES and the operator mapping match each descriptor.providerType', () => {
    expect([...PROVIDER_TYPES].sort()).toEqual(descriptors.map((d) => d.providerType).sort());
    expect(INTEGRATION_TYPE).toEqual(Object.fromEntries(descriptors.map((d) => [d.providerType, d.type])));
  });
});

describe('the client and the console derive their tables from the descriptors', () => {
  it.each(descriptors.map((d) => [d.type, d] as const))('%s: the client create mutation and the console form', (_t, d) => {
    const m = createMutationOf(d.type);
    expect(m.field).toBe(d.api.createMutation);
    expect(m.inputType).toBe(`${d.api.createMutation.charAt(0).toUpperCase()}${d.api.createMutation.slice(1)}Input`);
    const kind = INTEGRATION_KINDS.find((k) => k.type === d.type);
    expect(kind?.label).toBe(d.label);
    expect(kind?.fields.map((f) => [f.name, f.optional === true, f.secret === true])).toEqual(
      d.params.map((p) => [p.key, !p.required, p.into === 'secrets' && p.kind !== 'headers']),
    );
  });
});
