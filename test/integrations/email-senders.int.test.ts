/**
 * EMAIL through the real service and a loopback SMTP relay (smtp-server): the operator decides the sender
 * domains (--smtp-sender-domains, default the domain of --smtp-from), tenants do not; recipients are plain
 * addresses. Create and update refuse naming the field (and the allowed domains); a row written before the checks
 * (stored directly) is dead-lettered by the worker and never reaches the relay.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../delivery/support.js';
import { issuerNotReady } from '../fixtures/events.js';
import { gqlError } from '../support/graphql.js';
import { COMPANY_A, startTestService, type TestService } from '../support/service.js';

interface Mail {
  from: string;
  to: string[];
}

let smtp: SMTPServer;
let smtpPort: number;
const mails: Mail[] = [];
beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, cb) {
      stream.resume();
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

type View = { id: string; emailTo: string[] | null; emailFrom: string | null };
const FIELDS = 'id emailTo emailFrom';

function api(svc: TestService) {
  const gql = <T>(q: string, v: Record<string, unknown> = {}) => svc.gql().request<T>(q, v);
  return {
    create: async (emailParams: Record<string, unknown>, name = 'mail') =>
      (
        await gql<{ createEmailIntegration: View }>(
          `mutation($i: CreateEmailIntegrationInput!) { createEmailIntegration(input: $i) { ${FIELDS} } }`,
          { i: { name, emailParams } },
        )
      ).createEmailIntegration,
    update: (id: string, emailParams: Record<string, unknown>) =>
      gql<{ updateIntegration: View }>(
        `mutation($id: UUID!, $i: UpdateIntegrationInput!) { updateIntegration(id: $id, input: $i) { ${FIELDS} } }`,
        { id, i: { emailParams } },
      ),
    test: async (id: string) =>
      (
        await gql<{ testIntegration: { outcome: string; error: string | null } }>(
          `mutation($id: UUID!) { testIntegration(id: $id) { outcome error } }`,
          { id },
        )
      ).testIntegration,
    count: async () => (await svc.store.listIntegrations(COMPANY_A)).length,
    gql,
  };
}

describe('sender domains: default, the domain of --smtp-from', () => {
  let svc: TestService;
  let a: ReturnType<typeof api>;
  beforeAll(async () => {
    svc = await startTestService('sqlite', [
      '--smtp-url',
      `smtp://127.0.0.1:${smtpPort}`,
      '--smtp-from',
      'certmgr-notify@notify.example.net',
    ]);
    a = api(svc);
  });
  afterAll(() => svc?.close());

  it('create refuses a from in another domain, naming the field and the allowed domains; nothing stored', async () => {
    const before = await a.count();
    const e = await gqlError(a.create({ to: ['ops@example.com'], from: 'payments@bank.test' }));
    expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.emailParams.from' });
    expect(e.message).toBe(
      "input.emailParams.from uses the sender domain bank.test, which this service's SMTP relay does not send for; allowed: notify.example.net (the operator's --smtp-sender-domains)",
    );
    const sub = await gqlError(a.create({ to: ['ops@example.com'], from: 'x@sub.notify.example.net' }));
    expect(sub.extensions).toMatchObject({ field: 'input.emailParams.from' });
    expect(await a.count()).toBe(before);
  });

  it.each([
    ['a@[127.0.0.1]', /address literal/],
    ['a@[IPv6:::1]', /address literal/],
    ['a@127.0.0.1', /IP address/],
    ['a@localhost', /DNS domain name/],
    ['"a b"@example.com', /local part/],
  ])('create refuses the recipient %s at input.emailParams.to[1]', async (rcpt, why) => {
    const before = await a.count();
    const e = await gqlError(a.create({ to: ['ops@example.com', rcpt] }));
    expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.emailParams.to[1]' });
    expect(e.message).toMatch(/^input\.emailParams\.to\[1\] is not an email address \(a plain local@domain with a DNS domain name\): it /);
    expect(e.message).toMatch(why);
    expect(await a.count()).toBe(before);
  });

  it('an allowed from is created and sent with that envelope sender; an update to another domain is refused, changing nothing', async () => {
    const v = await a.create({ to: ['ops@example.com'], from: 'alerts@notify.example.net' }, 'allowed');
    expect(v).toMatchObject({ emailTo: ['ops@example.com'], emailFrom: 'alerts@notify.example.net' });
    mails.length = 0;
    expect(await a.test(v.id)).toMatchObject({ outcome: 'delivered' });
    expect(mails).toEqual([{ from: 'alerts@notify.example.net', to: ['ops@example.com'] }]);

    const e = await gqlError(a.update(v.id, { to: ['ops@example.com'], from: 'payments@bank.test' }));
    expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.emailParams.from' });
    expect(e.message).toContain('allowed: notify.example.net');
    const e2 = await gqlError(a.update(v.id, { to: ['a@[127.0.0.1]'] }));
    expect(e2.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.emailParams.to[0]' });
    expect((await svc.store.getIntegration(COMPANY_A, v.id))!.config).toEqual({
      to: ['ops@example.com'],
      from: 'alerts@notify.example.net',
    });
  });

  it('a row written before the checks (from bank.test, a literal recipient) is dead-lettered by the worker, never sent', async () => {
    const v = await a.create({ to: ['ops@example.com'] }, 'older');
    // what an older version accepted, written as it would have stored it
    await svc.store.updateIntegration(COMPANY_A, v.id, { config: { to: ['ops@example.com'], from: 'payments@bank.test' } }, Date.now());
    const w = await a.create({ to: ['ops@example.com'] }, 'older literal');
    await svc.store.updateIntegration(COMPANY_A, w.id, { config: { to: ['a@[127.0.0.1]'] } }, Date.now());
    for (const [name, id] of [
      ['r-older', v.id],
      ['r-older-literal', w.id],
    ] as const)
      await a.gql(
        `mutation($d: NotificationRouterConfigDetailsInput!, $f: NotificationRouterFilterConfigInput!, $i: NotificationRouterIntegrationConfigurationInput!) {
          createNotificationRouter(details: $d, filterConfig: $f, integrationConfig: $i) { id } }`,
        {
          d: { name, eventTypeId: 'certmgr-issuer-health-notification-config' },
          f: { advancedFilterExpression: 'data.issuerName == "older"' },
          i: { integrationId: id },
        },
      );
    mails.length = 0;
    const res = await svc.rest('/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([issuerNotReady({ issuerName: 'older' })]),
    });
    expect(res.status).toBe(202);
    type D = { status: string; routerName: string; lastError: string | null };
    const dead = await waitFor('both dead', async () => {
      const n = (await a.gql<{ deliveries: { nodes: D[] } }>('{ deliveries(first: 50) { nodes { status routerName lastError } } }'))
        .deliveries.nodes;
      const mine = n.filter((d) => d.routerName.startsWith('r-older') && d.status === 'DEAD');
      return mine.length === 2 ? mine : undefined;
    });
    expect(Object.fromEntries(dead.map((d) => [d.routerName, d.lastError]))).toEqual({
      'r-older':
        "config.from uses the sender domain bank.test, which this service's SMTP relay does not send for; allowed: notify.example.net",
      'r-older-literal': 'config.to[0] is not a plain email address: it has an address literal as its domain',
    });
    expect(await a.test(v.id)).toMatchObject({ outcome: 'dead' });
    expect(mails).toEqual([]);
  });
});

describe('sender domains from --smtp-sender-domains', () => {
  let svc: TestService;
  let a: ReturnType<typeof api>;
  beforeAll(async () => {
    svc = await startTestService('sqlite', [
      '--smtp-url',
      `smtp://127.0.0.1:${smtpPort}`,
      '--smtp-from',
      'certmgr-notify@notify.example.net',
      '--smtp-sender-domains',
      '*.example.org',
    ]);
    a = api(svc);
  });
  afterAll(() => svc?.close());

  it('a subdomain of a *.domain entry is allowed and sent; the --smtp-from domain is not (the list replaces the default)', async () => {
    const v = await a.create({ to: ['ops@example.com'], from: 'team@ops.example.org' });
    mails.length = 0;
    expect(await a.test(v.id)).toMatchObject({ outcome: 'delivered' });
    expect(mails).toEqual([{ from: 'team@ops.example.org', to: ['ops@example.com'] }]);
    const e = await gqlError(a.create({ to: ['ops@example.com'], from: 'x@notify.example.net' }));
    expect(e.extensions).toMatchObject({ field: 'input.emailParams.from' });
    expect(e.message).toContain('allowed: *.example.org');
    // without a from, the integration sends as --smtp-from, the operator's own sender
    const d = await a.create({ to: ['ops@example.com'] }, 'default from');
    mails.length = 0;
    expect(await a.test(d.id)).toMatchObject({ outcome: 'delivered' });
    expect(mails[0]?.from).toBe('certmgr-notify@notify.example.net');
  });
});
