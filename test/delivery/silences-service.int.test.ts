/**
 * Silences end to end: the real service (ingestion, worker, store) and a loopback incident receiver.
 * A silence records an issuer's `.notready` SILENCED and the receiver gets nothing for it; the recovery of an
 * incident whose trigger was sent before the silence began goes through (it closes the open incident); the
 * recovery of one whose trigger was silenced is silenced too. SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { issuerActive, issuerNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { startTestService, type TestService } from '../support/service.js';
import { waitFor } from './support.js';

describe.each(['sqlite', 'postgres'] as const)('silences in the service on %s', (kind) => {
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

  type Node = { id: string; status: string; silenceId: string | null; event: { type: string } };
  const deliveriesOf = async (eventId: string) =>
    (
      await svc
        .gql()
        .request<{ deliveries: { nodes: Node[] } }>(
          `query ($e: UUID!) { deliveries(filter: { eventId: $e }, first: 10) { nodes { id status silenceId event { type } } } }`,
          { e: eventId },
        )
    ).deliveries.nodes;
  const post = async (event: unknown): Promise<string> => {
    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(event),
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { events: { id: string }[] }).events[0]!.id;
  };
  const settled = (eventId: string, status: string) =>
    waitFor(`delivery of ${eventId} ${status}`, async () => {
      const n = await deliveriesOf(eventId);
      return n.length === 1 && n[0]!.status === status ? n[0]! : undefined;
    });
  const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

  it('silences a .notready (recorded, not sent), lets through the recovery whose trigger was sent, silences the one whose trigger was not', async () => {
    const { createIncidentMgmtIntegration: p } = await svc
      .gql()
      .request<{ createIncidentMgmtIntegration: { id: string } }>(ops.CreateIncidentMgmtIntegration, {
        name: 'pager',
        integrationKey: 'R0UTINGKEY-silence-0123456789',
      });
    await svc.gql().request(ops.CreateNotificationRouter, {
      details: { name: 'issuers', eventTypeId: 'certmgr-issuer-health-notification-config' },
      filterConfig: { advancedFilterExpression: '' },
      integrationConfig: { integrationId: p.id },
    });

    // before the maintenance: issuer "before" fails and its incident is triggered
    const triggerBefore = await post(issuerNotReady({ issuerName: 'before', statusTransition: at(30) }));
    await settled(triggerBefore, 'DELIVERED');
    expect(pager.requests).toHaveLength(1);

    const { createSilence: silence } = await svc
      .gql()
      .request<{ createSilence: { id: string } }>(`mutation ($i: CreateSilenceInput!) { createSilence(input: $i) { id } }`, {
        i: {
          matcher: 'data.issuerName in ["before", "during"]',
          endsAt: new Date(Date.now() + 3_600_000).toISOString(),
          comment: 'issuer migration',
        },
      });

    // during the maintenance: issuer "during" fails (silenced), then both recover
    const triggerDuring = await post(issuerNotReady({ issuerName: 'during', statusTransition: at(20) }));
    const [silenced] = await deliveriesOf(triggerDuring);
    expect(silenced).toMatchObject({ status: 'SILENCED', silenceId: silence.id });
    const recoverBefore = await post(issuerActive({ issuerName: 'before', statusTransition: at(10) }));
    const recoverDuring = await post(issuerActive({ issuerName: 'during', statusTransition: at(10) }));
    expect(await deliveriesOf(recoverDuring)).toMatchObject([{ status: 'SILENCED', silenceId: silence.id }]);
    await settled(recoverBefore, 'DELIVERED');
    // everything else has settled (the silenced rows are never claimed): the receiver saw the trigger and resolve of "before" only
    const sent = pager.requests.map((r) => JSON.parse(r.body) as { event_action: string; dedup_key: string });
    expect(sent.map((e) => e.event_action)).toEqual(['trigger', 'resolve']);
    expect(sent[1]!.dedup_key).toBe(sent[0]!.dedup_key);
    expect(await deliveriesOf(triggerDuring)).toMatchObject([{ status: 'SILENCED' }]);
    const all = await svc
      .gql()
      .request<{ deliveries: { nodes: Node[] } }>(`{ deliveries(filter: { status: SILENCED }, first: 10) { nodes { id } } }`);
    expect(all.deliveries.nodes).toHaveLength(2);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metrics).toMatch(/certmgr_notify_notifications_silenced_total\{event_type_id="certmgr-issuer-health-notification-config"\} 2/);

    // after the silence is expired, the same failure notifies again
    await svc.gql().request(`mutation ($id: UUID!) { expireSilence(id: $id) { id } }`, { id: silence.id });
    const again = await post(issuerNotReady({ issuerName: 'during', statusTransition: at(1) }));
    await settled(again, 'DELIVERED');
    expect(pager.requests).toHaveLength(3);
  });
});
