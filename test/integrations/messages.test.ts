/**
 * What every integration type says for a group, a reminder, a template and hostile or huge text (docs/integrations.md "Messages"), through the real notifiers and loopback receivers.
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { escapeTeams, TEAMS_MAX_BYTES } from '../../src/integrations/chat.js';
import { ROOT_CAUSE_HINTS } from '../../src/emitter/rootcause/classify.js';
import { withRootCause } from '../../src/emitter/rootcause/event.js';
import { buildDiscordMessage } from '../../src/integrations/discord.js';
import { buildEmail } from '../../src/integrations/email.js';
import { buildGoogleChatMessage } from '../../src/integrations/google-chat.js';
import { buildOpsgenieAlert } from '../../src/integrations/opsgenie.js';
import { buildIncidentEvent, MAX_EVENT_BYTES, serializeIncidentEvent } from '../../src/integrations/incident.js';
import { createNotifier } from '../../src/integrations/index.js';
import { buildCloudEvent } from '../../src/integrations/payload.js';
import type { IntegrationType, Notification, NotificationGroup } from '../../src/integrations/types.js';
import { EVENTS, groupNotification, integration, notification, opts, outageGroup, startReceiver, type Receiver } from './helpers.js';

const RUNBOOK = 'https://runbooks.example/issuer-outage';
const ROUTING_KEY = 'R0UT1NGKEY0123456789abcdefABCDEF';

interface SlackBlock {
  type: string;
  text?: { type: string; text: string };
  fields?: Array<{ type: string; text: string }>;
  elements?: Array<{ type: string; text: string | { text: string }; url?: string }>;
}
interface SlackBody {
  text: string;
  blocks: SlackBlock[];
}
interface CardElement {
  type: string;
  text?: string;
  facts?: Array<{ title: string; value: string }>;
}
interface TeamsBody {
  summary: string;
  attachments: Array<{ content: { body: CardElement[]; actions?: Array<{ type: string; title: string; url: string }> } }>;
}

/** The same notification for another integration type. */
const forType = (n: Notification, type: IntegrationType, secrets: Record<string, string>): Notification => ({
  ...n,
  integration: integration(type, secrets),
});

let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver((_r, res) => res.writeHead(200).end('ok'));
});
afterAll(() => rx.close());
beforeEach(() => {
  rx.requests.length = 0;
});

async function sent<T>(type: IntegrationType, n: Notification): Promise<T> {
  const secrets: Record<string, string> =
    type === 'INCIDENT_MGMT'
      ? { integrationKey: ROUTING_KEY }
      : type === 'WEBHOOK'
        ? { url: `${rx.url}/hook` }
        : { webhookUrl: `${rx.url}/chat` };
  const r = await createNotifier(type, opts({ incidentEventsUrl: rx.url })).send(forType(n, type, secrets));
  expect(r.outcome).toBe('delivered');
  return JSON.parse(rx.requests.at(-1)!.body) as T;
}

const outage = (over: Partial<Notification> = {}) =>
  groupNotification(integration('SLACK'), outageGroup(200, 3, 20, { runbookUrl: RUNBOOK }), over);

describe('a group notification in every integration type', () => {
  it('SLACK: header, the firing and recovered members, fields, the runbook button, a context line', async () => {
    const body = await sent<SlackBody>('SLACK', outage());
    expect(body.text).toBe(
      ':large_orange_circle: Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered (Certificate team-0/shop-0, Certificate team-1/shop-1, Certificate team-2/shop-2, and 197 more)',
    );
    expect(body.blocks.map((b) => b.type)).toEqual(['header', 'section', 'section', 'section', 'actions', 'context']);
    expect(body.blocks[0]!.text!.text).toBe('Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered');
    const firing = body.blocks[1]!.text!.text.split('\n');
    expect(firing[0]).toBe('*Not ready (200)*');
    expect(firing[1]).toBe('• Certificate team-0/shop-0: IssuerNotReady');
    expect(firing).toHaveLength(12);
    expect(firing[11]).toBe('_and 190 more_');
    expect(body.blocks[2]!.text!.text.split('\n')).toEqual([
      '*Recovered (3)*',
      '• Certificate team-4/shop-200: was unhealthy for 0h15m0s',
      '• Certificate team-5/shop-201: was unhealthy for 0h15m0s',
      '• Certificate team-6/shop-202: was unhealthy for 0h15m0s',
    ]);
    expect(body.blocks[3]!.fields!.map((f) => f.text)).toEqual([
      '*Issuer*\nletsencrypt-prod',
      '*Cluster*\nprod',
      '*Not ready*\n200',
      '*Recovered*\n3',
      '*Router*\nprod issuers',
    ]);
    expect(body.blocks[4]!.elements![0]).toMatchObject({ type: 'button', url: RUNBOOK });
    expect(body.blocks[5]!.elements![0]!.text).toBe(
      'certmgr-notify · error · group of 203 · evt.healthstatus.certmgr-certificate-resource.notready',
    );
  });

  it('SLACK: long member lines are dropped whole and counted in "and N more"', async () => {
    const long = 'n'.repeat(250);
    const body = await sent<SlackBody>(
      'SLACK',
      groupNotification(integration('SLACK'), outageGroup(200, 0, 20, { certificateName: long, statusReason: long })),
    );
    const lines = body.blocks[1]!.text!.text.split('\n');
    const shown = lines.filter((l) => l.startsWith('• '));
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.length).toBeLessThan(10);
    expect(lines.at(-1)).toBe(`_and ${200 - shown.length} more_`);
    expect(body.blocks[1]!.text!.text.length).toBeLessThanOrEqual(3000);
  });

  it('TEAMS: title, a FactSet per member list with "and N more", the facts, a runbook action', async () => {
    const msg = await sent<TeamsBody>('TEAMS', outage());
    const card = msg.attachments[0]!.content;
    expect(card.body[0]).toMatchObject({ text: 'Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered' });
    const texts = card.body.filter((e) => e.type === 'TextBlock').map((e) => e.text);
    expect(texts).toContain('Not ready (200)');
    expect(texts).toContain('and 190 more');
    expect(texts).toContain('Recovered (3)');
    const [firing, recovered, facts] = card.body.filter((e) => e.type === 'FactSet');
    expect(firing!.facts).toHaveLength(10);
    expect(firing!.facts![0]).toEqual({ title: 'Certificate team-0/shop-0', value: 'IssuerNotReady' });
    expect(recovered!.facts).toHaveLength(3);
    expect(facts!.facts).toContainEqual({ title: 'Not ready', value: '200' });
    expect(facts!.facts!.map((f) => f.title)).not.toContain('Details');
    expect(card.actions).toEqual([{ type: 'Action.OpenUrl', title: 'Runbook', url: RUNBOOK }]);
  });

  it('INCIDENT_MGMT: one incident per group key, members in custom_details, the runbook in links; resolve when all recovered', async () => {
    const ev = await sent<ReturnType<typeof buildIncidentEvent>>('INCIDENT_MGMT', outage());
    expect(rx.requests.at(-1)!.path).toBe('/v2/enqueue');
    expect(ev).toMatchObject({
      event_action: 'trigger',
      dedup_key: 'grp:0123456789abcdef',
      links: [{ href: RUNBOOK, text: 'Runbook' }],
      payload: {
        summary: expect.stringMatching(/^Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered \(/),
        severity: 'error',
        source: 'prod',
        component: 'group/letsencrypt-prod/prod',
        group: 'letsencrypt-prod',
        class: 'NotReady',
        timestamp: '2026-03-01T10:00:05.000Z',
      },
    });
    const details = ev.payload.custom_details as { group: { firing: unknown[]; resolved: unknown[]; firingCount: number } };
    expect(details).toMatchObject({
      router: 'prod issuers',
      runbookUrl: RUNBOOK,
      group: { key: 'grp:0123456789abcdef', firingCount: 200, resolvedCount: 3 },
    });
    expect(details.group.firing).toHaveLength(20);
    expect(details.group.firing[0]).toEqual({
      name: 'Certificate team-0/shop-0 in cluster prod',
      detail: 'IssuerNotReady',
      eventType: 'evt.healthstatus.certmgr-certificate-resource.notready',
      eventId: 'evt-down-0',
      correlationKey: expect.stringMatching(/^certmgr:certificate:.*:team-0:shop-0$/),
    });
    const resolved = await sent<ReturnType<typeof buildIncidentEvent>>(
      'INCIDENT_MGMT',
      groupNotification(integration('SLACK'), outageGroup(0, 200)),
    );
    expect(resolved).toMatchObject({ event_action: 'resolve', dedup_key: ev.dedup_key, payload: { severity: 'info', class: 'Recovered' } });
  });

  it('WEBHOOK: payload v1 with the group, its key as correlationKey, schema-valid', async () => {
    const ce = await sent<ReturnType<typeof buildCloudEvent>>('WEBHOOK', outage());
    expect(ce.data).toMatchObject({
      correlationKey: 'grp:0123456789abcdef',
      severity: 'error',
      runbookUrl: RUNBOOK,
      reminder: false,
      group: {
        key: 'grp:0123456789abcdef',
        firingCount: 200,
        resolvedCount: 3,
        allResolved: false,
        labels: { 'data.issuerName': 'letsencrypt-prod' },
      },
    });
    expect(ce.data.group!.firing).toHaveLength(20);
    expect(ce.data.group!.firing[0]).toEqual({
      eventId: 'evt-down-0',
      eventType: 'evt.healthstatus.certmgr-certificate-resource.notready',
      kind: 'certificate',
      state: 'unhealthy',
      correlationKey: expect.stringMatching(/:team-0:shop-0$/),
      cluster: 'prod',
      namespace: 'team-0',
      name: 'shop-0',
      detail: 'IssuerNotReady',
    });
    expect(validate(ce.data), JSON.stringify(validate.errors)).toBe(true);
  });

  it('EMAIL: subject, HTML lists (escaped) and text listing', () => {
    const mail = buildEmail(outage());
    expect(mail.subject).toBe('[certmgr-notify] Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered');
    expect(mail.html).toContain('<h3 style="margin:12px 0 4px 0;font-size:15px">Not ready (200)</h3>');
    expect(mail.html).toContain('<li><b>Certificate team-0/shop-0</b>: IssuerNotReady</li>');
    expect(mail.html).toContain('and 190 more');
    expect(mail.html).toContain(`<a href="${RUNBOOK}">Open the runbook</a>`);
    expect(mail.html.match(/<li>/g)).toHaveLength(13);
    expect(mail.text).toContain('Not ready (200):\n- Certificate team-0/shop-0: IssuerNotReady\n');
    expect(mail.text).toContain('and 190 more\nRecovered (3):\n');
    expect(mail.text).toContain(`Runbook: ${RUNBOOK}`);
    // the listing is shown once, as lists, not again as a fact
    expect(mail.text).not.toContain('Details:');
  });
});

describe('a single event’s runbook and expiry fields in every integration type', () => {
  const withRunbook = () =>
    notification(integration('SLACK'), {
      type: 'evt.policy.expiringcertificates.failed',
      data: {
        ...EVENTS['evt.policy.expiringcertificates.failed'].data,
        runbookUrl: RUNBOOK,
        daysUntilExpiry: 3,
        notAfter: '2026-03-04T12:00:00Z',
        certificateName: 'shop-tls',
        namespace: 'shop',
        clusterName: 'prod',
        dnsNames: ['shop.example.com'],
      },
    });

  it('SLACK: fields and a Runbook button', async () => {
    const body = await sent<SlackBody>('SLACK', withRunbook());
    const fields = body.blocks.find((b) => b.fields)!.fields!.map((f) => f.text);
    expect(fields).toEqual(
      expect.arrayContaining([
        '*Days until expiry*\n3',
        '*Not after*\n2026-03-04T12:00:00Z',
        '*Cluster*\nprod',
        '*DNS names*\nshop.example.com',
      ]),
    );
    expect(body.blocks.find((b) => b.type === 'actions')!.elements![0]).toMatchObject({ url: RUNBOOK });
  });

  it('TEAMS, EMAIL, INCIDENT_MGMT, WEBHOOK', async () => {
    const teams = await sent<TeamsBody>('TEAMS', withRunbook());
    expect(teams.attachments[0]!.content.actions).toEqual([{ type: 'Action.OpenUrl', title: 'Runbook', url: RUNBOOK }]);
    expect(JSON.stringify(teams)).toContain('{"title":"Days until expiry","value":"3"}');
    const mail = buildEmail(withRunbook());
    expect(mail.html).toContain(`<a href="${RUNBOOK}">Open the runbook</a>`);
    expect(mail.text).toContain('Not after: 2026-03-04T12:00:00Z');
    const ev = await sent<ReturnType<typeof buildIncidentEvent>>('INCIDENT_MGMT', withRunbook());
    expect(ev.links).toEqual([{ href: RUNBOOK, text: 'Runbook' }]);
    expect(ev.payload).toMatchObject({ source: 'prod', custom_details: { daysUntilExpiry: 3, runbookUrl: RUNBOOK } });
    const ce = await sent<ReturnType<typeof buildCloudEvent>>('WEBHOOK', withRunbook());
    expect(ce.data).toMatchObject({
      runbookUrl: RUNBOOK,
      expiration: { daysUntilExpiry: 3, notAfter: '2026-03-04T12:00:00Z', clusterName: 'prod', dnsNames: ['shop.example.com'] },
    });
    expect(validate(ce.data)).toBe(true);
  });

  it('INCIDENT_MGMT: a client-sent expiration gets the days and not-after read from its message', () => {
    const ev = buildIncidentEvent(notification(integration('SLACK'), EVENTS['evt.policy.expiringcertificates.failed']), ROUTING_KEY);
    expect(ev.payload.custom_details).toMatchObject({ daysUntilExpiry: 30, notAfter: '2026-03-31T00:00:00Z' });
    expect(ev.links).toBeUndefined();
  });
});

describe('a reminder in every integration type', () => {
  const reminder = () =>
    notification(integration('SLACK'), EVENTS['evt.healthstatus.certmgr-certificate-resource.notready'], { reminder: true });

  it('SLACK: "Reminder:" title, the Reminder field first, "reminder" in the context', async () => {
    const body = await sent<SlackBody>('SLACK', reminder());
    expect(body.blocks[0]!.text!.text).toBe('Reminder: Certificate shop-tls in cluster prod is not ready');
    expect(body.text).toMatch(/^:large_orange_circle: Reminder: Certificate shop-tls/);
    expect(body.blocks.find((b) => b.fields)!.fields![0]!.text).toBe('*Reminder*\nstill not ready since 2026-03-01T10:05:00Z');
    expect(body.blocks.at(-1)!.elements![0]!.text).toContain(' · reminder · ');
  });

  it('TEAMS, INCIDENT_MGMT, WEBHOOK and EMAIL mark it', async () => {
    const teams = await sent<TeamsBody>('TEAMS', reminder());
    expect(teams.attachments[0]!.content.body[0]!.text).toBe('Reminder: Certificate shop-tls in cluster prod is not ready');
    const incident = await sent<ReturnType<typeof buildIncidentEvent>>('INCIDENT_MGMT', reminder());
    expect(incident).toMatchObject({ event_action: 'trigger', payload: { custom_details: { reminder: true } } });
    expect(incident.payload.summary).toMatch(/^Reminder: /);
    const hook = await sent<ReturnType<typeof buildCloudEvent>>('WEBHOOK', reminder());
    expect(hook.data.reminder).toBe(true);
    expect(validate(hook.data)).toBe(true);
    const mail = buildEmail(reminder());
    expect(mail.subject).toBe('[certmgr-notify] Reminder: Certificate shop-tls in cluster prod is not ready');
    expect(mail.text).toContain('Reminder: still not ready since 2026-03-01T10:05:00Z');
  });
});

describe('hostile text is escaped per channel (event data, template output, group labels)', () => {
  const HOSTILE = '<!channel> <https://evil.example|click> [pwn](https://evil.example) **x** <script>alert(1)</script> & "q"';
  const hostile = (): Notification => {
    const g = outageGroup(2, 0, 20, { certificateName: `<!here>[a](https://evil.example)`, statusReason: HOSTILE });
    g.labels = { 'data.issuerName': HOSTILE };
    return groupNotification(integration('SLACK'), g, { rendered: { title: HOSTILE, text: `${HOSTILE}\n- item` } });
  };

  it('SLACK: no mention, link or channel ping can form', async () => {
    const body = await sent<SlackBody>('SLACK', hostile());
    // mrkdwn everywhere but the header, which is plain_text (never parsed for mentions or links)
    const mrkdwn = JSON.stringify([body.text, ...body.blocks.slice(1)]);
    expect(mrkdwn).not.toMatch(/<!channel>|<!here>|<https:/);
    expect(body.blocks[0]!.text!.type).toBe('plain_text');
    expect(body.blocks[1]!.text!.text).toContain('&lt;!channel&gt; &lt;https://evil.example|click&gt;');
    expect(body.blocks[2]!.text!.text).toContain('&lt;!here&gt;');
  });

  it('TEAMS: Markdown is escaped in text blocks and facts', async () => {
    const msg = await sent<TeamsBody>('TEAMS', hostile());
    const raw = JSON.stringify(msg.attachments[0]!.content.body);
    expect(raw).not.toContain('[pwn](https');
    expect(raw).not.toContain('**x**');
    const body = msg.attachments[0]!.content.body[1]!.text!;
    expect(body).toContain('\\[pwn\\](https://evil.example) \\*\\*x\\*\\*');
    expect(body).toContain('\n\\- item');
    expect(escapeTeams('1. a\n  + b\nc-d_e`f~')).toBe('\\1. a\n  \\+ b\nc-d\\_e\\`f\\~');
  });

  it('EMAIL: every text is HTML-escaped; the subject is one line', () => {
    const mail = buildEmail({ ...hostile(), rendered: { title: `${HOSTILE}\r\nBcc: victim@example.com`, text: HOSTILE } });
    expect(mail.html).not.toMatch(/<script>|<!here>|<!channel>|<https:/);
    expect(mail.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;');
    expect(mail.subject).not.toMatch(/[\r\n]/);
  });

  it('INCIDENT_MGMT and WEBHOOK carry it as JSON data (no markup)', async () => {
    const ev = await sent<ReturnType<typeof buildIncidentEvent>>('INCIDENT_MGMT', hostile());
    expect(ev.payload.summary).toContain('<!channel>');
    const ce = await sent<ReturnType<typeof buildCloudEvent>>('WEBHOOK', hostile());
    expect(validate(ce.data), JSON.stringify(validate.errors)).toBe(true);
  });
});

describe('bounds: a group of 10,000 members and huge field values', () => {
  const HUGE = '𝕏<&>*_['.repeat(40_000);
  const huge = (): Notification => {
    const g: NotificationGroup = outageGroup(10_000, 10_000, 10_000, {
      statusReason: HUGE,
      statusMessage: HUGE,
      certificateName: HUGE,
      namespace: HUGE,
      runbookUrl: RUNBOOK,
    });
    g.labels = { 'data.issuerName': HUGE, 'data.clusterName': HUGE, [HUGE]: HUGE };
    return groupNotification(integration('SLACK'), g, { reminder: true, rendered: { title: HUGE, text: HUGE } });
  };
  const singleHuge = (): Notification =>
    notification(integration('SLACK'), {
      type: 'evt.healthstatus.certmgr-certificate-resource.notready',
      data: {
        ...EVENTS['evt.healthstatus.certmgr-certificate-resource.notready'].data,
        statusMessage: HUGE,
        statusReason: HUGE,
        certificateName: HUGE,
      },
    });

  it.each([
    ['group', huge],
    ['single', singleHuge],
  ])('SLACK (%s): text 3000, header 150, sections 3000, fields 2000, at most 50 blocks', async (_name, n) => {
    const body = await sent<SlackBody>('SLACK', n());
    expect(Array.from(body.text).length).toBeLessThanOrEqual(3000);
    expect(body.blocks.length).toBeLessThanOrEqual(50);
    expect(Array.from(body.blocks[0]!.text!.text).length).toBeLessThanOrEqual(150);
    for (const b of body.blocks) {
      if (b.type === 'section' && b.text) expect(Array.from(b.text.text).length).toBeLessThanOrEqual(3000);
      expect((b.fields ?? []).length).toBeLessThanOrEqual(10);
      for (const f of b.fields ?? []) expect(Array.from(f.text).length).toBeLessThanOrEqual(2000);
    }
  });

  it.each([
    ['group', huge],
    ['single', singleHuge],
  ])('TEAMS (%s): the whole message within %s bytes', async (_name, n) => {
    await sent<TeamsBody>('TEAMS', n());
    expect(Buffer.byteLength(rx.requests.at(-1)!.body)).toBeLessThanOrEqual(TEAMS_MAX_BYTES);
  });

  it('TEAMS: a message that cannot fit with details says so', async () => {
    const n = huge();
    // the title alone is the first 200 characters, so control characters (6 bytes each in JSON) cannot overflow
    n.rendered = { title: '\u0001'.repeat(5000), text: '\u0001'.repeat(40_000) };
    const msg = await sent<TeamsBody>('TEAMS', n);
    expect(Buffer.byteLength(rx.requests.at(-1)!.body)).toBeLessThanOrEqual(TEAMS_MAX_BYTES);
    expect(JSON.stringify(msg)).toContain('Details omitted');
  });

  it('INCIDENT_MGMT: within 512 KB, summary 1024', () => {
    for (const n of [huge(), singleHuge()]) {
      const body = serializeIncidentEvent(buildIncidentEvent(n, ROUTING_KEY));
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_EVENT_BYTES);
      const ev = JSON.parse(body) as ReturnType<typeof buildIncidentEvent>;
      expect(Array.from(ev.payload.summary).length).toBeLessThanOrEqual(1024);
      for (const k of ['source', 'component', 'group', 'class'] as const) expect(Array.from(ev.payload[k]).length).toBeLessThanOrEqual(255);
    }
  });

  it('EMAIL: below 1 MB in all', () => {
    for (const n of [huge(), singleHuge()]) {
      const mail = buildEmail(n);
      expect(Buffer.byteLength(mail.html) + Buffer.byteLength(mail.text) + Buffer.byteLength(mail.subject)).toBeLessThan(1_000_000);
      expect(Array.from(mail.subject).length).toBeLessThanOrEqual(250);
    }
  });

  it('WEBHOOK: at most 20 members per list, schema-valid', () => {
    const data = buildCloudEvent(huge()).data;
    expect(data.group!.firing).toHaveLength(20);
    expect(data.group!.resolved).toHaveLength(20);
    expect(data.group!.firingCount).toBe(10_000);
    expect(Array.from(data.summary).length).toBeLessThanOrEqual(1024);
    expect(validate(data), JSON.stringify(validate.errors)).toBe(true);
  });
});

const validate = (() => {
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormatsModule.default(ajv, ['date-time']);
  return ajv.compile(JSON.parse(readFileSync(new URL('../../docs/webhook-payload.v1.schema.json', import.meta.url), 'utf8')));
})();

describe('a certificate’s root cause in every integration type (docs/emitter.md "Root cause")', () => {
  const CLASS = 'http-self-check';
  const HINT = ROOT_CAUSE_HINTS[CLASS];
  // a piece of the hint no channel escapes
  const HINT_WORDS = 'reaches the solver from inside and outside the cluster';
  const rootCause = () =>
    notification(
      integration('SLACK'),
      withRootCause(EVENTS['evt.healthstatus.certmgr-certificate-resource.notready'], {
        class: CLASS,
        hint: HINT,
        message: "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'",
        resource: 'Challenge shop/shop-tls-1-2976254157-1825524577 (HTTP-01 shop.example.com)',
      }),
    );
  const facts = (s: string) => expect(s).toMatch(new RegExp(`Root cause[^]*${CLASS}[^]*Next step[^]*${HINT_WORDS}`));

  it('SLACK, TEAMS, DISCORD, GOOGLE_CHAT: "Root cause" and "Next step" fields', async () => {
    facts(JSON.stringify((await sent<SlackBody>('SLACK', rootCause())).blocks.filter((b) => b.fields)));
    facts(JSON.stringify(await sent<TeamsBody>('TEAMS', rootCause())));
    facts(JSON.stringify(buildDiscordMessage(forType(rootCause(), 'DISCORD', {}))));
    facts(JSON.stringify(buildGoogleChatMessage(forType(rootCause(), 'GOOGLE_CHAT', {}))));
  });

  it('EMAIL, OPSGENIE: facts; INCIDENT_MGMT: custom_details; WEBHOOK: rootCause', async () => {
    const mail = buildEmail(rootCause());
    facts(mail.text);
    facts(mail.html);
    const alert = buildOpsgenieAlert(forType(rootCause(), 'OPSGENIE', {}));
    facts(alert.description);
    expect(alert.details).toMatchObject({ 'Root cause': expect.stringContaining(CLASS), 'Next step': HINT });
    const ev = await sent<ReturnType<typeof buildIncidentEvent>>('INCIDENT_MGMT', rootCause());
    expect(ev.payload.custom_details).toMatchObject({ rootCause: CLASS, rootCauseHint: HINT });
    const ce = await sent<ReturnType<typeof buildCloudEvent>>('WEBHOOK', rootCause());
    expect(ce.data.rootCause).toMatchObject({ class: CLASS, hint: HINT });
    expect(validate(ce.data)).toBe(true);
  });
});
