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
import { checkTenantUrl, postAndClassify, truncateChars } from './http.js';
import { incidentKeyOf, renderNotification } from './render.js';
import {
  DEFAULT_EGRESS,
  type DeliveryResult,
  type IntegrationDescriptor,
  type IntegrationOptions,
  type Notification,
  type Notifier,
} from './types.js';

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

/** The message (pure), within the limits above: facts are dropped from the end until it fits. */
export function buildGoogleChatMessage(n: Notification): GoogleChatMessage {
  const r = renderNotification(n);
  const widgets: Record<string, unknown>[] = r.facts.slice(0, GOOGLE_CHAT_LIMITS.widgets).map((f) => ({
    decoratedText: {
      topLabel: truncateChars(f.name, 100),
      text: escapeHtml(truncateChars(f.value, GOOGLE_CHAT_LIMITS.widgetText)),
      wrapText: true,
    },
  }));
  const build = (w: Record<string, unknown>[]): GoogleChatMessage => ({
    text: truncateChars(neutralize(r.summary), GOOGLE_CHAT_LIMITS.text),
    cardsV2: [
      {
        cardId: 'certmgr-notify',
        card: {
          header: {
            title: truncateChars(r.title, GOOGLE_CHAT_LIMITS.header),
            subtitle: `certmgr-notify · ${r.severity}${n.reminder ? ' · reminder' : ''} · ${n.event.type}`,
          },
          sections: [{ widgets: w }],
        },
      },
    ],
    thread: { threadKey: truncateChars(incidentKeyOf(n), GOOGLE_CHAT_LIMITS.threadKey) },
  });
  let msg = build(widgets);
  while (widgets.length > 1 && Buffer.byteLength(JSON.stringify(msg)) > GOOGLE_CHAT_LIMITS.messageBytes) {
    widgets.pop();
    msg = build(widgets);
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
  const egress = opts.egress ?? DEFAULT_EGRESS;
  return {
    type: 'GOOGLE_CHAT',
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      const url = n.integration.secrets['webhookUrl'];
      const bad = checkTenantUrl(url, 'webhook URL', egress);
      if (bad || !url) return { outcome: 'dead', error: bad ?? 'webhook URL is not configured' };
      return postAndClassify(
        {
          url: googleChatPostUrl(url),
          body: JSON.stringify(buildGoogleChatMessage(n)),
          contentType: 'application/json; charset=UTF-8',
          secrets: Object.values(n.integration.secrets),
        },
        { timeoutMs: opts.timeoutMs, userAgent: opts.userAgent, clock: opts.clock ?? Date.now, signal, dispatcher: egress.dispatcher() },
      );
    },
  };
}

/** Google Chat allows about one message per second per space (its per-space write quota): 1/s, burst 3. */
export const googleChat: IntegrationDescriptor = {
  type: 'GOOGLE_CHAT',
  api: { createMutation: 'createGoogleChatIntegration', paramsField: 'googleChatParams' },
  params: [{ input: 'webhookUrl', kind: 'destination', required: true, into: 'secrets', key: 'webhookUrl' }],
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 1, burst: 3 },
  providerType: 'GoogleChat',
  createNotifier: createGoogleChatNotifier,
};
