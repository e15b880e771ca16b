/**
 * The operator against a REAL kube-apiserver v1.20.2 + etcd and the real in-process service: CRs → records in
 * the service through its API, status, finalizers, drift revert, Secret rotation. One apiserver for the file.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { PROVIDER_TYPES } from '../../src/api/notificationprovider.js';
import { MANAGER_HEADER, RELEASE_HEADER } from '../../src/model/manager.js';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';
import type { RunningOperator } from '../../src/operator/index.js';
import { ensureKubeBinaries, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { startTestService, type TestService } from '../support/service.js';
import {
  COMPANY_A,
  Kube,
  captureLogger,
  installCrds,
  managedBy,
  monitoringConfig,
  provider,
  router,
  secret,
  startTestOperator,
  storeIntegrations,
  storeRouters,
  type CR,
  type CapturedLog,
} from './support.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const ISSUER = 'certmgr-issuer-health-notification-config';
const CERT = 'certmgr-cert-resource-health-notification-config';
const EXPIRY = 'cert-expiry-ext-notification-config';
const INTEGRATION_KEY = 'ik-0123456789abcdef-secret';
const ROTATED_KEY = 'ik-rotated-fedcba9876543210';

describe.skipIf(skip)('operator: CRs reconciled into the service (real apiserver)', () => {
  let env: KubeEnv;
  let svc: TestService;
  let k: Kube;
  let op: RunningOperator;
  let logs: CapturedLog;

  const MONITORING_PATH = '/outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_EXPIRATION';
  const putMonitoring = (thresholds: number[], headers: Record<string, string> = {}) =>
    svc.rest(MONITORING_PATH, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({
        inventoryMonitoringConfiguration: {
          inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
          enabled: false,
          thresholds,
          applicationIds: [],
          includeUnassignedCertificates: true,
        },
      }),
    });
  const stalledMessage = (o: { status?: Record<string, unknown> }): string =>
    ((o.status?.['conditions'] ?? []) as { type: string; message?: string }[]).find((x) => x.type === 'Stalled')?.message ?? '';

  beforeAll(async () => {
    await ensureKubeBinaries();
    [env, svc] = await Promise.all([startKubeEnv(), startTestService('sqlite')]);
    k = new Kube(env.kubeConfig());
    await installCrds(k.kc);
    logs = captureLogger();
    op = await startTestOperator(env, svc, logs.logger);
    await op.whenRunning();
  }, 10 * 60_000);

  afterAll(async () => {
    await op?.stop();
    await svc?.close();
    await env?.stop();
  });

  async function incidentProvider(ns: string, name: string, secretName = `${name}-key`, key = INTEGRATION_KEY) {
    await k.ns(ns);
    await k.apply(secret(ns, secretName, { integrationKey: key }));
    await k.apply(
      provider(ns, name, {
        type: 'IncidentManagement',
        incidentManagement: { integrationKeySecretRef: { name: secretName, key: 'integrationKey' } },
      }),
    );
    return k.waitReady('notificationproviders', name, ns);
  }

  it('apply → Ready with the records in the service; edit → updated; delete → gone (finalizers)', async () => {
    const ns = 'apply';
    const p = await incidentProvider(ns, 'oncall');
    const integrationId = p.status?.['integrationId'] as string;
    expect(integrationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(p.metadata?.finalizers).toContain('notify.certmgr.io/finalizer');
    expect(p.status?.observedGeneration).toBe(p.metadata?.generation);
    const integ = (await storeIntegrations(svc)).find((i) => i.id === integrationId)!;
    expect(integ).toMatchObject({
      name: 'apply/oncall',
      type: 'INCIDENT_MGMT',
      enabled: true,
      managedBy: managedBy('NotificationProvider', ns, 'oncall'),
    });
    expect(integ.secrets['integrationKey']).toBe(INTEGRATION_KEY);

    await k.apply(
      router(ns, 'issuers-down', { eventTypeId: ISSUER, filter: "type.endsWith('.notready')", providerRef: { name: 'oncall' } }),
    );
    const r = await k.waitReady('notificationrouters', 'issuers-down', ns);
    const routerId = r.status?.['routerId'] as string;
    expect(r.status?.['integrationId']).toBe(integrationId);
    let rec = (await storeRouters(svc)).find((x) => x.id === routerId)!;
    expect(rec).toMatchObject({
      name: 'apply/issuers-down',
      eventTypeId: ISSUER,
      filter: "type.endsWith('.notready')",
      integrationId,
      enabled: true,
      generation: 'ROUTER',
      ...ROUTER_POLICY_DEFAULTS,
      managedBy: managedBy('NotificationRouter', ns, 'issuers-down'),
    });

    // the spec's GraphQL query sees it too
    const listed = await svc
      .gql()
      .request<{ searchNotificationRoutingConfigurations: { nodes: { id: string }[] } }>(
        'query { searchNotificationRoutingConfigurations { nodes { id } } }',
      );
    expect(listed.searchNotificationRoutingConfigurations.nodes.map((n) => n.id)).toContain(routerId);

    // edit: every field the router owns
    await k.apply(
      router(ns, 'issuers-down', {
        eventTypeId: CERT,
        filter: "type.endsWith('.active') && data.clusterName == 'prod'",
        providerRef: { name: 'oncall' },
        displayName: 'Certificates back',
        enabled: false,
        groupBy: ['data.clusterId', 'data.issuerName'],
        groupWait: '90s',
        groupInterval: '10m',
        repeatInterval: '4h',
      }),
    );
    await waitFor('router record updated', async () => {
      rec = (await storeRouters(svc)).find((x) => x.id === routerId)!;
      return rec.eventTypeId === CERT && rec.enabled === false && rec.name === 'Certificates back' ? rec : undefined;
    });
    expect(rec.filter).toBe("type.endsWith('.active') && data.clusterName == 'prod'");
    // grouping and reminders (docs/signal.md) travel with the router
    expect(rec).toMatchObject({
      groupBy: ['data.clusterId', 'data.issuerName'],
      groupWaitMs: 90_000,
      groupIntervalMs: 600_000,
      repeatIntervalMs: 14_400_000,
    });
    const r2 = await k.waitReady('notificationrouters', 'issuers-down', ns);
    expect(r2.status?.['routerId']).toBe(routerId); // updated in place, not recreated
    expect(r2.status?.observedGeneration).toBe(2);

    // edit the provider
    await k.apply(
      provider(ns, 'oncall', {
        type: 'IncidentManagement',
        displayName: 'On-call (prod)',
        enabled: false,
        incidentManagement: { integrationKeySecretRef: { name: 'oncall-key', key: 'integrationKey' } },
      }),
    );
    await waitFor('integration updated', async () => {
      const i = (await storeIntegrations(svc)).find((x) => x.id === integrationId);
      return i?.name === 'On-call (prod)' && i.enabled === false;
    });

    // delete the provider first: it must wait for the router (its integration is in use), nothing orphaned
    await k.delete('notificationproviders', 'oncall', ns);
    await k.delete('notificationrouters', 'issuers-down', ns);
    await k.waitGone('notificationrouters', 'issuers-down', ns);
    await k.waitGone('notificationproviders', 'oncall', ns);
    expect((await storeRouters(svc)).find((x) => x.id === routerId)).toBeUndefined();
    expect((await storeIntegrations(svc)).find((x) => x.id === integrationId)).toBeUndefined();

    // Events were recorded on transitions
    const evs = await k.events(ns, 'issuers-down');
    expect(evs.some((e) => e.reason === 'Reconciled' && e.type === 'Normal')).toBe(true);
  });

  it('bad filter → Stalled InvalidFilter with the CEL error and position, nothing created; fixed → Ready', async () => {
    const ns = 'badfilter';
    await incidentProvider(ns, 'p');
    await k.apply(router(ns, 'bad', { eventTypeId: EXPIRY, filter: "data.issuerName == 'x'", providerRef: { name: 'p' } }));
    const stalled = await k.waitCondition('notificationrouters', 'bad', ns, { status: 'True', type: 'Stalled', reason: 'InvalidFilter' });
    const ready = stalled.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'InvalidFilter' });
    expect(ready?.message).toMatch(/^spec\.filter: line 1, column \d+: .*issuerName/);
    expect(stalled.status?.observedGeneration).toBe(stalled.metadata?.generation);
    expect(stalled.status?.['routerId']).toBeUndefined();
    const mb = managedBy('NotificationRouter', ns, 'bad');
    expect((await storeRouters(svc)).filter((x) => x.managedBy === mb)).toEqual([]);
    const evs = await k.events(ns, 'bad');
    expect(evs.some((e) => e.reason === 'InvalidFilter' && e.type === 'Warning')).toBe(true);

    // stays stalled across resyncs (nothing created meanwhile)
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await storeRouters(svc)).filter((x) => x.managedBy === mb)).toEqual([]);

    await k.apply(router(ns, 'bad', { eventTypeId: EXPIRY, filter: 'data.ruleId == 2', providerRef: { name: 'p' } }));
    const ok = await k.waitReady('notificationrouters', 'bad', ns);
    expect(ok.status?.conditions?.find((c) => c.type === 'Stalled')).toBeUndefined();
    const recs = (await storeRouters(svc)).filter((x) => x.managedBy === mb);
    expect(recs).toHaveLength(1);
    expect(recs[0]!.filter).toBe('data.ruleId == 2');
  });

  it('an edit to a bad filter keeps the last good record; the stalled router still lets its provider be deleted', async () => {
    const ns = 'stalled-edit';
    await incidentProvider(ns, 'p');
    await k.apply(router(ns, 'r', { eventTypeId: ISSUER, filter: "type.endsWith('.notready')", providerRef: { name: 'p' } }));
    const ok = await k.waitReady('notificationrouters', 'r', ns);
    const routerId = ok.status?.['routerId'] as string;
    await k.apply(router(ns, 'r', { eventTypeId: ISSUER, filter: 'type.endsWith(', providerRef: { name: 'p' } }));
    const st = await k.waitCondition('notificationrouters', 'r', ns, { status: 'True', type: 'Stalled', reason: 'InvalidFilter' });
    expect(st.status?.['routerId']).toBe(routerId);
    expect((await storeRouters(svc)).find((x) => x.id === routerId)?.filter).toBe("type.endsWith('.notready')");

    await k.delete('notificationproviders', 'p', ns);
    await k.waitGone('notificationproviders', 'p', ns);
    await k.waitCondition('notificationrouters', 'r', ns, { status: 'False', reason: 'ProviderNotFound' });
    expect((await storeRouters(svc)).find((x) => x.id === routerId)).toBeUndefined();
  });

  it('a change made through the API is reverted on resync', async () => {
    const ns = 'drift';
    const p = await incidentProvider(ns, 'p');
    await k.apply(router(ns, 'r', { eventTypeId: ISSUER, filter: "type.endsWith('.notready')", providerRef: { name: 'p' } }));
    const r = await k.waitReady('notificationrouters', 'r', ns);
    const routerId = r.status?.['routerId'] as string;
    const integrationId = p.status?.['integrationId'] as string;
    const gql = svc.gql();
    await gql.request(
      `mutation($id: UUID!, $in: UpdateNotificationRouterConfigurationInput!) { updateNotificationRouter(id: $id, updateNotificationRouterConfigurationInput: $in) { id } }`,
      { id: routerId, in: { name: 'hacked', enabled: false, advancedFilterExpression: "type.endsWith('.active')", managedBy: '' } },
    );
    await gql.request(`mutation($id: UUID!, $in: UpdateIntegrationInput!) { updateIntegration(id: $id, input: $in) { id } }`, {
      id: integrationId,
      in: { name: 'renamed', enabled: false },
    });
    await waitFor(
      'router drift reverted',
      async () => {
        const x = (await storeRouters(svc)).find((y) => y.id === routerId);
        return (
          x?.name === 'drift/r' &&
          x.enabled &&
          x.filter === "type.endsWith('.notready')" &&
          x.managedBy === managedBy('NotificationRouter', ns, 'r')
        );
      },
      { timeoutMs: 15_000 },
    );
    await waitFor(
      'integration drift reverted',
      async () => {
        const x = (await storeIntegrations(svc)).find((y) => y.id === integrationId);
        return x?.name === 'drift/p' && x.enabled;
      },
      { timeoutMs: 15_000 },
    );

    // deleted through the API: recreated (new id), the router follows
    await gql.request('mutation($ids: [UUID!]) { deleteNotificationRouter(ids: $ids) { ids } }', { ids: [routerId] });
    const r2 = await waitFor(
      'router recreated',
      async () => {
        const o = await k.get('notificationrouters', 'r', ns);
        const id = o?.status?.['routerId'];
        return id && id !== routerId && (await storeRouters(svc)).some((x) => x.id === id) ? o : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(r2.status?.['integrationId']).toBe(integrationId);
    expect((await storeRouters(svc)).filter((x) => x.managedBy === managedBy('NotificationRouter', ns, 'r'))).toHaveLength(1);
  });

  it('Secret rotation is re-applied without restart; a missing Secret reports SecretNotFound', async () => {
    const ns = 'rotate';
    const p = await incidentProvider(ns, 'p');
    const id = p.status?.['integrationId'] as string;
    const before = p.status?.['appliedSecretVersion'];
    await k.apply(secret(ns, 'p-key', { integrationKey: ROTATED_KEY }));
    await waitFor(
      'rotated key in the service',
      async () => (await storeIntegrations(svc)).find((x) => x.id === id)?.secrets['integrationKey'] === ROTATED_KEY,
    );
    const after = await waitFor('status records the new Secret version', async () => {
      const o = await k.get('notificationproviders', 'p', ns);
      return o?.status?.['appliedSecretVersion'] !== before ? o : undefined;
    });
    expect(after.status?.['integrationId']).toBe(id);

    await k.deleteSecret(ns, 'p-key');
    const nf = await k.waitCondition('notificationproviders', 'p', ns, { status: 'False', reason: 'SecretNotFound' });
    expect(nf.status?.conditions?.find((c) => c.type === 'Ready')?.message).toBe(
      'Secret rotate/p-key (spec.incidentManagement.integrationKeySecretRef) not found',
    );
    await k.apply(secret(ns, 'p-key', { integrationKey: INTEGRATION_KEY }));
    await k.waitReady('notificationproviders', 'p', ns);
    await waitFor(
      'key restored',
      async () => (await storeIntegrations(svc)).find((x) => x.id === id)?.secrets['integrationKey'] === INTEGRATION_KEY,
    );
  });

  it('ProviderNotFound until the provider exists; a provider being deleted takes its routers records along', async () => {
    const ns = 'noprov';
    await k.ns(ns);
    await k.apply(router(ns, 'r', { eventTypeId: EXPIRY, providerRef: { name: 'later' } }));
    const nf = await k.waitCondition('notificationrouters', 'r', ns, { status: 'False', reason: 'ProviderNotFound' });
    expect(nf.status?.conditions?.find((c) => c.type === 'Reconciling')?.status).toBe('True');
    expect(nf.status?.conditions?.find((c) => c.type === 'Stalled')).toBeUndefined();

    const p = await incidentProvider(ns, 'later');
    const r = await k.waitReady('notificationrouters', 'r', ns);
    expect(r.status?.['integrationId']).toBe(p.status?.['integrationId']);
    const routerId = r.status?.['routerId'] as string;

    // the provider goes away: the router reports it and removes its record, so the provider's finalizer can finish
    await k.delete('notificationproviders', 'later', ns);
    await k.waitGone('notificationproviders', 'later', ns);
    const gone = await k.waitCondition('notificationrouters', 'r', ns, { status: 'False', reason: 'ProviderNotFound' });
    expect(gone.status?.['routerId']).toBeUndefined();
    expect((await storeRouters(svc)).find((x) => x.id === routerId)).toBeUndefined();
    expect((await storeIntegrations(svc)).find((x) => x.id === p.status?.['integrationId'])).toBeUndefined();
    await k.delete('notificationrouters', 'r', ns);
    await k.waitGone('notificationrouters', 'r', ns);
  });

  it('a provider whose integration is used by an API-created router waits (DeletionBlocked) until that router is gone', async () => {
    const ns = 'blocked';
    const p = await incidentProvider(ns, 'p');
    const integrationId = p.status?.['integrationId'] as string;
    const created = await svc.gql().request<{ createNotificationRouter: { id: string } }>(
      `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) {
         createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
      { d: { name: 'by hand', eventTypeId: EXPIRY }, f: {}, i: { integrationId } },
    );
    await k.delete('notificationproviders', 'p', ns);
    const blocked = await k.waitCondition('notificationproviders', 'p', ns, { status: 'False', reason: 'DeletionBlocked' });
    expect(blocked.status?.conditions?.find((c) => c.type === 'Ready')?.message).toContain('by hand');
    await svc
      .gql()
      .request('mutation($ids: [UUID!]) { deleteNotificationRouter(ids: $ids) { ids } }', { ids: [created.createNotificationRouter.id] });
    await k.waitGone('notificationproviders', 'p', ns);
    expect((await storeIntegrations(svc)).find((x) => x.id === integrationId)).toBeUndefined();
  });

  it('adopts a record left by a crash between create and status write (no duplicate)', async () => {
    const ns = 'adopt';
    await k.ns(ns);
    await k.apply(secret(ns, 'k', { integrationKey: INTEGRATION_KEY }));
    // what a crash would leave: the record with our managedBy, no CR status
    const mb = managedBy('NotificationProvider', ns, 'p');
    const pre = await svc
      .gql()
      .request<{ createIncidentMgmtIntegration: { id: string } }>(
        `mutation($in: CreateIncidentMgmtIntegrationInput!) { createIncidentMgmtIntegration(input: $in) { id } }`,
        { in: { name: 'adopt/p', incidentMgmtParams: { IntegrationKey: 'stale-key-0000000000' }, managedBy: mb } },
      );
    await k.apply(
      provider(ns, 'p', {
        type: 'IncidentManagement',
        incidentManagement: { integrationKeySecretRef: { name: 'k', key: 'integrationKey' } },
      }),
    );
    const p = await k.waitReady('notificationproviders', 'p', ns);
    expect(p.status?.['integrationId']).toBe(pre.createIncidentMgmtIntegration.id);
    const mine = (await storeIntegrations(svc)).filter((x) => x.managedBy === mb);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.secrets['integrationKey']).toBe(INTEGRATION_KEY); // secrets re-sent on adoption
  });

  it('every provider type; a type change replaces the integration and re-points its routers', async () => {
    const ns = 'types';
    await k.ns(ns);
    await k.apply(
      secret(ns, 'hooks', {
        url: 'https://hooks.example.com/T000/B000/tok',
        signing: 'whsec_' + Buffer.from('0123456789abcdef0123').toString('base64'),
        slack: 'https://hooks.slack.com/services/T/B/x',
        teams: 'https://example.webhook.office.com/workflows/abc',
        opsgenie: 'eb243592-faa2-4ba2-a551-1afdf565c889',
        gchat: 'https://chat.googleapis.com/v1/spaces/AAAA/messages?key=k&token=t',
        discord: 'https://discord.com/api/webhooks/1/tok',
        headers: 'Authorization: Bearer abc\nX-Team: sre\n',
      }),
    );
    await k.apply(
      provider(ns, 'hook', {
        type: 'Webhook',
        webhook: { urlSecretRef: { name: 'hooks', key: 'url' }, signingSecretRef: { name: 'hooks', key: 'signing' } },
      }),
    );
    await k.apply(provider(ns, 'mail', { type: 'Email', email: { to: ['ops@example.com'], from: 'certs@example.com' } }));
    await k.apply(provider(ns, 'chat', { type: 'Slack', slack: { webhookUrlSecretRef: { name: 'hooks', key: 'slack' } } }));
    for (const n of ['hook', 'mail', 'chat']) await k.waitReady('notificationproviders', n, ns);
    const all = await storeIntegrations(svc);
    const by = (n: string) => all.find((x) => x.managedBy === managedBy('NotificationProvider', ns, n))!;
    expect(by('hook')).toMatchObject({ type: 'WEBHOOK', config: { signed: true } });
    expect(by('mail')).toMatchObject({ type: 'EMAIL', config: { to: ['ops@example.com'], from: 'certs@example.com' } });
    expect(by('chat')).toMatchObject({ type: 'SLACK' });

    // every type: each provider type maps to its integration type, its Secrets to the write-only secrets
    await k.apply(provider(ns, 'og', { type: 'Opsgenie', opsgenie: { apiKeySecretRef: { name: 'hooks', key: 'opsgenie' } } }));
    await k.apply(provider(ns, 'gc', { type: 'GoogleChat', googleChat: { webhookUrlSecretRef: { name: 'hooks', key: 'gchat' } } }));
    await k.apply(provider(ns, 'dc', { type: 'Discord', discord: { webhookUrlSecretRef: { name: 'hooks', key: 'discord' } } }));
    await k.apply(
      provider(ns, 'gw', {
        type: 'GenericWebhook',
        genericWebhook: {
          urlSecretRef: { name: 'hooks', key: 'url' },
          signingSecretRef: { name: 'hooks', key: 'signing' },
          headersSecretRef: { name: 'hooks', key: 'headers' },
        },
      }),
    );
    for (const n of ['og', 'gc', 'dc', 'gw']) await k.waitReady('notificationproviders', n, ns);
    const more = await storeIntegrations(svc);
    const of = (n: string) => more.find((x) => x.managedBy === managedBy('NotificationProvider', ns, n))!;
    expect(of('og')).toMatchObject({ type: 'OPSGENIE', secrets: { apiKey: 'eb243592-faa2-4ba2-a551-1afdf565c889' } });
    expect(of('gc')).toMatchObject({
      type: 'GOOGLE_CHAT',
      secrets: { webhookUrl: 'https://chat.googleapis.com/v1/spaces/AAAA/messages?key=k&token=t' },
    });
    expect(of('dc')).toMatchObject({ type: 'DISCORD', secrets: { webhookUrl: 'https://discord.com/api/webhooks/1/tok' } });
    expect(of('gw')).toMatchObject({
      type: 'GENERIC_WEBHOOK',
      config: { signed: true },
      secrets: { url: 'https://hooks.example.com/T000/B000/tok', headers: '[["Authorization","Bearer abc"],["X-Team","sre"]]' },
    });

    await k.apply(router(ns, 'r', { eventTypeId: EXPIRY, providerRef: { name: 'chat' } }));
    const r = await k.waitReady('notificationrouters', 'r', ns);
    const oldId = by('chat').id;
    expect(r.status?.['integrationId']).toBe(oldId);

    await k.replaceSpec('notificationproviders', 'chat', ns, {
      type: 'Teams',
      teams: { webhookUrlSecretRef: { name: 'hooks', key: 'teams' } },
    });
    const moved = await waitFor('router re-pointed to the Teams integration', async () => {
      const o = await k.get('notificationrouters', 'r', ns);
      const id = o?.status?.['integrationId'];
      return id && id !== oldId ? (id as string) : undefined;
    });
    await waitFor('old integration deleted', async () => !(await storeIntegrations(svc)).some((x) => x.id === oldId));
    const mine = (await storeIntegrations(svc)).filter((x) => x.managedBy === managedBy('NotificationProvider', ns, 'chat'));
    expect(mine.map((x) => [x.id, x.type])).toEqual([[moved, 'TEAMS']]);
    expect((await storeRouters(svc)).find((x) => x.id === r.status?.['routerId'])?.integrationId).toBe(moved);
  });

  it('MonitoringConfig: `default` applied; an API take-over is reported, not reverted; delete resets; others Ignored', async () => {
    await k.apply(
      monitoringConfig('default', { thresholds: [60, 30, 10], applicationIds: ['app-1'], includeUnassignedCertificates: false }),
    );
    const m = await k.waitReady('monitoringconfigs', 'default');
    expect(m.status?.['rules']).toEqual([
      { ruleId: 1, threshold: 60 },
      { ruleId: 2, threshold: 30 },
      { ruleId: 3, threshold: 10 },
    ]);
    const get = async () => (await (await svc.rest(MONITORING_PATH)).json()) as { configuration: Record<string, unknown> };
    expect((await get()).configuration).toMatchObject({
      enabled: true,
      thresholds: [60, 30, 10],
      applicationIds: ['app-1'],
      includeUnassignedCertificates: false,
    });
    expect((await svc.rest(MONITORING_PATH)).headers.get(MANAGER_HEADER)).toBe('k8s:MonitoringConfig//default');

    // a plain REST PUT takes the record over; the operator reports the drift
    // instead of reverting it
    await putMonitoring([5]);
    const taken = await k.waitCondition('monitoringconfigs', 'default', undefined, {
      status: 'True',
      type: 'Stalled',
      reason: 'ManagedElsewhere',
    });
    expect(stalledMessage(taken)).toContain('managed by the API');
    expect(stalledMessage(taken)).toContain('thresholds');
    await new Promise((r) => setTimeout(r, 3_000)); // two resyncs
    expect((await get()).configuration['thresholds']).toEqual([5]);
    // handed back (release): the operator claims the record again and applies its spec
    await putMonitoring([5], { [RELEASE_HEADER]: 'true' });
    await waitFor('monitoring re-applied', async () => JSON.stringify((await get()).configuration['thresholds']) === '[60,30,10]', {
      timeoutMs: 15_000,
    });
    await k.waitReady('monitoringconfigs', 'default');

    await k.apply(monitoringConfig('other', { enabled: false }));
    const ignored = await k.waitCondition('monitoringconfigs', 'other', undefined, { status: 'True', type: 'Stalled', reason: 'Ignored' });
    expect(ignored.metadata?.finalizers ?? []).toEqual([]);
    expect((await get()).configuration['enabled']).toBe(true);
    await k.delete('monitoringconfigs', 'other');

    await k.delete('monitoringconfigs', 'default');
    await k.waitGone('monitoringconfigs', 'default');
    expect((await get()).configuration).toMatchObject({
      enabled: true,
      thresholds: [30, 14, 7],
      applicationIds: [],
      includeUnassignedCertificates: true,
    });
    expect((await svc.rest(MONITORING_PATH)).headers.get(MANAGER_HEADER)).toBeNull(); // released
  });

  it('MonitoringConfig of a second cluster: Stalled ManagedElsewhere, the record unchanged, its delete resets nothing', async () => {
    const other = 'k8s:MonitoringConfig//default@cluster-1';
    expect((await putMonitoring([45], { [MANAGER_HEADER]: other })).status).toBe(200);
    const before = await (await svc.rest(MONITORING_PATH)).text();

    await k.apply(monitoringConfig('default', { thresholds: [9] }));
    const c = await k.waitCondition('monitoringconfigs', 'default', undefined, {
      status: 'True',
      type: 'Stalled',
      reason: 'ManagedElsewhere',
    });
    expect(stalledMessage(c)).toContain(`managed by ${other}`);
    await new Promise((r) => setTimeout(r, 3_000)); // two resyncs: still no fight
    expect(await (await svc.rest(MONITORING_PATH)).text()).toBe(before);

    await k.delete('monitoringconfigs', 'default');
    await k.waitGone('monitoringconfigs', 'default');
    const after = await svc.rest(MONITORING_PATH);
    expect(await after.text()).toBe(before);
    expect(after.headers.get(MANAGER_HEADER)).toBe(other);
    // leave the company's record unmanaged for the tests after this one
    expect((await putMonitoring([30, 14, 7], { [RELEASE_HEADER]: 'true' })).status).toBe(200);
  });

  it('examples/ applies as is: every provider, router (one per spec pattern) and the MonitoringConfig become Ready', async () => {
    const dir = join(REPO_ROOT, 'examples');
    const docs = readdirSync(dir)
      .filter((f) => f.endsWith('.yaml'))
      .sort()
      .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as CR | null))
      .filter((d): d is CR => Boolean(d));
    for (const d of docs) await k.apply(d);
    const plural = {
      NotificationProvider: 'notificationproviders',
      NotificationRouter: 'notificationrouters',
      MonitoringConfig: 'monitoringconfigs',
    } as const;
    const crs = docs.filter((d) => d.kind! in plural);
    expect(crs.filter((d) => d.kind === 'NotificationRouter')).toHaveLength(11);
    expect(new Set(crs.filter((d) => d.kind === 'NotificationProvider').map((d) => d.spec?.['type']))).toEqual(
      new Set([...PROVIDER_TYPES]), // one provider per type
    );
    for (const d of crs) await k.waitReady(plural[d.kind as keyof typeof plural], d.metadata!.name!, d.metadata!.namespace);
    const routers = (await storeRouters(svc)).filter((r) => r.managedBy?.startsWith('k8s:NotificationRouter/cert-alerts/'));
    expect(routers).toHaveLength(11);
    await k.delete('monitoringconfigs', 'default');
    await k.waitGone('monitoringconfigs', 'default');
  });

  it('never writes a secret value to logs, status or events', async () => {
    const secrets = [
      INTEGRATION_KEY,
      ROTATED_KEY,
      'hooks.example.com/T000',
      'hooks.slack.com',
      'webhook.office.com',
      'whsec_',
      '0123456789abcdef0123456789abcdef',
      'token=replace-me',
    ];
    const text = logs.lines.join('');
    for (const s of secrets) expect(text.includes(s), `log contains ${s}`).toBe(false);
    for (const ns of ['apply', 'rotate', 'types', 'drift', 'cert-alerts']) {
      const list = await k.core.listNamespacedEvent({ namespace: ns });
      const evText = JSON.stringify(list.items.map((e) => e.message));
      for (const s of secrets) expect(evText.includes(s)).toBe(false);
      for (const plural of ['notificationproviders', 'notificationrouters'] as const) {
        const objs = (await k.custom.listNamespacedCustomObject({
          group: 'notify.certmgr.io',
          version: 'v1alpha1',
          namespace: ns,
          plural,
        })) as { items: unknown[] };
        const st = JSON.stringify(objs.items.map((o) => (o as { status?: unknown }).status));
        for (const s of secrets) expect(st.includes(s)).toBe(false);
      }
    }
    expect(COMPANY_A).toBeTruthy();
  });
});
