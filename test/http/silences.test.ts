/**
 * Silences through GraphQL (docs/silences.md): create, read, list by state, expire; errors name the
 * field and give the matcher's compile error with its position; nothing is written on a refusal; the quota;
 * simulateRouting shows the silence that would apply.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ops from '../../src/client/operations.js';
import { issuerActive, issuerNotReady } from '../fixtures/events.js';
import { gqlError } from '../support/graphql.js';
import { KEY_B, startTestService, type TestService } from '../support/service.js';
import { limitsFile } from '../support/limits.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService('sqlite', [...limitsFile({ maxSilencesPerCompany: 3, deliveryWorkers: 0 })]);
});
afterAll(async () => {
  await svc?.close();
});

const FIELDS = 'id matcher eventTypeId eventTypeIds startsAt endsAt comment createdBy managedBy state createdAt updatedAt expiredAt';
const Create = `mutation ($input: CreateSilenceInput!) { createSilence(input: $input) { ${FIELDS} } }`;
const Expire = `mutation ($id: UUID!) { expireSilence(id: $id) { ${FIELDS} } }`;
const Get = `query ($id: UUID!) { silence(id: $id) { ${FIELDS} } }`;
const List = `query ($state: SilenceState, $first: Int, $after: String) {
  silences(state: $state, first: $first, after: $after) { nodes { id state } pageInfo { hasNextPage endCursor } } }`;
type Silence = { id: string; state: string; createdBy: string; expiredAt: string | null; eventTypeIds: string[]; endsAt: string };

const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();
const create = (input: Record<string, unknown>, key?: string) =>
  svc.gql(key).request<{ createSilence: Silence }>(Create, { input: { comment: 'maintenance', endsAt: inHours(2), ...input } });
const listAll = async (key?: string) =>
  (await svc.gql(key).request<{ silences: { nodes: Silence[] } }>(List, { first: 500 })).silences.nodes;

describe('silences API', () => {
  it('creates, reads, lists by state and expires; createdBy defaults to the API key', async () => {
    const { createSilence: s } = await create({ matcher: 'data.issuerName == "le-prod"', createdBy: 'alice' });
    expect(s).toMatchObject({ state: 'ACTIVE', createdBy: 'alice', eventTypeId: null, managedBy: null, expiredAt: null });
    expect(s.eventTypeIds).toContain('certmgr-issuer-health-notification-config');
    expect(s.eventTypeIds).not.toContain('certmgr-agent-health-notification-config');
    const { createSilence: p } = await create({
      matcher: 'true',
      startsAt: inHours(1),
      endsAt: inHours(3),
      eventTypeId: 'cert-expiry-ext-notification-config',
    });
    expect(p.state).toBe('PENDING');
    expect(p.createdBy).toMatch(/^api-key:[0-9a-f]{12}$/);
    expect((await svc.gql().request<{ silence: Silence }>(Get, { id: s.id })).silence).toEqual(s);
    const active = (await svc.gql().request<{ silences: { nodes: Silence[] } }>(List, { state: 'ACTIVE' })).silences.nodes;
    expect(active.map((x) => x.id)).toContain(s.id);
    expect(active.map((x) => x.id)).not.toContain(p.id);

    const { expireSilence: e } = await svc.gql().request<{ expireSilence: Silence }>(Expire, { id: s.id });
    expect(e.state).toBe('EXPIRED');
    expect(e.expiredAt).not.toBeNull();
    // idempotent
    expect((await svc.gql().request<{ expireSilence: Silence }>(Expire, { id: s.id })).expireSilence).toEqual(e);
    const expired = (await svc.gql().request<{ silences: { nodes: Silence[] } }>(List, { state: 'EXPIRED' })).silences.nodes;
    expect(expired.map((x) => x.id)).toEqual([s.id]);
    await svc.gql().request(Expire, { id: p.id });
  });

  it('pages in creation order', async () => {
    const a = (await create({ matcher: 'true' }, KEY_B)).createSilence;
    const b = (await create({ matcher: 'true' }, KEY_B)).createSilence;
    const p1 = (
      await svc
        .gql(KEY_B)
        .request<{ silences: { nodes: Silence[]; pageInfo: { hasNextPage: boolean; endCursor: string } } }>(List, { first: 1 })
    ).silences;
    expect(p1.nodes.map((x) => x.id)).toEqual([a.id]);
    expect(p1.pageInfo.hasNextPage).toBe(true);
    const p2 = (
      await svc
        .gql(KEY_B)
        .request<{ silences: { nodes: Silence[]; pageInfo: { hasNextPage: boolean } } }>(List, { first: 1, after: p1.pageInfo.endCursor })
    ).silences;
    expect(p2.nodes.map((x) => x.id)).toEqual([b.id]);
    for (const x of [a, b]) await svc.gql(KEY_B).request(Expire, { id: x.id });
    const bad = await gqlError(svc.gql(KEY_B).request(List, { after: 'bm90LWEtY3Vyc29y' }));
    expect(bad.extensions.field).toBe('after');
  });

  it.each([
    [{ matcher: 'data.issuerName ==' }, 'INVALID_FILTER_EXPRESSION', 'input.matcher', /^input\.matcher: 1:\d+: /],
    [{ matcher: 'data.nope == "x"' }, 'INVALID_FILTER_EXPRESSION', 'input.matcher', /1:6: .*every event family/],
    [
      { matcher: 'data.daysUntilExpiry < 3', eventTypeId: 'certmgr-issuer-health-notification-config' },
      'INVALID_FILTER_EXPRESSION',
      'input.matcher',
      /^input\.matcher: 1:6: /,
    ],
    [{ matcher: '   ' }, 'INVALID_FILTER_EXPRESSION', 'input.matcher', /must not be empty/],
    [{ matcher: 'x'.repeat(2001) }, 'INVALID_FILTER_EXPRESSION', 'input.matcher', /longer than 2000/],
    [{ matcher: 'true', eventTypeId: 'nope' }, 'BAD_USER_INPUT', 'input.eventTypeId', /must be one of/],
    [{ matcher: 'true', endsAt: 'tomorrow' }, 'BAD_USER_INPUT', 'input.endsAt', /RFC 3339/],
    [{ matcher: 'true', startsAt: inHours(3), endsAt: inHours(2) }, 'BAD_USER_INPUT', 'input.endsAt', /after input\.startsAt/],
    [{ matcher: 'true', startsAt: inHours(-3), endsAt: inHours(-2) }, 'BAD_USER_INPUT', 'input.endsAt', /in the past/],
    [{ matcher: 'true', endsAt: inHours(24 * 400) }, 'BAD_USER_INPUT', 'input.endsAt', /at most 366 days/],
    [{ matcher: 'true', comment: '' }, 'BAD_USER_INPUT', 'input.comment', /say why/],
    [{ matcher: 'true', comment: 'c'.repeat(1025) }, 'BAD_USER_INPUT', 'input.comment', /1024/],
    [{ matcher: 'true', comment: 'a\u202eb' }, 'BAD_USER_INPUT', 'input.comment', /./],
    [{ matcher: 'true', createdBy: 'x'.repeat(300) }, 'BAD_USER_INPUT', 'input.createdBy', /256/],
  ] as const)('refuses a bad input (%#: %s) naming the field, writing nothing', async (input, code, field, message) => {
    const before = await listAll();
    const err = await gqlError(create(input));
    expect(err.extensions.code).toBe(code);
    expect(err.extensions.field).toBe(field);
    expect(err.message).toMatch(message);
    if (code === 'INVALID_FILTER_EXPRESSION') {
      expect(err.extensions.line).toBeTypeOf('number');
      expect(err.extensions.column).toBeTypeOf('number');
    }
    expect(await listAll()).toEqual(before);
  });

  it('expireSilence of an unknown id is NOT_FOUND', async () => {
    const err = await gqlError(svc.gql().request(Expire, { id: '00000000-0000-4000-8000-00000000dead' }));
    expect(err.extensions.code).toBe('NOT_FOUND');
  });

  it('quota: active and pending silences count; ended ones make room, oldest first', async () => {
    // a third company (a scoped key would need a keys file): use KEY_B, whose silences so far have all ended
    const live = [];
    for (let i = 0; i < 3; i++) live.push((await create({ matcher: 'true', comment: `w${i}` }, KEY_B)).createSilence);
    const err = await gqlError(create({ matcher: 'true' }, KEY_B));
    expect(err.extensions.code).toBe('QUOTA_EXCEEDED');
    expect(err.message).toMatch(/maxSilencesPerCompany in --limits-file/);
    await svc.gql(KEY_B).request(Expire, { id: live[0]!.id });
    const before = (await listAll(KEY_B)).length;
    await create({ matcher: 'true' }, KEY_B);
    const after = await listAll(KEY_B);
    // one ended silence was deleted to make room: the count stays at the quota
    expect(after.length).toBe(Math.min(before + 1, 3));
    expect(after.filter((x) => x.state !== 'EXPIRED')).toHaveLength(3);
    for (const x of after) if (x.state !== 'EXPIRED') await svc.gql(KEY_B).request(Expire, { id: x.id });
  });

  it('simulateRouting shows the silence that would apply (SILENCED), the others MATCHED', async () => {
    const { createWebhookIntegration: w } = await svc
      .gql()
      .request<{ createWebhookIntegration: { id: string } }>(
        `mutation ($i: CreateWebhookIntegrationInput!) { createWebhookIntegration(input: $i) { id } }`,
        {
          i: { name: 'hook', url: 'http://127.0.0.1:9/hook' },
        },
      );
    await svc.gql().request(ops.CreateNotificationRouter, {
      details: { name: 'issuers', eventTypeId: 'certmgr-issuer-health-notification-config' },
      filterConfig: { advancedFilterExpression: '' },
      integrationConfig: { integrationId: w.id },
    });
    const { createSilence: s } = await create({ matcher: 'data.issuerName == "in-maintenance"', comment: 'issuer migration' });
    const Sim = `query ($e: EventInput!) { simulateRouting(event: $e) { routers { verdict wouldNotify silencedBy { id comment endsAt } } } }`;
    type Sim = {
      simulateRouting: {
        routers: { verdict: string; wouldNotify: boolean; silencedBy: { id: string; comment: string; endsAt: string } | null }[];
      };
    };
    const muted = (await svc.gql().request<Sim>(Sim, { e: issuerNotReady({ issuerName: 'in-maintenance' }) })).simulateRouting.routers;
    expect(muted).toEqual([
      { verdict: 'SILENCED', wouldNotify: false, silencedBy: { id: s.id, comment: 'issuer migration', endsAt: s.endsAt } },
    ]);
    const other = (await svc.gql().request<Sim>(Sim, { e: issuerNotReady({ issuerName: 'elsewhere' }) })).simulateRouting.routers;
    expect(other).toEqual([{ verdict: 'MATCHED', wouldNotify: true, silencedBy: null }]);
    // a recovery without a sent trigger is silenced too
    const rec = (await svc.gql().request<Sim>(Sim, { e: issuerActive({ issuerName: 'in-maintenance' }) })).simulateRouting.routers;
    expect(rec[0]?.verdict).toBe('SILENCED');
    await svc.gql().request(Expire, { id: s.id });
    const after = (await svc.gql().request<Sim>(Sim, { e: issuerNotReady({ issuerName: 'in-maintenance' }) })).simulateRouting.routers;
    expect(after[0]?.verdict).toBe('MATCHED');
  });
});
