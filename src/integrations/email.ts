/**
 * EMAIL: one SMTP message per notification through nodemailer (opts.smtpUrl).
 *
 * config.to (string[]) and optional config.from (else opts.smtpFrom). Text and HTML bodies built
 * from render.ts; subject "[certmgr-notify] <title>"; Message-ID <notification id@certmgr-notify>,
 * the same on every retry so receivers can drop duplicates.
 * SMTP 4xx replies (and 503) and connection/timeouts retry; other 5xx replies are dead.
 * DeliveryResult.statusCode carries the SMTP reply code.
 */
import { createTransport } from 'nodemailer';
import { describeNetworkError, redact, secretFragments, truncateChars } from './http.js';
import { renderNotification, SEVERITY_COLOR, type Rendered } from './render.js';
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

export function buildEmail(n: Notification): EmailContent {
  const r: Rendered = renderNotification(n);
  const footer = `Sent by certmgr-notify for router "${n.router.name}" (event ${n.event.type}, notification ${n.id}).`;
  const text = [r.title, '', ...r.facts.map((f) => `${f.name}: ${f.value}`), '', '-- ', footer, ''].join('\n');
  const rows = r.facts
    .map(
      (f) =>
        `<tr><th style="text-align:left;vertical-align:top;padding:4px 12px 4px 0;white-space:nowrap">${escapeHtml(f.name)}</th>` +
        `<td style="padding:4px 0">${escapeHtml(f.value)}</td></tr>`,
    )
    .join('\n');
  const html = `<!doctype html>
<html><body style="font-family:Arial,Helvetica,sans-serif;font-size:14px;color:#1f1f1f">
<div style="border-left:6px solid ${SEVERITY_COLOR[r.severity]};padding:8px 16px">
<h2 style="margin:0 0 12px 0;font-size:18px">${escapeHtml(r.title)}</h2>
<table style="border-collapse:collapse">
${rows}
</table>
</div>
<p style="color:#6b6b6b;font-size:12px">${escapeHtml(footer)}</p>
</body></html>
`;
  return { subject: truncateChars(`${SUBJECT_PREFIX} ${r.title}`, 250), text, html };
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

function createEmailNotifier(opts: IntegrationOptions): Notifier {
  let transport: ReturnType<typeof createTransport> | undefined;
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
      const to = Array.isArray(cfg['to']) ? cfg['to'].filter((x): x is string => typeof x === 'string' && x.trim() !== '') : [];
      if (to.length === 0) return { outcome: 'dead', error: 'no recipients configured (config.to)' };
      const from = (typeof cfg['from'] === 'string' && cfg['from']) || opts.smtpFrom;
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

/** Typical SMTP relay limits: 5/s, burst 10. */
export const email: IntegrationDescriptor = {
  type: 'EMAIL',
  api: { createMutation: 'createEmailIntegration', paramsField: 'emailParams' },
  params: [
    { input: 'to', kind: 'emails', required: true, into: 'config', key: 'to' },
    { input: 'from', kind: 'email', required: false, into: 'config', key: 'from' },
  ],
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 5, burst: 10 },
  providerType: 'Email',
  createNotifier: createEmailNotifier,
};
