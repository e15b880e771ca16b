/**
 * An integration's own send rate through the real service's GraphQL API: set on create, returned (with the type's
 * default when it has none), changed and reset on update, 0 for unlimited, and the operator's bound
 * (maxIntegrationRate in --limits-file) refusing more, each refusal naming its field and writing nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gqlError } from '../support/graphql.js';
import { COMPANY_A, startTestService, type TestService } from '../support/service.js';

const FIELDS = 'id type rateLimit { perSecond burst typeDefault }';
const SLACK_HOOK = 'https://hooks.slack.com/services/T000/B000/t0ken';
const RECEIVER = 'https://hooks.example.com/in';

type View = { id: string; type: string; rateLimit: { perSecond: number; burst: number; typeDefault: boolean } };

async function api(svc: TestService) {
  const createSlack = async (rateLimit?: unknown) =>
    (
      await svc.gql().request<{
        createSlackIntegration: View;
      }>(`mutation($i: CreateSlackIntegrationInput!) { createSlackIntegration(input: $i) { ${FIELDS} } }`, { i: { name: 'chan', slackParams: { webhookUrl: SLACK_HOOK }, ...(rateLimit === undefined ? {} : { rateLimit }) } })
    ).createSlackIntegration;
  const createWebhook = async (rateLimit?: unknown) =>
    (
      await svc.gql().request<{
        createWebhookIntegration: View;
      }>(`mutation($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { ${FIELDS} } }`, { i: { name: 'own', url: RECEIVER, rateLimit } })
    ).createWebhookIntegration;
  const update = async (id: string, input: Record<string, unknown>) =>
    (
      await svc.gql().request<{
        updateIntegration: View;
      }>(`mutation($id: UUID!, $i: UpdateIntegrationInput!) { updateIntegration(id: $id, input: $i) { ${FIELDS} } }`, { id, i: input })
    ).updateIntegration;
  return { createSlack, createWebhook, update };
}

describe('rateLimit on integrations through GraphQL', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService('sqlite', [], { loopbackAllowed: false });
  });
  afterAll(() => svc?.close());

  it("without one, the type's default is returned; set, changed, 0 (unlimited), null (the default again), stored as given", async () => {
    const { createSlack, createWebhook, update } = await api(svc);
    const plain = await createSlack();
    expect(plain.rateLimit).toEqual({ perSecond: 1, burst: 3, typeDefault: true });
    expect((await svc.store.getIntegration(COMPANY_A, plain.id))?.rateLimit).toBeUndefined();

    const own = await createSlack({ perSecond: 5, burst: 2 });
    expect(own.rateLimit).toEqual({ perSecond: 5, burst: 2, typeDefault: false });
    expect((await svc.store.getIntegration(COMPANY_A, own.id))?.rateLimit).toEqual({ ratePerSec: 5, burst: 2 });

    const unlimited = await createWebhook({ perSecond: 0 });
    expect(unlimited.rateLimit).toEqual({ perSecond: 0, burst: 1, typeDefault: false });

    expect((await update(own.id, { rateLimit: { perSecond: 0.5 } })).rateLimit).toEqual({ perSecond: 0.5, burst: 1, typeDefault: false });
    // an update without it leaves it alone
    expect((await update(own.id, { name: 'renamed' })).rateLimit).toEqual({ perSecond: 0.5, burst: 1, typeDefault: false });
    expect((await update(own.id, { rateLimit: null })).rateLimit).toEqual({ perSecond: 1, burst: 3, typeDefault: true });
    expect((await svc.store.getIntegration(COMPANY_A, own.id))?.rateLimit).toBeUndefined();
  });

  it.each([
    [{ perSecond: -1 }, 'input.rateLimit.perSecond', /must be 0 \(unlimited\) or from 0\.01 to 10000, got -1/],
    [{ perSecond: 5, burst: 0 }, 'input.rateLimit.burst', /whole number from 1 to 1000/],
    [{ perSecond: 50_000 }, 'input.rateLimit.perSecond', /got 50000/],
  ])('refuses %o on create and update, naming the field, writing nothing', async (rateLimit, field, message) => {
    const { createSlack, update } = await api(svc);
    const before = (await svc.store.listIntegrations(COMPANY_A)).length;
    const e = await gqlError(createSlack(rateLimit));
    expect(e.message).toMatch(message);
    expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
    expect((await svc.store.listIntegrations(COMPANY_A)).length).toBe(before);
    const one = await createSlack({ perSecond: 2 });
    const u = await gqlError(update(one.id, { rateLimit }));
    expect(u.message).toMatch(message);
    expect((await svc.store.getIntegration(COMPANY_A, one.id))?.rateLimit).toEqual({ ratePerSec: 2, burst: 2 });
  });
});

describe("the operator's bound: maxIntegrationRate 100 in the limits file", () => {
  let svc: TestService;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-rate-'));
    writeFileSync(join(dir, 'limits.yaml'), 'maxIntegrationRate: 100\n');
    svc = await startTestService('sqlite', ['--limits-file', join(dir, 'limits.yaml')], { loopbackAllowed: false });
  });
  afterAll(async () => {
    await svc?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('up to the bound is taken; above it, and unlimited, are refused naming the field and the flag', async () => {
    const { createSlack, createWebhook, update } = await api(svc);
    const at = await createSlack({ perSecond: 100, burst: 100 });
    expect(at.rateLimit).toEqual({ perSecond: 100, burst: 100, typeDefault: false });
    const above = await gqlError(update(at.id, { rateLimit: { perSecond: 101 } }));
    expect(above.message).toBe(
      "input.rateLimit.perSecond 101 is above this service's bound of 100 per second (the operator's maxIntegrationRate in --limits-file)",
    );
    expect(above.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.rateLimit.perSecond' });
    const unlimited = await gqlError(createWebhook({ perSecond: 0 }));
    expect(unlimited.message).toMatch(
      /input\.rateLimit\.perSecond 0 \(unlimited\) is not allowed by this service.*maxIntegrationRate in --limits-file/,
    );
    // the types' defaults are not the tenant's setting: an integration without one keeps its type's
    expect((await createSlack()).rateLimit).toEqual({ perSecond: 1, burst: 3, typeDefault: true });
  });
});
