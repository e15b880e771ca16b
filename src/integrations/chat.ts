/**
 * SLACK (incoming webhook: text + Block Kit blocks) and TEAMS (Workflows webhook with an Adaptive
 * Card 1.4 attachment). Both read secrets.webhookUrl, use the shared HTTP client and its status
 * classification (2xx delivered; 429/5xx/network retry honouring Retry-After; other 4xx dead).
 * Texts come from renderNotification: a group's members are listed, the runbook is a button / an action, and
 * every text is escaped for the channel's markup (Slack mrkdwn, Teams Markdown).
 */
import { INTEGRATION_META } from '../model/integration-types.js';
import { checkTenantUrl, postAndClassify, truncateChars } from './http.js';
import { renderNotification, type Fact, type MemberLine, type Rendered, type Severity } from './render.js';
import {
  DEFAULT_EGRESS,
  type DeliveryResult,
  type IntegrationDescriptor,
  type IntegrationOptions,
  type IntegrationType,
  type Notification,
  type Notifier,
} from './types.js';

/** Facts shown elsewhere than as a field: the body text, a group's member listing, the runbook (a button). */
const NOT_FIELDS = new Set(['Message', 'Details', 'Runbook']);

const SLACK_EMOJI: Record<Severity, string> = {
  critical: ':red_circle:',
  error: ':large_orange_circle:',
  warning: ':warning:',
  info: ':white_check_mark:',
};

/** Slack mrkdwn needs only &, < and > escaped: then no text can form a link, a mention or <!channel>. */
function escapeSlack(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function fieldFacts(r: Rendered): Fact[] {
  return r.facts.filter((f) => !NOT_FIELDS.has(f.name));
}

function footer(r: Rendered, n: Notification): string {
  const parts = ['certmgr-notify', r.severity];
  if (r.reminder) parts.push('reminder');
  if (r.group) parts.push(`group of ${r.group.firingCount + r.group.resolvedCount}`);
  parts.push(n.event.type);
  return parts.join(' · ');
}

/** Block Kit limits (api.slack.com/reference/block-kit): section text 3000, header 150, field 2000, button URL 3000. */
const SLACK_TEXT = 3000;

/** One mrkdwn section listing members, each line escaped; cut whole lines to stay within the section limit. */
function slackMembers(heading: string, lines: readonly MemberLine[], more: number): Record<string, unknown> {
  const out = [`*${escapeSlack(heading)}*`];
  let used = out[0]!.length;
  let left = more;
  for (const [i, m] of lines.entries()) {
    const line = `• ${escapeSlack(m.name)}${m.detail ? `: ${escapeSlack(m.detail)}` : ''}`;
    if (used + line.length + 40 > SLACK_TEXT) {
      left += lines.length - i;
      break;
    }
    out.push(line);
    used += line.length + 1;
  }
  if (left > 0) out.push(`_and ${left} more_`);
  return { type: 'section', text: { type: 'mrkdwn', text: truncateChars(out.join('\n'), SLACK_TEXT) } };
}

function buildSlackMessage(n: Notification): Record<string, unknown> {
  const r = renderNotification(n);
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: truncateChars(r.title, 150), emoji: true } },
  ];
  if (r.text) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: truncateChars(escapeSlack(r.text), SLACK_TEXT) } });
  const g = r.group;
  if (g && g.firingCount > 0) blocks.push(slackMembers(`${g.firingLabel} (${g.firingCount})`, g.firing, g.moreFiring));
  if (g && g.resolvedCount > 0) blocks.push(slackMembers(`Recovered (${g.resolvedCount})`, g.resolved, g.moreResolved));
  const fields = fieldFacts(r)
    .slice(0, 10)
    .map((f) => ({ type: 'mrkdwn', text: truncateChars(`*${escapeSlack(f.name)}*\n${escapeSlack(f.value)}`, 2000) }));
  if (fields.length) blocks.push({ type: 'section', fields });
  if (r.runbookUrl) {
    // runbookUrlOf admits only http(s) URLs of at most 2048 characters: within the button's 3000
    blocks.push({ type: 'actions', elements: [{ type: 'button', text: { type: 'plain_text', text: 'Runbook' }, url: r.runbookUrl }] });
  }
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: escapeSlack(footer(r, n)) }] });
  return { text: truncateChars(`${SLACK_EMOJI[r.severity]} ${escapeSlack(r.summary)}`, SLACK_TEXT), blocks };
}

const TEAMS_COLOR: Record<Severity, string> = { critical: 'Attention', error: 'Attention', warning: 'Warning', info: 'Good' };

export const ADAPTIVE_CARD_CONTENT_TYPE = 'application/vnd.microsoft.card.adaptive';

/**
 * Teams renders Markdown in TextBlock text and in Fact titles and values (learn.microsoft.com "Format cards in
 * Teams"): event and template text is backslash-escaped so it cannot form a link ([ and ]), emphasis or a list.
 */
export function escapeTeams(s: string): string {
  return s.replace(/[\\*_[\]`~]/g, '\\$&').replace(/^(\s*)([-+]|\d+\.)(?=\s)/gm, '$1\\$2');
}

/**
 * A Teams message must stay under about 28 KB (Workflows and bot message limit). The card is built with
 * generous caps, then with tighter ones, then as title and note only, until it fits.
 */
export const TEAMS_MAX_BYTES = 28_000;
interface TeamsCaps {
  text: number;
  fact: number;
  members: number;
}
const TEAMS_CAPS: readonly TeamsCaps[] = [
  { text: 4000, fact: 1000, members: 10 },
  { text: 1000, fact: 200, members: 5 },
  { text: 0, fact: 0, members: 0 },
];

function teamsMembers(heading: string, lines: readonly MemberLine[], more: number, caps: TeamsCaps): Record<string, unknown>[] {
  const shown = lines.slice(0, caps.members);
  const left = more + lines.length - shown.length;
  const out: Record<string, unknown>[] = [
    { type: 'TextBlock', text: escapeTeams(heading), weight: 'Bolder', wrap: true, spacing: 'Medium' },
  ];
  if (shown.length) {
    out.push({
      type: 'FactSet',
      facts: shown.map((m) => ({ title: escapeTeams(truncateChars(m.name, caps.fact)), value: escapeTeams(m.detail ?? '') })),
    });
  }
  if (left > 0) out.push({ type: 'TextBlock', text: `and ${left} more`, isSubtle: true, wrap: true });
  return out;
}

function teamsCard(n: Notification, r: Rendered, caps: TeamsCaps): Record<string, unknown> {
  const cut = (s: string, max: number) => escapeTeams(truncateChars(s, max));
  const body: Record<string, unknown>[] = [
    {
      type: 'TextBlock',
      text: cut(r.title, caps.text ? 1024 : 200),
      weight: 'Bolder',
      size: 'Medium',
      wrap: true,
      color: TEAMS_COLOR[r.severity],
    },
  ];
  if (caps.text === 0) {
    body.push({ type: 'TextBlock', text: 'Details omitted: the message was too large for Teams.', isSubtle: true, wrap: true });
  } else {
    if (r.text) body.push({ type: 'TextBlock', text: cut(r.text, caps.text), wrap: true });
    const g = r.group;
    if (g && g.firingCount > 0) body.push(...teamsMembers(`${g.firingLabel} (${g.firingCount})`, g.firing, g.moreFiring, caps));
    if (g && g.resolvedCount > 0) body.push(...teamsMembers(`Recovered (${g.resolvedCount})`, g.resolved, g.moreResolved, caps));
    body.push({
      type: 'FactSet',
      facts: fieldFacts(r).map((f) => ({ title: escapeTeams(f.name), value: cut(f.value, caps.fact) })),
    });
  }
  body.push({ type: 'TextBlock', text: escapeTeams(footer(r, n)), isSubtle: true, size: 'Small', wrap: true });
  const card: Record<string, unknown> = {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: '1.4',
    body,
    msteams: { width: 'Full' },
  };
  if (r.runbookUrl) card['actions'] = [{ type: 'Action.OpenUrl', title: 'Runbook', url: r.runbookUrl }];
  return {
    type: 'message',
    summary: truncateChars(r.title, caps.text ? 1024 : 200),
    attachments: [{ contentType: ADAPTIVE_CARD_CONTENT_TYPE, contentUrl: null, content: card }],
  };
}

function buildTeamsMessage(n: Notification): Record<string, unknown> {
  const r = renderNotification(n);
  let msg: Record<string, unknown> = {};
  for (const caps of TEAMS_CAPS) {
    msg = teamsCard(n, r, caps);
    if (Buffer.byteLength(JSON.stringify(msg)) <= TEAMS_MAX_BYTES) break;
  }
  return msg;
}

/** What a chat type changes in the common send: the URL posted to, the content type, a look at the result. */
export interface ChatPost {
  /** The URL to POST to, from the stored webhook URL (Google Chat adds its reply option). */
  postUrl?: (webhookUrl: string) => string;
  contentType?: string;
  /** Reads more out of the answer (Discord's JSON retry_after on a 429). */
  afterPost?: (result: DeliveryResult) => DeliveryResult;
}

/**
 * The send of every incoming-webhook chat type: the stored webhook URL checked against the egress policy, the
 * message built by `build`, one POST through the shared client and its status classification.
 */
export function chatNotifier(
  type: IntegrationType,
  build: (n: Notification) => object,
  opts: IntegrationOptions,
  post: ChatPost = {},
): Notifier {
  const egress = opts.egress ?? DEFAULT_EGRESS;
  return {
    type,
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      const url = n.integration.secrets['webhookUrl'];
      const bad = checkTenantUrl(url, 'webhook URL', egress);
      if (bad || !url) return { outcome: 'dead', error: bad ?? 'webhook URL is not configured' };
      const result = await postAndClassify(
        {
          url: post.postUrl ? post.postUrl(url) : url,
          body: JSON.stringify(build(n)),
          contentType: post.contentType || undefined,
          secrets: Object.values(n.integration.secrets),
        },
        { timeoutMs: opts.timeoutMs, userAgent: opts.userAgent, clock: opts.clock ?? Date.now, signal, dispatcher: egress.dispatcher() },
      );
      return post.afterPost ? post.afterPost(result) : result;
    },
  };
}

function createSlackNotifier(opts: IntegrationOptions): Notifier {
  return chatNotifier('SLACK', buildSlackMessage, opts);
}

function createTeamsNotifier(opts: IntegrationOptions): Notifier {
  return chatNotifier('TEAMS', buildTeamsMessage, opts);
}

/**
 * Rate: Slack's incoming webhooks allow 1 message per second per channel, short bursts tolerated
 * (https://api.slack.com/apis/rate-limits, "Incoming webhooks"): 1/s, burst 3.
 */
export const slack: IntegrationDescriptor = {
  type: 'SLACK',
  ...INTEGRATION_META.SLACK,
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 1, burst: 3 },
  createNotifier: createSlackNotifier,
};

/**
 * Rate: Teams webhooks allow 4 requests per second and 60 per 30 s (https://learn.microsoft.com/microsoftteams/platform/
 * webhooks-and-connectors/how-to/connectors-using, "Rate limiting for connectors"; Workflows webhooks are throttled
 * by Power Automate on top): 2/s, burst 4.
 */
export const teams: IntegrationDescriptor = {
  type: 'TEAMS',
  ...INTEGRATION_META.TEAMS,
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 2, burst: 4 },
  createNotifier: createTeamsNotifier,
};
