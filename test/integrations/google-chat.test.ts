/**
 * GOOGLE_CHAT against a loopback receiver standing in for a space's incoming webhook: the documented request
 * (POST to the webhook URL with its key/token kept and messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD;
 * body { text, cardsV2, thread.threadKey }), escaping, limits and the egress policy.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../src/integrations/egress.js';
import { createNotifier } from '../../src/integrations/index.js';
import { buildGoogleChatMessage, GOOGLE_CHAT_LIMITS } from '../../src/integrations/google-chat.js';
import { ALL_TYPES, CLUSTER_ID, EVENTS, integration, notification, opts, startReceiver, type Receiver } from './helpers.js';

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
