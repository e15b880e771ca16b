/**
 * WEBHOOK: POST of a CloudEvents 1.0 structured JSON body (payload.ts) with Standard Webhooks
 * headers: webhook-id (= notification id, the same on every retry), webhook-timestamp (unix
 * seconds of this attempt) and, with a signing secret, webhook-signature: v1,<base64 HMAC-SHA256
 * of "id.timestamp.body">.
 *
 * secrets.url (may carry tokens) and secrets.signingSecret (optional): `whsec_<base64>` is decoded
 * to the key bytes; any other value is used as its UTF-8 bytes.
 * 2xx delivered; 429/5xx/network retry (Retry-After honoured); other 4xx and 3xx dead.
 */
import { createHmac } from 'node:crypto';
import { checkTenantUrl, postAndClassify } from './http.js';
import { buildCloudEvent, CLOUDEVENTS_CONTENT_TYPE } from './payload.js';
import { DEFAULT_EGRESS, type DeliveryResult, type IntegrationOptions, type Notification, type Notifier } from './types.js';

const WHSEC_PREFIX = 'whsec_';

/** Key bytes of a signing secret, or null when a whsec_ secret is not valid base64. */
export function signingKey(secret: string): Buffer | null {
  if (secret.startsWith(WHSEC_PREFIX)) {
    const b64 = secret.slice(WHSEC_PREFIX.length);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 === 1) return null;
    const key = Buffer.from(b64, 'base64');
    return key.length > 0 ? key : null;
  }
  return secret.length > 0 ? Buffer.from(secret, 'utf8') : null;
}

export function signWebhook(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

export function createWebhookNotifier(opts: IntegrationOptions): Notifier {
  const clock = opts.clock ?? Date.now;
  const egress = opts.egress ?? DEFAULT_EGRESS;
  return {
    type: 'WEBHOOK',
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      const url = n.integration.secrets['url'];
      const bad = checkTenantUrl(url, 'webhook URL', egress);
      if (bad || !url) return { outcome: 'dead', error: bad ?? 'webhook URL is not configured' };
      const secret = n.integration.secrets['signingSecret'];
      const key = secret ? signingKey(secret) : null;
      if (secret && !key) return { outcome: 'dead', error: 'signing secret is not valid (whsec_ must be followed by base64)' };

      const body = JSON.stringify(buildCloudEvent(n));
      const timestamp = Math.floor(clock() / 1000);
      const headers: Record<string, string> = {
        'webhook-id': n.id,
        'webhook-timestamp': String(timestamp),
      };
      if (key) headers['webhook-signature'] = signWebhook(key, n.id, timestamp, body);
      return postAndClassify(
        { url, body, contentType: CLOUDEVENTS_CONTENT_TYPE, headers, secrets: Object.values(n.integration.secrets) },
        { timeoutMs: opts.timeoutMs, userAgent: opts.userAgent, clock, signal, dispatcher: egress.dispatcher() },
      );
    },
  };
}
