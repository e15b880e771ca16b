/**
 * Grouping, end to end: an issuer outage with 200 failing certificates, through POST /v1/events, gives
 * ONE notification per router (a webhook and an incident receiver on loopback) instead of 200; the 200 recoveries
 * give ONE "all recovered" notification and ONE incident resolve. Real service (same composition root as serve),
 * SQLite and PostgreSQL; short groupWait/groupInterval (1 s), outcomes awaited by polling.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { parseSnapshot } from '../../src/grouping/snapshot.js';
import { certificateResourceActive, certificateResourceNotReady, CLUSTER_PROD } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { startTestService, type TestService, COMPANY_A } from '../support/service.js';
import { waitFor } from '../delivery/support.js';

const N = 200;
const ISSUER = 'letsencrypt-prod';
const base = Date.parse('2026-03-01T10:00:00Z');

function certs(state: 'notready' | 'active', issuerName = ISSUER, n = N) {
  return Array.from({ length: n }, (_, i) => {
    const o = {
      clusterId: CLUSTER_PROD.id,
      clusterName: CLUSTER_PROD.name,
      issuerName,
      namespace: `ns-${i % 7}`,
      certificateName: `cert-${i}`,
      statusTransition: new Date(base + (state === 'active' ? 3_600_000 : 0) + i).toISOString(),
    };
    return state === 'notready' ? certificateResourceNotReady(o) : certificateResourceActive(o);
  });
}

interface PagerEvent {
  event_action: string;
  dedup_key: string;
}

describe.each(['sqlite', 'postgres'] as const)(`an issuer outage of ${N} certificates on %s`, (kind) => {
  let hook: Receiver;
  let pager: Receiver;
  let svc: TestService;
  beforeAll(async () => {
    hook = await startReceiver();
    pager = await startReceiver((_r, res) => {
      res.statusCode = 202;
      res.end('{"status":"success"}');
    });
    svc = await startTestService(kind, ['--incident-events-url', pager.url]);
  });
  afterAll(async () => {
    await svc?.close();
    await hook?.close();
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
  const groupDeliveries = async () => (await svc.store.listDeliveries(COMPANY_A, { limit: 1000 })).filter((d) => d.groupKey !== undefined);

  it('one notification per router, one incident; then one "all recovered" and one resolve', async () => {
    const { createWebhookIntegration: w } = await svc
      .gql()
      .request<{ createWebhookIntegration: { id: string } }>(
        `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
        {
          i: { name: 'hook', url: `${hook.url}/hook` },
        },
      );
    const { createIncidentMgmtIntegration: p } = await svc
      .gql()
      .request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
        name: 'pager',
        integrationKey: 'R0UTINGKEY-storm-0123456789',
      });
    const policyConfig = { groupBy: ['data.clusterId', 'data.issuerName'], groupWait: '1s', groupInterval: '1s' };
    for (const [name, integrationId] of [
      ['certs to hook', w.id],
      ['certs to pager', p.id],
    ] as const)
      await svc.gql().request(ops.CreateNotificationRouter, {
        details: { name, eventTypeId: 'certmgr-cert-resource-health-notification-config' },
        filterConfig: { advancedFilterExpression: '' },
        integrationConfig: { integrationId },
        policyConfig,
      });

    // the outage: 200 certificates of one issuer fail, in two requests
    const failing = certs('notready');
    await post(failing.slice(0, 120));
    await post(failing.slice(120));
    // another issuer's certificate: its own group
    await post(certs('notready', 'other-ca', 1));

    const first = await waitFor('the grouped notifications', async () => {
      const ds = await groupDeliveries();
      return ds.length === 4 && ds.every((d) => d.status === 'DELIVERED') ? ds : undefined;
    });
    expect(hook.requests).toHaveLength(2);
    const triggers = pager.requests.map((r) => JSON.parse(r.body) as PagerEvent);
    expect(triggers.map((t) => t.event_action)).toEqual(['trigger', 'trigger']);
    expect(new Set(triggers.map((t) => t.dedup_key)).size).toBe(2);
    const big = first.map((d) => parseSnapshot(d.groupSnapshot!)!).filter((s) => s.group.labels['data.issuerName'] === ISSUER);
    expect(big).toHaveLength(2); // one per router
    for (const s of big) {
      expect(s.group).toMatchObject({
        firingCount: N,
        resolvedCount: 0,
        allResolved: false,
        labels: { 'data.clusterId': CLUSTER_PROD.id },
      });
      expect(s.group.firing).toHaveLength(20);
      expect(s.group.firing[0]!.event.data['certificateName']).toBe(`cert-${N - 1}`); // newest first
      expect(s.group.key).not.toContain(ISSUER);
    }
    const storm = triggers.find((t) => big.some((s) => s.group.key === t.dedup_key));
    expect(storm).toBeDefined();

    // recovery: the 200 come back
    const recovered = certs('active');
    await post(recovered.slice(0, 50));
    await post(recovered.slice(50));
    const all = await waitFor('the recovery notifications', async () => {
      const ds = await groupDeliveries();
      return ds.length === 6 && ds.every((d) => d.status === 'DELIVERED') ? ds : undefined;
    });
    const last = all.filter((d) => !first.some((f) => f.id === d.id)).map((d) => parseSnapshot(d.groupSnapshot!)!);
    expect(last).toHaveLength(2);
    for (const s of last) expect(s.group).toMatchObject({ allResolved: true, firingCount: 0, resolvedCount: N, firing: [] });
    expect(hook.requests).toHaveLength(3);
    const actions = pager.requests.map((r) => JSON.parse(r.body) as PagerEvent);
    expect(actions).toHaveLength(3);
    expect(actions[2]).toMatchObject({ event_action: 'resolve', dedup_key: storm!.dedup_key });

    // nothing more: the storm group ended, the other issuer's group stays open (still firing)
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metrics).toMatch(/certmgr_notify_group_notifications_total\{kind="notify"\} 4/);
    expect(metrics).toMatch(/certmgr_notify_group_notifications_total\{kind="resolved"\} 2/);
    expect(metrics).toMatch(/certmgr_notify_groups_open 2\b/); // other-ca, one per router
    expect(await svc.store.countRouterGroups(COMPANY_A, all[0]!.routerId)).toBe(1);
  });
});
