/**
 * EMAIL: one SMTP message per notification through nodemailer (opts.smtpUrl).
 *
 * config.to (string[]) and optional config.from (else opts.smtpFrom). Only plain addresses, and a from in a
 * sender domain the operator allows (email-address.ts), go to the shared relay: a row holding anything else
 * (written before these checks) is dead, never sent. Text and HTML bodies built
 * from renderNotification (a group's members as lists, the runbook as a link, every text HTML-escaped);
 * subject "[certmgr-notify] <title>" on one line; Message-ID <notification id@certmgr-notify>,
 * the same on every retry so receivers can drop duplicates.
 * SMTP 4xx replies (and 503) and connection/timeouts retry; other 5xx replies are dead.
 * DeliveryResult.statusCode carries the SMTP reply code.
 */
import { INTEGRATION_META } from '../model/integration-types.js';
import { createTransport } from 'nodemailer';
import { emailAddressProblem, parseSenderDomains, senderProblem } from './email-address.js';
import { describeNetworkError, redact, secretFragments, truncateChars } from './http.js';
import { memberLines, renderNotification, SEVERITY_COLOR, type MemberLine, type Rendered } from './render.js';
import type { DeliveryResult, IntegrationDescriptor, IntegrationOptions, Notification, Notifier } from './types.js';

const SUBJECT_PREFIX = '[certmgr-notify]';
const MESSAGE_ID_DOMAIN = 'certmgr-notify';

/** Errors without an SMTP reply that retrying cannot fix. */
const PERMANENT_CODES = new Set(['ENOAUTH', 'ECONFIG', 'EENVELOPE', 'EMESSAGE', 'EMAXRECIPIENTS', 'EREQUIRETLS', 'EOTP']);

export function messageIdOf(notificationId: string): string {
  return `<${notificationId.replace(/[^A-Za-z0-9._-]/g, '_')}@${MESSAGE_ID_DOMAIN}>`;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

export interface EmailContent {
  subject: string;
  text: string;
  html: string;
}

/** Caps that keep a message far below relay limits (commonly 10-25 MB) whatever the event or template holds. */
const MAX_FACT_CHARS = 4000;
const MAX_BODY_CHARS = 32_768;
/** Facts shown as the body paragraph or as a group's lists rather than in the table. */
const BODY_FACTS = new Set(['Message', 'Details']);

function memberHtml(heading: string, lines: readonly MemberLine[], more: number): string {
  const items = lines.map((m) => `<li><b>${escapeHtml(m.name)}</b>${m.detail ? `: ${escapeHtml(m.detail)}` : ''}</li>`).join('\n');
  const rest = more > 0 ? `\n<p style="margin:4px 0;color:#6b6b6b">and ${more} more</p>` : '';
  return `<h3 style="margin:12px 0 4px 0;font-size:15px">${escapeHtml(heading)}</h3>\n<ul style="margin:0;padding-left:20px">\n${items}\n</ul>${rest}`;
}

function factHtml(name: string, value: string): string {
  // the runbook is an http(s) URL checked by runbookUrlOf; escaped for the attribute like any text
  const cell = name === 'Runbook' ? `<a href="${escapeHtml(value)}">${escapeHtml(value)}</a>` : escapeHtml(value);
  return (
    `<tr><th style="text-align:left;vertical-align:top;padding:4px 12px 4px 0;white-space:nowrap">${escapeHtml(name)}</th>` +
    `<td style="padding:4px 0;white-space:pre-wrap">${cell}</td></tr>`
  );
}

export function buildEmail(n: Notification): EmailContent {
  const r: Rendered = renderNotification(n);
  const g = r.group;
  const footer = `Sent by certmgr-notify for router "${n.router.name}" (event ${n.event.type}, notification ${n.id}${r.reminder ? ', reminder' : ''}).`;
  // the body paragraph shows the message (or the template's text); a group's members have their own lists
  const facts = r.facts
    .filter((f) => !((g || r.text) && BODY_FACTS.has(f.name)))
    .map((f) => ({ name: f.name, value: truncateChars(f.value, MAX_FACT_CHARS) }));
  const body = r.text ? truncateChars(r.text, MAX_BODY_CHARS) : null;
  const listing: string[] = [];
  if (g && g.firingCount > 0) listing.push(`${g.firingLabel} (${g.firingCount}):`, ...memberLines(g.firing, g.moreFiring));
  if (g && g.resolvedCount > 0) listing.push(`Recovered (${g.resolvedCount}):`, ...memberLines(g.resolved, g.moreResolved));
  const text = [
    r.title,
    '',
    ...(body ? [body, ''] : []),
    ...facts.map((f) => `${f.name}: ${f.value}`),
    ...(listing.length ? ['', ...listing] : []),
    '',
    '-- ',
    footer,
    '',
  ].join('\n');
  const rows = facts.map((f) => factHtml(f.name, f.value)).join('\n');
  const members = [
    g && g.firingCount > 0 ? memberHtml(`${g.firingLabel} (${g.firingCount})`, g.firing, g.moreFiring) : '',
    g && g.resolvedCount > 0 ? memberHtml(`Recovered (${g.resolvedCount})`, g.resolved, g.moreResolved) : '',
  ].join('');
  const html = `<!doctype html>
<html><body style="font-family:Arial,Helvetica,sans-serif;font-size:14px;color:#1f1f1f">
<div style="border-left:6px solid ${SEVERITY_COLOR[r.severity]};padding:8px 16px">
<h2 style="margin:0 0 12px 0;font-size:18px">${escapeHtml(r.title)}</h2>
${body ? `<p style="margin:0 0 12px 0;white-space:pre-wrap">${escapeHtml(body)}</p>\n` : ''}<table style="border-collapse:collapse">
${rows}
</table>
${members}${r.runbookUrl ? `<p style="margin:12px 0 0 0"><a href="${escapeHtml(r.runbookUrl)}">Open the runbook</a></p>` : ''}
</div>
<p style="color:#6b6b6b;font-size:12px">${escapeHtml(footer)}</p>
</body></html>
`;
  // a template's title may hold line breaks: a subject is one line
  return { subject: truncateChars(`${SUBJECT_PREFIX} ${r.title.replace(/\s+/g, ' ').trim()}`, 250), text, html };
}

interface SmtpError {
  code?: string;
  responseCode?: number;
  response?: string;
  permanent?: boolean;
  name?: string;
}

/** Classifies a nodemailer error. Exported for tests. */
function classifySmtpError(err: unknown, fragments: readonly string[]): DeliveryResult {
  const e = (err && typeof err === 'object' ? err : {}) as SmtpError;
  if (typeof e.responseCode === 'number') {
    const permanent = e.permanent ?? (e.responseCode >= 500 && e.responseCode !== 503);
    const reply = redact(String(e.response ?? e.responseCode).replace(/\s+/g, ' '), fragments);
    return {
      outcome: permanent ? 'dead' : 'retry',
      statusCode: e.responseCode,
      error: truncateChars(`SMTP ${reply.startsWith(String(e.responseCode)) ? '' : `${e.responseCode} `}${reply}`, 300),
    };
  }
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code && PERMANENT_CODES.has(code)) return { outcome: 'dead', error: `SMTP error (${code})` };
  const network = describeNetworkError(err);
  return { outcome: 'retry', error: network === 'network error' ? 'SMTP error' : `SMTP ${network}` };
}

/** Why an SMTP URL cannot be used, or null. Never echoes the URL (it may hold a password). */
function checkSmtpUrl(url: string | undefined): string | null {
  if (!url) return 'email is not configured: no SMTP URL (smtpUrl) is set';
  try {
    if (['smtp:', 'smtps:'].includes(new URL(url).protocol)) return null;
  } catch {
    /* fall through */
  }
  return 'email is not configured: the SMTP URL is not a valid smtp:// or smtps:// URL';
}

/** The recipients of config.to, or why the integration cannot be sent to (pure; the address itself is not quoted). */
function recipientsOf(cfg: Readonly<Record<string, unknown>>): { to: string[] } | { error: string } {
  const to = Array.isArray(cfg['to']) ? cfg['to'].filter((x): x is string => typeof x === 'string' && x.trim() !== '') : [];
  if (to.length === 0) return { error: 'no recipients configured (config.to)' };
  for (const [i, a] of to.entries()) {
    const bad = emailAddressProblem(a);
    if (bad) return { error: `config.to[${i}] is not a plain email address: it ${bad}` };
  }
  return { to };
}

/** The allowed sender domains: the configured ones, else the domain of smtpFrom; none when that has no domain. */
function senderDomainsOf(opts: IntegrationOptions): readonly string[] {
  if (opts.smtpSenderDomains) return opts.smtpSenderDomains;
  try {
    return parseSenderDomains([], opts.smtpFrom ?? '');
  } catch {
    return [];
  }
}

function createEmailNotifier(opts: IntegrationOptions): Notifier {
  let transport: ReturnType<typeof createTransport> | undefined;
  const senderDomains = senderDomainsOf(opts);
  const fragments = secretFragments([opts.smtpUrl]);
  const badUrl = checkSmtpUrl(opts.smtpUrl);
  const transporter = () =>
    (transport ??= createTransport({
      url: opts.smtpUrl,
      connectionTimeout: opts.timeoutMs,
      greetingTimeout: opts.timeoutMs,
      socketTimeout: opts.timeoutMs,
      dnsTimeout: opts.timeoutMs,
    }));

  return {
    type: 'EMAIL',
    unavailable: () => badUrl,
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      if (badUrl) return { outcome: 'dead', error: badUrl };
      const cfg = n.integration.config;
      const rcpt = recipientsOf(cfg);
      if ('error' in rcpt) return { outcome: 'dead', error: rcpt.error };
      const { to } = rcpt;
      const own = typeof cfg['from'] === 'string' && cfg['from'] ? cfg['from'] : undefined;
      // the tenant's own from is checked again at every send: the operator may have narrowed the domains since
      const bad = own === undefined ? null : senderProblem(own, senderDomains);
      if (bad) return { outcome: 'dead', error: `config.from ${bad}` };
      const from = own ?? opts.smtpFrom;
      if (!from) return { outcome: 'dead', error: 'no sender configured (config.from or smtpFrom)' };
      if (signal?.aborted) return { outcome: 'retry', error: 'aborted before sending' };

      const content = buildEmail(n);
      const timeout = AbortSignal.timeout(opts.timeoutMs);
      try {
        const info = await transporter().sendMail({
          from,
          to,
          subject: content.subject,
          text: content.text,
          html: content.html,
          messageId: messageIdOf(n.id),
          headers: { 'Auto-Submitted': 'auto-generated', 'X-Certmgr-Notify-Event-Type': n.event.type },
          signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
        });
        const result: DeliveryResult = { outcome: 'delivered' };
        const code = Number(/^\d{3}/.exec(info.response ?? '')?.[0]);
        if (code) result.statusCode = code;
        if (info.rejected.length > 0) result.error = `${info.rejected.length} of ${to.length} recipients rejected`;
        return result;
      } catch (err) {
        if (timeout.aborted) return { outcome: 'retry', error: `timed out after ${opts.timeoutMs} ms` };
        if (signal?.aborted) return { outcome: 'retry', error: 'aborted' };
        return classifySmtpError(err, fragments);
      }
    },
  };
}

/**
 * Rate: the operator's own SMTP relay (--smtp-url), whose limits are its own (no vendor's apply): 5/s, burst 10 is
 * chosen to stay under common hosted relays' sending rates (e.g. Amazon SES's default of 14 per second for a
 * production account) while a storm still drains.
 */
export const email: IntegrationDescriptor = {
  type: 'EMAIL',
  ...INTEGRATION_META.EMAIL,
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 5, burst: 10 },
  createNotifier: createEmailNotifier,
};
