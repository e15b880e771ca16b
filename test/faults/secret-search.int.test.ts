/**
 * Fault suite, secret search: every kind of configured secret gets a unique random marker; the test drives the
 * paths where a secret could escape (create, update, rotation, testIntegration against a receiver that fails
 * and echoes its request back, failing deliveries, invalid input, operator reconcile errors) and then searches
 * every marker (raw, base64, base64url, URL-encoded forms) in: the service's and the operator's logs, every API
 * response the test received plus a final read of everything, every CR's .status, and every Kubernetes Event.
 * Real kube-apiserver, real service, real loopback receivers. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, VERSION } from '../../src/api/index.js';
import { MONITORING_CONFIG_PATH } from '../../src/client/operations.js';
import { loadServeConfig } from '../../src/config.js';
import type { RunningOperator } from '../../src/operator/index.js';
import { startService, type RunningService } from '../../src/main.js';
import { issuerNotReady } from '../fixtures/events.js';
import { ensureKubeBinaries, startKubeEnv, waitFor, type KubeEnv } from '../support/kube.js';
import { COMPANY_A, COMPANY_B, LOOPBACK_EGRESS_ALLOW, storeUrl, type TestService } from '../support/service.js';
import {
  Kube,
  captureLogger,
  installCrds,
  provider,
  router,
  secret,
  startTestOperator,
  type CapturedLog,
  type Plural,
} from '../operator/support.js';
import { limitsFile } from '../support/limits.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const ISSUER = 'certmgr-issuer-health-notification-config';

// ---------------------------------------------------------------------------------------------------------------
// Markers

const marker = () => `mk${randomBytes(10).toString('hex')}`;
/** name → the whole secret value (which embeds a marker) */
const secrets = new Map<string, { value: string; marker: string }>();
function mint(name: string, make: (m: string) => string): string {
  const m = marker();
  const value = make(m);
  secrets.set(name, { value, marker: m });
  return value;
}

/** Every form in which a secret could show up. */
export function formsOf(value: string, m: string): string[] {
  const b = Buffer.from(value);
  const set = new Set([
    value,
    m,
    b.toString('base64'),
    b.toString('base64url'),
    encodeURIComponent(value),
    Buffer.from(m).toString('base64'),
    Buffer.from(m).toString('base64url'),
  ]);
  // a base64 form without padding also shows inside longer base64 text
  return [...set].map((s) => s.replace(/=+$/, '')).filter((s) => s.length >= 12);
}

interface Place {
  where: string;
  text: string;
}
const places: Place[] = [];
const record = (where: string, text: string) => places.push({ where, text });

function findings(where: Place[] = places): string[] {
  const out: string[] = [];
  for (const [name, s] of secrets)
    for (const form of formsOf(s.value, s.marker))
      for (const p of where) {
        const i = p.text.indexOf(form);
        if (i >= 0)
          out.push(`${name} (form ${form.slice(0, 24)}…) in ${p.where}: …${p.text.slice(Math.max(0, i - 160), i + form.length + 40)}…`);
      }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// A receiver that fails and echoes the whole request back (URL, headers, body): a hostile or broken receiver

interface Echo {
  server: Server;
  url: string;
  hits: number;
  /** what the receivers were sent: the control place, where the secrets must be found */
  seen: string[];
}
async function echoReceiver(): Promise<Echo> {
  const e: Echo = { server: undefined as never, url: '', hits: 0, seen: [] };
  e.server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      e.hits++;
      e.seen.push(`${req.url}\n${JSON.stringify(req.headers)}\n${body}`);
      res.writeHead(500, { 'content-type': 'text/plain', 'x-echo-url': encodeURIComponent(req.url ?? '') });
      res.end(`failed: ${req.method} ${req.url}\n${JSON.stringify(req.headers)}\n${body}`);
    });
  });
  await new Promise<void>((r) => e.server.listen(0, '127.0.0.1', r));
  e.url = `http://127.0.0.1:${(e.server.address() as AddressInfo).port}`;
  return e;
}

/** An SMTP server that refuses every login and quotes what it got (a broken relay): the error path of email. */
async function smtpEcho(): Promise<{ server: ReturnType<typeof createTcpServer>; port: number }> {
  const server = createTcpServer((sock) => {
    sock.write('220 test ESMTP\r\n');
    sock.on('data', (d) => {
      for (const line of String(d).split('\r\n').filter(Boolean)) {
        if (/^(EHLO|HELO)/i.test(line)) sock.write('250-test\r\n250 AUTH PLAIN LOGIN\r\n');
        else if (/^QUIT/i.test(line)) sock.end('221 bye\r\n');
        else sock.write(`535 5.7.8 authentication failed for ${line}\r\n`);
      }
    });
    sock.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

// ---------------------------------------------------------------------------------------------------------------

describe.skipIf(skip)('fault suite: no configured secret in logs, API answers, CR status or Events (real apiserver)', () => {
  let env: KubeEnv;
  let svc: RunningService;
  let svcLogs: string[];
  let k: Kube;
  let op: RunningOperator;
  let opLogs: CapturedLog;
  let echo: Echo;
  let smtp: Awaited<ReturnType<typeof smtpEcho>>;
  let keyA: string;
  let keyB: string;

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- arbitrary GraphQL JSON, searched as text
  async function api(where: string, key: string, query: string, variables: Record<string, unknown> = {}): Promise<any> {
    const r = await fetch(`${svc.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'svc-api-key': key },
      body: JSON.stringify({ query, variables }),
    });
    const text = await r.text();
    record(`API answer of ${where} (HTTP ${r.status})`, text + JSON.stringify(Object.fromEntries(r.headers)));
    expect(r.status, `${where}: ${text.slice(0, 300)}`).toBeLessThan(500);
    return JSON.parse(text);
  }
  async function rest(where: string, key: string | null, path: string, init: RequestInit = {}): Promise<Response> {
    const h = new Headers(init.headers);
    if (key) h.set('svc-api-key', key);
    const r = await fetch(svc.url + path, { ...init, headers: h });
    record(`REST answer of ${where} (HTTP ${r.status})`, (await r.clone().text()) + JSON.stringify(Object.fromEntries(r.headers)));
    return r;
  }

  beforeAll(async () => {
    await ensureKubeBinaries();
    echo = await echoReceiver();
    smtp = await smtpEcho();
    keyA = mint("API key of company A (also the operator's)", (m) => `key-${m}`);
    keyB = mint('API key of company B', (m) => `key-${m}`);
    const smtpPassword = mint('SMTP password (--smtp-url)', (m) => `pw-${m}`);
    svcLogs = [];
    const sink = new Writable({
      write(chunk, _e, cb) {
        svcLogs.push(String(chunk));
        cb();
      },
    });
    const cfg = loadServeConfig(
      [
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--store',
        storeUrl('sqlite'),
        '--kube',
        'off',
        '--incident-events-url',
        `${echo.url}/incident`,
        '--smtp-url',
        `smtp://notify:${smtpPassword}@127.0.0.1:${smtp.port}`,

        ...LOOPBACK_EGRESS_ALLOW,
        ...limitsFile({ deliveryRetryBase: '200ms' }),
      ],
      {},
    );
    cfg.apiKeys = [
      { key: keyA, companyId: COMPANY_A },
      { key: keyB, companyId: COMPANY_B },
    ];
    [env, svc] = await Promise.all([startKubeEnv(), startService(cfg, pino({ level: 'debug' }, sink))]);
    k = new Kube(env.kubeConfig());
    await installCrds(k.kc);
    opLogs = captureLogger();
    op = await startTestOperator(env, svc as unknown as TestService, opLogs.logger, { service: { url: svc.url, apiKey: keyA } });
    await op.whenRunning();
  }, 10 * 60_000);

  afterAll(async () => {
    await op?.stop();
    await svc?.close();
    await env?.stop();
    echo?.server.close();
    smtp?.server.close();
  });

  it('every secret marker is absent from every place searched', { timeout: 240_000 }, async () => {
    // ---- through the API, both companies ----
    const ids: Record<string, string[]> = { A: [], B: [] };
    for (const [co, key] of [
      ['A', keyA],
      ['B', keyB],
    ] as const) {
      const create = async (what: string, field: string, input: Record<string, unknown>) => {
        const r = await api(
          `${field} (${co})`,
          key,
          `mutation($i: ${field[0]!.toUpperCase()}${field.slice(1)}Input!) { ${field}(input: $i) { id } }`,
          { i: input },
        );
        expect(r.errors, `${what}: ${JSON.stringify(r.errors)}`).toBeUndefined();
        ids[co]!.push(r.data[field].id);
        return r.data[field].id as string;
      };
      const ik = mint(`incident routing key (API, ${co})`, (m) => `rk-${m}`);
      const incident = await create('incident', 'createIncidentMgmtIntegration', {
        name: `${co} pager`,
        incidentMgmtParams: { IntegrationKey: ik },
      });
      const hookUrl = mint(`webhook URL with a token (API, ${co})`, (m) => `${echo.url}/hook?token=${m}`);
      const sig = mint(`webhook signing secret (API, ${co})`, (m) => `sig-${m}`);
      const hook = await create('webhook', 'createWebhookIntegration', { name: `${co} hook`, url: hookUrl, signingSecret: sig });
      const slack = await create('slack', 'createSlackIntegration', {
        name: `${co} slack`,
        slackParams: { webhookUrl: mint(`Slack webhook URL (API, ${co})`, (m) => `${echo.url}/services/T0/B0/${m}`) },
      });
      const teams = await create('teams', 'createTeamsIntegration', {
        name: `${co} teams`,
        teamsParams: { webhookUrl: mint(`Teams webhook URL (API, ${co})`, (m) => `${echo.url}/workflows/${m}`) },
      });
      const email = await create('email', 'createEmailIntegration', { name: `${co} mail`, emailParams: { to: ['oncall@example.com'] } });

      // basic auth in the URL: accepted or refused, either way it must not echo back
      const userinfo = mint(`webhook URL userinfo password (API, ${co})`, (m) => `${echo.url.replace('http://', `http://u:${m}@`)}/basic`);
      await api(
        `createWebhookIntegration userinfo (${co})`,
        key,
        `mutation($u: String!) { createWebhookIntegration(input: { name: "basic", url: $u }) { id } }`,
        { u: userinfo },
      );

      // rotation of the signing secret, and of the routing key
      const sig2 = mint(`webhook signing secret, rotated (API, ${co})`, (m) => `sig2-${m}`);
      await api(
        `rotate (${co})`,
        key,
        `mutation($id: UUID!, $s: String!, $u: String!) { updateIntegration(id: $id, input: { webhookParams: { url: $u, signingSecret: $s } }) { id webhookSigned } }`,
        { id: hook, s: sig2, u: hookUrl },
      );
      const ik2 = mint(`incident routing key, updated (API, ${co})`, (m) => `rk2-${m}`);
      await api(
        `update key (${co})`,
        key,
        `mutation($id: UUID!, $k: String!) { updateIntegration(id: $id, input: { incidentMgmtParams: { IntegrationKey: $k } }) { id } }`,
        { id: incident, k: ik2 },
      );

      // invalid input carrying secrets: the error must say what and where, never echo the value
      const bad = [
        ['url not http', { name: 'x', url: mint(`invalid webhook URL (API, ${co})`, (m) => `ftp://host/${m}`) }],
        ['url with spaces', { name: 'x', url: mint(`malformed webhook URL (API, ${co})`, (m) => `http://exa mple/${m}`) }],
        [
          'url to a denied address',
          { name: 'x', url: mint(`denied webhook URL (API, ${co})`, (m) => `http://169.254.169.254/latest/${m}`) },
        ],
        [
          'short signing secret',
          { name: 'x', url: `${echo.url}/h`, signingSecret: mint(`short signing secret (API, ${co})`, (m) => m.slice(0, 12)) },
        ],
        [
          'malformed whsec',
          { name: 'x', url: `${echo.url}/h`, signingSecret: mint(`malformed whsec (API, ${co})`, (m) => `whsec_!!${m}!!`) },
        ],
      ] as const;
      for (const [what, input] of bad) {
        const r = await api(
          `createWebhookIntegration ${what} (${co})`,
          key,
          `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
          { i: input },
        );
        expect(r.errors, what).toBeDefined();
      }
      await api(
        `update slack with a bad URL (${co})`,
        key,
        `mutation($id: UUID!, $u: String!) { updateIntegration(id: $id, input: { slackParams: { webhookUrl: $u } }) { id } }`,
        {
          id: slack,
          u: mint(`invalid Slack URL (API, ${co})`, (m) => `javascript:${m}`),
        },
      );
      await api(
        `incident key too long (${co})`,
        key,
        `mutation($k: String!) { createIncidentMgmtIntegration(input: { name: "x", incidentMgmtParams: { IntegrationKey: $k } }) { id } }`,
        {
          k: mint(`oversized routing key (API, ${co})`, (m) => `${m}${'k'.repeat(5000)}`),
        },
      );
      // wrong type for the params object: graphql-js variable coercion errors quote the value
      await api(
        `params of the wrong type (${co})`,
        key,
        `mutation($i: CreateIncidentMgmtIntegrationInput!) { createIncidentMgmtIntegration(input: $i) { id } }`,
        {
          i: {
            name: 'x',
            incidentMgmtParams: { IntegrationKey: 12, extra: mint(`routing key in an unknown field (API, ${co})`, (m) => `rk-${m}`) },
          },
        },
      );

      await api(
        `routing key as a list (${co})`,
        key,
        `mutation($i: CreateIncidentMgmtIntegrationInput!) { createIncidentMgmtIntegration(input: $i) { id } }`,
        {
          i: { name: 'x', incidentMgmtParams: { IntegrationKey: [mint(`routing key sent as a list (API, ${co})`, (m) => `rk-${m}`)] } },
        },
      );
      await api(
        `webhook URL as an object (${co})`,
        key,
        `mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
        {
          i: { name: 'x', url: { href: mint(`webhook URL sent as an object (API, ${co})`, (m) => `${echo.url}/o/${m}`) } },
        },
      );

      // the same written as literals in the document (validation errors print literals)
      const lit = mint(`routing key as a list literal (API, ${co})`, (m) => `rk-${m}`);
      await api(
        `routing key as a list literal (${co})`,
        key,
        `mutation { createIncidentMgmtIntegration(input: { name: "x", incidentMgmtParams: { IntegrationKey: ["${lit}"] } }) { id } }`,
      );
      const litUrl = mint(`Slack URL as an object literal (API, ${co})`, (m) => `${echo.url}/services/${m}`);
      await api(
        `Slack URL as an object literal (${co})`,
        key,
        `mutation { createSlackIntegration(input: { name: "x", slackParams: { webhookUrl: { u: "${litUrl}" } } }) { id } }`,
      );
      const litParams = mint(`params given as a string literal (API, ${co})`, (m) => `rk-${m}`);
      await api(
        `params as a string literal (${co})`,
        key,
        `mutation { createIncidentMgmtIntegration(input: { name: "x", incidentMgmtParams: "${litParams}" }) { id } }`,
      );

      // routers to every integration, then test sends (receiver fails and echoes) and failing deliveries
      for (const integ of [incident, hook, slack, teams, email]) {
        const r = await api(
          `router (${co})`,
          key,
          `mutation($i: UUID!) { createNotificationRoutingConfiguration(name: "all", eventTypeId: "${ISSUER}", integrationId: $i) { id } }`,
          { i: integ },
        );
        expect(r.errors).toBeUndefined();
        await api(
          `testIntegration (${co})`,
          key,
          `mutation($id: UUID!) { testIntegration(id: $id) { outcome statusCode error latencyMs } }`,
          { id: integ },
        );
      }
      const ev = await rest(`events (${co})`, key, '/v1/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([issuerNotReady({ issuerName: `${co}-issuer` })]),
      });
      expect(ev.status).toBe(202);
    }
    // a request with a wrong key that differs from a real one only at the end, and a key in the wrong header
    await rest('wrong key', keyA.slice(0, -1) + 'x', MONITORING_CONFIG_PATH);
    await rest('key in a query string', null, `${MONITORING_CONFIG_PATH}?svc-api-key=${keyA}`);
    // (that URL carries the key; the service must not log the query string of an unauthenticated request)

    // ---- through CRs referencing Secrets (company A, via the operator) ----
    const ns = 'secrets';
    await k.ns(ns);
    const S = (name: string, data: Record<string, string>) => k.apply(secret(ns, name, data));
    await S('ik', { integrationKey: mint('incident routing key (Secret)', (m) => `rk-${m}`) });
    await S('hook', {
      url: mint('webhook URL (Secret)', (m) => `${echo.url}/crhook/${m}`),
      signing: mint('webhook signing secret (Secret)', (m) => `sig-${m}`),
    });
    await S('slack', { url: mint('Slack URL (Secret)', (m) => `${echo.url}/services/T1/B1/${m}`) });
    await S('teams', { url: mint('Teams URL (Secret)', (m) => `${echo.url}/teamsflow/${m}`) });
    await S('bad-url', { url: mint('malformed URL (Secret)', (m) => `http://exa mple/${m}`) });
    await S('denied-url', { url: mint('denied URL (Secret)', (m) => `http://169.254.169.254/${m}`) });
    await S('other', { unrelated: mint('other key of a referenced Secret', (m) => `other-${m}`) });
    const P = (name: string, spec: Record<string, unknown>) => k.apply(provider(ns, name, spec));
    await P('oncall', {
      type: 'IncidentManagement',
      incidentManagement: { integrationKeySecretRef: { name: 'ik', key: 'integrationKey' } },
    });
    await P('hook', {
      type: 'Webhook',
      webhook: { urlSecretRef: { name: 'hook', key: 'url' }, signingSecretRef: { name: 'hook', key: 'signing' } },
    });
    await P('slack', { type: 'Slack', slack: { webhookUrlSecretRef: { name: 'slack', key: 'url' } } });
    await P('teams', { type: 'Teams', teams: { webhookUrlSecretRef: { name: 'teams', key: 'url' } } });
    await P('bad', { type: 'Webhook', webhook: { urlSecretRef: { name: 'bad-url', key: 'url' } } });
    await P('denied', { type: 'Slack', slack: { webhookUrlSecretRef: { name: 'denied-url', key: 'url' } } });
    await P('missing-key', { type: 'Teams', teams: { webhookUrlSecretRef: { name: 'other', key: 'url' } } });
    for (const p of ['oncall', 'hook', 'slack', 'teams']) {
      await k.waitReady('notificationproviders', p, ns, 30_000);
      await k.apply(router(ns, `to-${p}`, { eventTypeId: ISSUER, filter: 'true', providerRef: { name: p } }));
    }
    for (const p of ['bad', 'denied', 'missing-key']) await k.waitCondition('notificationproviders', p, ns, { status: 'False' }, 30_000);
    // rotation through the Secret
    await S('hook', {
      url: secrets.get('webhook URL (Secret)')!.value,
      signing: mint('webhook signing secret, rotated (Secret)', (m) => `sig2-${m}`),
    });
    await S('ik', { integrationKey: mint('incident routing key, rotated (Secret)', (m) => `rk2-${m}`) });
    await waitFor(
      'rotated secrets applied',
      async () => {
        const ints = await svc.store.listIntegrations(COMPANY_A);
        const has = (v: string) => ints.some((i) => Object.values(i.secrets).includes(v));
        return has(secrets.get('webhook signing secret, rotated (Secret)')!.value) &&
          has(secrets.get('incident routing key, rotated (Secret)')!.value)
          ? true
          : undefined;
      },
      { timeoutMs: 30_000 },
    );
    for (const p of ['oncall', 'hook', 'slack', 'teams']) await k.waitReady('notificationrouters', `to-${p}`, ns, 30_000);
    const ev = await rest('events after CRs', keyA, '/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([issuerNotReady({ issuerName: 'cr-issuer' })]),
    });
    expect(ev.status).toBe(202);

    // every delivery attempted at least once (they all fail: the receivers answer 500, SMTP refuses the login)
    await waitFor(
      'every delivery attempted',
      async () => {
        for (const key of [keyA, keyB]) {
          const r = await api('deliveries (poll)', key, `{ deliveries(first: 500) { nodes { attempts status } } }`);
          const nodes = r.data.deliveries.nodes as { attempts: number }[];
          if (nodes.length === 0 || nodes.some((n) => n.attempts < 1)) return undefined;
        }
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(echo.hits, 'the receiver got requests (so the echo path was exercised)').toBeGreaterThan(10);

    // ---- final read of everything, as both companies ----
    for (const key of [keyA, keyB]) {
      await api(
        'integrations',
        key,
        `{ integrations { nodes { id name enabled type emailTo emailFrom webhookSigned managedBy createdAt updatedAt } totalCount } }`,
      );
      await api(
        'routers',
        key,
        `{ searchNotificationRoutingConfigurations { nodes { id name enabled generation managedBy eventType { id displayName types } notificationRouterFilterConfig { advancedFilterExpression } notificationRouterIntegrationConfig { notificationRouterIntegrationID notificationRouterTemplateID } } } }`,
      );
      await api(
        'deliveries',
        key,
        `{ deliveries(first: 500) { nodes { id status attempts lastError lastStatusCode nextAttemptAt event { id type receivedAt } routerId routerName integrationId integration { id name type } } } }`,
      );
      await api('eventTypes', key, `{ eventTypes { id displayName types } }`);
      await api(
        'simulateRouting',
        key,
        `query($e: EventInput!) { simulateRouting(event: $e) { eventType monitored routers { verdict error wouldNotify router { id name } } } }`,
        { e: issuerNotReady() },
      );
      await rest('monitoring config', key, MONITORING_CONFIG_PATH);
    }
    await rest('metrics', null, '/metrics');
    await rest('readyz', null, '/readyz');

    // ---- CR status and Events ----
    for (const plural of ['notificationproviders', 'notificationrouters', 'monitoringconfigs'] as Plural[]) {
      const list = (await k.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural })) as {
        items: { metadata: { namespace?: string; name: string }; status?: unknown }[];
      };
      for (const o of list.items)
        record(`status of ${plural} ${o.metadata.namespace ?? ''}/${o.metadata.name}`, JSON.stringify(o.status ?? {}));
    }
    const events = await k.core.listEventForAllNamespaces({});
    for (const e of events.items)
      record(
        `Event ${e.metadata?.namespace}/${e.metadata?.name} (${e.reason})`,
        JSON.stringify({ ...e, metadata: { name: e.metadata?.name, namespace: e.metadata?.namespace } }),
      );
    expect(events.items.length, 'the operator recorded Events').toBeGreaterThan(0);

    await op.stop();
    record('service log', svcLogs.join(''));
    record('operator log', opLogs.lines.join(''));
    expect(svcLogs.length).toBeGreaterThan(10);
    expect(opLogs.lines.length).toBeGreaterThan(10);

    // control: the search does find secrets where they belong (what the receivers got; the Secrets' base64 data)
    const secretObjects = await k.core.listNamespacedSecret({ namespace: ns });
    const control = findings([
      { where: 'receiver requests', text: echo.seen.join('\n') },
      { where: 'Secret data', text: JSON.stringify(secretObjects.items.map((x) => x.data)) },
    ]);
    for (const name of ['incident routing key, rotated (Secret)', 'Slack URL (Secret)', 'incident routing key, updated (API, A)'])
      expect(
        control.some((c) => c.startsWith(name)),
        `control: ${name} not found where it was sent`,
      ).toBe(true);
    expect(
      control.some((c) => c.includes('in Secret data')),
      'control: base64 forms are found',
    ).toBe(true);

    const found = findings();
    const count = (re: RegExp) => places.filter((p) => re.test(p.where)).length;
    console.log(
      `secret search: ${secrets.size} secrets (${[...secrets.values()].reduce((n, x) => n + formsOf(x.value, x.marker).length, 0)} strings with their encoded forms) in ${places.length} places ` +
        `(${count(/^(API|REST) answer/)} API answers, ${count(/^status of/)} CR statuses, ${count(/^Event /)} Events, ${count(/ log$/)} logs of ${svcLogs.length} + ${opLogs.lines.length} lines): ${found.length} found`,
    );
    expect(found, found.slice(0, 10).join('\n\n')).toEqual([]);
  });
});
