/**
 * An EMAIL integration on a service without --smtp-url could only dead-letter: create, update and
 * testIntegration refuse it with SMTP_NOT_CONFIGURED (field named), and the operator turns that into a Stalled
 * provider with reason SmtpNotConfigured.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientError } from 'graphql-request';
import { afterEach, describe, expect, it } from 'vitest';
import { Reason } from '../../src/api/meta.js';
import { throwServiceFailure } from '../../src/operator/errors.js';
import { TerminalError } from '../../src/runtime/controller.js';
import { GraphQLServiceApi } from '../../src/client/service-api.js';
import { KEY_A, startTestService, type TestService } from '../support/service.js';

const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
});
async function start(...args: Parameters<typeof startTestService>): Promise<TestService> {
  const s = await startTestService(...args);
  services.push(s);
  return s;
}

const CREATE = `mutation($to: [String!]!) { createEmailIntegration(input: { name: "mail", emailParams: { to: $to } }) { id } }`;

async function gqlError(p: Promise<unknown>): Promise<{ message: string; extensions: Record<string, unknown> }> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ClientError);
  return (e as ClientError).response.errors![0] as never;
}

describe('EMAIL integrations need an SMTP server', () => {
  it('create without --smtp-url: SMTP_NOT_CONFIGURED on input.emailParams, nothing stored', async () => {
    const svc = await start('sqlite', [], { smtpConfigured: false });
    const err = await gqlError(svc.gql().request(CREATE, { to: ['ops@example.com'] }));
    expect(err.extensions).toMatchObject({ code: 'SMTP_NOT_CONFIGURED', field: 'input.emailParams' });
    expect(err.message).toMatch(/no SMTP server configured/);
    expect(err.message).toContain('--smtp-url');
    const list = await svc.gql().request<{ integrations: { nodes: unknown[] } }>('{ integrations { nodes { id } } }');
    expect(list.integrations.nodes).toEqual([]);
    // bad input is still reported as such first
    const bad = await gqlError(svc.gql().request(CREATE, { to: ['nope'] }));
    expect(bad.extensions['code']).toBe('BAD_USER_INPUT');
    // other types are unaffected
    await expect(
      svc
        .gql()
        .request(
          `mutation { createIncidentMgmtIntegration(input: { name: "pd", incidentMgmtParams: { IntegrationKey: "0123456789abcdef0123456789abcdef" } }) { id } }`,
        ),
    ).resolves.toBeDefined();
  });

  it('the operator sees it as Stalled with reason SmtpNotConfigured (no retry with backoff)', async () => {
    const svc = await start('sqlite', [], { smtpConfigured: false });
    const api = new GraphQLServiceApi({ url: svc.url, apiKey: KEY_A });
    const e = await api
      .createIntegration({
        type: 'EMAIL',
        name: 'ns/mail',
        enabled: true,
        managedBy: 'k8s:NotificationProvider/ns/mail',
        params: { emailParams: { to: ['ops@example.com'] } },
      })
      .then(
        () => undefined,
        (x: unknown) => x,
      );
    let condition: unknown;
    try {
      throwServiceFailure(e, 'provider');
    } catch (x) {
      condition = x;
    }
    expect(condition).toBeInstanceOf(TerminalError);
    expect((condition as TerminalError).reason).toBe(Reason.SmtpNotConfigured);
    expect((condition as TerminalError).message).toMatch(/no SMTP server configured/);
  });

  it('an EMAIL integration from a run with SMTP: after a restart without it, testIntegration and a params update are refused', async () => {
    const store = `sqlite:${join(mkdtempSync(join(tmpdir(), 'cmn-smtp-')), 'db.sqlite')}`;
    const withSmtp = await start('sqlite', ['--store', store]);
    const created = await withSmtp.gql().request<{ createEmailIntegration: { id: string } }>(CREATE, { to: ['ops@example.com'] });
    const id = created.createEmailIntegration.id;
    await withSmtp.close();
    services.splice(services.indexOf(withSmtp), 1);

    const without = await start('sqlite', ['--store', store], { smtpConfigured: false });
    const test = await gqlError(without.gql().request(`mutation($id: UUID!) { testIntegration(id: $id) { outcome error } }`, { id }));
    expect(test.extensions).toMatchObject({ code: 'SMTP_NOT_CONFIGURED', field: 'id' });
    const upd = await gqlError(
      without
        .gql()
        .request(`mutation($id: UUID!) { updateIntegration(id: $id, input: { emailParams: { to: ["b@example.com"] } }) { id } }`, { id }),
    );
    expect(upd.extensions).toMatchObject({ code: 'SMTP_NOT_CONFIGURED', field: 'input.emailParams' });
  });

  it('with --smtp-url: create works and testIntegration sends (the closed port is a retryable SMTP error)', async () => {
    const svc = await start('sqlite', ['--smtp-url', 'smtp://127.0.0.1:9']);
    const created = await svc.gql().request<{ createEmailIntegration: { id: string } }>(CREATE, { to: ['ops@example.com'] });
    const r = await svc
      .gql()
      .request<{ testIntegration: { outcome: string } }>(`mutation($id: UUID!) { testIntegration(id: $id) { outcome } }`, {
        id: created.createEmailIntegration.id,
      });
    expect(r.testIntegration.outcome).toBe('retry');
  });
});

describe('email notifier readiness (pure)', () => {
  it.each([
    [undefined, /no SMTP URL/],
    ['', /no SMTP URL/],
    ['http://mail:25', /not a valid smtp/],
    ['smtp://mail:25', null],
    ['smtps://u:p@mail:465', null],
  ])('unavailable() with smtpUrl %j', async (smtpUrl, want) => {
    const { createNotifier } = await import('../../src/integrations/index.js');
    const { integrationOptions } = await import('../../src/integrations/types.js');
    const why = createNotifier('EMAIL', integrationOptions(smtpUrl === undefined ? {} : { smtpUrl })).unavailable?.() ?? null;
    if (want === null) expect(why).toBeNull();
    else expect(why).toMatch(want);
    if (smtpUrl?.includes('u:p')) expect(why ?? '').not.toContain('u:p');
  });
});
