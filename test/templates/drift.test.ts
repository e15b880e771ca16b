/**
 * A template's part keys are `default` and every integration type (TEMPLATE_PART_KEYS): the GraphQL input and
 * output types and the NotificationTemplate CRD are written by hand, so a new integration type must be added
 * there too (and GENERIC_WEBHOOK's part takes a `body`).
 */
import { isInputObjectType, isObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { templateSpecSchema } from '../../src/api/notificationtemplate.js';
import { buildApiSchema } from '../../src/http/graphql/schema.js';
import { TEMPLATE_BODY_PART, TEMPLATE_PART_KEYS } from '../../src/model/records.js';

describe('template part keys', () => {
  const schema = buildApiSchema();
  const keys = [...TEMPLATE_PART_KEYS].sort();

  it('GraphQL NotificationTemplatePartsInput and NotificationTemplateParts list every part key', () => {
    const input = schema.getType('NotificationTemplatePartsInput');
    const output = schema.getType('NotificationTemplateParts');
    expect(isInputObjectType(input) && Object.keys(input.getFields()).sort()).toEqual(keys);
    expect(isObjectType(output) && Object.keys(output.getFields()).sort()).toEqual(keys);
  });

  it('the NotificationTemplate CRD lists every part key; only the body part has a body', () => {
    const parts = (templateSpecSchema as { properties: { parts: { properties: Record<string, { properties: Record<string, unknown> }> } } })
      .properties.parts.properties;
    expect(Object.keys(parts).sort()).toEqual(keys);
    for (const [k, p] of Object.entries(parts)) expect('body' in p.properties, k).toBe(k === TEMPLATE_BODY_PART);
  });
});
