/**
 * Held under the issuer (docs/grouping.md), through POST /v1/events on the real service, SQLite and PostgreSQL: a
 * ClusterIssuer outage that breaks 200 certificates pages ONCE per holding router (a webhook and an incident
 * receiver on loopback) for as long as it lasts, and its recovery sends ONE summary (the incident resolves); a
 * router without the option gets one delivery per event, as the spec says; a certificate of another (ready) issuer
 * failing meanwhile is notified on its own by the holding routers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { parseSnapshot } from '../../src/grouping/snapshot.js';
import { certificateResourceActive, certificateResourceNotReady, CLUSTER_PROD, issuerActive, issuerNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { startTestService, type TestService, COMPANY_A } from '../support/service.js';
import { waitFor } from '../delivery/support.js';

const N = 200;
const ISSUER = 'letsencrypt-prod';
const base = Date.parse('2026-03-01T10:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const CERT_FAMILY = 'certmgr-cert-resource-health-notification-config';

function certs(state: 'notready' | 'active', issuerName = ISSUER, n = N) {
  return Array.from({ length: n }, (_, i) => {
    const o = {
      clusterId: CLUSTER_PROD.id,
      clusterName: CLUSTER_PROD.name,
      issuerName,
      namespace: `ns-${i % 7}`,
      certificateName: `${issuerName}-cert-${i}`,
      // the certificates fail a minute after the issuer, and recover after it
      statusTransition: iso(base + 60_000 + (state === 'active' ? 3_600_000 : 0) + i),
    };
    return state === 'notready' ? certificateResourceNotReady(o) : certificateResourceActive(o);
  });
}
const clusterIssuer = { clusterId: CLUSTER_PROD.id, clusterName: CLUSTER_PROD.name, issuerName: ISSUER, namespace: '' };

interface PagerEvent {
  event_action: string;
  dedup_key: string;
}

describe.each(['sqlite', 'postgres'] as const)(`a ClusterIssuer outage breaking ${N} certificates on %s`, (kind) => {
  let hook: Receiver;
  let plain: Receiver;
  let pager: Receiver;
  let svc: TestService;
  beforeAll(async () => {
    hook = await startReceiver();
    plain = await startReceiver();
    pager = await startReceiver((_r, res) => {
      res.statusCode = 202;
      res.end('{"status":"success"}');
    });
    svc = await startTestService(kind, ['--incident-events-url', pager.url]);
  });
  afterAll(async () => {
    await svc?.close();
    await hook?.close();
    await plain?.close();
    await pager?.close();
  });

  const post = async (events: unknown[]) => {
    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(events),
    });
    expect(res.status).toBe(202);
  };
  const deliveries = async () => svc.store.listDeliveries(COMPANY_A, { limit: 2000 });
  const webhook = async (name: string, url: string) =>
    (
      await svc
        .gql()
        .request<{ createWebhookIntegration: { id: string } }>(
          `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
          { i: { name, url } },
        )
    ).createWebhookIntegration.id;

  it('pages once while it lasts and sends one summary when it recovered; a router without the option gets every event', async () => {
    const hookId = await webhook('hook', `${hook.url}/hook`);
    const plainId = await webhook('plain', `${plain.url}/plain`);
    const { createIncidentMgmtIntegration: p } = await svc
      .gql()
      .request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
        name: 'pager',
        integrationKey: 'R0UTINGKEY-hold-0123456789',
      });
    const routers: [string, string, boolean][] = [
      ['held to hook', hookId, true],
      ['held to pager', p.id, true],
      ['every event', plainId, false],
    ];
    const ids: Record<string, string> = {};
    for (const [name, integrationId, hold] of routers) {
      const r = await svc
        .gql()
        .request<{ createNotificationRouter: { id: string; notificationRouterPolicyConfig: { holdUnderIssuer: boolean } } }>(
          `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!, $p: NotificationRouterPolicyInput) {
          createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i, policyConfig: $p) { id notificationRouterPolicyConfig { holdUnderIssuer } }
        }`,
          {
            d: { name, eventTypeId: CERT_FAMILY },
            f: { advancedFilterExpression: '' },
            i: { integrationId },
            p: { groupWait: '1s', ...(hold ? { holdUnderIssuer: true } : {}) },
          },
        );
      expect(r.createNotificationRouter.notificationRouterPolicyConfig.holdUnderIssuer).toBe(hold);
      ids[name] = r.createNotificationRouter.id;
    }

    // the outage: the ClusterIssuer's .notready first in the first request, then its 200 certificates fail
    const failing = certs('notready');
    await post([issuerNotReady({ ...clusterIssuer, statusTransition: iso(base) }), ...failing.slice(0, 120)]);
    await post(failing.slice(120));
    // meanwhile a certificate of another issuer, which is ready, fails: its own notification everywhere
    await post(certs('notready', 'vault', 1));

    const opened = await waitFor('the opening of each hold and every event of the plain router', async () => {
      const ds = await deliveries();
      const plainRows = ds.filter((d) => d.routerId === ids['every event']);
      const held = ds.filter((d) => d.groupKey !== undefined);
      return plainRows.length === N + 1 && held.length === 2 && ds.every((d) => d.status === 'DELIVERED') ? ds : undefined;
    });
    // each holding router: one page for the outage, plus the other issuer's certificate
    expect(hook.requests).toHaveLength(2);
    const triggers = pager.requests.map((r) => JSON.parse(r.body) as PagerEvent);
    expect(triggers.map((t) => t.event_action)).toEqual(['trigger', 'trigger']);
    const holds = opened.filter((d) => d.groupKey !== undefined);
    for (const d of holds) {
      const s = parseSnapshot(d.groupSnapshot!)!;
      expect(s.group).toMatchObject({
        firingCount: N,
        resolvedCount: 0,
        allResolved: false,
        labels: { 'data.issuerName': ISSUER, 'data.clusterName': CLUSTER_PROD.name, issuer: 'not ready' },
      });
      expect(s.group.key).toMatch(/^certmgr:hold:/);
      expect(s.group.firing).toHaveLength(20);
    }
    const own = opened.filter((d) => d.groupKey === undefined && d.routerId !== ids['every event']);
    expect(own).toHaveLength(2); // the vault certificate, once per holding router
    const holdKey = triggers.find((t) => t.dedup_key.startsWith('certmgr:hold:'))!.dedup_key;
    expect(plain.requests).toHaveLength(N + 1);

    // a certificate failing again while the issuer is still down changes nothing
    await post([
      certificateResourceNotReady({ ...failing[0]!.data, statusMessage: 'still failing', statusTransition: iso(base + 120_000) }),
    ]);

    // recovery: the issuer, then its 200 certificates
    await post([issuerActive({ ...clusterIssuer, statusTransition: iso(base + 3_600_000) })]);
    const recovered = certs('active');
    await post(recovered.slice(0, 50));
    await post(recovered.slice(50));
    const all = await waitFor('the summary of each hold', async () => {
      const ds = await deliveries();
      const plainRows = ds.filter((d) => d.routerId === ids['every event']);
      const held = ds.filter((d) => d.groupKey !== undefined);
      return plainRows.length === 2 * N + 2 && held.length === 4 && ds.every((d) => d.status === 'DELIVERED') ? ds : undefined;
    });
    const summaries = all
      .filter((d) => d.groupKey !== undefined && !holds.some((h) => h.id === d.id))
      .map((d) => parseSnapshot(d.groupSnapshot!)!);
    expect(summaries).toHaveLength(2);
    for (const s of summaries)
      expect(s.group).toMatchObject({
        allResolved: true,
        firingCount: 0,
        resolvedCount: N,
        firing: [],
        labels: { 'data.issuerName': ISSUER, issuer: 'ready again' },
      });
    expect(hook.requests).toHaveLength(3);
    const actions = pager.requests.map((r) => JSON.parse(r.body) as PagerEvent);
    expect(actions).toHaveLength(3);
    expect(actions[2]).toMatchObject({ event_action: 'resolve', dedup_key: holdKey });
    // the plain router: one delivery per event (the re-failure included)
    expect(plain.requests).toHaveLength(2 * N + 2);

    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metrics).toMatch(/certmgr_notify_group_notifications_total\{kind="held"\} 2/);
    expect(metrics).toMatch(/certmgr_notify_group_notifications_total\{kind="released"\} 2/);
    expect(metrics).toMatch(/certmgr_notify_groups_open 0\b/);
  });
});
