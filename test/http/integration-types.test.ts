/**
 * The four issue-11 integration types through the real service's GraphQL API: create and update each, the
 * write-only secrets, and the refusals (bad URL, a URL the egress policy refuses, a missing or empty key, bad extra
 * headers, params of another type), each naming its field and writing nothing. Runs the production egress default.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gqlError } from '../support/graphql.js';
import { COMPANY_A, startTestService, type TestService } from '../support/service.js';

const FIELDS = 'id name type enabled webhookSigned emailTo';
const HOOK = 'https://chat.googleapis.com/v1/spaces/AAAA/messages?key=k&token=t0ken-s3cret';
const DISCORD = 'https://discord.com/api/webhooks/123/t0ken-s3cret';
const RECEIVER = 'https://hooks.example.com/in?token=t0ken-s3cret';
const WHSEC = 'whsec_' + Buffer.from('0123456789abcdef0123').toString('base64');

const CREATE: Record<string, { mutation: string; input: string; params: string }> = {
  OPSGENIE: { mutation: 'createOpsgenieIntegration', input: 'CreateOpsgenieIntegrationInput', params: 'opsgenieParams' },
  GOOGLE_CHAT: { mutation: 'createGoogleChatIntegration', input: 'CreateGoogleChatIntegrationInput', params: 'googleChatParams' },
  DISCORD: { mutation: 'createDiscordIntegration', input: 'CreateDiscordIntegrationInput', params: 'discordParams' },
  GENERIC_WEBHOOK: {
    mutation: 'createGenericWebhookIntegration',
    input: 'CreateGenericWebhookIntegrationInput',
    params: 'genericWebhookParams',
  },
};

describe('OPSGENIE, GOOGLE_CHAT, DISCORD and GENERIC_WEBHOOK through GraphQL', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService('sqlite', [], { loopbackAllowed: false });
  });
  afterAll(() => svc?.close());

  type View = { id: string; name: string; type: string; enabled: boolean; webhookSigned: boolean | null };
  const create = async (type: string, params: Record<string, unknown>, name = `${type} one`): Promise<View> => {
    const c = CREATE[type]!;
    const r = await svc.gql().request<Record<string, View>>(`mutation($i: ${c.input}!) { ${c.mutation}(input: $i) { ${FIELDS} } }`, {
      i: { name, [c.params]: params },
    });
    return r[c.mutation]!;
  };
  const update = (id: string, input: Record<string, unknown>) =>
    svc
      .gql()
      .request<{ updateIntegration: View }>(
        `mutation($id: UUID!, $i: UpdateIntegrationInput!) { updateIntegration(id: $id, input: $i) { ${FIELDS} } }`,
        {
          id,
          i: input,
        },
      );
  const count = async () => (await svc.store.listIntegrations(COMPANY_A)).length;
  const stored = async (id: string) => (await svc.store.getIntegration(COMPANY_A, id))!;

  it.each([
    ['OPSGENIE', { apiKey: 'eb243592-faa2-4ba2-a551-1afdf565c889' }, { apiKey: 'eb243592-faa2-4ba2-a551-1afdf565c889' }, {}, null],
    ['GOOGLE_CHAT', { webhookUrl: HOOK }, { webhookUrl: HOOK }, {}, null],
    ['DISCORD', { webhookUrl: DISCORD }, { webhookUrl: DISCORD }, {}, null],
    ['GENERIC_WEBHOOK', { url: RECEIVER }, { url: RECEIVER }, { signed: false }, false],
    [
      'GENERIC_WEBHOOK',
      { url: RECEIVER, signingSecret: WHSEC, headers: [{ name: 'Authorization', value: 'Bearer abc' }] },
      { url: RECEIVER, signingSecret: WHSEC, headers: '[["Authorization","Bearer abc"]]' },
      { signed: true },
      true,
    ],
  ] as const)('%s: created with %o; secrets stored write-only', async (type, params, secrets, config, signed) => {
    const v = await create(type, params);
    expect(v).toMatchObject({ type, enabled: true, webhookSigned: signed });
    const rec = await stored(v.id);
    expect(rec.secrets).toEqual(secrets);
    expect(rec.config).toEqual(config);
    // nothing secret comes back through the API
    const list = await svc.gql().request<{ integrations: { nodes: unknown[] } }>(`{ integrations { nodes { ${FIELDS} } } }`);
    expect(JSON.stringify(list)).not.toContain('t0ken-s3cret');
    expect(JSON.stringify(list)).not.toContain('eb243592');
  });

  it.each([
    ['GOOGLE_CHAT', { webhookUrl: 'not a url' }, 'input.googleChatParams.webhookUrl', /absolute http\(s\) URL/],
    ['GOOGLE_CHAT', { webhookUrl: 'ftp://chat.example.com/x' }, 'input.googleChatParams.webhookUrl', /http or https/],
    ['GOOGLE_CHAT', { webhookUrl: 'http://127.0.0.1:8080/x' }, 'input.googleChatParams.webhookUrl', /loopback/],
    ['DISCORD', { webhookUrl: 'http://169.254.169.254/latest/meta-data/' }, 'input.discordParams.webhookUrl', /link-local/],
    ['DISCORD', { webhookUrl: 'http://10.1.2.3/api/webhooks/1/x' }, 'input.discordParams.webhookUrl', /private/],
    ['GENERIC_WEBHOOK', { url: 'http://metadata.google.internal/computeMetadata/v1/' }, 'input.genericWebhookParams.url', /metadata/],
    ['GENERIC_WEBHOOK', { url: 'https://user:pass@hooks.example.com/x' }, 'input.genericWebhookParams.url', /credentials/],
    ['GENERIC_WEBHOOK', { url: RECEIVER, signingSecret: 'short' }, 'input.genericWebhookParams.signingSecret', /16 characters/],
    [
      'GENERIC_WEBHOOK',
      { url: RECEIVER, headers: [{ name: 'Host', value: 'internal.example' }] },
      'input.genericWebhookParams.headers[0].name',
      /cannot be overridden/,
    ],
    [
      'GENERIC_WEBHOOK',
      { url: RECEIVER, headers: [{ name: '__proto__', value: 'x' }] },
      'input.genericWebhookParams.headers[0].name',
      /__proto__ is not accepted as a header name/,
    ],
    [
      'GENERIC_WEBHOOK',
      { url: RECEIVER, headers: [{ name: 'constructor', value: 'x' }] },
      'input.genericWebhookParams.headers[0].name',
      /constructor is not accepted as a header name/,
    ],
    [
      'GENERIC_WEBHOOK',
      {
        url: RECEIVER,
        headers: [
          { name: 'X-A', value: '1' },
          { name: 'X-B', value: 'a\nInjected: 1' },
        ],
      },
      'input.genericWebhookParams.headers[1].value',
      /visible ASCII/,
    ],
    [
      'GENERIC_WEBHOOK',
      { url: RECEIVER, headers: Array.from({ length: 11 }, (_, i) => ({ name: `X-${i}`, value: 'v' })) },
      'input.genericWebhookParams.headers',
      /at most 10/,
    ],
    ['OPSGENIE', { apiKey: '' }, 'input.opsgenieParams.apiKey', /non-empty/],
    ['OPSGENIE', { apiKey: '   ' }, 'input.opsgenieParams.apiKey', /non-empty/],
    ['OPSGENIE', { apiKey: 'k'.repeat(257) }, 'input.opsgenieParams.apiKey', /256/],
  ] as const)('%s %o is refused at %s, nothing written', async (type, params, field, why) => {
    const before = await count();
    const e = await gqlError(create(type, params));
    expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
    expect(e.message).toMatch(why);
    expect(e.message).not.toContain('t0ken-s3cret');
    expect(await count()).toBe(before);
  });

  it('a missing key or URL is a GraphQL validation error (the params inputs require it)', async () => {
    const before = await count();
    for (const [type, params] of [
      ['OPSGENIE', {}],
      ['DISCORD', {}],
      ['GENERIC_WEBHOOK', { signingSecret: WHSEC }],
    ] as const) {
      const e = await gqlError(create(type, params));
      expect(e.message).toMatch(/required/);
    }
    expect(await count()).toBe(before);
  });

  it('update: own params replace the secrets (headers [] removes them), refusals change nothing', async () => {
    const v = await create('GENERIC_WEBHOOK', { url: RECEIVER, headers: [{ name: 'X-Team', value: 'sre' }] }, 'generic for update');
    const next = 'https://hooks.example.com/v2?token=t0ken-s3cret';
    const u = await update(v.id, { genericWebhookParams: { url: next, signingSecret: WHSEC, headers: [] } });
    expect(u.updateIntegration.webhookSigned).toBe(true);
    expect((await stored(v.id)).secrets).toEqual({ url: next, signingSecret: WHSEC, headers: '[]' });

    const before = await stored(v.id);
    const bad = await gqlError(update(v.id, { genericWebhookParams: { url: 'http://[::1]/x' } }));
    expect(bad.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.genericWebhookParams.url' });
    const other = await gqlError(update(v.id, { discordParams: { webhookUrl: DISCORD } }));
    expect(other.extensions).toMatchObject({ field: 'input.discordParams' });
    expect(other.message).toMatch(/does not apply to a GENERIC_WEBHOOK integration; use input.genericWebhookParams/);
    expect(await stored(v.id)).toEqual(before);

    const og = await create('OPSGENIE', { apiKey: 'first-key-0000' }, 'og for update');
    await update(og.id, { opsgenieParams: { apiKey: 'second-key-1111' } });
    expect((await stored(og.id)).secrets).toEqual({ apiKey: 'second-key-1111' });
    const empty = await gqlError(update(og.id, { opsgenieParams: { apiKey: '' } }));
    expect(empty.extensions).toMatchObject({ field: 'input.opsgenieParams.apiKey' });
    expect((await stored(og.id)).secrets).toEqual({ apiKey: 'second-key-1111' });
  });
});
