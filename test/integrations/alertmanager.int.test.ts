/**
 * ALERTMANAGER against the real Prometheus Alertmanager (Debian's prometheus-alertmanager), through the real
 * delivery path (the test service: POST /v1/events, a router, the worker): the alert is active after a
 * `.notready` and resolved after the `.active`; Alertmanager's own route groups two certificates of one issuer
 * into one webhook notification, and its silence keeps a silenced alert out of it; basic auth against its
 * --web.config.file (the notifier directly). Under CI a missing binary
 * fails; elsewhere the file is skipped with a line saying why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../delivery/support.js';
import { certificateResourceActive, certificateResourceNotReady } from '../fixtures/events.js';
import { alertmanagerMissing, startAlertmanager, type RunningAlertmanager } from '../support/alertmanager.js';
import { startTestService, type TestService } from '../support/service.js';
import { createNotifier } from '../../src/integrations/index.js';
import { EVENTS, integration, notification, opts, startReceiver, type Receiver } from './helpers.js';

const PUBLIC_URL = 'https://certmgr.example.com';
const missing = alertmanagerMissing();
const underCi = Boolean(process.env.CI);
if (missing && !underCi) console.warn(`alertmanager.int.test.ts skipped: ${missing}`);

/** Alertmanager's webhook body (the parts read here). */
interface AmNotification {
  status: 'firing' | 'resolved';
  groupLabels: Record<string, string>;
  alerts: Array<{ status: 'firing' | 'resolved'; labels: Record<string, string>; generatorURL: string }>;
}
/** GET /api/v2/alerts (gettableAlerts). */
interface AmAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  generatorURL?: string;
  endsAt: string;
  status: { state: 'active' | 'suppressed' | 'unprocessed'; silencedBy: string[] };
}

describe.skipIf(missing && !underCi)('ALERTMANAGER against the real Alertmanager', () => {
  let hook: Receiver;
  let am: RunningAlertmanager;
  let svc: TestService;

  beforeAll(async () => {
    if (missing) throw new Error(`${missing}: CI installs it (.ci/run, scripts/preflight.ts)`);
    hook = await startReceiver();
    am = await startAlertmanager({
      config: [
        'route:',
        '  receiver: hook',
        "  group_by: ['issuer']",
        '  group_wait: 500ms',
        '  group_interval: 1s',
        '  repeat_interval: 1h',
        'receivers:',
        '  - name: hook',
        '    webhook_configs:',
        `      - url: ${hook.url}/am-hook`,
        '        send_resolved: true',
        '',
      ].join('\n'),
    });
    svc = await startTestService('sqlite', ['--public-url', PUBLIC_URL]);
    const created = await svc.gql().request<{
      createAlertmanagerIntegration: { id: string; type: string };
    }>(`mutation($i: CreateAlertmanagerIntegrationInput!) { createAlertmanagerIntegration(input: $i) { id type } }`, { i: { name: 'am', url: am.url } });
    expect(created.createAlertmanagerIntegration.type).toBe('ALERTMANAGER');
    await svc.gql().request(
      `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) {
        createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
      {
        d: { name: 'certificates to alertmanager', eventTypeId: 'certmgr-cert-resource-health-notification-config' },
        f: { advancedFilterExpression: 'true' },
        i: { integrationId: created.createAlertmanagerIntegration.id },
      },
    );
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
    await am?.stop();
    await hook?.close();
  });

  const post = async (events: unknown[]) => {
    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(events),
    });
    expect(res.status).toBe(202);
  };
  const alerts = async (): Promise<AmAlert[]> => {
    const res = await fetch(`${am.url}/api/v2/alerts`);
    expect(res.status).toBe(200);
    return (await res.json()) as AmAlert[];
  };
  const alertOf = async (name: string) => (await alerts()).find((a) => a.labels['name'] === name);
  const notifications = () => hook.requests.filter((r) => r.path === '/am-hook').map((r) => JSON.parse(r.body) as AmNotification);
  const notReady = (name: string, issuerName: string) =>
    certificateResourceNotReady({ certificateName: name, issuerName, namespace: 'shop', statusTransition: '2026-03-01T10:00:00Z' });

  it('a .notready makes the alert active (labels, annotations, generatorURL); the .active resolves it', async () => {
    await post([notReady('web-tls', 'le-active')]);
    const open = await waitFor(
      'the alert active in Alertmanager',
      async () => (await alertOf('web-tls'))?.status.state === 'active' && alertOf('web-tls'),
    );
    expect(open!.labels).toMatchObject({
      alertname: 'CertmgrCertificateNotReady',
      severity: 'error',
      kind: 'certificate',
      namespace: 'shop',
      issuer: 'le-active',
    });
    expect(open!.annotations).toMatchObject({ reason: 'DoesNotExist', router: 'certificates to alertmanager' });
    expect(open!.generatorURL).toBe(`${PUBLIC_URL}/ui/#/health`);
    // held open by its endsAt, not by Alertmanager's resolve_timeout (which an alert without endsAt gets)
    expect(Date.parse(open!.endsAt) - Date.now()).toBeGreaterThan(30 * 24 * 3600_000);
    const firing = await waitFor('the firing webhook', () => notifications().find((n) => n.groupLabels['issuer'] === 'le-active'));
    expect(firing.status).toBe('firing');

    // a newer .notready with another reason updates the same alert (the reason is an annotation, not a label)
    await post([
      certificateResourceNotReady({
        certificateName: 'web-tls',
        issuerName: 'le-active',
        namespace: 'shop',
        statusReason: 'Failed',
        statusTransition: '2026-03-01T10:10:00Z',
      }),
    ]);
    await waitFor('the new reason', async () => (await alertOf('web-tls'))?.annotations['reason'] === 'Failed');
    expect((await alerts()).filter((a) => a.labels['name'] === 'web-tls')).toHaveLength(1);

    await post([
      certificateResourceActive({
        certificateName: 'web-tls',
        issuerName: 'le-active',
        namespace: 'shop',
        statusTransition: '2026-03-01T10:30:00Z',
      }),
    ]);
    // GET /api/v2/alerts lists no resolved alert; Alertmanager tells its receiver
    await waitFor('the alert resolved in Alertmanager', async () => (await alertOf('web-tls')) === undefined);
    const resolved = await waitFor('the resolved webhook', () =>
      notifications().find((n) => n.groupLabels['issuer'] === 'le-active' && n.status === 'resolved'),
    );
    expect(resolved.alerts.map((a) => [a.labels['name'], a.status])).toEqual([['web-tls', 'resolved']]);
  });

  it("Alertmanager's route groups two certificates of one issuer into one webhook notification", async () => {
    await post([notReady('a-tls', 'le-group'), notReady('b-tls', 'le-group')]);
    const both = await waitFor('one notification of the issuer naming both certificates', () =>
      notifications().find((n) => n.groupLabels['issuer'] === 'le-group' && n.alerts.length === 2),
    );
    expect(both.groupLabels).toEqual({ issuer: 'le-group' });
    expect(both.alerts.map((a) => a.labels['name']).sort()).toEqual(['a-tls', 'b-tls']);
  });

  it('an Alertmanager silence keeps a silenced alert out of the notification of its group', async () => {
    const now = Date.now();
    const res = await fetch(`${am.url}/api/v2/silences`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        matchers: [{ name: 'name', value: 'muted-tls', isRegex: false, isEqual: true }],
        startsAt: new Date(now - 60_000).toISOString(),
        endsAt: new Date(now + 3600_000).toISOString(),
        createdBy: 'certmgr-notify test',
        comment: 'maintenance',
      }),
    });
    expect(res.status).toBe(200);
    const { silenceID } = (await res.json()) as { silenceID: string };

    await post([notReady('muted-tls', 'le-silence')]);
    const muted = await waitFor('the silenced alert suppressed in Alertmanager', async () => {
      const a = await alertOf('muted-tls');
      return a?.status.state === 'suppressed' && a;
    });
    expect(muted!.status.silencedBy).toEqual([silenceID]);

    // a second alert of the same group: its notification would name the first too, were it not silenced
    await post([notReady('loud-tls', 'le-silence')]);
    const n = await waitFor('the notification of the group', () => notifications().find((x) => x.groupLabels['issuer'] === 'le-silence'));
    expect(n.alerts.map((a) => a.labels['name'])).toEqual(['loud-tls']);
    expect(notifications().flatMap((x) => x.alerts.map((a) => a.labels['name']))).not.toContain('muted-tls');
  });
});

describe.skipIf(missing && !underCi)('ALERTMANAGER with basic auth against the real Alertmanager (--web.config.file)', () => {
  // bcrypt (cost 4) of PASSWORD: Alertmanager's basic_auth_users takes bcrypt hashes only
  const PASSWORD = 'am-pass-0123';
  const HASH = '$2b$04$hUjn1IR1fHVuZL303FKg1ecouySRs3qUqA6wT8fSPJE97bVOd3Kgm';
  let am: RunningAlertmanager;

  beforeAll(async () => {
    if (missing) throw new Error(`${missing}: CI installs it (.ci/run, scripts/preflight.ts)`);
    am = await startAlertmanager({
      config: ['route:', '  receiver: none', 'receivers:', '  - name: none', ''].join('\n'),
      webConfig: ['basic_auth_users:', `  certmgr: '${HASH}'`, ''].join('\n'),
    });
  }, 60_000);
  afterAll(() => am?.stop());

  const send = (secrets: Record<string, string>) =>
    createNotifier('ALERTMANAGER', opts()).send(
      notification(integration('ALERTMANAGER', { url: am.url, ...secrets }), EVENTS['evt.healthstatus.certmgr-issuer.notready']),
    );

  it('the right credentials deliver; a wrong password or none is dead (401)', async () => {
    // until Alertmanager is ready it answers 503: retried like any delivery
    expect(
      await waitFor('delivered', async () =>
        (await send({ username: 'certmgr', password: PASSWORD })).outcome === 'delivered' ? true : undefined,
      ),
    ).toBe(true);
    const auth = `Basic ${Buffer.from(`certmgr:${PASSWORD}`).toString('base64')}`;
    const listed = (await (await fetch(`${am.url}/api/v2/alerts`, { headers: { authorization: auth } })).json()) as AmAlert[];
    expect(listed.map((a) => a.labels['alertname'])).toEqual(['CertmgrIssuerNotReady']);
    expect(await send({ username: 'certmgr', password: 'wrong-password' })).toMatchObject({ outcome: 'dead', statusCode: 401 });
    expect(await send({})).toMatchObject({ outcome: 'dead', statusCode: 401 });
  });
});
