/**
 * A router's template through the real service: the worker renders it for the integration's type and
 * every integration type's receiver (loopback HTTP receivers, a loopback SMTP server) shows the rendered texts;
 * a template that fails at send time falls back to the default message, is counted, and is still DELIVERED.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issuerNotReady } from '../fixtures/events.js';
import { startReceiver, type Receiver } from '../integrations/helpers.js';
import { startTestService, type TestService } from '../support/service.js';
import { waitFor } from './support.js';

const TEMPLATE = {
  default: {
    title: 'TPL-TITLE {{ integration.type }} {{ event.data.issuerName }}',
    text: 'TPL-TEXT {{ integration.type }} via {{ router.name }} on {{ cluster.name }}',
  },
  SLACK: { text: 'SLACK-PART {{ event.data.issuerName }} ({{ severity }})' },
};

describe('templates rendered by the worker, every integration type', () => {
  let hooks: Receiver;
  let pager: Receiver;
  let smtp: SMTPServer;
  const mails: string[] = [];
  let svc: TestService;

  beforeAll(async () => {
    hooks = await startReceiver();
    pager = await startReceiver((_r, res) => {
      res.statusCode = 202;
      res.end('{"status":"success"}');
    });
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, _session, cb) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          mails.push(Buffer.concat(chunks).toString('utf8'));
          cb();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const smtpPort = (smtp.server.address() as AddressInfo).port;
    svc = await startTestService('sqlite', ['--incident-events-url', pager.url, '--smtp-url', `smtp://127.0.0.1:${smtpPort}`]);
  });
  afterAll(async () => {
    await svc?.close();
    await hooks?.close();
    await pager?.close();
    await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  });

  const gql = <T>(q: string, v: Record<string, unknown> = {}) => svc.gql().request<T>(q, v);

  async function integration(field: string, input: Record<string, unknown>): Promise<string> {
    const t = `${field[0]!.toUpperCase()}${field.slice(1)}Input`;
    const r = await gql<Record<string, { id: string }>>(`mutation($i: ${t}!) { ${field}(input: $i) { id } }`, { i: input });
    return r[field]!.id;
  }

  async function router(name: string, integrationId: string, templateId: string, filter: string) {
    await gql(
      `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) {
        createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
      {
        d: { name, eventTypeId: 'certmgr-issuer-health-notification-config' },
        f: { advancedFilterExpression: filter },
        i: { integrationId, templateId },
      },
    );
  }

  const template = async (parts: Record<string, unknown>) =>
    (
      await gql<{ createNotificationTemplate: { id: string } }>(
        `mutation($i: CreateNotificationTemplateInput!) { createNotificationTemplate(input: $i) { id } }`,
        { i: { name: 't', parts } },
      )
    ).createNotificationTemplate.id;

  it('INCIDENT_MGMT, WEBHOOK, EMAIL, SLACK and TEAMS each show their rendered part', async () => {
    const t = await template(TEMPLATE);
    const filter = 'data.issuerName == "le-prod"';
    await router(
      'r-incident',
      await integration('createIncidentMgmtIntegration', {
        name: 'pd',
        incidentMgmtParams: { IntegrationKey: 'ROUTINGKEY-tpl-0123456789' },
      }),
      t,
      filter,
    );
    await router('r-webhook', await integration('createWebhookIntegration', { name: 'wh', url: `${hooks.url}/webhook` }), t, filter);
    await router(
      'r-email',
      await integration('createEmailIntegration', { name: 'mail', emailParams: { to: ['ops@example.com'] } }),
      t,
      filter,
    );
    await router(
      'r-slack',
      await integration('createSlackIntegration', { name: 'sl', slackParams: { webhookUrl: `${hooks.url}/slack` } }),
      t,
      filter,
    );
    await router(
      'r-teams',
      await integration('createTeamsIntegration', { name: 'tm', teamsParams: { webhookUrl: `${hooks.url}/teams` } }),
      t,
      filter,
    );

    const ev = issuerNotReady({ issuerName: 'le-prod' });
    const cluster = String(ev.data.clusterName);
    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([ev]),
    });
    expect(res.status).toBe(202);

    const byPath = (p: string) => waitFor(`request to ${p}`, () => hooks.requests.find((r) => r.path === p));
    const incident = await waitFor('incident event', () => pager.requests[0]);
    expect(JSON.parse(incident.body).payload.summary).toBe(`TPL-TEXT INCIDENT_MGMT via r-incident on ${cluster}`);

    const webhook = await byPath('/webhook');
    expect(JSON.parse(webhook.body).data).toMatchObject({ summary: `TPL-TEXT WEBHOOK via r-webhook on ${cluster}` });

    const slack = JSON.parse((await byPath('/slack')).body) as { text: string; blocks: { text?: { text: string } }[] };
    expect(slack.blocks[0]?.text?.text).toBe('TPL-TITLE SLACK le-prod');
    expect(slack.text).toContain('SLACK-PART le-prod (critical)');

    const teams = JSON.parse((await byPath('/teams')).body) as { summary: string };
    expect(teams.summary).toBe('TPL-TITLE TEAMS le-prod');

    const mail = await waitFor('email', () => mails[0]);
    expect(mail.replace(/\r\n[ \t]+/g, ' ')).toMatch(/^Subject: .*TPL-TITLE EMAIL le-prod/m);
  });

  it('a template failing at send time: the default message goes out, DELIVERED, and the failure is counted', async () => {
    const t = await template({ WEBHOOK: { text: '{% for i in (1..100000000) %}x{% endfor %}' } });
    await router(
      'r-bomb',
      await integration('createWebhookIntegration', { name: 'bomb', url: `${hooks.url}/bomb` }),
      t,
      'data.issuerName == "bomb"',
    );
    const ev = issuerNotReady({ issuerName: 'bomb' });
    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([ev]),
    });
    expect(res.status).toBe(202);
    const got = await waitFor('bomb webhook', () => hooks.requests.find((r) => r.path === '/bomb'));
    expect(JSON.parse(got.body).data.summary).toMatch(/^Issuer bomb in cluster .* is not ready/);
    const metrics = await waitFor('failure counted', async () => {
      const text = await (await svc.rest('/metrics', { key: null })).text();
      return /certmgr_notify_template_render_failures_total\{integration_type="WEBHOOK",reason="render"\} 1/.test(text) ? text : undefined;
    });
    expect(metrics).toBeTruthy();
    const q = `{ deliveries(first: 50) { nodes { status routerName } } }`;
    const nodes = await waitFor('bomb delivered', async () => {
      const n = (await gql<{ deliveries: { nodes: { status: string; routerName: string }[] } }>(q)).deliveries.nodes;
      return n.find((d) => d.routerName === 'r-bomb' && d.status === 'DELIVERED');
    });
    expect(nodes.status).toBe('DELIVERED');
  });
});
