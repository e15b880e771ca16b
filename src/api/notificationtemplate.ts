/**
 * NotificationTemplate: a notification template in the service (docs/templates.md), referenced by a
 * NotificationRouter's templateRef. The Liquid parts are compiled by the admission webhook (a part that does
 * not compile is refused with its position) and again by the service.
 */
import {
  ageColumn,
  conditionsSchema,
  messageColumn,
  observedGenerationSchema,
  readyColumn,
  reasonColumn,
  type CustomResource,
  type KindDef,
} from './meta.js';
import { defineSchema, type Infer } from './schema.js';

/** Mirrors the engine's limit (TEMPLATE_LIMITS.maxPartChars). */
const PART_MAX_LENGTH = 16_384;

const source = (what: string) => ({ type: 'string' as const, maxLength: PART_MAX_LENGTH, description: what });

const partSchema = defineSchema({
  type: 'object',
  properties: {
    title: source('Liquid source of the title (email subject, chat header, incident title).'),
    text: source('Liquid source of the text (chat text, incident summary, webhook summary).'),
  },
});

const part = (what: string) => ({ ...partSchema, description: what });

export const templateSpecSchema = defineSchema({
  type: 'object',
  required: ['parts'],
  properties: {
    displayName: {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description: 'Name of the template in the service. Default: <namespace>/<name>.',
    },
    parts: {
      type: 'object',
      description: 'A part per integration type; default serves the types without their own part, field by field.',
      properties: {
        default: part('Used for every integration type without its own part (field by field).'),
        INCIDENT_MGMT: part('Incident management.'),
        WEBHOOK: part('Webhook (the payload keeps its schema; the text is its summary).'),
        EMAIL: part('Email.'),
        SLACK: part('Slack.'),
        TEAMS: part('Microsoft Teams.'),
        OPSGENIE: part('Opsgenie (title: the alert message, at most 130 characters; text: its description).'),
        GOOGLE_CHAT: part('Google Chat.'),
        DISCORD: part('Discord.'),
        ALERTMANAGER: part('Alertmanager (title: the summary annotation; text: the description annotation).'),
        GENERIC_WEBHOOK: {
          type: 'object',
          description: 'Generic JSON webhook: body is the whole request body, a JSON document once rendered.',
          properties: {
            title: source('Liquid source of the title.'),
            text: source('Liquid source of the text.'),
            body: source('Liquid source of the request body; must render to valid JSON.'),
          },
        },
      },
    },
  },
});

export const templateStatusSchema = defineSchema({
  type: 'object',
  properties: {
    observedGeneration: observedGenerationSchema,
    conditions: conditionsSchema,
    templateId: { type: 'string', description: 'Id of the template in the service.' },
  },
});

export type NotificationTemplateSpec = Infer<typeof templateSpecSchema>;
export type NotificationTemplateStatus = Infer<typeof templateStatusSchema>;
export type NotificationTemplate = CustomResource<NotificationTemplateSpec, NotificationTemplateStatus>;

export const NotificationTemplateKind: KindDef = {
  kind: 'NotificationTemplate',
  plural: 'notificationtemplates',
  singular: 'notificationtemplate',
  listKind: 'NotificationTemplateList',
  shortNames: ['ntemplate'],
  scope: 'Namespaced',
  description: 'Liquid texts per integration type for the notifications of the routers that reference it.',
  specSchema: templateSpecSchema,
  statusSchema: templateStatusSchema,
  printerColumns: [
    readyColumn,
    { name: 'Template', type: 'string', jsonPath: '.status.templateId', priority: 1 },
    reasonColumn,
    messageColumn,
    ageColumn,
  ],
};
