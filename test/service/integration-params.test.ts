/** parseParams reads each type's descriptor: what is stored where, and the errors (table). */
import { describe, expect, it } from 'vitest';
import { parseParams } from '../../src/service/integrations.js';

const KEY = 'k'.repeat(32);
const HOOK = 'https://hooks.example.com/in?token=t';
const WHSEC = 'whsec_' + Buffer.from('0123456789abcdef0123').toString('base64');

describe('parseParams', () => {
  it.each([
    ['INCIDENT_MGMT', { incidentMgmtParams: { IntegrationKey: KEY } }, { config: {}, secrets: { integrationKey: KEY } }],
    ['WEBHOOK', { webhookParams: { url: HOOK } }, { config: { signed: false }, secrets: { url: HOOK } }],
    [
      'WEBHOOK',
      { webhookParams: { url: HOOK, signingSecret: WHSEC } },
      { config: { signed: true }, secrets: { url: HOOK, signingSecret: WHSEC } },
    ],
    ['EMAIL', { emailParams: { to: ['ops@example.com'] } }, { config: { to: ['ops@example.com'] }, secrets: {} }],
    [
      'EMAIL',
      { emailParams: { to: ['ops@example.com'], from: 'c@example.com' } },
      { config: { to: ['ops@example.com'], from: 'c@example.com' }, secrets: {} },
    ],
    ['SLACK', { slackParams: { webhookUrl: HOOK } }, { config: {}, secrets: { webhookUrl: HOOK } }],
    ['TEAMS', { teamsParams: { webhookUrl: HOOK } }, { config: {}, secrets: { webhookUrl: HOOK } }],
    ['OPSGENIE', { opsgenieParams: { apiKey: KEY } }, { config: {}, secrets: { apiKey: KEY } }],
    ['GOOGLE_CHAT', { googleChatParams: { webhookUrl: HOOK } }, { config: {}, secrets: { webhookUrl: HOOK } }],
    ['DISCORD', { discordParams: { webhookUrl: HOOK } }, { config: {}, secrets: { webhookUrl: HOOK } }],
    ['GENERIC_WEBHOOK', { genericWebhookParams: { url: HOOK } }, { config: { signed: false }, secrets: { url: HOOK } }],
    [
      'GENERIC_WEBHOOK',
      { genericWebhookParams: { url: HOOK, signingSecret: WHSEC, headers: [{ name: 'X-Key', value: 'v' }] } },
      { config: { signed: true }, secrets: { url: HOOK, signingSecret: WHSEC, headers: '[["X-Key","v"]]' } },
    ],
    ['ALERTMANAGER', { alertmanagerParams: { url: HOOK } }, { config: {}, secrets: { url: HOOK } }],
    [
      'ALERTMANAGER',
      { alertmanagerParams: { url: HOOK, bearerToken: 'eyJhbGciOi.x-y_z' } },
      { config: {}, secrets: { url: HOOK, bearerToken: 'eyJhbGciOi.x-y_z' } },
    ],
    [
      'ALERTMANAGER',
      { alertmanagerParams: { url: HOOK, username: 'certmgr', password: 'p:ss wörd' } },
      { config: {}, secrets: { url: HOOK, username: 'certmgr', password: 'p:ss wörd' } },
    ],
  ] as const)('%s %o', (type, input, want) => {
    expect(parseParams(type, input)).toEqual(want);
  });

  it.each([
    [
      'SLACK',
      { slackParams: { webhookUrl: HOOK }, teamsParams: { webhookUrl: HOOK } },
      'input.teamsParams',
      'does not apply to a SLACK integration; use input.slackParams',
    ],
    ['EMAIL', {}, 'input.emailParams', 'is required for a EMAIL integration'],
    ['INCIDENT_MGMT', { incidentMgmtParams: { IntegrationKey: 'x'.repeat(257) } }, 'input.incidentMgmtParams.IntegrationKey', ''],
    ['WEBHOOK', { webhookParams: { url: 'http://127.0.0.1/x' } }, 'input.webhookParams.url', ''],
    ['WEBHOOK', { webhookParams: { url: HOOK, signingSecret: 'short' } }, 'input.webhookParams.signingSecret', ''],
    ['OPSGENIE', { opsgenieParams: {} }, 'input.opsgenieParams.apiKey', 'must be a non-empty string'],
    ['DISCORD', { discordParams: { webhookUrl: 'http://192.168.1.1/x' } }, 'input.discordParams.webhookUrl', 'private'],
    [
      'GENERIC_WEBHOOK',
      { genericWebhookParams: { url: HOOK, headers: [{ name: 'Webhook-Id', value: 'x' }] } },
      'input.genericWebhookParams.headers[0].name',
      'cannot be overridden',
    ],
    [
      'ALERTMANAGER',
      { alertmanagerParams: { url: HOOK, bearerToken: 't0k', username: 'u', password: 'p' } },
      'input.alertmanagerParams.bearerToken',
      'cannot be combined with username/password',
    ],
    [
      'ALERTMANAGER',
      { alertmanagerParams: { url: HOOK, bearerToken: 'two words' } },
      'input.alertmanagerParams.bearerToken',
      'visible ASCII',
    ],
    [
      'ALERTMANAGER',
      { alertmanagerParams: { url: HOOK, username: 'u' } },
      'input.alertmanagerParams.password',
      'is required with username',
    ],
    [
      'ALERTMANAGER',
      { alertmanagerParams: { url: HOOK, password: 'p' } },
      'input.alertmanagerParams.username',
      'is required with password',
    ],
    [
      'ALERTMANAGER',
      { alertmanagerParams: { url: HOOK, username: 'a:b', password: 'p' } },
      'input.alertmanagerParams.username',
      "must not contain ':'",
    ],
    ['ALERTMANAGER', { alertmanagerParams: { url: 'http://10.0.0.1:9093' } }, 'input.alertmanagerParams.url', 'private'],
    ['PAGER', { webhookParams: { url: HOOK } }, 'input', 'integration type PAGER is not supported by this version'],
  ] as const)('%s %o is refused at %s', (type, input, field, message) => {
    let err: unknown;
    try {
      parseParams(type as Parameters<typeof parseParams>[0], input);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ field });
    expect((err as Error).message).toContain(message);
  });
});
