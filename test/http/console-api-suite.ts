/**
 * The console's GraphQL fields through the started service with its real delivery worker, run on SQLite
 * (console-api.test.ts) and PostgreSQL (console-api.int.test.ts): viewer,
 * validateFilter (the same text and position as createNotificationRouter), events, unhealthyResources (from the
 * accepted health events, with the streak's deliveries), retryDelivery (a dead letter delivered on retry; a
 * retried old one behind a newer sent one ends SUPERSEDED); scopes, company isolation and bounds; --public-url's
 * consoleUrl in a template, simulated and sent.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreKind } from '../support/service.js';
import { issuerActive, issuerNotReady, CLUSTER_PROD } from '../fixtures/events.js';
import { gqlError } from '../support/graphql.js';
import { COMPANY_A, KEY_A, KEY_B, startTestService, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { waitFor } from '../delivery/support.js';
import { limitsFile } from '../support/limits.js';

const READ = 'read-key-company-a-console-0123';
const PUBLIC_URL = 'https://hub.example.com/notify';
/** A lease is 3 × deliveryTimeout (2 s here): the wait covers several. */
const SETTLE_MS = 30_000;

export function consoleApiSuite(kind: StoreKind): void {
  let svc: TestService;
  let hook: Receiver;
  /** What the receiver answers next: 400 makes a dead letter at once (permanent failure). */
  let answer = 200;

  beforeAll(async () => {
    hook = await startReceiver((_req, res) => {
      res.statusCode = answer;
      res.end('ok');
    });
    const f = join(mkdtempSync(join(tmpdir(), 'cmn-console-')), 'keys.yaml');
    writeFileSync(f, ['keys:', `  - { key: ${READ}, companyId: ${COMPANY_A}, scope: read }`, ''].join('\n'));
    svc = await startTestService(kind, ['--api-keys-file', f, '--public-url', `${PUBLIC_URL}/`, ...limitsFile({ deliveryTimeout: '2s' })]);
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await hook?.close();
  });

  const post = async (events: unknown[], key = KEY_A) => {
    const res = await svc.rest('/v1/events', {
      key,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(events),
    });
    expect(res.status).toBe(202);
  };

  type Delivery = { id: string; status: string; attempts: number; lastError: string | null; createdAt: string; event: { id: string } };
  const DELIVERY = 'id status attempts lastError createdAt event { id }';

  async function webhookRouter(key: string, filter = ''): Promise<string> {
    const { createWebhookIntegration: i } = await svc
      .gql(key)
      .request<{ createWebhookIntegration: { id: string } }>(
        `mutation ($input: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $input) { id } }`,
        { input: { name: 'hook', url: `${hook.url}/${key}` } },
      );
    await svc.gql(key).request(
      `mutation ($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) {
      createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
      {
        d: { name: 'issuers', eventTypeId: 'certmgr-issuer-health-notification-config' },
        f: { advancedFilterExpression: filter },
        i: { integrationId: i.id },
      },
    );
    return i.id;
  }

  const deliveriesOf = async (key: string, integrationId: string) =>
    (
      await svc
        .gql(key)
        .request<{ deliveries: { nodes: Delivery[] } }>(
          `query ($f: DeliveryFilterInput) { deliveries(filter: $f, first: 50) { nodes { ${DELIVERY} } } }`,
          {
            f: { integrationId },
          },
        )
    ).deliveries.nodes;

  // Longer than one lease: on PostgreSQL a park racing its head's unpark costs a lease (docs/reliability.md), which
  // a loaded machine (CI) can hit; a timeout says what the deliveries were doing.
  const settled = async (key: string, integrationId: string, n: number) => {
    let seen: Delivery[] = [];
    try {
      return await waitFor(
        `${n} settled deliveries`,
        async () => {
          const d = (seen = await deliveriesOf(key, integrationId));
          return d.length === n && d.every((x) => x.status !== 'PENDING' && x.status !== 'IN_FLIGHT') ? d : undefined;
        },
        SETTLE_MS,
      );
    } catch (e) {
      throw new Error(`${String(e)}; last seen: ${JSON.stringify(seen.map((d) => [d.status, d.attempts, d.lastError]))}`, { cause: e });
    }
  };

  describe(`console API (${kind})`, () => {
    it('viewer: the key company and scope', async () => {
      expect((await svc.gql().request<{ viewer: unknown }>('{ viewer { companyId scope } }')).viewer).toEqual({
        companyId: COMPANY_A,
        scope: 'admin',
      });
      expect((await svc.gql(READ).request<{ viewer: unknown }>('{ viewer { companyId scope } }')).viewer).toEqual({
        companyId: COMPANY_A,
        scope: 'read',
      });
    });

    it('validateFilter: valid, or the error createNotificationRouter gives with its line and column; saves nothing', async () => {
      const Q = `query ($t: String!, $e: String!) { validateFilter(eventTypeId: $t, expression: $e) { valid error line column } }`;
      const t = 'certmgr-issuer-health-notification-config';
      const ok = await svc.gql(READ).request<{ validateFilter: unknown }>(Q, { t, e: 'data.issuerName == "x"' });
      expect(ok.validateFilter).toEqual({ valid: true, error: null, line: null, column: null });
      const bad = 'data.issuerName ==\n  data.nope';
      const v = (
        await svc.gql(READ).request<{ validateFilter: { valid: boolean; error: string; line: number; column: number } }>(Q, { t, e: bad })
      ).validateFilter;
      expect(v.valid).toBe(false);
      const created = await gqlError(
        svc.gql().request(
          `mutation ($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) {
          createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
          {
            d: { name: 'x', eventTypeId: t },
            f: { advancedFilterExpression: bad },
            i: { integrationId: '00000000-0000-4000-8000-000000000001' },
          },
        ),
      );
      expect(created.extensions.code).toBe('INVALID_FILTER_EXPRESSION');
      expect(v).toEqual({ valid: false, error: created.message, line: created.extensions.line, column: created.extensions.column });
      expect(v.line).toBe(2);
      // the router filter's length limit
      const long = await svc
        .gql(READ)
        .request<{ validateFilter: { valid: boolean; error: string } }>(Q, { t, e: `"${'a'.repeat(2100)}" == ""` });
      expect(long.validateFilter.valid).toBe(false);
      expect(long.validateFilter.error).toContain('longer than 2000');
      const unknown = await gqlError(svc.gql(READ).request(Q, { t: 'nope', e: 'true' }));
      expect(unknown.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'eventTypeId' });
    });

    it('events: newest first, by type, paged; another company sees none; bounds', async () => {
      const marker = `events-${Date.now()}`;
      await post([issuerNotReady({ issuerName: `${marker}-1` }), issuerActive({ issuerName: `${marker}-1` })]);
      await post([issuerNotReady({ issuerName: `${marker}-2` })]);
      type E = { id: string; type: string; data: { issuerName: string }; receivedAt: string };
      const Q = `query ($first: Int, $after: String, $type: String) { events(first: $first, after: $after, type: $type) {
      nodes { id type data receivedAt } pageInfo { hasNextPage endCursor } } }`;
      const all = (await svc.gql().request<{ events: { nodes: E[] } }>(Q, { first: 3 })).events.nodes;
      // the events of one request share their receivedAt: their order among themselves is not defined
      expect(all.map((e) => e.data.issuerName)).toEqual([`${marker}-2`, `${marker}-1`, `${marker}-1`]);
      expect(
        all
          .slice(1)
          .map((e) => e.type)
          .sort(),
      ).toEqual(['evt.healthstatus.certmgr-issuer.active', 'evt.healthstatus.certmgr-issuer.notready']);
      expect(all.map((e) => e.receivedAt)).toEqual([...all.map((e) => e.receivedAt)].sort().reverse());
      const p1 = (
        await svc.gql(READ).request<{ events: { nodes: E[]; pageInfo: { endCursor: string; hasNextPage: boolean } } }>(Q, { first: 1 })
      ).events;
      expect(p1.nodes[0]!.id).toBe(all[0]!.id);
      expect(p1.pageInfo.hasNextPage).toBe(true);
      const p2 = (await svc.gql(READ).request<{ events: { nodes: E[] } }>(Q, { first: 2, after: p1.pageInfo.endCursor })).events.nodes;
      expect(p2.map((e) => e.id)).toEqual([all[1]!.id, all[2]!.id]);
      const active = (await svc.gql().request<{ events: { nodes: E[] } }>(Q, { type: 'evt.healthstatus.certmgr-issuer.active' })).events
        .nodes;
      expect(active.every((e) => e.type === 'evt.healthstatus.certmgr-issuer.active')).toBe(true);
      const b = (await svc.gql(KEY_B).request<{ events: { nodes: E[] } }>(Q, {})).events.nodes;
      expect(b.map((e) => e.id)).not.toContain(all[0]!.id);

      expect((await gqlError(svc.gql().request(Q, { first: 0 }))).extensions.code).toBe('BAD_USER_INPUT');
      expect((await gqlError(svc.gql().request(Q, { first: 501 }))).extensions.code).toBe('QUERY_TOO_COMPLEX');
      expect((await gqlError(svc.gql().request(Q, { after: 'x'.repeat(600) }))).extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        field: 'after',
      });
      expect((await gqlError(svc.gql().request(Q, { after: 'bm90LWEtY3Vyc29y' }))).extensions).toMatchObject({ field: 'after' });
      expect((await gqlError(svc.gql().request(Q, { type: 'evt.nope' }))).extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        field: 'type',
      });
    });

    it('unhealthyResources: latest .notready per resource, since the streak began, with its deliveries; resolved ones gone', async () => {
      const key = KEY_B; // a company of its own for this test's resources
      answer = 200;
      const integ = await webhookRouter(key, 'data.issuerName.startsWith("uh-")');
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
      await post(
        [
          issuerNotReady({
            issuerName: 'uh-a',
            namespace: 'ns1',
            statusTransition: at(1),
            statusReason: 'ErrInit',
            statusMessage: 'first',
          }),
          issuerNotReady({ issuerName: 'uh-b', namespace: '', statusTransition: at(2) }),
          issuerNotReady({ issuerName: 'uh-c', namespace: 'ns1', statusTransition: at(3) }),
        ],
        key,
      );
      await post(
        [
          issuerNotReady({
            issuerName: 'uh-a',
            namespace: 'ns1',
            statusTransition: at(4),
            statusReason: 'ErrRegister',
            statusMessage: 'still',
          }),
        ],
        key,
      );
      await post([issuerActive({ issuerName: 'uh-c', namespace: 'ns1', statusTransition: at(5) })], key);
      await settled(key, integ, 5);
      type U = {
        kind: string;
        namespace: string | null;
        name: string;
        cluster: string | null;
        type: string;
        since: string;
        reason: string | null;
        message: string | null;
        latestEvent: { id: string; data: { statusReason: string } };
        deliveries: Delivery[];
      };
      const Q = `query ($first: Int, $after: String) { unhealthyResources(first: $first, after: $after) {
      nodes { kind namespace name cluster type since reason message latestEvent { id data } deliveries { ${DELIVERY} } }
      pageInfo { hasNextPage endCursor } } }`;
      const nodes = (await svc.gql(key).request<{ unhealthyResources: { nodes: U[] } }>(Q, {})).unhealthyResources.nodes;
      // longest unhealthy first; uh-a and uh-b began in the same request (same since): then by resource key
      expect(nodes.map((n) => n.name).sort()).toEqual(['uh-a', 'uh-b']);
      expect(nodes.map((n) => n.since)).toEqual([...nodes.map((n) => n.since)].sort());
      const a = nodes.find((n) => n.name === 'uh-a')!;
      const b = nodes.find((n) => n.name === 'uh-b')!;
      expect(a).toMatchObject({
        kind: 'Issuer',
        namespace: 'ns1',
        cluster: CLUSTER_PROD.name,
        type: 'evt.healthstatus.certmgr-issuer.notready',
        reason: 'ErrRegister',
        message: 'still',
      });
      expect(b).toMatchObject({ kind: 'ClusterIssuer', namespace: null });
      expect(a.latestEvent.data.statusReason).toBe('ErrRegister');
      // the streak began with the first request (uh-b's too), not with uh-a's second .notready
      expect(a.since).toBe(b.since);
      expect(Date.parse(a.since)).toBeLessThanOrEqual(Date.parse(a.deliveries[0]!.createdAt));
      expect(a.deliveries).toHaveLength(2);
      expect(a.deliveries.every((d) => d.status === 'DELIVERED')).toBe(true);
      expect(a.deliveries[0]!.event.id).toBe(a.latestEvent.id);
      // each delivery names the resource and cluster its event is about
      type R = { event: { resource: { kind: string; namespace: string | null; name: string; cluster: string | null } } };
      const rows = (
        await svc
          .gql(key)
          .request<{ deliveries: { nodes: R[] } }>(
            `query ($f: DeliveryFilterInput) { deliveries(filter: $f, first: 50) { nodes { event { resource { kind namespace name cluster } } } } }`,
            { f: { integrationId: integ } },
          )
      ).deliveries.nodes.map((d) => d.event.resource);
      expect(rows).toContainEqual({ kind: 'Issuer', namespace: 'ns1', name: 'uh-a', cluster: CLUSTER_PROD.name });
      expect(rows).toContainEqual({ kind: 'ClusterIssuer', namespace: null, name: 'uh-b', cluster: CLUSTER_PROD.name });
      // pages
      const p1 = (await svc.gql(key).request<{ unhealthyResources: { nodes: U[]; pageInfo: { endCursor: string } } }>(Q, { first: 1 }))
        .unhealthyResources;
      const p2 = (await svc.gql(key).request<{ unhealthyResources: { nodes: U[] } }>(Q, { first: 1, after: p1.pageInfo.endCursor }))
        .unhealthyResources;
      expect([...p1.nodes, ...p2.nodes].map((n) => n.name)).toEqual(nodes.map((n) => n.name));
      // isolation: company A sees none of B's resources
      const other = (await svc.gql(KEY_A).request<{ unhealthyResources: { nodes: U[] } }>(Q, {})).unhealthyResources.nodes;
      expect(other.map((n) => n.name)).not.toContain('uh-a');
    });

    it('retryDelivery: a dead letter goes back to the queue and is delivered; only DEAD; company-scoped; admin only', async () => {
      const integ = await webhookRouter(KEY_A, 'data.issuerName == "retry-me"');
      answer = 400;
      await post([issuerNotReady({ issuerName: 'retry-me' })]);
      const [dead] = await settled(KEY_A, integ, 1);
      expect(dead).toMatchObject({ status: 'DEAD', attempts: 1 });
      expect(dead!.lastError).toContain('400');

      const R = `mutation ($id: UUID!) { retryDelivery(id: $id) { ${DELIVERY} nextAttemptAt } }`;
      // another company's key: not found, nothing changes
      const foreign = await gqlError(svc.gql(KEY_B).request(R, { id: dead!.id }));
      expect(foreign.extensions.code).toBe('NOT_FOUND');
      // a read key: refused like every mutation
      const res = await svc.rest('/graphql', {
        key: READ,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: R, variables: { id: dead!.id } }),
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('FORBIDDEN');
      expect((await deliveriesOf(KEY_A, integ))[0]!.status).toBe('DEAD');

      answer = 200;
      const r = (await svc.gql().request<{ retryDelivery: Delivery & { nextAttemptAt: string } }>(R, { id: dead!.id })).retryDelivery;
      expect(r).toMatchObject({ id: dead!.id, attempts: 1, lastError: dead!.lastError });
      expect(['PENDING', 'IN_FLIGHT', 'DELIVERED']).toContain(r.status);
      const [done] = await settled(KEY_A, integ, 1);
      expect(done).toMatchObject({ id: dead!.id, status: 'DELIVERED', attempts: 2, lastError: null });

      const again = await gqlError(svc.gql().request(R, { id: dead!.id }));
      expect(again.extensions).toMatchObject({ code: 'BAD_USER_INPUT', status: 'DELIVERED' });
      expect(again.message).toContain('is DELIVERED');
    });

    it('retryDelivery: an old dead letter behind a newer notification already sent ends SUPERSEDED (in order)', async () => {
      const integ = await webhookRouter(KEY_A, 'data.issuerName == "order-me"');
      answer = 400;
      await post([issuerNotReady({ issuerName: 'order-me', statusTransition: '2026-01-01T00:00:00Z' })]);
      const [dead] = await settled(KEY_A, integ, 1);
      expect(dead!.status).toBe('DEAD');
      answer = 200;
      await post([issuerActive({ issuerName: 'order-me', statusTransition: '2026-01-01T00:01:00Z' })]);
      const both = await settled(KEY_A, integ, 2);
      expect(both.map((d) => d.status).sort()).toEqual(['DEAD', 'DELIVERED']);
      const hits = hook.requests.length;

      await svc.gql().request(`mutation ($id: UUID!) { retryDelivery(id: $id) { id } }`, { id: dead!.id });
      const after = await settled(KEY_A, integ, 2);
      expect(after.find((d) => d.id === dead!.id)).toMatchObject({ status: 'SUPERSEDED', attempts: 1 });
      expect(hook.requests.length).toBe(hits);
    });

    it('--public-url: consoleUrl in a template links to the console page, simulated and sent', async () => {
      const { createNotificationTemplate: t } = await svc
        .gql()
        .request<{ createNotificationTemplate: { id: string } }>(
          `mutation ($i: CreateNotificationTemplateInput!) { createNotificationTemplate(input: $i) { id } }`,
          { i: { name: 'links', parts: { GENERIC_WEBHOOK: { body: '{"link": "{{ consoleUrl }}"}' } } } },
        );
      const { createGenericWebhookIntegration: g } = await svc
        .gql()
        .request<{ createGenericWebhookIntegration: { id: string } }>(
          `mutation ($i: CreateGenericWebhookIntegrationInput!) { createGenericWebhookIntegration(input: $i) { id } }`,
          { i: { name: 'generic', genericWebhookParams: { url: `${hook.url}/generic` } } },
        );
      await svc.gql().request(
        `mutation ($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) {
          createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
        {
          d: { name: 'links', eventTypeId: 'certmgr-issuer-health-notification-config' },
          f: { advancedFilterExpression: 'data.issuerName == "linked"' },
          i: { integrationId: g.id, templateId: t.id },
        },
      );
      const want = `${PUBLIC_URL}/ui/#/health`;
      const sim = await svc
        .gql()
        .request<{ simulateRouting: { routers: { wouldNotify: boolean; rendered: { body: string } | null }[] } }>(
          `query ($e: EventInput!) { simulateRouting(event: $e) { routers { wouldNotify rendered { body } } } }`,
          { e: issuerNotReady({ issuerName: 'linked' }) },
        );
      const matched = sim.simulateRouting.routers.filter((r) => r.wouldNotify);
      expect(matched.map((r) => JSON.parse(r.rendered!.body))).toEqual([{ link: want }]);
      answer = 200;
      await post([issuerNotReady({ issuerName: 'linked' })]);
      const [sent] = await settled(KEY_A, g.id, 1);
      expect(sent!.status).toBe('DELIVERED');
      const got = hook.requests.filter((r) => r.path === '/generic').map((r) => JSON.parse(r.body));
      expect(got).toEqual([{ link: want }]);
    });

    it('costs: unhealthyResources counts at most 10 deliveries per resource', async () => {
      const Q = `{ unhealthyResources(first: 500) { nodes { name deliveries { id status attempts lastError createdAt } } } }`;
      const e = await gqlError(svc.gql().request(Q));
      expect(e.extensions).toMatchObject({ code: 'QUERY_TOO_COMPLEX', limit: 'cost' });
      // 100 resources × 10 deliveries of 5 fields fits
      await svc
        .gql()
        .request(`{ unhealthyResources(first: 100) { nodes { name deliveries { id status attempts lastError createdAt } } } }`);
    });
  });
}
