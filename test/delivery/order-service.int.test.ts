/**
 * Order per key through the real service: ingestion derives the order fields, the worker supersedes,
 * and `deliveries` shows SUPERSEDED. One request carries an issuer's flap (NotReady, Ready, NotReady again)
 * for an incident integration: only the newest state is sent. SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { issuerActive, issuerNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { startTestService, type TestService } from '../support/service.js';
import { waitFor } from './support.js';

describe.each(['sqlite', 'postgres'] as const)('order per key in the service on %s', (kind) => {
  let pager: Receiver;
  let svc: TestService;
  beforeAll(async () => {
    pager = await startReceiver((_r, res) => {
      res.statusCode = 202;
      res.end('{"status":"success"}');
    });
    svc = await startTestService(kind, ['--incident-events-url', pager.url]);
  });
  afterAll(async () => {
    await svc?.close();
    await pager?.close();
  });

  it('a flap in one request: the incident receiver gets only the newest state; the older ones are SUPERSEDED in deliveries', async () => {
    const { createIncidentMgmtIntegration: p } = await svc
      .gql()
      .request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
        name: 'pager',
        integrationKey: 'R0UTINGKEY-order-0123456789',
      });
    await svc.gql().request(ops.CreateNotificationRouter, {
      details: { name: 'issuers', eventTypeId: 'certmgr-issuer-health-notification-config' },
      filterConfig: { advancedFilterExpression: '' },
      integrationConfig: { integrationId: p.id },
    });
    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        issuerNotReady({ issuerName: 'flappy', statusTransition: '2026-03-01T10:00:00Z' }),
        issuerActive({ issuerName: 'flappy', statusTransition: '2026-03-01T10:00:05Z' }),
        issuerNotReady({ issuerName: 'flappy', statusTransition: '2026-03-01T10:00:09Z' }),
        issuerNotReady({ issuerName: 'steady', statusTransition: '2026-03-01T10:00:00Z' }),
      ]),
    });
    expect(res.status).toBe(202);
    type Node = { status: string; event: { type: string } };
    const q = `{ deliveries(first: 10) { nodes { status event { type } } } }`;
    const nodes = await waitFor('settled', async () => {
      const n = (await svc.gql().request<{ deliveries: { nodes: Node[] } }>(q)).deliveries.nodes;
      return n.length === 4 && n.every((d) => d.status === 'DELIVERED' || d.status === 'SUPERSEDED') ? n : undefined;
    });
    expect(nodes.filter((d) => d.status === 'SUPERSEDED')).toHaveLength(2);
    const superseded = await svc
      .gql()
      .request<{ deliveries: { nodes: Node[] } }>(`{ deliveries(filter: { status: SUPERSEDED }, first: 10) { nodes { status } } }`);
    expect(superseded.deliveries.nodes).toHaveLength(2);
    const sent = pager.requests.map((r) => JSON.parse(r.body) as { event_action: string; payload: { component: string } });
    expect(sent.map((e) => `${e.event_action} ${e.payload.component}`).sort()).toEqual([
      'trigger issuer/cert-manager/flappy',
      'trigger issuer/cert-manager/steady',
    ]);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metrics).toMatch(/certmgr_notify_deliveries_superseded_total\{integration_type="INCIDENT_MGMT"\} 2/);
  });
});
