import { ClientError } from 'graphql-request';
import { describe, expect, it } from 'vitest';
import { validateProviderSpec, validateRouterSpec, validateMonitoringSpec, type NotificationProviderSpec } from '../../src/api/index.js';
import {
  desiredIntegration,
  desiredMonitoring,
  desiredRateLimit,
  desiredRouter,
  managedByKey,
  missingSettings,
  monitoringDrift,
  pickOwned,
  planMonitoring,
  releaseMonitoring,
  planIntegrationUpdate,
  planRouterUpdate,
  recordName,
  resolveSecrets,
  secretRefsOf,
  type SecretObject,
  type SecretUse,
} from '../../src/operator/desired.js';
import { invalidFilterMessage, secretValueMessage, throwServiceFailure } from '../../src/operator/errors.js';
import { TerminalError, WaitError, objectKey, parseKey } from '../../src/runtime/controller.js';
import { ServiceApiError, toServiceError } from '../../src/client/errors.js';
import { createIntegrationVariables, type IntegrationView, type RouterView } from '../../src/client/service-api.js';
import { providersUsingSecret } from '../../src/operator/reconcilers/provider.js';
import { routersUsingProvider } from '../../src/operator/reconcilers/router.js';
import { conflictManager } from '../../src/operator/reconcilers/monitoring.js';

const P = { kind: 'NotificationProvider', namespace: 'team-a', name: 'oncall' };
const R = { kind: 'NotificationRouter', namespace: 'team-a', name: 'issuers' };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const spec = (s: unknown): NotificationProviderSpec => {
  const v = validateProviderSpec(s);
  if (!v.ok) throw new Error(v.errors.join('; '));
  return v.value;
};

describe('keys and names', () => {
  it('managedBy is k8s:<kind>/<namespace>/<name>', () => {
    expect(managedByKey(P)).toBe('k8s:NotificationProvider/team-a/oncall');
    expect(managedByKey({ kind: 'MonitoringConfig', name: 'default' })).toBe('k8s:MonitoringConfig//default');
    expect(managedByKey(P, 'prod-eu')).toBe('k8s:NotificationProvider/team-a/oncall@prod-eu');
  });
  it.each([
    [undefined, 'team-a/oncall'],
    ['  ', 'team-a/oncall'],
    [' On-call ', 'On-call'],
  ])('recordName(displayName=%j) = %s', (d, want) => expect(recordName(P, d)).toBe(want));
  it.each([
    [P, undefined, undefined, 'team-a/oncall'],
    [P, undefined, '', 'team-a/oncall'],
    [P, undefined, 'prod-eu', 'prod-eu/team-a/oncall'],
    [P, '  ', 'prod-eu', 'prod-eu/team-a/oncall'],
    [P, 'On-call', 'prod-eu', 'On-call'], // an explicit displayName is the user's: kept verbatim
    [{ kind: 'MonitoringConfig', name: 'default' }, undefined, 'prod-eu', 'prod-eu/default'],
  ])('recordName(%j, displayName=%j, cluster=%j) = %s', (o, d, c, want) => expect(recordName(o, d, c)).toBe(want));
  it('with a cluster name, the records of two clusters get different names; an existing record is renamed in place', () => {
    const sp = spec({ type: 'Slack', slack: { webhookUrlSecretRef: { name: 's', key: 'url' } } });
    const eu = desiredIntegration(P, sp, { webhookUrl: 'https://hooks.slack.com/services/T/B/x' }, 'prod-eu');
    const us = desiredIntegration(P, sp, { webhookUrl: 'https://hooks.slack.com/services/T/B/x' }, 'prod-us');
    expect([eu.name, us.name]).toEqual(['prod-eu/team-a/oncall', 'prod-us/team-a/oncall']);
    const rv = validateRouterSpec({ eventTypeId: 'cert-expiry-ext-notification-config', providerRef: { name: 'p' } });
    if (!rv.ok) throw new Error(rv.errors.join('; '));
    const router = desiredRouter({ ...P, kind: 'NotificationRouter' }, rv.value, 'int-1', 'prod-eu');
    expect(router.name).toBe('prod-eu/team-a/oncall');
    // a record created before the rename (old name, same managedBy) is found by its key and only renamed
    const old = { id: 'i1', name: 'team-a/oncall', managedBy: eu.managedBy, type: eu.type, enabled: true };
    const { current, stale } = pickOwned([old], undefined, managedByKey(P, 'prod-eu'));
    expect(current).toBe(old);
    expect(stale).toEqual([]);
    const plan = planIntegrationUpdate(eu, old as unknown as IntegrationView, false);
    expect(plan).toEqual({ drift: ['name'], update: { name: 'prod-eu/team-a/oncall' } });
    const r = planRouterUpdate(router, { id: 'r1', generation: 'ROUTER', ...router, name: 'team-a/oncall' });
    expect(r).toEqual({ drift: ['name'], update: { name: 'prod-eu/team-a/oncall' } });
  });
  it('object keys round-trip', () => {
    expect(parseKey(objectKey('ns', 'n'))).toEqual({ namespace: 'ns', name: 'n' });
    expect(parseKey(objectKey(undefined, 'default'))).toEqual({ name: 'default' });
  });
});

describe('providers: secrets → desired integration → update plan', () => {
  const ik = { name: 's', key: 'k' };
  it.each<[string, unknown, string[]]>([
    ['IncidentManagement', { type: 'IncidentManagement', incidentManagement: { integrationKeySecretRef: ik } }, ['integrationKey:s/k']],
    ['Webhook unsigned', { type: 'Webhook', webhook: { urlSecretRef: ik } }, ['url:s/k']],
    [
      'Webhook signed',
      { type: 'Webhook', webhook: { urlSecretRef: ik, signingSecretRef: { name: 'sig', key: 'v' } } },
      ['url:s/k', 'signingSecret:sig/v'],
    ],
    ['Email', { type: 'Email', email: { to: ['a@b.c'] } }, []],
    ['Slack', { type: 'Slack', slack: { webhookUrlSecretRef: ik } }, ['webhookUrl:s/k']],
    ['Teams', { type: 'Teams', teams: { webhookUrlSecretRef: ik } }, ['webhookUrl:s/k']],
    ['Opsgenie', { type: 'Opsgenie', opsgenie: { apiKeySecretRef: ik } }, ['apiKey:s/k']],
    ['GoogleChat', { type: 'GoogleChat', googleChat: { webhookUrlSecretRef: ik } }, ['webhookUrl:s/k']],
    ['Discord', { type: 'Discord', discord: { webhookUrlSecretRef: ik } }, ['webhookUrl:s/k']],
    ['GenericWebhook minimal', { type: 'GenericWebhook', genericWebhook: { urlSecretRef: ik } }, ['url:s/k']],
    [
      'GenericWebhook with signing secret and headers',
      {
        type: 'GenericWebhook',
        genericWebhook: { urlSecretRef: ik, signingSecretRef: { name: 'sig', key: 'v' }, headersSecretRef: { name: 'h', key: 'headers' } },
      },
      ['url:s/k', 'signingSecret:sig/v', 'headers:h/headers'],
    ],
    ['Alertmanager minimal', { type: 'Alertmanager', alertmanager: { urlSecretRef: ik } }, ['url:s/k']],
    [
      'Alertmanager with basic auth from one Secret',
      {
        type: 'Alertmanager',
        alertmanager: {
          urlSecretRef: ik,
          usernameSecretRef: { name: 'am', key: 'username' },
          passwordSecretRef: { name: 'am', key: 'password' },
        },
      },
      ['url:s/k', 'username:am/username', 'password:am/password'],
    ],
    [
      'Alertmanager with a bearer token',
      { type: 'Alertmanager', alertmanager: { urlSecretRef: ik, bearerTokenSecretRef: { name: 'am', key: 'token' } } },
      ['url:s/k', 'bearerToken:am/token'],
    ],
  ])('secretRefsOf %s', (_n, s, want) => {
    expect(secretRefsOf(spec(s)).map((u) => `${u.role}:${u.ref.name}/${u.ref.key}`)).toEqual(want);
  });

  it('missingSettings names the block the type needs', () => {
    expect(missingSettings({ type: 'Slack', enabled: true } as NotificationProviderSpec)).toBe('spec.slack is required for type Slack');
    expect(missingSettings(spec({ type: 'Email', email: { to: ['a@b.c'] } }))).toBeUndefined();
  });

  const secrets: Record<string, SecretObject> = {
    s: { metadata: { uid: 'u1', resourceVersion: '10' }, data: { k: b64(' value-1 \n'), empty: b64('  ') } },
    sig: { metadata: { uid: 'u2', resourceVersion: '7' }, data: { v: b64('whsec_abc') } },
  };
  it.each<[string, unknown, { ok: boolean; message?: string; version?: string }]>([
    [
      'found (trimmed), version from uid+resourceVersion',
      { type: 'Slack', slack: { webhookUrlSecretRef: { name: 's', key: 'k' } } },
      { ok: true, version: 's:u1:10' },
    ],
    [
      'two Secrets: sorted, deduped',
      { type: 'Webhook', webhook: { urlSecretRef: { name: 's', key: 'k' }, signingSecretRef: { name: 'sig', key: 'v' } } },
      { ok: true, version: 's:u1:10,sig:u2:7' },
    ],
    [
      'missing Secret',
      { type: 'Slack', slack: { webhookUrlSecretRef: { name: 'nope', key: 'k' } } },
      { ok: false, message: 'Secret team-a/nope (spec.slack.webhookUrlSecretRef) not found' },
    ],
    [
      'missing key',
      { type: 'Slack', slack: { webhookUrlSecretRef: { name: 's', key: 'x' } } },
      { ok: false, message: "Secret team-a/s has no key 'x' (spec.slack.webhookUrlSecretRef)" },
    ],
    [
      'empty value',
      { type: 'Slack', slack: { webhookUrlSecretRef: { name: 's', key: 'empty' } } },
      { ok: false, message: "Secret team-a/s key 'empty' is empty (spec.slack.webhookUrlSecretRef)" },
    ],
  ])('resolveSecrets: %s', (_n, s, want) => {
    const r = resolveSecrets(secretRefsOf(spec(s)), 'team-a', (n) => secrets[n]);
    expect(r).toMatchObject(want);
    if (r.ok) expect(Object.values(r.values)).toContain('value-1');
  });

  it.each<[string, unknown, Record<string, string>, unknown]>([
    [
      'IncidentManagement',
      { type: 'IncidentManagement', incidentManagement: { integrationKeySecretRef: ik } },
      { integrationKey: 'K' },
      { type: 'INCIDENT_MGMT', params: { incidentMgmtParams: { IntegrationKey: 'K' } }, visible: {} },
    ],
    [
      'Webhook signed',
      { type: 'Webhook', webhook: { urlSecretRef: ik, signingSecretRef: ik } },
      { url: 'https://x', signingSecret: 'S' },
      { type: 'WEBHOOK', params: { webhookParams: { url: 'https://x', signingSecret: 'S' } }, visible: { webhookSigned: true } },
    ],
    [
      'Webhook unsigned',
      { type: 'Webhook', webhook: { urlSecretRef: ik } },
      { url: 'https://x' },
      { type: 'WEBHOOK', params: { webhookParams: { url: 'https://x' } }, visible: { webhookSigned: false } },
    ],
    [
      'Email',
      { type: 'Email', email: { to: ['a@b.c'], from: 'f@b.c' } },
      {},
      { type: 'EMAIL', params: { emailParams: { to: ['a@b.c'], from: 'f@b.c' } }, visible: { emailTo: ['a@b.c'], emailFrom: 'f@b.c' } },
    ],
    [
      'Email without from',
      { type: 'Email', email: { to: ['a@b.c'] } },
      {},
      { type: 'EMAIL', params: { emailParams: { to: ['a@b.c'] } }, visible: { emailTo: ['a@b.c'], emailFrom: null } },
    ],
    [
      'Slack',
      { type: 'Slack', slack: { webhookUrlSecretRef: ik }, enabled: false, displayName: 'Chat' },
      { webhookUrl: 'https://s' },
      { type: 'SLACK', name: 'Chat', enabled: false, params: { slackParams: { webhookUrl: 'https://s' } } },
    ],
    [
      'Teams',
      { type: 'Teams', teams: { webhookUrlSecretRef: ik } },
      { webhookUrl: 'https://t' },
      { type: 'TEAMS', name: 'team-a/oncall', enabled: true, params: { teamsParams: { webhookUrl: 'https://t' } } },
    ],
    [
      'Opsgenie',
      { type: 'Opsgenie', opsgenie: { apiKeySecretRef: ik } },
      { apiKey: 'OG' },
      { type: 'OPSGENIE', params: { opsgenieParams: { apiKey: 'OG' } }, visible: {} },
    ],
    [
      'GoogleChat',
      { type: 'GoogleChat', googleChat: { webhookUrlSecretRef: ik } },
      { webhookUrl: 'https://g' },
      { type: 'GOOGLE_CHAT', params: { googleChatParams: { webhookUrl: 'https://g' } }, visible: {} },
    ],
    [
      'Discord',
      { type: 'Discord', discord: { webhookUrlSecretRef: ik } },
      { webhookUrl: 'https://d' },
      { type: 'DISCORD', params: { discordParams: { webhookUrl: 'https://d' } }, visible: {} },
    ],
    [
      'GenericWebhook unsigned',
      { type: 'GenericWebhook', genericWebhook: { urlSecretRef: ik } },
      { url: 'https://x' },
      { type: 'GENERIC_WEBHOOK', params: { genericWebhookParams: { url: 'https://x' } }, visible: { webhookSigned: false } },
    ],
    [
      'GenericWebhook signed, with header lines',
      { type: 'GenericWebhook', genericWebhook: { urlSecretRef: ik, signingSecretRef: ik, headersSecretRef: ik } },
      { url: 'https://x', signingSecret: 'S', headers: 'Authorization: Bearer a:b\r\n\n  X-Team :  sre  \nno colon here' },
      {
        type: 'GENERIC_WEBHOOK',
        params: {
          genericWebhookParams: {
            url: 'https://x',
            signingSecret: 'S',
            headers: [
              { name: 'Authorization', value: 'Bearer a:b' },
              { name: 'X-Team', value: 'sre' },
              { name: 'no colon here', value: '' },
            ],
          },
        },
        visible: { webhookSigned: true },
      },
    ],
    [
      'Alertmanager with basic auth',
      { type: 'Alertmanager', alertmanager: { urlSecretRef: ik, usernameSecretRef: ik, passwordSecretRef: ik } },
      { url: 'http://am:9093', username: 'u', password: 'p' },
      { type: 'ALERTMANAGER', params: { alertmanagerParams: { url: 'http://am:9093', username: 'u', password: 'p' } }, visible: {} },
    ],
  ])('desiredIntegration %s', (_n, s, sec, want) => {
    const d = desiredIntegration(P, spec(s), sec);
    expect(d).toMatchObject(want as object);
    expect(d.managedBy).toBe('k8s:NotificationProvider/team-a/oncall');
  });

  const actual = (over: Partial<IntegrationView> = {}): IntegrationView => ({
    id: 'i1',
    name: 'team-a/oncall',
    enabled: true,
    type: 'WEBHOOK',
    emailTo: null,
    emailFrom: null,
    webhookSigned: true,
    managedBy: 'k8s:NotificationProvider/team-a/oncall',
    ...over,
  });
  const webhook = desiredIntegration(P, spec({ type: 'Webhook', webhook: { urlSecretRef: ik, signingSecretRef: ik } }), {
    url: 'https://x',
    signingSecret: 'S',
  });
  it.each<[string, IntegrationView, boolean, string[], boolean]>([
    ['in sync', actual(), false, [], false],
    ['renamed through the API', actual({ name: 'x' }), false, ['name'], false],
    ['disabled + managedBy cleared', actual({ enabled: false, managedBy: null }), false, ['enabled', 'managedBy'], false],
    ['Secret rotated → re-send', actual(), true, ['secrets'], true],
    ['signing secret dropped through the API → re-send', actual({ webhookSigned: false }), false, ['webhookSigned'], true],
  ])('planIntegrationUpdate: %s', (_n, a, secretsChanged, drift, params) => {
    const plan = planIntegrationUpdate(webhook, a, secretsChanged);
    expect(plan.drift).toEqual(drift);
    expect(plan.update === undefined).toBe(drift.length === 0);
    expect(Boolean(plan.update?.params)).toBe(params);
  });
  it('planIntegrationUpdate: email recipients drift re-sends the email params', () => {
    const d = desiredIntegration(P, spec({ type: 'Email', email: { to: ['a@b.c'] } }), {});
    const plan = planIntegrationUpdate(d, actual({ type: 'EMAIL', webhookSigned: null, emailTo: ['evil@x.y'] }), false);
    expect(plan.drift).toEqual(['emailTo']);
    expect(plan.update?.params).toEqual({ emailParams: { to: ['a@b.c'] } });
  });

  it('createIntegrationVariables: the webhook input is flat, the others carry a params block', () => {
    expect(createIntegrationVariables({ ...webhook })).toEqual({
      name: 'team-a/oncall',
      enabled: true,
      managedBy: webhook.managedBy,
      url: 'https://x',
      signingSecret: 'S',
    });
    const slack = desiredIntegration(P, spec({ type: 'Slack', slack: { webhookUrlSecretRef: ik } }), { webhookUrl: 'https://s' });
    expect(createIntegrationVariables(slack)).toEqual({
      name: 'team-a/oncall',
      enabled: true,
      managedBy: slack.managedBy,
      slackParams: { webhookUrl: 'https://s' },
    });
  });
});

describe("providers: spec.rateLimit → the integration's own rate", () => {
  const ik = { name: 's', key: 'k' };
  const slack = (rateLimit?: unknown) =>
    desiredIntegration(P, spec({ type: 'Slack', slack: { webhookUrlSecretRef: ik }, ...(rateLimit ? { rateLimit } : {}) }), {
      webhookUrl: 'https://s',
    });
  it.each<[string, unknown, unknown]>([
    ['left out: the type default', undefined, null],
    ['rate and burst', { perSecond: 5, burst: 2 }, { perSecond: 5, burst: 2 }],
    ['no burst: one second of the rate', { perSecond: 7.5 }, { perSecond: 7.5, burst: 8 }],
    ['no burst, slower than one a second: 1', { perSecond: 0.2 }, { perSecond: 0.2, burst: 1 }],
    ['0: unlimited (burst 1, as the service stores it)', { perSecond: 0, burst: 50 }, { perSecond: 0, burst: 1 }],
  ])('desiredRateLimit: %s', (_n, rateLimit, want) => {
    expect(desiredRateLimit({ rateLimit } as Pick<NotificationProviderSpec, 'rateLimit'>)).toEqual(want);
    expect(slack(rateLimit).rateLimit).toEqual(want);
  });

  const view = (rateLimit?: IntegrationView['rateLimit']): IntegrationView => ({
    id: 'i1',
    name: 'team-a/oncall',
    enabled: true,
    type: 'SLACK',
    emailTo: null,
    emailFrom: null,
    webhookSigned: null,
    managedBy: 'k8s:NotificationProvider/team-a/oncall',
    ...(rateLimit ? { rateLimit } : {}),
  });
  const DEFAULT = { perSecond: 1, burst: 3, typeDefault: true };
  it.each<[string, unknown, IntegrationView, unknown]>([
    ['none wanted, the type default applies', undefined, view(DEFAULT), 'in sync'],
    ['none wanted, a service that does not say', undefined, view(), 'in sync'],
    ['wanted and stored', { perSecond: 5, burst: 2 }, view({ perSecond: 5, burst: 2, typeDefault: false }), 'in sync'],
    ['burst filled in by the service', { perSecond: 7.5 }, view({ perSecond: 7.5, burst: 8, typeDefault: false }), 'in sync'],
    ['wanted, the record has the type default', { perSecond: 5, burst: 2 }, view(DEFAULT), { perSecond: 5, burst: 2 }],
    [
      'changed through the API',
      { perSecond: 5, burst: 2 },
      view({ perSecond: 50, burst: 2, typeDefault: false }),
      { perSecond: 5, burst: 2 },
    ],
    ['removed from the spec: back to the default', undefined, view({ perSecond: 0, burst: 1, typeDefault: false }), null],
    ['a type default equal to the spec is still set as its own', { perSecond: 1, burst: 3 }, view(DEFAULT), { perSecond: 1, burst: 3 }],
  ])('planIntegrationUpdate: %s', (_n, rateLimit, actual, want) => {
    const plan = planIntegrationUpdate(slack(rateLimit), actual, false);
    if (want === 'in sync') expect(plan).toEqual({ drift: [], update: undefined });
    else {
      expect(plan.drift).toEqual(['rateLimit']);
      expect(plan.update).toEqual({ rateLimit: want });
    }
  });

  it("a refused rate is reported on the spec's field", () => {
    const msg =
      "input.rateLimit.perSecond 500 is above this service's bound of 100 per second (the operator's maxIntegrationRate in --limits-file)";
    const e = new ServiceApiError('bad-input', `create integration: ${msg}`, { field: 'input.rateLimit.perSecond' }, msg);
    let thrown: unknown;
    try {
      throwServiceFailure(e, 'provider');
    } catch (x) {
      thrown = x;
    }
    expect(thrown).toBeInstanceOf(TerminalError);
    expect((thrown as TerminalError).message).toBe(
      "spec.rateLimit.perSecond 500 is above this service's bound of 100 per second (the operator's maxIntegrationRate in --limits-file) (service field input.rateLimit.perSecond)",
    );
  });

  it('createIntegrationVariables: the rate goes with the create input when the spec sets one', () => {
    expect(createIntegrationVariables(slack({ perSecond: 0 }))).toMatchObject({ rateLimit: { perSecond: 0, burst: 1 } });
    expect(createIntegrationVariables(slack())).not.toHaveProperty('rateLimit');
  });
});

describe('pickOwned (adoption, duplicates, type change)', () => {
  const key = 'k8s:NotificationProvider/team-a/oncall';
  const rec = (id: string, managedBy: string | null, type = 'SLACK') => ({ id, managedBy, type });
  it.each<[string, ReturnType<typeof rec>[], string | undefined, string | undefined, string[]]>([
    ['nothing yet → create', [rec('x', null)], undefined, undefined, []],
    ['status id wins even if managedBy was cleared', [rec('a', null), rec('b', key)], 'a', 'a', ['b']],
    ['crash before status write → adopt by managedBy', [rec('a', key)], undefined, 'a', []],
    ['status id deleted through the API → adopt another of ours', [rec('b', key)], 'gone', 'b', []],
    ['duplicates → first kept, rest stale', [rec('a', key), rec('b', key)], undefined, 'a', ['b']],
    ['other records untouched', [rec('a', 'k8s:NotificationProvider/team-b/oncall'), rec('b', null)], undefined, undefined, []],
  ])('%s', (_n, records, statusId, current, stale) => {
    const r = pickOwned(records, statusId, key);
    expect(r.current?.id).toBe(current);
    expect(r.stale.map((x) => x.id)).toEqual(stale);
  });
  it('a record of another type (type changed) is stale, not reused', () => {
    const r = pickOwned([rec('old', key, 'SLACK')], 'old', key, (x) => x.type === 'TEAMS');
    expect(r.current).toBeUndefined();
    expect(r.stale.map((x) => x.id)).toEqual(['old']);
  });
});

describe('routers: desired record and update plan', () => {
  const rs = (s: unknown) => {
    const v = validateRouterSpec(s);
    if (!v.ok) throw new Error(v.errors.join('; '));
    return v.value;
  };
  const desired = desiredRouter(
    R,
    rs({ eventTypeId: 'certmgr-issuer-health-notification-config', filter: " type.endsWith('.notready') ", providerRef: { name: 'p' } }),
    'i1',
  );
  it('maps the spec (filter trimmed, defaults)', () => {
    expect(desired).toEqual({
      name: 'team-a/issuers',
      eventTypeId: 'certmgr-issuer-health-notification-config',
      filter: "type.endsWith('.notready')",
      integrationId: 'i1',
      enabled: true,
      managedBy: 'k8s:NotificationRouter/team-a/issuers',
      policy: { groupBy: [], groupWait: '30s', groupInterval: '5m', repeatInterval: null, holdUnderIssuer: false },
    });
    expect(desiredRouter(R, rs({ eventTypeId: 'cert-expiry-ext-notification-config', providerRef: { name: 'p' } }), 'i').filter).toBe('');
    const held = rs({ eventTypeId: 'certmgr-cert-resource-health-notification-config', providerRef: { name: 'p' }, holdUnderIssuer: true });
    expect(desiredRouter(R, held, 'i').policy.holdUnderIssuer).toBe(true);
  });
  const actual = (over: Partial<RouterView> = {}): RouterView => ({
    id: 'r1',
    name: desired.name,
    enabled: true,
    eventTypeId: desired.eventTypeId,
    filter: desired.filter,
    integrationId: 'i1',
    generation: 'ROUTER',
    policy: desired.policy,
    managedBy: desired.managedBy,
    ...over,
  });
  it.each<[string, Partial<RouterView>, string[], Record<string, unknown> | undefined]>([
    ['in sync', {}, [], undefined],
    ['filter changed through the API', { filter: 'true' }, ['filter'], { filter: desired.filter }],
    [
      'event type changed: the filter goes along (re-validated by the service)',
      { eventTypeId: 'cert-expiry-ext-notification-config' },
      ['eventTypeId'],
      { eventTypeId: desired.eventTypeId, filter: desired.filter },
    ],
    [
      're-pointed + disabled + renamed',
      { integrationId: 'i2', enabled: false, name: 'x' },
      ['name', 'enabled', 'integrationId'],
      { name: desired.name, enabled: true, integrationId: 'i1' },
    ],
    ['managedBy cleared', { managedBy: null }, ['managedBy'], { managedBy: desired.managedBy }],
  ])('%s', (_n, over, drift, update) => {
    const plan = planRouterUpdate(desired, actual(over));
    expect(plan.drift).toEqual(drift);
    expect(plan.update).toEqual(update);
  });
});

describe('monitoring config', () => {
  it('defaults from the schema and drift by field', () => {
    const v = validateMonitoringSpec({});
    expect(v.ok && desiredMonitoring(v.value)).toEqual({
      enabled: true,
      thresholds: [30, 14, 7],
      applicationIds: [],
      includeUnassignedCertificates: true,
    });
    const d = { enabled: true, thresholds: [30, 7], applicationIds: ['a'], includeUnassignedCertificates: false };
    expect(monitoringDrift(d, { ...d, id: 'x', rules: [] })).toEqual([]);
    expect(
      monitoringDrift(d, {
        id: 'x',
        rules: [],
        enabled: false,
        thresholds: [7, 30],
        applicationIds: [],
        includeUnassignedCertificates: true,
      }),
    ).toEqual(['enabled', 'thresholds', 'applicationIds', 'includeUnassignedCertificates']);
  });
});

describe('watch mappings', () => {
  const prov = (ns: string, name: string, s: unknown) => ({ metadata: { namespace: ns, name }, spec: s as NotificationProviderSpec });
  it('a Secret maps to the providers in its namespace that read it', () => {
    const list = [
      prov('a', 'p1', { type: 'Slack', slack: { webhookUrlSecretRef: { name: 's', key: 'k' } } }),
      prov('a', 'p2', { type: 'Webhook', webhook: { urlSecretRef: { name: 'u', key: 'k' }, signingSecretRef: { name: 's', key: 'x' } } }),
      prov('a', 'p3', { type: 'Email', email: { to: ['a@b.c'] } }),
      prov('b', 'p4', { type: 'Slack', slack: { webhookUrlSecretRef: { name: 's', key: 'k' } } }),
    ];
    expect(providersUsingSecret(list, 'a', 's')).toEqual(['a/p1', 'a/p2']);
  });
  it('a provider maps to the routers in its namespace that reference it', () => {
    const r = (ns: string, name: string, p: string) => ({
      metadata: { namespace: ns, name },
      spec: { eventTypeId: 'x', providerRef: { name: p } } as never,
    });
    expect(routersUsingProvider([r('a', 'r1', 'p'), r('a', 'r2', 'q'), r('b', 'r3', 'p')], 'a', 'p')).toEqual(['a/r1']);
  });
});

describe('service errors → conditions', () => {
  const err = (kind: ServiceApiError['kind'], details: Record<string, unknown> = {}, msg = 'm') =>
    new ServiceApiError(kind, `op: ${msg}`, details, msg);
  const outcome = (e: unknown, ctx: 'provider' | 'router' = 'router') => {
    try {
      throwServiceFailure(e, ctx);
    } catch (x) {
      if (x instanceof TerminalError) return `terminal:${x.reason}`;
      if (x instanceof WaitError) return `wait:${x.reason}${x.opts.requeueAfter !== undefined ? `@${x.opts.requeueAfter}` : ''}`;
      return 'rethrown';
    }
    return 'none';
  };
  it.each<[string, unknown, 'provider' | 'router', string]>([
    ['network / 5xx', err('unavailable'), 'router', 'wait:ServiceUnavailable'],
    ['bad API key', err('unauthenticated'), 'router', 'wait:ServiceUnavailable'],
    ['invalid filter', err('invalid-filter', { line: 1, column: 3 }), 'router', 'terminal:InvalidFilter'],
    [
      'bad value from a Secret (e.g. refused by the egress policy): stalled, no retry loop',
      err('bad-input', { field: 'input.slackParams.webhookUrl' }),
      'provider',
      'terminal:InvalidSecret',
    ],
    [
      'quota exceeded (router)',
      err('quota-exceeded', { quota: 'maxRoutersPerCompany', limit: 1, count: 1 }),
      'router',
      'terminal:QuotaExceeded',
    ],
    [
      'quota exceeded (provider)',
      err('quota-exceeded', { quota: 'maxIntegrationsPerCompany', limit: 1, count: 1 }),
      'provider',
      'terminal:QuotaExceeded',
    ],
    ['bad spec value', err('bad-input', { field: 'input.emailParams.to[0]' }), 'provider', 'terminal:InvalidSpec'],
    ['conflict', err('conflict'), 'router', 'wait:ServiceError'],
    ['not a service error', new Error('x'), 'router', 'rethrown'],
  ])('%s', (_n, e, ctx, want) => expect(outcome(e, ctx)).toBe(want));

  const uses: SecretUse[] = [
    { role: 'url', ref: { name: 'hook', key: 'url' }, field: 'spec.webhook.urlSecretRef' },
    { role: 'signingSecret', ref: { name: 'hook', key: 'sig' }, field: 'spec.webhook.signingSecretRef' },
    { role: 'webhookUrl', ref: { name: 'slack', key: 'u' }, field: 'spec.slack.webhookUrlSecretRef' },
    { role: 'integrationKey', ref: { name: 'ik', key: 'k' }, field: 'spec.incidentManagement.integrationKeySecretRef' },
  ];
  const egress = 'points to a loopback address, which the egress policy refuses (an operator may allow it with --egress-allow)';
  it.each<[string, string, string]>([
    [
      'input.url',
      `input.url ${egress}`,
      `spec.webhook.urlSecretRef (Secret hook, key url): the service refused the value: it ${egress} (service field input.url)`,
    ],
    [
      'input.webhookParams.url',
      `input.webhookParams.url ${egress}`,
      `spec.webhook.urlSecretRef (Secret hook, key url): the service refused the value: it ${egress} (service field input.webhookParams.url)`,
    ],
    [
      'input.slackParams.webhookUrl',
      `input.slackParams.webhookUrl ${egress}`,
      `spec.slack.webhookUrlSecretRef (Secret slack, key u): the service refused the value: it ${egress} (service field input.slackParams.webhookUrl)`,
    ],
    [
      'input.signingSecret',
      'input.signingSecret must be 16-256 characters',
      'spec.webhook.signingSecretRef (Secret hook, key sig): the service refused the value: it must be 16-256 characters (service field input.signingSecret)',
    ],
    [
      'input.incidentMgmtParams.IntegrationKey',
      'input.incidentMgmtParams.IntegrationKey is too long',
      'spec.incidentManagement.integrationKeySecretRef (Secret ik, key k): the service refused the value: it is too long (service field input.incidentMgmtParams.IntegrationKey)',
    ],
  ])('a rejected Secret value names the spec field and Secret: %s', (field, serviceMessage, want) => {
    const e = err('bad-input', { field }, serviceMessage);
    expect(secretValueMessage(e, uses)).toBe(want);
    expect(() => throwServiceFailure(e, 'provider', uses)).toThrow(want);
  });
  it('a Secret field the spec does not reference falls back to the service message', () => {
    const e = err('bad-input', { field: 'input.teamsParams.webhookUrl' }, 'input.teamsParams.webhookUrl is bad');
    expect(secretValueMessage(e, uses.slice(0, 1))).toBe('op: input.teamsParams.webhookUrl is bad');
  });

  it('QUOTA_EXCEEDED from the service is classified (not "other") and keeps the limit and count', () => {
    const message =
      'quota exceeded: a company may have at most 1 routers (maxRoutersPerCompany in --limits-file) and this one has 1; delete some first';
    const ce = new ClientError(
      {
        status: 200,
        headers: new Headers(),
        errors: [{ message, extensions: { code: 'QUOTA_EXCEEDED', quota: 'maxRoutersPerCompany', limit: 1, count: 1 } }],
      } as never,
      { query: 'mutation' },
    );
    const e = toServiceError(ce, 'create router');
    expect(e).toMatchObject({ kind: 'quota-exceeded', details: { code: 'QUOTA_EXCEEDED', limit: 1, count: 1 } });
    expect(() => throwServiceFailure(e, 'router')).toThrow(
      new TerminalError('QuotaExceeded', `create router: ${message} (QUOTA_EXCEEDED)`),
    );
  });

  it('invalidFilterMessage carries the CEL error and its position', () => {
    const e = err('invalid-filter', { line: 2, column: 7 }, "filterConfig.advancedFilterExpression: 2:7: undeclared reference to 'foo'");
    expect(invalidFilterMessage(e)).toBe("spec.filter: line 2, column 7: undeclared reference to 'foo'");
  });
});

describe('planMonitoring / releaseMonitoring (ownership across clusters)', () => {
  const me = 'k8s:MonitoringConfig//default@east';
  const west = 'k8s:MonitoringConfig//default@west';
  const d = { enabled: true, thresholds: [30], applicationIds: [], includeUnassignedCertificates: true };
  const cur = (over: Partial<typeof d> & { manager?: string }) => ({ ...d, id: 'x', rules: [], ...over });
  it.each([
    ['mine, same', cur({ manager: me }), { action: 'none' }],
    ['mine, drifted', cur({ manager: me, thresholds: [5] }), { action: 'write', drift: ['thresholds'] }],
    ['unmanaged, same: claimed', cur({}), { action: 'write', drift: [] }],
    ['unmanaged, drifted', cur({ enabled: false }), { action: 'write', drift: ['enabled'] }],
    ['another cluster', cur({ manager: west, thresholds: [5] }), { action: 'elsewhere', manager: west, drift: ['thresholds'] }],
    ['taken over by the API: reported, not reverted', cur({ manager: 'api' }), { action: 'elsewhere', manager: 'api', drift: [] }],
  ] as const)('%s', (_name, current, want) => {
    expect(planMonitoring(me, d, current)).toEqual(want);
  });
  it.each([
    [me, true],
    [west, false],
    ['api', false],
    [undefined, false],
  ] as const)('delete with manager %s resets: %s', (manager, want) => {
    expect(releaseMonitoring(me, cur(manager ? { manager } : {}))).toBe(want);
  });
});

describe('conflictManager', () => {
  const conflict = (message: string) =>
    new ServiceApiError('conflict', 'put monitoring config: …', { errors: [{ code: 'CONFLICT', message }] });
  it.each([
    ['the monitoring configuration is managed by k8s:MonitoringConfig//default@west', 'k8s:MonitoringConfig//default@west'],
    ['the monitoring configuration is managed by the API (a PUT without a manager took it over)', 'api'],
    ['the monitoring configuration changed concurrently; retry', 'another manager'],
  ])('%s', (message, want) => expect(conflictManager(conflict(message))).toBe(want));
});
