import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADAPTIVE_CARD_CONTENT_TYPE } from '../../src/integrations/chat.js';
import { createNotifier } from '../../src/integrations/index.js';
import { ALL_TYPES, EVENTS, integration, notification, opts, startReceiver, type Receiver } from './helpers.js';

interface Block {
  type: string;
  text?: { type: string; text: string };
  fields?: Array<{ type: string; text: string }>;
  elements?: Array<{ type: string; text: string }>;
}

describe('SLACK incoming webhook', () => {
  let rx: Receiver;
  const slack = () => integration('SLACK', { webhookUrl: `${rx.url}/services/T000/B000/XXXXXXXX` });
  beforeAll(async () => {
    rx = await startReceiver((_r, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
  });

  it('posts text and blocks', async () => {
    const r = await createNotifier('SLACK', opts()).send(
      notification(slack(), EVENTS['evt.healthstatus.certmgr-certificate-resource.notready']),
    );
    expect(r).toEqual({ outcome: 'delivered', statusCode: 200, responseBody: 'ok' });
    const req = rx.requests[0]!;
    expect(req.path).toBe('/services/T000/B000/XXXXXXXX');
    expect(req.headers['content-type']).toBe('application/json');
    const body = JSON.parse(req.body) as { text: string; blocks: Block[] };
    expect(body.text).toMatch(/^:large_orange_circle: Certificate shop-tls in cluster prod is not ready \(namespace shop\): DoesNotExist/);
    expect(body.blocks.map((b) => b.type)).toEqual(['header', 'section', 'section', 'context']);
    expect(body.blocks[0]!.text).toEqual({ type: 'plain_text', text: 'Certificate shop-tls in cluster prod is not ready', emoji: true });
    expect(body.blocks[1]!.text!.text).toBe('Issuing certificate as Secret does not exist');
    const fields = body.blocks[2]!.fields!.map((f) => f.text);
    expect(fields).toContain('*Namespace*\nshop');
    expect(fields).toContain('*DNS names*\nshop.example.com, www.shop.example.com');
    expect(fields).toContain('*Router*\nprod issuers');
    expect(fields.length).toBeLessThanOrEqual(10);
    expect(body.blocks[3]!.elements![0]!.text).toContain('evt.healthstatus.certmgr-certificate-resource.notready');
  });

  it('escapes Slack control characters in event text', async () => {
    const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, statusMessage: 'x <!channel> & <https://evil|click>' };
    await createNotifier('SLACK', opts()).send(notification(slack(), { type: 'evt.healthstatus.certmgr-issuer.notready', data }));
    const body = JSON.parse(rx.requests[0]!.body) as { text: string; blocks: Block[] };
    expect(rx.requests[0]!.body).not.toContain('<!channel>');
    expect(body.blocks[1]!.text!.text).toBe('x &lt;!channel&gt; &amp; &lt;https://evil|click&gt;');
  });

  it.each(ALL_TYPES)('%s renders within Block Kit limits', async (type) => {
    await createNotifier('SLACK', opts()).send(notification(slack(), EVENTS[type]));
    const body = JSON.parse(rx.requests[0]!.body) as { blocks: Block[] };
    expect(body.blocks.length).toBeLessThanOrEqual(50);
    expect(body.blocks[0]!.text!.text.length).toBeLessThanOrEqual(150);
    for (const b of body.blocks) for (const f of b.fields ?? []) expect(f.text.length).toBeLessThanOrEqual(2000);
  });

  it('without a webhook URL is dead', async () => {
    const r = await createNotifier('SLACK', opts()).send(
      notification(integration('SLACK', {}), EVENTS['evt.healthstatus.certmgr-issuer.notready']),
    );
    expect(r).toEqual({ outcome: 'dead', error: 'webhook URL is not configured' });
  });
});

describe('TEAMS workflow webhook', () => {
  let rx: Receiver;
  const teams = () => integration('TEAMS', { webhookUrl: `${rx.url}/workflows/abc/triggers/manual/paths/invoke?sig=SIGSECRET` });
  beforeAll(async () => {
    rx = await startReceiver((_r, res) => res.writeHead(202).end());
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
  });

  it('posts a message with an Adaptive Card attachment', async () => {
    const r = await createNotifier('TEAMS', opts()).send(notification(teams(), EVENTS['evt.healthstatus.certmgr-issuer.notready']));
    expect(r).toEqual({ outcome: 'delivered', statusCode: 202 });
    const msg = JSON.parse(rx.requests[0]!.body);
    expect(msg.type).toBe('message');
    expect(msg.attachments).toHaveLength(1);
    const att = msg.attachments[0];
    expect(att.contentType).toBe(ADAPTIVE_CARD_CONTENT_TYPE);
    expect(att.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(att.contentUrl).toBeNull();
    const card = att.content;
    expect(card).toMatchObject({ $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.4' });
    expect(card.body[0]).toMatchObject({
      type: 'TextBlock',
      text: 'Issuer letsencrypt-prod in cluster prod is not ready',
      weight: 'Bolder',
      color: 'Attention',
    });
    expect(card.body[1]).toMatchObject({
      type: 'TextBlock',
      text: 'Failed to update ACME account:400 urn:ietf:params:acme:error:invalidContact',
    });
    const factSet = card.body.find((b: { type: string }) => b.type === 'FactSet');
    expect(factSet.facts).toContainEqual({ title: 'Reason', value: 'ErrUpdateACMEAccount' });
    expect(factSet.facts).toContainEqual({ title: 'Namespace', value: 'cert-manager' });
  });

  it('colours restored events green and expiration amber', async () => {
    const n = createNotifier('TEAMS', opts());
    await n.send(notification(teams(), EVENTS['evt.healthstatus.certmgr-issuer.active']));
    await n.send(notification(teams(), EVENTS['evt.policy.expiringcertificates.failed']));
    const [restored, expiring] = rx.requests.map((q) => JSON.parse(q.body).attachments[0].content.body[0]);
    expect(restored).toMatchObject({ text: 'Issuer letsencrypt-prod in cluster prod is ready again', color: 'Good' });
    expect(expiring).toMatchObject({ text: 'Certificate expiring within 30 days: Certificate expiration', color: 'Warning' });
  });
});
