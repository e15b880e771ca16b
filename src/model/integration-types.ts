/**
 * The integration types: their names (the domain vocabulary, stored in records, named by the API and the
 * operator) and what every role knows about a type without its notifier: the API names (spec SDL), the
 * parameters and how each is validated and stored, the NotificationProvider spec.type, and the console's form.
 * Pure data without Node imports, so the store, the client, the operator and the browser console read the same
 * table. The rest of a type (notifier, order mode, rate limit) is its descriptor in src/integrations/<type>.ts,
 * which spreads its entry here; src/integrations/registry.ts lists the descriptors, typed
 * `Record<IntegrationType, …>`, so an entry here without a descriptor (or the reverse) does not compile.
 */

/**
 * How one parameter is validated (src/service/integrations.ts applies it): a secret string, a tenant destination
 * URL (http(s) and the egress policy's early check), a Standard Webhooks signing secret, one email address, a
 * list of them, a sender address (an email address in a sender domain the operator allows), or extra HTTP
 * headers (GENERIC_WEBHOOK: a list of { name, value }, stored as JSON).
 */
export type ParamKind = 'secret' | 'destination' | 'signingSecret' | 'email' | 'emails' | 'sender' | 'headers';

/** One field of a type's parameters input, where its validated value is stored, and its console form field. */
export interface ParamField {
  /** Field name in the GraphQL params input (spec SDL, e.g. IntegrationKey). */
  input: string;
  kind: ParamKind;
  required: boolean;
  /** Write-only `secrets` (never returned or logged) or returned `config`, under `key`. */
  into: 'secrets' | 'config';
  key: string;
  /** For 'secret': the longest accepted value, in characters. */
  maxChars?: number;
  /** The console form's label and hint. */
  label: string;
  hint?: string;
}

/** What every role knows about one integration type (see the module comment). */
export interface IntegrationMeta {
  /** The console's name for the type. */
  readonly label: string;
  /** The API surface (spec SDL, kept as is): the create mutation and the params input field of create/update. */
  readonly api: {
    readonly createMutation: string;
    readonly paramsField: string;
    /** The create mutation carries the params' fields at the top level of its input (WEBHOOK: url, signingSecret). */
    readonly flatCreateInput?: boolean;
  };
  /** In validation order; the first bad one is reported. */
  readonly params: readonly ParamField[];
  /** The NotificationProvider spec.type the operator maps to this type (src/api/notificationprovider.ts). */
  readonly providerType: string;
}

const chatParams = (what: string): readonly ParamField[] => [
  {
    input: 'webhookUrl',
    kind: 'destination',
    required: true,
    into: 'secrets',
    key: 'webhookUrl',
    label: 'Webhook URL',
    hint: `${what} incoming webhook URL`,
  },
];

const WEBHOOK_URL: ParamField = {
  input: 'url',
  kind: 'destination',
  required: true,
  into: 'secrets',
  key: 'url',
  label: 'URL',
  hint: 'receiver URL; it may carry a token',
};
const SIGNING_SECRET: ParamField = {
  input: 'signingSecret',
  kind: 'signingSecret',
  required: false,
  into: 'secrets',
  key: 'signingSecret',
  label: 'Signing secret',
  hint: 'Standard Webhooks secret (whsec_… or 16+ characters); empty for unsigned requests',
};

const META = {
  INCIDENT_MGMT: {
    label: 'Incident management',
    api: { createMutation: 'createIncidentMgmtIntegration', paramsField: 'incidentMgmtParams' },
    params: [
      {
        input: 'IntegrationKey',
        kind: 'secret',
        required: true,
        into: 'secrets',
        key: 'integrationKey',
        maxChars: 256,
        label: 'Integration key',
        hint: 'issued by the incident management system',
      },
    ],
    providerType: 'IncidentManagement',
  },
  WEBHOOK: {
    label: 'Webhook (payload v1)',
    api: { createMutation: 'createWebhookIntegration', paramsField: 'webhookParams', flatCreateInput: true },
    params: [WEBHOOK_URL, SIGNING_SECRET],
    providerType: 'Webhook',
  },
  EMAIL: {
    label: 'Email',
    api: { createMutation: 'createEmailIntegration', paramsField: 'emailParams' },
    params: [
      { input: 'to', kind: 'emails', required: true, into: 'config', key: 'to', label: 'To', hint: 'addresses, separated by commas' },
      { input: 'from', kind: 'sender', required: false, into: 'config', key: 'from', label: 'From' },
    ],
    providerType: 'Email',
  },
  SLACK: {
    label: 'Slack',
    api: { createMutation: 'createSlackIntegration', paramsField: 'slackParams' },
    params: chatParams('Slack'),
    providerType: 'Slack',
  },
  TEAMS: {
    label: 'Microsoft Teams',
    api: { createMutation: 'createTeamsIntegration', paramsField: 'teamsParams' },
    params: chatParams('Teams workflow'),
    providerType: 'Teams',
  },
  OPSGENIE: {
    label: 'Opsgenie',
    api: { createMutation: 'createOpsgenieIntegration', paramsField: 'opsgenieParams' },
    params: [
      {
        input: 'apiKey',
        kind: 'secret',
        required: true,
        into: 'secrets',
        key: 'apiKey',
        maxChars: 256,
        label: 'API key',
        hint: 'of an Opsgenie API integration',
      },
    ],
    providerType: 'Opsgenie',
  },
  GOOGLE_CHAT: {
    label: 'Google Chat',
    api: { createMutation: 'createGoogleChatIntegration', paramsField: 'googleChatParams' },
    params: chatParams('Google Chat space'),
    providerType: 'GoogleChat',
  },
  DISCORD: {
    label: 'Discord',
    api: { createMutation: 'createDiscordIntegration', paramsField: 'discordParams' },
    params: chatParams('Discord channel'),
    providerType: 'Discord',
  },
  GENERIC_WEBHOOK: {
    label: 'Generic webhook (templated JSON)',
    api: { createMutation: 'createGenericWebhookIntegration', paramsField: 'genericWebhookParams' },
    params: [
      WEBHOOK_URL,
      SIGNING_SECRET,
      {
        input: 'headers',
        kind: 'headers',
        required: false,
        into: 'secrets',
        key: 'headers',
        label: 'Extra headers',
        hint: 'one "Name: value" per line',
      },
    ],
    providerType: 'GenericWebhook',
  },
  ALERTMANAGER: {
    label: 'Prometheus Alertmanager',
    api: { createMutation: 'createAlertmanagerIntegration', paramsField: 'alertmanagerParams', flatCreateInput: true },
    params: [
      { ...WEBHOOK_URL, hint: "Alertmanager's base URL; alerts go to <url>/api/v2/alerts" },
      {
        input: 'bearerToken',
        kind: 'secret',
        required: false,
        into: 'secrets',
        key: 'bearerToken',
        maxChars: 4096,
        label: 'Bearer token',
        hint: 'or basic auth below, not both',
      },
      { input: 'username', kind: 'secret', required: false, into: 'secrets', key: 'username', maxChars: 256, label: 'Basic auth user' },
      {
        input: 'password',
        kind: 'secret',
        required: false,
        into: 'secrets',
        key: 'password',
        maxChars: 1024,
        label: 'Basic auth password',
      },
    ],
    providerType: 'Alertmanager',
  },
} as const satisfies Record<string, IntegrationMeta>;

export type IntegrationType = keyof typeof META;
/** One entry per type, in the API's enum order. */
export const INTEGRATION_META: Readonly<Record<IntegrationType, IntegrationMeta>> = META;
export const INTEGRATION_TYPES = Object.keys(META) as readonly IntegrationType[] as readonly [IntegrationType, ...IntegrationType[]];
