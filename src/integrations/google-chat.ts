/**
 * GOOGLE_CHAT: a Google Chat space's incoming webhook (secrets.webhookUrl, a tenant destination: egress policy).
 *
 * Body: `{ text, cardsV2: [card], thread: { threadKey } }`. Both parts, because `text` is what Chat shows in
 * notifications, previews and clients without cards, while the card (header + one widget per fact) is what
 * people read. The thread key is the incident key (incidentKeyOf: the group's key or the resource's correlation
 * key) and the URL gets `messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD`, so a recovery and reminders
 * land in the thread its trigger opened (a new thread when that one is gone).
 * Event text is hostile: card text fields take a small HTML subset, so &, < and > are escaped there; in `text`,
 * < and > become ‹ › so no `<users/all>` mention or `<url|label>` link can be injected.
 * 2xx delivered; 429/5xx/network retry (Retry-After honoured); other 4xx dead.
 */
import { INTEGRATION_META } from '../model/integration-types.js';
import { chatNotifier } from './chat.js';
import { truncateChars } from './http.js';
import { incidentKeyOf, renderNotification, type MemberLine, type Rendered } from './render.js';
import { type IntegrationDescriptor, type IntegrationOptions, type Notification, type Notifier } from './types.js';

/** Limits kept (Google Chat: a message ≤ 32,000 bytes; text ≤ 4,096 characters; thread keys ≤ 4,000). */
export const GOOGLE_CHAT_LIMITS = {
  messageBytes: 32_000,
  text: 4096,
  header: 200,
  widgets: 20,
  widgetText: 1000,
  threadKey: 4000,
} as const;

const REPLY_OPTION = 'REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD';

const escapeHtml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const neutralize = (s: string): string => s.replace(/</g, '‹').replace(/>/g, '›');

export interface GoogleChatMessage {
  text: string;
  cardsV2: Array<{ cardId: string; card: Record<string, unknown> }>;
  thread: { threadKey: string };
}

/** Facts shown elsewhere than as a fact widget: a group's member listing (its own sections), the runbook (a button). */
const NOT_FACTS = new Set(['Details', 'Runbook']);

/** Caps tried in order until the message fits 32,000 bytes (the last: title, counts and the runbook only). */
const CAPS = [
  { text: 4000, fact: 1000, members: 10 },
  { text: 1000, fact: 200, members: 5 },
  { text: 0, fact: 0, members: 0 },
] as const;
type Caps = (typeof CAPS)[number];

type Widget = Record<string, unknown>;
const paragraph = (text: string): Widget => ({ textParagraph: { text } });

/** A section listing members: one widget each (name escaped, detail below), then "and N more". */
function memberSection(heading: string, lines: readonly MemberLine[], more: number, caps: Caps): Widget {
  const shown = lines.slice(0, caps.members);
  const left = more + lines.length - shown.length;
  const widgets: Widget[] = shown.map((m) => ({
    decoratedText: {
      text: escapeHtml(truncateChars(m.name, caps.fact)),
      bottomLabel: m.detail ? escapeHtml(truncateChars(m.detail, caps.fact)) : undefined,
      wrapText: true,
    },
  }));
  if (left > 0) widgets.push(paragraph(`<i>and ${left} more</i>`));
  return { header: escapeHtml(heading), widgets };
}

function buildWith(n: Notification, r: Rendered, caps: Caps): GoogleChatMessage {
  const sections: Widget[] = [];
  const top: Widget[] = [];
  if (r.reminder) top.push(paragraph('<b>Reminder</b>: still firing, sent again at the router&#39;s repeat interval'));
  // a template's text (an event's own message is the Message fact already)
  const message = r.facts.find((f) => f.name === 'Message')?.value;
  if (caps.text && r.text && r.text !== message) top.push(paragraph(escapeHtml(truncateChars(r.text, caps.text))));
  if (top.length) sections.push({ widgets: top });
  const g = r.group;
  if (g && g.firingCount > 0) sections.push(memberSection(`${g.firingLabel} (${g.firingCount})`, g.firing, g.moreFiring, caps));
  if (g && g.resolvedCount > 0) sections.push(memberSection(`Recovered (${g.resolvedCount})`, g.resolved, g.moreResolved, caps));
  const facts: Widget[] = r.facts
    .filter((f) => !NOT_FACTS.has(f.name))
    .slice(0, GOOGLE_CHAT_LIMITS.widgets)
    .map((f) => ({
      decoratedText: {
        // a group's label name is the router's groupBy field as written: escaped like any text
        topLabel: escapeHtml(truncateChars(f.name, 100)),
        text: escapeHtml(truncateChars(f.value, caps.fact || 100)),
        wrapText: true,
      },
    }));
  if (facts.length) sections.push({ widgets: facts });
  if (r.runbookUrl) {
    // runbookUrlOf admits only http(s) URLs of at most 2048 characters
    sections.push({ widgets: [{ buttonList: { buttons: [{ text: 'Runbook', onClick: { openLink: { url: r.runbookUrl } } }] } }] });
  }
  return {
    text: truncateChars(neutralize(r.summary), GOOGLE_CHAT_LIMITS.text),
    cardsV2: [
      {
        cardId: 'certmgr-notify',
        card: {
          header: {
            title: truncateChars(r.title, GOOGLE_CHAT_LIMITS.header),
            subtitle: `certmgr-notify · ${r.severity}${r.reminder ? ' · reminder' : ''} · ${n.event.type}`,
          },
          sections,
        },
      },
    ],
    thread: { threadKey: truncateChars(incidentKeyOf(n), GOOGLE_CHAT_LIMITS.threadKey) },
  };
}

/**
 * The message (pure): the summary as `text`; a card with the reminder mark, the template's text, one section per
 * member list ("and N more"), the facts and a Runbook button; built with smaller caps until within 32,000 bytes.
 */
export function buildGoogleChatMessage(n: Notification): GoogleChatMessage {
  const r = renderNotification(n);
  let msg = buildWith(n, r, CAPS[0]);
  for (const caps of CAPS) {
    msg = buildWith(n, r, caps);
    if (Buffer.byteLength(JSON.stringify(msg)) <= GOOGLE_CHAT_LIMITS.messageBytes) break;
  }
  return msg;
}

/** The webhook URL with the reply option (its key and token query parameters kept). */
function googleChatPostUrl(webhookUrl: string): string {
  const u = new URL(webhookUrl);
  u.searchParams.set('messageReplyOption', REPLY_OPTION);
  return u.toString();
}

function createGoogleChatNotifier(opts: IntegrationOptions): Notifier {
  return chatNotifier('GOOGLE_CHAT', buildGoogleChatMessage, opts, {
    postUrl: googleChatPostUrl,
    contentType: 'application/json; charset=UTF-8',
  });
}

/**
 * Rate: Google Chat allows one message write per second per space (https://developers.google.com/workspace/chat/limits,
 * per-space quotas): 1/s, burst 3.
 */
export const googleChat: IntegrationDescriptor = {
  type: 'GOOGLE_CHAT',
  ...INTEGRATION_META.GOOGLE_CHAT,
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 1, burst: 3 },
  createNotifier: createGoogleChatNotifier,
};
