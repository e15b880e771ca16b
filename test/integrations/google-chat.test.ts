/**
 * GOOGLE_CHAT against a loopback receiver standing in for a space's incoming webhook: the documented request
 * (POST to the webhook URL with its key/token kept and messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD;
 * body { text, cardsV2, thread.threadKey }), escaping, limits and the egress policy.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../src/integrations/egress.js';
import { createNotifier } from '../../src/integrations/index.js';
import { buildGoogleChatMessage, GOOGLE_CHAT_LIMITS } from '../../src/integrations/google-chat.js';
import type { Notification, NotificationGroup } from '../../src/integrations/types.js';
import {
  ALL_TYPES,
  CLUSTER_ID,
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

interface Widget {
  decoratedText?: { topLabel?: string; text: string; bottomLabel?: string; wrapText: boolean };
  textParagraph?: { text: string };
  buttonList?: { buttons: Array<{ text: string; onClick: { openLink: { url: string } } }> };
}
interface Section {
  header?: string;
  widgets: Widget[];
}
const sectionsOf = (m: { cardsV2: Array<{ card: Record<string, unknown> }> }): Section[] => m.cardsV2[0]!.card['sections'] as Section[];

const QUERY = 'key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI&token=s3cr3t-t0ken';

describe('GOOGLE_CHAT incoming webhook against a loopback receiver', () => {
  let rx: Receiver;
  const chat = () => integration('GOOGLE_CHAT', { webhookUrl: `${rx.url}/v1/spaces/AAAAbcd/messages?${QUERY}` });
  const send = (type: keyof typeof EVENTS, data?: Record<string, unknown>) =>
    createNotifier('GOOGLE_CHAT', opts()).send(notification(chat(), { type, data: data ?? EVENTS[type].data }));
  const body = (i = 0) => JSON.parse(rx.requests[i]!.body);

  beforeAll(async () => {
    rx = await startReceiver((_r, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"name":"spaces/AAAAbcd/messages/x.y","thread":{}}'),
    );
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
  });

  it('posts text, one card and the thread key, with the reply option on the URL', async () => {
    const r = await send('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(r).toMatchObject({ outcome: 'delivered', statusCode: 200 });
    const req = rx.requests[0]!;
    const url = new URL(req.path, rx.url);
    expect(url.pathname).toBe('/v1/spaces/AAAAbcd/messages');
    expect(url.searchParams.get('key')).toBe('AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI');
    expect(url.searchParams.get('token')).toBe('s3cr3t-t0ken');
    expect(url.searchParams.get('messageReplyOption')).toBe('REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD');
    expect(req.headers['content-type']).toBe('application/json; charset=UTF-8');
    const b = body();
    expect(Object.keys(b).sort()).toEqual(['cardsV2', 'text', 'thread']);
    expect(b.text).toMatch(/^Certificate shop-tls in cluster prod is not ready \(namespace shop\): DoesNotExist/);
    expect(b.thread).toEqual({ threadKey: `certmgr:certificate:${CLUSTER_ID}:shop:shop-tls` });
    expect(b.cardsV2).toHaveLength(1);
    const { cardId, card } = b.cardsV2[0];
    expect(cardId).toBe('certmgr-notify');
    expect(card.header).toEqual({
      title: 'Certificate shop-tls in cluster prod is not ready',
      subtitle: 'certmgr-notify · error · evt.healthstatus.certmgr-certificate-resource.notready',
    });
    const widgets = card.sections[0].widgets as Array<{ decoratedText: { topLabel: string; text: string; wrapText: boolean } }>;
    expect(widgets).toContainEqual({
      decoratedText: { topLabel: 'DNS names', text: 'shop.example.com, www.shop.example.com', wrapText: true },
    });
    expect(widgets).toContainEqual({ decoratedText: { topLabel: 'Router', text: 'prod issuers', wrapText: true } });
  });

  it('a recovery replies in the thread of its trigger (same threadKey)', async () => {
    await send('evt.healthstatus.certmgr-issuer.notready');
    await send('evt.healthstatus.certmgr-issuer.active');
    expect(body(1).thread.threadKey).toBe(body(0).thread.threadKey);
    expect(body(1).cardsV2[0].card.header.title).toBe('Issuer letsencrypt-prod in cluster prod is ready again');
  });

  it("a group notification threads under the group's key; a reminder says so", () => {
    const group = {
      key: 'certmgr:group:r1:abcdef0123456789',
      labels: { 'data.issuerName': 'letsencrypt-prod' },
      firing: [],
      resolved: [],
      firingCount: 3,
      resolvedCount: 0,
      allResolved: false,
    };
    const g = buildGoogleChatMessage(notification(chat(), EVENTS['evt.healthstatus.certmgr-issuer.notready'], { group, reminder: true }));
    expect(g.thread.threadKey).toBe('certmgr:group:r1:abcdef0123456789');
    expect((g.cardsV2[0]!.card['header'] as { subtitle: string }).subtitle).toContain('reminder');
  });

  it('event text cannot mention everyone or inject markup', async () => {
    const data = {
      ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data,
      statusMessage: '<users/all> <b>x</b> & <https://evil|click>',
    };
    await send('evt.healthstatus.certmgr-issuer.notready', data);
    const raw = rx.requests[0]!.body;
    expect(raw).not.toContain('<users/all>');
    expect(raw).not.toContain('<b>');
    const b = body();
    expect(b.text).toContain('‹users/all› ‹b›x‹/b› & ‹https://evil|click›');
    const msg = b.cardsV2[0].card.sections[0].widgets.find(
      (w: { decoratedText: { topLabel: string } }) => w.decoratedText.topLabel === 'Message',
    );
    expect(msg.decoratedText.text).toBe('&lt;users/all&gt; &lt;b&gt;x&lt;/b&gt; &amp; &lt;https://evil|click&gt;');
  });

  it.each(ALL_TYPES)('%s: within the message limits, even for huge event text', (type) => {
    const big = 'y'.repeat(50_000);
    const data = { ...EVENTS[type].data, statusMessage: big, message: big, certificateName: 'n'.repeat(5000) };
    const m = buildGoogleChatMessage(notification(chat(), { type, data }));
    expect(Buffer.byteLength(JSON.stringify(m))).toBeLessThanOrEqual(GOOGLE_CHAT_LIMITS.messageBytes);
    expect([...m.text].length).toBeLessThanOrEqual(GOOGLE_CHAT_LIMITS.text);
    expect(m.thread.threadKey.length).toBeLessThanOrEqual(GOOGLE_CHAT_LIMITS.threadKey);
    const header = m.cardsV2[0]!.card['header'] as { title: string };
    expect([...header.title].length).toBeLessThanOrEqual(GOOGLE_CHAT_LIMITS.header);
  });

  describe('messages (the same texts as the other channels)', () => {
    const outage = (over: Partial<Notification> = {}) => groupNotification(chat(), outageGroup(200, 3, 20, { runbookUrl: RUNBOOK }), over);

    it('a group: one section per member list with "and N more", the facts, a Runbook button', async () => {
      expect((await createNotifier('GOOGLE_CHAT', opts()).send(outage())).outcome).toBe('delivered');
      const b = body();
      expect(b.thread).toEqual({ threadKey: 'grp:0123456789abcdef' });
      expect(b.cardsV2[0].card.header.title).toBe('Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered');
      expect(b.text).toMatch(
        /^Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered \(Certificate team-0\/shop-0, /,
      );
      const sections = sectionsOf(b);
      expect(sections.map((s) => s.header ?? null)).toEqual(['Not ready (200)', 'Recovered (3)', null, null]);
      const firing = sections[0]!.widgets;
      expect(firing).toHaveLength(11);
      expect(firing[0]).toEqual({ decoratedText: { text: 'Certificate team-0/shop-0', bottomLabel: 'IssuerNotReady', wrapText: true } });
      expect(firing[10]).toEqual({ textParagraph: { text: '<i>and 190 more</i>' } });
      expect(sections[1]!.widgets).toHaveLength(3);
      const facts = sections[2]!.widgets.map((w) => w.decoratedText!.topLabel);
      expect(facts).toEqual(['Issuer', 'Cluster', 'Not ready', 'Recovered', 'Router']);
      expect(sections[3]!.widgets).toEqual([{ buttonList: { buttons: [{ text: 'Runbook', onClick: { openLink: { url: RUNBOOK } } }] } }]);
    });

    it('a reminder: "Reminder:" title, a reminder paragraph first, the Reminder fact, the subtitle', () => {
      const m = buildGoogleChatMessage(outage({ reminder: true }));
      const header = m.cardsV2[0]!.card['header'] as { title: string; subtitle: string };
      expect(header.title).toMatch(/^Reminder: Issuer letsencrypt-prod/);
      expect(header.subtitle).toContain(' · reminder · ');
      expect(m.text).toMatch(/^Reminder: /);
      const sections = sectionsOf(m);
      expect(sections[0]!.widgets[0]!.textParagraph!.text).toMatch(/^<b>Reminder<\/b>/);
      const facts = sections.flatMap((s) => s.widgets).filter((w) => w.decoratedText?.topLabel);
      expect(facts[0]!.decoratedText).toMatchObject({ topLabel: 'Reminder', text: 'still not ready: 200' });
    });

    it("a template's text is a paragraph, escaped; a single event's runbook is a button", () => {
      const m = buildGoogleChatMessage(outage({ rendered: { title: 'Outage', text: 'Call <b>PKI</b> & <users/all>' } }));
      expect(sectionsOf(m)[0]!.widgets).toEqual([{ textParagraph: { text: 'Call &lt;b&gt;PKI&lt;/b&gt; &amp; &lt;users/all&gt;' } }]);
      expect(m.text).toBe('Call ‹b›PKI‹/b› & ‹users/all›'); // a template's text is the summary (docs/templates.md)
      const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, runbookUrl: RUNBOOK };
      const single = buildGoogleChatMessage(notification(chat(), { type: 'evt.healthstatus.certmgr-issuer.notready', data }));
      const widgets = sectionsOf(single).flatMap((s) => s.widgets);
      expect(widgets).toContainEqual({ buttonList: { buttons: [{ text: 'Runbook', onClick: { openLink: { url: RUNBOOK } } }] } });
      expect(widgets.some((w) => w.decoratedText?.topLabel === 'Runbook')).toBe(false);
    });

    it('hostile member names and group labels are escaped in every card text', () => {
      const HOSTILE = '<users/all> <a href="https://evil.example">x</a> & <b>';
      const g = outageGroup(2, 0, 20, { certificateName: HOSTILE, statusReason: HOSTILE });
      g.labels = { 'data.issuerName': HOSTILE };
      const m = buildGoogleChatMessage(groupNotification(chat(), g, { rendered: { text: HOSTILE } }));
      // the header is plain text (not parsed by Chat); every section text is escaped
      const card = JSON.stringify(sectionsOf(m));
      expect(card).not.toMatch(/<users|<a |<b>/);
      expect(card).toContain('&lt;users/all&gt; &lt;a href=');
      expect(m.text).not.toMatch(/[<>]/);
    });

    it('a group of 10,000 members with huge field values: within 32,000 bytes, the counts kept', async () => {
      const HUGE = '𝕏<&>*_['.repeat(40_000);
      const g: NotificationGroup = outageGroup(10_000, 10_000, 10_000, {
        statusReason: HUGE,
        statusMessage: HUGE,
        certificateName: HUGE,
        namespace: HUGE,
        runbookUrl: RUNBOOK,
      });
      g.labels = { 'data.issuerName': HUGE, 'data.clusterName': HUGE, [HUGE]: HUGE };
      const n = groupNotification(chat(), g, { reminder: true, rendered: { title: HUGE, text: HUGE } });
      expect((await createNotifier('GOOGLE_CHAT', opts()).send(n)).outcome).toBe('delivered');
      const raw = rx.requests[0]!.body;
      expect(Buffer.byteLength(raw)).toBeLessThanOrEqual(GOOGLE_CHAT_LIMITS.messageBytes);
      const m = JSON.parse(raw) as ReturnType<typeof buildGoogleChatMessage>;
      expect([...m.text].length).toBeLessThanOrEqual(GOOGLE_CHAT_LIMITS.text);
      expect([...(m.cardsV2[0]!.card['header'] as { title: string }).title].length).toBeLessThanOrEqual(GOOGLE_CHAT_LIMITS.header);
      const sections = sectionsOf(m);
      for (const s of sections) expect(s.widgets.length).toBeLessThanOrEqual(GOOGLE_CHAT_LIMITS.widgets + 1);
      expect(JSON.stringify(sections)).not.toContain('<&>');
      expect(sections.some((s) => s.header === 'Not ready (10000)')).toBe(true);
      expect(JSON.stringify(sections)).toContain('more</i>');
      expect(JSON.stringify(sections)).toContain(RUNBOOK);
    });
  });

  it.each([
    [429, { 'retry-after': '3' }, { outcome: 'retry', statusCode: 429, retryAfterMs: 3000 }],
    [500, {}, { outcome: 'retry', statusCode: 500 }],
    [400, {}, { outcome: 'dead', statusCode: 400 }],
    [404, {}, { outcome: 'dead', statusCode: 404 }],
  ] as const)('HTTP %i -> %o', async (status, headers, want) => {
    rx.handle((_r, res) => res.writeHead(status, headers).end('{"error":{"code":400}}'));
    try {
      const r = await send('evt.healthstatus.certmgr-issuer.notready');
      expect(r).toMatchObject(want);
      expect(JSON.stringify(r)).not.toContain('s3cr3t-t0ken');
    } finally {
      rx.handle((_r, res) => res.writeHead(200).end('{}'));
    }
  });

  it('the default egress policy refuses a loopback webhook: dead, never connected', async () => {
    const r = await createNotifier('GOOGLE_CHAT', opts({ egress: new EgressPolicy() })).send(
      notification(chat(), EVENTS['evt.healthstatus.certmgr-issuer.notready']),
    );
    expect(r.outcome).toBe('dead');
    expect(r.error).toMatch(/^webhook URL /);
    expect(rx.requests).toHaveLength(0);
  });
});
