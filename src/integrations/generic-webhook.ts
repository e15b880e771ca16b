/**
 * GENERIC_WEBHOOK: a JSON POST whose body the router's template decides (docs/integrations.md "Generic webhook").
 *
 * - URL: secrets.url (a tenant destination: egress policy; may carry a token).
 * - Body: `n.rendered.body` when the router's template gives one (it must be JSON after rendering: otherwise the
 *   delivery is dead with the parse error's position, since retrying renders the same text), else the v1
 *   payload (payload.ts, the `data` of the WEBHOOK CloudEvent). Content-Type application/json.
 * - Standard Webhooks headers as WEBHOOK sends them (webhook-id, webhook-timestamp, and webhook-signature with
 *   an optional signing secret, rotation included: the WEBHOOK signer is reused).
 * - Extra headers (secrets.headers, JSON list of [name, value], write-only since they usually carry a token):
 *   at most MAX_EXTRA_HEADERS, RFC 9110 token names (not __proto__, constructor, prototype), visible-ASCII values;
 *   names that would change how the
 *   request is framed or routed (hop-by-hop, Host, Content-Length, Content-Type, Transfer-Encoding, Proxy-*) or
 *   forge what the service itself vouches for (User-Agent, webhook-*) are refused. Authorization is allowed:
 *   that is what most receivers want, and it is the tenant's own receiver.
 * 2xx delivered; 429/5xx/network retry (Retry-After honoured); other 4xx and 3xx dead.
 */
import { INTEGRATION_META } from '../model/integration-types.js';
import { TEMPLATE_LIMITS } from '../templates/engine.js';
import { postAndClassify } from './http.js';
import { buildCloudEvent } from './payload.js';
import {
  DEFAULT_EGRESS,
  type DeliveryResult,
  type IntegrationDescriptor,
  type IntegrationOptions,
  type Notification,
  type Notifier,
} from './types.js';
import { PREVIOUS_UNTIL, rotateSigningSecret, standardWebhookHeaders, webhookTarget } from './webhook.js';

export const MAX_EXTRA_HEADERS = 10;
const MAX_HEADER_NAME = 64;
const MAX_HEADER_VALUE = 1024;

/** Refused names (lower case); any `proxy-*` and `webhook-*` too. */
const FORBIDDEN_HEADERS = new Set([
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'content-type',
  'content-encoding',
  'expect',
  'user-agent',
]);
/**
 * Names of JavaScript object machinery (any case): header maps keyed by name would set a prototype or read an
 * inherited function instead of the header. A valid HTTP token, but no receiver expects one: refused.
 */
const OBJECT_KEY_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VISIBLE_VALUE = /^[\x20-\x7e\t]*$/;

export type ExtraHeader = [name: string, value: string];

/**
 * Checks a list of `{ name, value }` (pure). Returns the headers, or the problem and the sub-path it is at
 * (e.g. `[2].name`) for the caller to name the field.
 */
export function checkExtraHeaders(v: unknown): { headers: ExtraHeader[] } | { at: string; problem: string } {
  if (!Array.isArray(v)) return { at: '', problem: 'must be a list of { name, value }' };
  if (v.length > MAX_EXTRA_HEADERS) return { at: '', problem: `may hold at most ${MAX_EXTRA_HEADERS} headers` };
  const seen = new Set<string>();
  const out: ExtraHeader[] = [];
  for (const [i, h] of v.entries()) {
    const { name, value } = (h ?? {}) as { name?: unknown; value?: unknown };
    if (typeof name !== 'string' || !TOKEN.test(name) || name.length > MAX_HEADER_NAME)
      return {
        at: `[${i}].name`,
        problem: `must be an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~; at most ${MAX_HEADER_NAME})`,
      };
    const lower = name.toLowerCase();
    if (OBJECT_KEY_NAMES.has(lower))
      return { at: `[${i}].name`, problem: `${name} is not accepted as a header name (it names JavaScript object machinery)` };
    if (FORBIDDEN_HEADERS.has(lower) || lower.startsWith('proxy-') || lower.startsWith('webhook-'))
      return { at: `[${i}].name`, problem: `${name} is set by the service or the connection and cannot be overridden` };
    if (seen.has(lower)) return { at: `[${i}].name`, problem: `${name} is given twice` };
    seen.add(lower);
    if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_HEADER_VALUE || !VISIBLE_VALUE.test(value))
      return { at: `[${i}].value`, problem: `must be 1-${MAX_HEADER_VALUE} visible ASCII characters (no line breaks)` };
    out.push([name, value.trim()]);
  }
  return { headers: out };
}

/** The stored headers (secrets.headers), or [] when absent or unreadable. */
function storedHeaders(secrets: Readonly<Record<string, string>>): ExtraHeader[] {
  const raw = secrets['headers'];
  if (!raw) return [];
  try {
    const v = JSON.parse(raw) as unknown;
    return Array.isArray(v)
      ? v.filter((h): h is ExtraHeader => Array.isArray(h) && typeof h[0] === 'string' && typeof h[1] === 'string')
      : [];
  } catch {
    return [];
  }
}

/** The request body (pure): the rendered one, checked, or the v1 payload. */
export function genericWebhookBody(n: Notification): { body: string } | { error: string } {
  const rendered = n.rendered?.body;
  if (rendered === undefined) return { body: JSON.stringify(buildCloudEvent(n).data) };
  // the engine refuses a longer one already (a render failure: the default body goes out); the same bound here
  if (rendered.length > TEMPLATE_LIMITS.maxBodyChars)
    return { error: `the template's rendered body is longer than ${TEMPLATE_LIMITS.maxBodyChars} characters` };
  try {
    JSON.parse(rendered);
  } catch (e) {
    // V8's message names the position ("Unexpected token } in JSON at position 12"), never more of the text
    const why = e instanceof Error ? e.message.replace(/,?\s*"[\s\S]*$/, '').slice(0, 160) : 'parse error';
    return { error: `the template's rendered body is not valid JSON: ${why}` };
  }
  return { body: rendered };
}

function createGenericWebhookNotifier(opts: IntegrationOptions): Notifier {
  const clock = opts.clock ?? Date.now;
  const egress = opts.egress ?? DEFAULT_EGRESS;
  return {
    type: 'GENERIC_WEBHOOK',
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      const target = webhookTarget(n, egress);
      if ('dead' in target) return target.dead;
      const { url, signed } = target;
      const built = genericWebhookBody(n);
      if ('error' in built) return { outcome: 'dead', error: built.error };
      const { body } = built;

      const extra = storedHeaders(n.integration.secrets);
      const headers = { ...Object.fromEntries(extra), ...standardWebhookHeaders(n, body, clock(), signed) };
      // header values are secrets too (a bearer token); the overlap's end and the JSON list itself are not fragments
      const { [PREVIOUS_UNTIL]: _until, headers: _h, ...secretValues } = n.integration.secrets;
      void _until;
      void _h;
      return postAndClassify(
        { url, body, contentType: 'application/json', headers, secrets: [...Object.values(secretValues), ...extra.map(([, v]) => v)] },
        { timeoutMs: opts.timeoutMs, userAgent: opts.userAgent, clock, signal, dispatcher: egress.dispatcher() },
      );
    },
  };
}

/**
 * Rate: the tenant's own receiver, like WEBHOOK (no vendor documents it): 20/s, burst 40 keeps a storm from flooding
 * it; rateLimit.perSecond 0 lifts it.
 */
export const genericWebhook: IntegrationDescriptor = {
  type: 'GENERIC_WEBHOOK',
  ...INTEGRATION_META.GENERIC_WEBHOOK,
  deriveConfig: (secrets) => ({ signed: secrets['signingSecret'] !== undefined }),
  updateSecrets: (current, next, now) => rotateSigningSecret(current, next, now),
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 20, burst: 40 },
  createNotifier: createGenericWebhookNotifier,
};
