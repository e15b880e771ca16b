/**
 * SLACK (incoming webhook: text + Block Kit blocks) and TEAMS (Workflows webhook with an Adaptive
 * Card 1.4 attachment). Both read secrets.webhookUrl, use the shared HTTP client and its status
 * classification (2xx delivered; 429/5xx/network retry honouring Retry-After; other 4xx dead).
 */
import { checkTenantUrl, postAndClassify, truncateChars } from './http.js';
import { renderNotification, type Fact, type Rendered, type Severity } from './render.js';
import {
  DEFAULT_EGRESS,
  type DeliveryResult,
  type IntegrationDescriptor,
  type IntegrationOptions,
  type IntegrationType,
  type Notification,
  type Notifier,
  type ParamField,
} from './types.js';

/** Facts shown as the message body rather than as a field. */
const BODY_FACTS = new Set(['Message', 'Details']);

const SLACK_EMOJI: Record<Severity, string> = {
  critical: ':red_circle:',
  error: ':large_orange_circle:',
  warning: ':warning:',
  info: ':white_check_mark:',
};

/** Slack mrkdwn needs only &, < and > escaped. */
function escapeSlack(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function bodyText(r: Rendered): string | null {
  return r.facts.find((f) => BODY_FACTS.has(f.name))?.value ?? null;
}

function fieldFacts(r: Rendered): Fact[] {
  return r.facts.filter((f) => !BODY_FACTS.has(f.name));
}

function buildSlackMessage(n: Notification): Record<string, unknown> {
  const r = renderNotification(n);
  const body = bodyText(r);
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: truncateChars(r.title, 150), emoji: true } },
  ];
  if (body) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: truncateChars(escapeSlack(body), 3000) } });
  const fields = fieldFacts(r)
    .slice(0, 10)
    .map((f) => ({ type: 'mrkdwn', text: truncateChars(`*${escapeSlack(f.name)}*\n${escapeSlack(f.value)}`, 2000) }));
  if (fields.length) blocks.push({ type: 'section', fields });
  blocks.push({
    type: 'context',
    elements: [{ type: 'mrkdwn', text: escapeSlack(`certmgr-notify · ${r.severity} · ${n.event.type}`) }],
  });
  return { text: truncateChars(`${SLACK_EMOJI[r.severity]} ${escapeSlack(r.summary)}`, 3000), blocks };
}

const TEAMS_COLOR: Record<Severity, string> = { critical: 'Attention', error: 'Attention', warning: 'Warning', info: 'Good' };

export const ADAPTIVE_CARD_CONTENT_TYPE = 'application/vnd.microsoft.card.adaptive';

function buildTeamsMessage(n: Notification): Record<string, unknown> {
  const r = renderNotification(n);
  const body = bodyText(r);
  const cardBody: Record<string, unknown>[] = [
    { type: 'TextBlock', text: r.title, weight: 'Bolder', size: 'Medium', wrap: true, color: TEAMS_COLOR[r.severity] },
  ];
  if (body) cardBody.push({ type: 'TextBlock', text: body, wrap: true });
  cardBody.push({ type: 'FactSet', facts: fieldFacts(r).map((f) => ({ title: f.name, value: f.value })) });
  cardBody.push({ type: 'TextBlock', text: `certmgr-notify · ${r.severity} · ${n.event.type}`, isSubtle: true, size: 'Small', wrap: true });
  return {
    type: 'message',
    summary: r.title,
    attachments: [
      {
        contentType: ADAPTIVE_CARD_CONTENT_TYPE,
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body: cardBody,
          msteams: { width: 'Full' },
        },
      },
    ],
  };
}

function chatNotifier(type: IntegrationType, build: (n: Notification) => Record<string, unknown>, opts: IntegrationOptions): Notifier {
  const egress = opts.egress ?? DEFAULT_EGRESS;
  return {
    type,
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      const url = n.integration.secrets['webhookUrl'];
      const bad = checkTenantUrl(url, 'webhook URL', egress);
      if (bad || !url) return { outcome: 'dead', error: bad ?? 'webhook URL is not configured' };
      return postAndClassify(
        { url, body: JSON.stringify(build(n)), secrets: Object.values(n.integration.secrets) },
        { timeoutMs: opts.timeoutMs, userAgent: opts.userAgent, clock: opts.clock ?? Date.now, signal, dispatcher: egress.dispatcher() },
      );
    },
  };
}

function createSlackNotifier(opts: IntegrationOptions): Notifier {
  return chatNotifier('SLACK', buildSlackMessage, opts);
}

function createTeamsNotifier(opts: IntegrationOptions): Notifier {
  return chatNotifier('TEAMS', buildTeamsMessage, opts);
}

const CHAT_PARAMS: readonly ParamField[] = [
  { input: 'webhookUrl', kind: 'destination', required: true, into: 'secrets', key: 'webhookUrl' },
];

/** Slack's incoming webhooks allow about 1 message/s per channel, short bursts tolerated. */
export const slack: IntegrationDescriptor = {
  type: 'SLACK',
  api: { createMutation: 'createSlackIntegration', paramsField: 'slackParams' },
  params: CHAT_PARAMS,
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 1, burst: 3 },
  providerType: 'Slack',
  createNotifier: createSlackNotifier,
};

/** Workflows (Power Automate) webhooks throttle well below webhook-server rates. */
export const teams: IntegrationDescriptor = {
  type: 'TEAMS',
  api: { createMutation: 'createTeamsIntegration', paramsField: 'teamsParams' },
  params: CHAT_PARAMS,
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 2, burst: 4 },
  providerType: 'Teams',
  createNotifier: createTeamsNotifier,
};
