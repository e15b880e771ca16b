/**
 * NotificationProvider: an integration (incident management, webhook, email, Slack, Teams, Opsgenie, Google Chat,
 * Discord, generic webhook, Alertmanager) in the service.
 */
import {
  ageColumn,
  conditionsSchema,
  messageColumn,
  observedGenerationSchema,
  readyColumn,
  reasonColumn,
  secretKeyRefSchema,
  type CustomResource,
  type KindDef,
} from './meta.js';
import { defineSchema, type Infer } from './schema.js';

export const PROVIDER_TYPES = [
  'IncidentManagement',
  'Webhook',
  'Email',
  'Slack',
  'Teams',
  'Opsgenie',
  'GoogleChat',
  'Discord',
  'GenericWebhook',
  'Alertmanager',
] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

/** The spec block holding the settings of each type. */
export const PROVIDER_SETTINGS_FIELD = {
  IncidentManagement: 'incidentManagement',
  Webhook: 'webhook',
  Email: 'email',
  Slack: 'slack',
  Teams: 'teams',
  Opsgenie: 'opsgenie',
  GoogleChat: 'googleChat',
  Discord: 'discord',
  GenericWebhook: 'genericWebhook',
  Alertmanager: 'alertmanager',
} as const satisfies Record<ProviderType, string>;

export const providerSpecSchema = defineSchema({
  type: 'object',
  description:
    'An integration in the service. Secrets (integration key, webhook URLs, signing secret) are only read from Secrets in the same namespace.',
  required: ['type'],
  properties: {
    type: {
      type: 'string',
      enum: PROVIDER_TYPES,
      description: 'Which integration; the block of the same name (camelCase) holds its settings.',
    },
    displayName: {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description: 'Name of the integration in the service. Default: <namespace>/<name>.',
    },
    enabled: { type: 'boolean', default: true, description: 'Disabled integrations receive nothing.' },
    rateLimit: {
      type: 'object',
      required: ['perSecond'],
      description:
        "The integration's own send rate (a token bucket; sends above it wait their turn, nothing is dropped). Left out: the type's default, the vendor's documented limit (docs/integrations.md).",
      properties: {
        perSecond: {
          type: 'number',
          minimum: 0,
          maximum: 10000,
          description:
            "Sends per second, 0.01 to 10000 (fractions allowed), or 0 for unlimited (one's own receivers); the service may bound it (maxIntegrationRate in its limits file).",
        },
        burst: {
          type: 'integer',
          minimum: 1,
          maximum: 1000,
          description: "How many may go at once after a quiet period. Default: one second's worth (at least 1).",
        },
      },
    },
    incidentManagement: {
      type: 'object',
      required: ['integrationKeySecretRef'],
      properties: {
        integrationKeySecretRef: { ...secretKeyRefSchema, description: 'Integration (routing) key of the incident management service.' },
      },
    },
    webhook: {
      type: 'object',
      required: ['urlSecretRef'],
      properties: {
        urlSecretRef: { ...secretKeyRefSchema, description: 'Receiver URL (kept in a Secret: it may carry a token).' },
        signingSecretRef: {
          ...secretKeyRefSchema,
          description: 'Standard Webhooks signing secret (whsec_<base64> or 16+ characters). Omit for unsigned webhooks.',
        },
      },
    },
    email: {
      type: 'object',
      required: ['to'],
      properties: {
        to: {
          type: 'array',
          minItems: 1,
          maxItems: 50,
          items: { type: 'string', minLength: 3, maxLength: 320 },
          description: 'Recipients.',
        },
        from: { type: 'string', minLength: 3, maxLength: 320, description: 'Sender. Default: the service setting.' },
      },
    },
    slack: {
      type: 'object',
      required: ['webhookUrlSecretRef'],
      properties: { webhookUrlSecretRef: { ...secretKeyRefSchema, description: 'Slack incoming webhook URL.' } },
    },
    teams: {
      type: 'object',
      required: ['webhookUrlSecretRef'],
      properties: { webhookUrlSecretRef: { ...secretKeyRefSchema, description: 'Teams workflow webhook URL.' } },
    },
    opsgenie: {
      type: 'object',
      required: ['apiKeySecretRef'],
      properties: {
        apiKeySecretRef: {
          ...secretKeyRefSchema,
          description: 'API key of an Opsgenie API integration. The API region is the service setting --opsgenie-api-url.',
        },
      },
    },
    googleChat: {
      type: 'object',
      required: ['webhookUrlSecretRef'],
      properties: { webhookUrlSecretRef: { ...secretKeyRefSchema, description: 'Google Chat space incoming webhook URL.' } },
    },
    discord: {
      type: 'object',
      required: ['webhookUrlSecretRef'],
      properties: { webhookUrlSecretRef: { ...secretKeyRefSchema, description: 'Discord channel webhook URL.' } },
    },
    genericWebhook: {
      type: 'object',
      required: ['urlSecretRef'],
      properties: {
        urlSecretRef: { ...secretKeyRefSchema, description: 'Receiver URL (kept in a Secret: it may carry a token).' },
        signingSecretRef: {
          ...secretKeyRefSchema,
          description: 'Standard Webhooks signing secret (whsec_<base64> or 16+ characters). Omit for unsigned requests.',
        },
        headersSecretRef: {
          ...secretKeyRefSchema,
          description:
            'Extra request headers, one "Name: value" per line (at most 10), e.g. "Authorization: Bearer …". Hop-by-hop, Host, Content-*, Proxy-*, User-Agent and webhook-* are refused.',
        },
      },
    },
    alertmanager: {
      type: 'object',
      required: ['urlSecretRef'],
      properties: {
        urlSecretRef: {
          ...secretKeyRefSchema,
          description: "Alertmanager's base URL, e.g. http://alertmanager.monitoring:9093; alerts go to <url>/api/v2/alerts.",
        },
        bearerTokenSecretRef: { ...secretKeyRefSchema, description: 'Bearer token (Authorization: Bearer). Not with basic auth.' },
        usernameSecretRef: {
          ...secretKeyRefSchema,
          description: 'Basic auth user, with passwordSecretRef (a kubernetes.io/basic-auth Secret has both).',
        },
        passwordSecretRef: { ...secretKeyRefSchema, description: 'Basic auth password, with usernameSecretRef.' },
      },
    },
  },
  oneOf: [
    { properties: { type: { enum: ['IncidentManagement'] } }, required: ['incidentManagement'] },
    { properties: { type: { enum: ['Webhook'] } }, required: ['webhook'] },
    { properties: { type: { enum: ['Email'] } }, required: ['email'] },
    { properties: { type: { enum: ['Slack'] } }, required: ['slack'] },
    { properties: { type: { enum: ['Teams'] } }, required: ['teams'] },
    { properties: { type: { enum: ['Opsgenie'] } }, required: ['opsgenie'] },
    { properties: { type: { enum: ['GoogleChat'] } }, required: ['googleChat'] },
    { properties: { type: { enum: ['Discord'] } }, required: ['discord'] },
    { properties: { type: { enum: ['GenericWebhook'] } }, required: ['genericWebhook'] },
    { properties: { type: { enum: ['Alertmanager'] } }, required: ['alertmanager'] },
  ],
});

export const providerStatusSchema = defineSchema({
  type: 'object',
  properties: {
    observedGeneration: observedGenerationSchema,
    conditions: conditionsSchema,
    integrationId: { type: 'string', description: 'Id of the integration in the service.' },
    appliedSecretVersion: {
      type: 'string',
      description: 'uid/resourceVersion of the Secrets last sent to the service (never their content); a change re-sends them.',
    },
  },
});

export type NotificationProviderSpec = Infer<typeof providerSpecSchema>;
export type NotificationProviderStatus = Infer<typeof providerStatusSchema>;
export type NotificationProvider = CustomResource<NotificationProviderSpec, NotificationProviderStatus>;

export const NotificationProviderKind: KindDef = {
  kind: 'NotificationProvider',
  plural: 'notificationproviders',
  singular: 'notificationprovider',
  listKind: 'NotificationProviderList',
  shortNames: ['nprov'],
  scope: 'Namespaced',
  description:
    'A notification integration (incident management, webhook, email, Slack, Teams, Opsgenie, Google Chat, Discord, generic webhook, Alertmanager) reconciled into certmgr-notify.',
  specSchema: providerSpecSchema,
  statusSchema: providerStatusSchema,
  printerColumns: [
    readyColumn,
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'Enabled', type: 'boolean', jsonPath: '.spec.enabled' },
    { name: 'Integration', type: 'string', jsonPath: '.status.integrationId', priority: 1 },
    reasonColumn,
    messageColumn,
    ageColumn,
  ],
};
