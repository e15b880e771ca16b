/**
 * DISCORD against a loopback receiver standing in for "Execute Webhook": the documented request (POST to the
 * webhook URL with ?wait=true; { content, embeds, allowed_mentions }), Discord's embed limits, and the 429 body's
 * retry_after.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildDiscordMessage, discordRetryAfterMs, DISCORD_LIMITS, embedChars } from '../../src/integrations/discord.js';
import { createNotifier } from '../../src/integrations/index.js';
import type { Notification, NotificationGroup } from '../../src/integrations/types.js';
import {
  ALL_TYPES,
  EVENTS,
  groupNotification,
  integration,
  notification,
  opts,
  outageGroup,
  startReceiver,
  type Receiver,
} from './helpers.js';

const RUNBOOK = 'https://runbooks.example/issuer-outage';

const TOKEN = 'dQw4w9WgXcQ-s3cr3t-webhook-t0ken';
const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('DISCORD webhook against a loopback receiver', () => {
  let rx: Receiver;
  const hook = (query = '') => integration('DISCORD', { webhookUrl: `${rx.url}/api/webhooks/1234567890/${TOKEN}${query}` });
  const send = (type: keyof typeof EVENTS, data?: Record<string, unknown>, query = '') =>
    createNotifier('DISCORD', opts({ clock: () => NOW })).send(notification(hook(query), { type, data: data ?? EVENTS[type].data }));
  const ok = () => rx.handle((_r, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"1","type":0}'));

  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
    ok();
  });

  it('posts content and one embed with ?wait=true; mentions are off', async () => {
    const r = await send('evt.healthstatus.certmgr-issuer.notready');
    expect(r).toMatchObject({ outcome: 'delivered', statusCode: 200 });
    const req = rx.requests[0]!;
    expect(req.path).toBe(`/api/webhooks/1234567890/${TOKEN}?wait=true`);
    expect(req.headers['content-type']).toBe('application/json');
    const b = JSON.parse(req.body);
    expect(Object.keys(b).sort()).toEqual(['allowed_mentions', 'content', 'embeds']);
    expect(b.allowed_mentions).toEqual({ parse: [] });
    expect(b.content).toMatch(/^🔴 Issuer letsencrypt-prod in cluster prod is not ready/);
    expect(b.embeds).toHaveLength(1);
    const e = b.embeds[0];
    expect(e.title).toBe('Issuer letsencrypt-prod in cluster prod is not ready');
    expect(e.description).toBe('Failed to update ACME account:400 urn:ietf:params:acme:error:invalidContact');
    expect(e.color).toBe(0xb3261e);
    expect(e.timestamp).toBe('2026-03-01T10:00:05.000Z');
    expect(e.fields).toContainEqual({ name: 'Reason', value: 'ErrUpdateACMEAccount', inline: true });
    expect(e.footer.text).toBe('certmgr-notify · critical · evt.healthstatus.certmgr-issuer.notready');
  });

  it('keeps a thread_id of the URL and does not add wait twice', async () => {
    await send('evt.healthstatus.certmgr-issuer.active', undefined, '?thread_id=42&wait=false');
    const url = new URL(rx.requests[0]!.path, rx.url);
    expect(url.searchParams.get('thread_id')).toBe('42');
    expect(url.searchParams.getAll('wait')).toEqual(['true']);
  });

  it('@everyone in event text does not ping (allowed_mentions.parse is empty)', async () => {
    const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, statusMessage: '@everyone <@&123> look' };
    await send('evt.healthstatus.certmgr-issuer.notready', data);
    expect(JSON.parse(rx.requests[0]!.body).allowed_mentions).toEqual({ parse: [] });
  });

  it.each(ALL_TYPES)('%s: within the embed limits, even for huge event text', (type) => {
    const big = 'z'.repeat(10_000);
    const data = { ...EVENTS[type].data, statusMessage: big, message: big, statusReason: big, certificateName: big, issuerName: big };
    const m = buildDiscordMessage(notification(hook(), { type, data }));
    expect([...m.content].length).toBeLessThanOrEqual(DISCORD_LIMITS.content);
    const e = m.embeds[0]!;
    expect([...e.title].length).toBeLessThanOrEqual(DISCORD_LIMITS.title);
    expect([...e.description].length).toBeLessThanOrEqual(DISCORD_LIMITS.description);
    expect(e.fields.length).toBeLessThanOrEqual(DISCORD_LIMITS.fields);
    for (const f of e.fields) {
      expect([...f.name].length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldName);
      expect([...f.value].length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldValue);
    }
    expect(embedChars(e)).toBeLessThanOrEqual(DISCORD_LIMITS.total);
  });

  describe('messages (the same texts as the other channels)', () => {
    const outage = (over: Partial<Notification> = {}) => groupNotification(hook(), outageGroup(200, 3, 20, { runbookUrl: RUNBOOK }), over);
    const sendN = (n: Notification) => createNotifier('DISCORD', opts({ clock: () => NOW })).send(n);

    it('a group: a field per member list with "and N more", the runbook as the embed url; mentions off', async () => {
      expect((await sendN(outage())).outcome).toBe('delivered');
      const b = JSON.parse(rx.requests[0]!.body) as ReturnType<typeof buildDiscordMessage>;
      expect(b.allowed_mentions).toEqual({ parse: [] });
      const e = b.embeds[0]!;
      expect(e.title).toBe('Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered');
      expect(e.url).toBe(RUNBOOK);
      expect(e.description).toMatch(/^Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered \(/);
      expect(e.fields[0]!.name).toBe('Not ready (200)');
      const firing = e.fields[0]!.value.split('\n');
      expect(firing[0]).toBe('• Certificate team-0/shop-0: IssuerNotReady');
      expect(firing).toHaveLength(11);
      expect(firing[10]).toBe('and 190 more');
      expect(e.fields[1]!.name).toBe('Recovered (3)');
      expect(e.fields[1]!.value.split('\n')).toHaveLength(3);
      expect(e.fields.map((f) => f.name)).toEqual([
        'Not ready (200)',
        'Recovered (3)',
        'Issuer',
        'Cluster',
        'Not ready',
        'Recovered',
        'Runbook',
        'Router',
      ]);
      expect(e.fields.some((f) => f.name === 'Details')).toBe(false);
      expect(e.footer.text).toBe('certmgr-notify · error · evt.healthstatus.certmgr-certificate-resource.notready');
    });

    it('a reminder: "Reminder:" title, the Reminder field first after the members, the footer', () => {
      const e = buildDiscordMessage(outage({ reminder: true })).embeds[0]!;
      expect(e.title).toMatch(/^Reminder: Issuer letsencrypt-prod/);
      expect(e.fields[2]).toEqual({ name: 'Reminder', value: 'still not ready: 200', inline: true });
      expect(e.footer.text).toContain(' · reminder · ');
      const single = buildDiscordMessage(notification(hook(), EVENTS['evt.healthstatus.certmgr-issuer.notready'], { reminder: true }));
      expect(single.embeds[0]!.title).toBe('Reminder: Issuer letsencrypt-prod in cluster prod is not ready');
      expect(single.content).toMatch(/^🔴 Reminder: /);
    });

    it("a template's text is the description; a single event's runbook is the embed url", () => {
      const m = buildDiscordMessage(outage({ rendered: { title: 'Outage', text: 'Call the PKI on-call @everyone' } }));
      expect(m.embeds[0]!.title).toBe('Outage');
      expect(m.embeds[0]!.description).toBe('Call the PKI on-call @everyone');
      expect(m.allowed_mentions).toEqual({ parse: [] });
      const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, runbookUrl: RUNBOOK };
      const single = buildDiscordMessage(notification(hook(), { type: 'evt.healthstatus.certmgr-issuer.notready', data }));
      expect(single.embeds[0]!.url).toBe(RUNBOOK);
      expect(single.embeds[0]!.fields.find((f) => f.name === 'Runbook')?.value).toBe(RUNBOOK);
      const bad = { ...data, runbookUrl: 'javascript:alert(1)' };
      expect(
        buildDiscordMessage(notification(hook(), { type: 'evt.healthstatus.certmgr-issuer.notready', data: bad })).embeds[0]!.url,
      ).toBeUndefined();
    });

    it('a group of 10,000 members with huge field values: within every embed limit, members kept before facts', async () => {
      const HUGE = '𝕏<&>*_['.repeat(40_000);
      const g: NotificationGroup = outageGroup(10_000, 10_000, 10_000, {
        statusReason: HUGE,
        statusMessage: HUGE,
        certificateName: HUGE,
        namespace: HUGE,
        runbookUrl: RUNBOOK,
      });
      g.labels = { 'data.issuerName': HUGE, 'data.clusterName': HUGE, [HUGE]: HUGE };
      const n = groupNotification(hook(), g, { reminder: true, rendered: { title: HUGE, text: HUGE } });
      expect((await sendN(n)).outcome).toBe('delivered');
      const m = JSON.parse(rx.requests[0]!.body) as ReturnType<typeof buildDiscordMessage>;
      expect([...m.content].length).toBeLessThanOrEqual(DISCORD_LIMITS.content);
      const e = m.embeds[0]!;
      expect([...e.title].length).toBeLessThanOrEqual(DISCORD_LIMITS.title);
      expect([...e.description].length).toBeLessThanOrEqual(DISCORD_LIMITS.description);
      expect(e.fields.length).toBeLessThanOrEqual(DISCORD_LIMITS.fields);
      for (const f of e.fields) {
        expect([...f.name].length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldName);
        expect([...f.value].length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldValue);
      }
      expect(embedChars(e)).toBeLessThanOrEqual(DISCORD_LIMITS.total);
      expect(e.url).toBe(RUNBOOK);
      expect(e.fields[0]!.name).toBe('Not ready (10000)');
      expect(e.fields[0]!.value).toMatch(/and \d+ more$/);
    });
  });

  it("429: the body's retry_after (seconds, fractional) is honoured over the header", async () => {
    rx.handle((_r, res) =>
      res
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' })
        .end('{"message":"You are being rate limited.","retry_after":2.5,"global":false}'),
    );
    const r = await send('evt.healthstatus.certmgr-issuer.notready');
    expect(r).toMatchObject({ outcome: 'retry', statusCode: 429, retryAfterMs: 2500 });
  });

  it('429 without a JSON body: the Retry-After header', async () => {
    rx.handle((_r, res) => res.writeHead(429, { 'retry-after': '4' }).end('slow down'));
    expect(await send('evt.healthstatus.certmgr-issuer.notready')).toMatchObject({ outcome: 'retry', retryAfterMs: 4000 });
  });

  it.each([
    [500, 'retry'],
    [502, 'retry'],
    [400, 'dead'],
    [401, 'dead'],
    [404, 'dead'],
  ] as const)('HTTP %i -> %s, the token never in the result', async (status, outcome) => {
    rx.handle((r, res) => res.writeHead(status).end(`{"message":"Unknown Webhook","path":"${r.path}"}`));
    const r = await send('evt.healthstatus.certmgr-issuer.notready');
    expect(r).toMatchObject({ outcome, statusCode: status });
    expect(JSON.stringify(r)).not.toContain(TOKEN);
  });

  it.each([
    ['{"retry_after":0.25}', 250],
    ['{"retry_after":64.57,"global":true}', 64_570],
    ['{"retry_after":-1}', undefined],
    ['{"retry_after":"5"}', undefined],
    ['not json', undefined],
    [undefined, undefined],
  ] as const)('discordRetryAfterMs(%s) = %s', (body, want) => {
    expect(discordRetryAfterMs(body)).toBe(want);
  });
});
