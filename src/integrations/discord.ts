/**
 * DISCORD: a channel's webhook (secrets.webhookUrl, a tenant destination: egress policy), "Execute Webhook".
 *
 * Body: `{ content, embeds: [{ title, description, color, fields, timestamp, footer }], allowed_mentions }`
 * within Discord's documented limits (content 2000; embed title 256, description 4096, at most 25 fields with
 * name 256 / value 1024, footer 2048, and 6000 characters over the whole embed). `allowed_mentions.parse = []`:
 * event text cannot ping @everyone, a role or a user. `?wait=true` is added so a 200 confirms the message was
 * created (without it Discord answers 204 before saving it).
 * 2xx delivered; 429/5xx/network retry: the 429 body's `retry_after` (seconds, fractional) is honoured, else the
 * Retry-After header; other 4xx dead.
 */
import { INTEGRATION_META } from '../model/integration-types.js';
import { chatNotifier } from './chat.js';
import { truncateChars } from './http.js';
import { renderNotification, SEVERITY_COLOR, type MemberLine, type Severity } from './render.js';
import { type IntegrationDescriptor, type IntegrationOptions, type Notification, type Notifier } from './types.js';

export const DISCORD_LIMITS = {
  content: 2000,
  title: 256,
  description: 4096,
  fields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footer: 2048,
  /** title + description + field names and values + footer of one embed */
  total: 6000,
} as const;

const EMOJI: Record<Severity, string> = { critical: '🔴', error: '🟠', warning: '⚠️', info: '✅' };

/** Facts shown as the embed description rather than as a field (Details: a group's listing, its own fields). */
const BODY_FACTS = new Set(['Message', 'Details']);

/** A member list as one field of at most 1024 characters: whole lines, the rest counted in "and N more". */
function memberField(heading: string, lines: readonly MemberLine[], more: number): { name: string; value: string; inline: boolean } {
  const out: string[] = [];
  let used = 0;
  let left = more;
  for (const [i, m] of lines.entries()) {
    const line = truncateChars(`• ${m.name}${m.detail ? `: ${m.detail}` : ''}`, 300);
    if (used + [...line].length + 1 + 30 > DISCORD_LIMITS.fieldValue) {
      left += lines.length - i;
      break;
    }
    out.push(line);
    used += [...line].length + 1;
  }
  if (left > 0) out.push(`and ${left} more`);
  return {
    name: truncateChars(heading, DISCORD_LIMITS.fieldName),
    value: truncateChars(out.join('\n'), DISCORD_LIMITS.fieldValue),
    inline: false,
  };
}

export interface DiscordEmbed {
  title: string;
  /** The runbook: the title links to it. */
  url?: string;
  description: string;
  color: number;
  fields: Array<{ name: string; value: string; inline: boolean }>;
  timestamp: string;
  footer: { text: string };
}

/** Characters Discord counts against an embed's 6000. */
export function embedChars(e: DiscordEmbed): number {
  return (
    [...e.title].length +
    [...e.description].length +
    [...e.footer.text].length +
    e.fields.reduce((s, f) => s + [...f.name].length + [...f.value].length, 0)
  );
}

export function buildDiscordMessage(n: Notification): {
  content: string;
  embeds: DiscordEmbed[];
  allowed_mentions: { parse: string[] };
} {
  const r = renderNotification(n);
  const g = r.group;
  // a template's text, else the event's message, else (a group) the summary: the listing has its own fields
  const body = r.text ?? (g ? null : r.facts.find((f) => BODY_FACTS.has(f.name))?.value);
  const members = [];
  if (g && g.firingCount > 0) members.push(memberField(`${g.firingLabel} (${g.firingCount})`, g.firing, g.moreFiring));
  if (g && g.resolvedCount > 0) members.push(memberField(`Recovered (${g.resolvedCount})`, g.resolved, g.moreResolved));
  const embed: DiscordEmbed = {
    title: truncateChars(r.title, DISCORD_LIMITS.title),
    description: truncateChars(body ?? r.summary, DISCORD_LIMITS.description),
    color: parseInt(SEVERITY_COLOR[r.severity].slice(1), 16),
    // member lists first: the 6000 budget drops facts from the end before them
    fields: [
      ...members,
      ...r.facts
        .filter((f) => !BODY_FACTS.has(f.name))
        .map((f) => ({
          name: truncateChars(f.name, DISCORD_LIMITS.fieldName),
          value: truncateChars(f.value, DISCORD_LIMITS.fieldValue),
          inline: f.value.length <= 40,
        })),
    ].slice(0, DISCORD_LIMITS.fields),
    timestamp: new Date(n.occurredAt).toISOString(),
    footer: {
      text: truncateChars(`certmgr-notify · ${r.severity}${r.reminder ? ' · reminder' : ''} · ${n.event.type}`, DISCORD_LIMITS.footer),
    },
  };
  // runbookUrlOf admits only http(s) URLs of at most 2048 characters; it stays a field too (the URL shown)
  if (r.runbookUrl) embed.url = r.runbookUrl;
  // the 6000 budget: fields go first (from the end), then the description shrinks
  while (embedChars(embed) > DISCORD_LIMITS.total && embed.fields.length > 0) embed.fields.pop();
  const over = embedChars(embed) - DISCORD_LIMITS.total;
  if (over > 0) embed.description = truncateChars(embed.description, Math.max(1, [...embed.description].length - over));
  return {
    content: truncateChars(`${EMOJI[r.severity]} ${r.summary}`, DISCORD_LIMITS.content),
    embeds: [embed],
    allowed_mentions: { parse: [] },
  };
}

/** The webhook URL with wait=true (a thread_id or other parameter kept). */
function discordPostUrl(webhookUrl: string): string {
  const u = new URL(webhookUrl);
  u.searchParams.set('wait', 'true');
  return u.toString();
}

/** Discord's 429 body: `{ message, retry_after: seconds (fractional), global }`; ms, or undefined. */
export function discordRetryAfterMs(body: string | undefined): number | undefined {
  if (!body) return undefined;
  try {
    const v = (JSON.parse(body) as { retry_after?: unknown }).retry_after;
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.ceil(v * 1000) : undefined;
  } catch {
    return undefined;
  }
}

function createDiscordNotifier(opts: IntegrationOptions): Notifier {
  return chatNotifier('DISCORD', buildDiscordMessage, opts, {
    postUrl: discordPostUrl,
    afterPost(result) {
      if (result.statusCode === 429) {
        const after = discordRetryAfterMs(result.responseBody);
        if (after !== undefined) result.retryAfterMs = after;
      }
      return result;
    },
  });
}

/**
 * Rate: Discord allows 5 requests per 2 s per webhook and about 30 messages per minute per channel
 * (https://discord.com/developers/docs/topics/rate-limits; the per-webhook bucket its headers report): 0.5/s, burst 5.
 */
export const discord: IntegrationDescriptor = {
  type: 'DISCORD',
  ...INTEGRATION_META.DISCORD,
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 0.5, burst: 5 },
  createNotifier: createDiscordNotifier,
};
