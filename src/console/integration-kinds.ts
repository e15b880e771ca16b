/**
 * The integration types the console can create and the GraphQL mutation of each (schema.graphql's
 * create*Integration). Pure (unit-tested in test/console/integration-kinds.test.ts).
 */
export interface KindField {
  name: string;
  label: string;
  /** write-only secrets are typed into password inputs */
  secret?: boolean;
  optional?: boolean;
  multiline?: boolean;
  hint?: string;
}

export interface IntegrationKind {
  type: string;
  label: string;
  fields: KindField[];
}

const url = (hint: string): KindField => ({ name: 'url', label: 'URL', secret: true, hint });
const signing: KindField = {
  name: 'signingSecret',
  label: 'Signing secret',
  secret: true,
  optional: true,
  hint: 'Standard Webhooks secret (whsec_… or 16+ characters); empty for unsigned requests',
};
const chat = (what: string): KindField => ({
  name: 'webhookUrl',
  label: 'Webhook URL',
  secret: true,
  hint: `${what} incoming webhook URL`,
});

export const INTEGRATION_KINDS: IntegrationKind[] = [
  { type: 'WEBHOOK', label: 'Webhook (payload v1)', fields: [url('receiver URL; it may carry a token'), signing] },
  {
    type: 'INCIDENT_MGMT',
    label: 'Incident management',
    fields: [{ name: 'integrationKey', label: 'Integration key', secret: true, hint: 'issued by the incident management system' }],
  },
  {
    type: 'EMAIL',
    label: 'Email',
    fields: [
      { name: 'to', label: 'To', hint: 'addresses, separated by commas' },
      { name: 'from', label: 'From', optional: true },
    ],
  },
  { type: 'SLACK', label: 'Slack', fields: [chat('Slack')] },
  { type: 'TEAMS', label: 'Microsoft Teams', fields: [chat('Teams workflow')] },
  {
    type: 'OPSGENIE',
    label: 'Opsgenie',
    fields: [{ name: 'apiKey', label: 'API key', secret: true, hint: 'of an Opsgenie API integration' }],
  },
  { type: 'GOOGLE_CHAT', label: 'Google Chat', fields: [chat('Google Chat space')] },
  { type: 'DISCORD', label: 'Discord', fields: [chat('Discord channel')] },
  {
    type: 'GENERIC_WEBHOOK',
    label: 'Generic webhook (templated JSON)',
    fields: [
      url('receiver URL; it may carry a token'),
      signing,
      { name: 'headers', label: 'Extra headers', optional: true, multiline: true, secret: false, hint: 'one "Name: value" per line' },
    ],
  },
  {
    type: 'ALERTMANAGER',
    label: 'Prometheus Alertmanager',
    fields: [
      url("Alertmanager's base URL; alerts go to <url>/api/v2/alerts"),
      { name: 'bearerToken', label: 'Bearer token', secret: true, optional: true, hint: 'or basic auth below, not both' },
      { name: 'username', label: 'Basic auth user', secret: true, optional: true },
      { name: 'password', label: 'Basic auth password', secret: true, optional: true },
    ],
  },
];

export interface MutationCall {
  mutation: string;
  variables: Record<string, unknown>;
}

const SELECTION = '{ id name type enabled }';

/** "Name: value" lines → [{name, value}]; an empty line is skipped, a line without a colon is an error naming it. */
export function parseHeaders(text: string): { name: string; value: string }[] {
  return text
    .split('\n')
    .map((l, i) => [l.trim(), i + 1] as const)
    .filter(([l]) => l !== '')
    .map(([l, n]) => {
      const c = l.indexOf(':');
      if (c <= 0) throw new Error(`extra headers, line ${n}: write "Name: value"`);
      return { name: l.slice(0, c).trim(), value: l.slice(c + 1).trim() };
    });
}

const opt = (v: string | undefined) => (v && v.trim() !== '' ? v.trim() : undefined);

/** The create mutation for `type` with the form's values (empty optional fields left out). */
export function createIntegrationCall(type: string, name: string, v: Record<string, string>): MutationCall {
  const chatCall = (mutation: string, params: string): MutationCall => ({
    mutation: `mutation Create($input: ${mutation}Input!) { ${mutation.charAt(0).toLowerCase()}${mutation.slice(1)}(input: $input) ${SELECTION} }`,
    variables: { input: { name, [params]: { webhookUrl: v.webhookUrl ?? '' } } },
  });
  const call = (mutation: string, input: Record<string, unknown>): MutationCall => ({
    mutation: `mutation Create($input: ${mutation}Input!) { ${mutation.charAt(0).toLowerCase()}${mutation.slice(1)}(input: $input) ${SELECTION} }`,
    variables: { input: { name, ...input } },
  });
  switch (type) {
    case 'WEBHOOK':
      return call('CreateWebhookIntegration', { url: v.url ?? '', signingSecret: opt(v.signingSecret) });
    case 'INCIDENT_MGMT':
      return call('CreateIncidentMgmtIntegration', { incidentMgmtParams: { IntegrationKey: v.integrationKey ?? '' } });
    case 'EMAIL':
      return call('CreateEmailIntegration', {
        emailParams: {
          to: (v.to ?? '')
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== ''),
          from: opt(v.from),
        },
      });
    case 'SLACK':
      return chatCall('CreateSlackIntegration', 'slackParams');
    case 'TEAMS':
      return chatCall('CreateTeamsIntegration', 'teamsParams');
    case 'GOOGLE_CHAT':
      return chatCall('CreateGoogleChatIntegration', 'googleChatParams');
    case 'DISCORD':
      return chatCall('CreateDiscordIntegration', 'discordParams');
    case 'OPSGENIE':
      return call('CreateOpsgenieIntegration', { opsgenieParams: { apiKey: v.apiKey ?? '' } });
    case 'GENERIC_WEBHOOK': {
      const headers = parseHeaders(v.headers ?? '');
      return call('CreateGenericWebhookIntegration', {
        genericWebhookParams: { url: v.url ?? '', signingSecret: opt(v.signingSecret), ...(headers.length ? { headers } : {}) },
      });
    }
    case 'ALERTMANAGER':
      return call('CreateAlertmanagerIntegration', {
        url: v.url ?? '',
        bearerToken: opt(v.bearerToken),
        username: opt(v.username),
        password: opt(v.password),
      });
    default:
      throw new Error(`unknown integration type ${type}`);
  }
}
