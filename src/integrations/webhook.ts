/**
 * WEBHOOK: POST of a CloudEvents 1.0 structured JSON body (payload.ts) with Standard Webhooks
 * headers: webhook-id (= notification id, the same on every retry), webhook-timestamp (unix
 * seconds of this attempt) and, with a signing secret, webhook-signature: v1,<base64 HMAC-SHA256
 * of "id.timestamp.body">.
 *
 * secrets.url (may carry tokens) and secrets.signingSecret (optional): `whsec_<base64>` is decoded
 * to the key bytes; any other value is used as its UTF-8 bytes.
 * Rotation: when updateIntegration changes the signing secret, the old one is kept as
 * secrets.previousSigningSecret until secrets.previousSigningSecretUntil (epoch ms, now +
 * SIGNING_SECRET_OVERLAP_MS), and until then webhook-signature carries both signatures, new first
 * ("v1,<new> v1,<old>": Standard Webhooks receivers accept any listed one), so a receiver can switch
 * to the new secret at any time within the overlap without rejecting a message.
 * 2xx delivered; 429/5xx/network retry (Retry-After honoured); other 4xx and 3xx dead.
 */
import { INTEGRATION_META } from '../model/integration-types.js';
import { createHash, createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { EgressPolicy } from './egress.js';
import { checkTenantUrl, postAndClassify } from './http.js';
import { buildCloudEvent, CLOUDEVENTS_CONTENT_TYPE } from './payload.js';
import {
  DEFAULT_EGRESS,
  type DeliveryResult,
  type IntegrationDescriptor,
  type IntegrationOptions,
  type Notification,
  type Notifier,
} from './types.js';

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

/**
 * HMAC keys by the SHA-256 of their bytes (no secret as a map key): createHmac with a KeyObject costs much less than
 * one with a Buffer, which is made into a KeyObject on every call. Bounded
 * by count: a rotated-out or deleted key stays until the map is cleared (at most HMAC_KEYS_MAX keys).
 */
const hmacKeys = new Map<string, KeyObject>();
const HMAC_KEYS_MAX = 1024;

function hmacKey(key: Buffer): KeyObject {
  const id = createHash('sha256').update(key).digest('base64');
  let k = hmacKeys.get(id);
  if (!k) {
    if (hmacKeys.size >= HMAC_KEYS_MAX) hmacKeys.clear();
    hmacKeys.set(id, (k = createSecretKey(key)));
  }
  return k;
}

function signWebhook(key: KeyObject, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/** An integration's signing keys, parsed (signingKeysAt's rules) from the secrets they were read from. */
interface SigningKeys {
  /** the secrets' values they came from: a changed value is parsed again */
  secret: string | undefined;
  prevSecret: string | undefined;
  prevUntil: string | undefined;
  /** a signing secret is set but is not a valid key */
  invalid: boolean;
  current: KeyObject | null;
  /** the previous key, signing too before `until` (null: none, not valid, or the same key) */
  previous: KeyObject | null;
  until: number;
}

/**
 * Parsed keys per secrets object (a record's secrets are read once per claim batch, for all its deliveries): the
 * base64 decoding, validation and key-id hashing once per object, not per attempt. Weak: they go with the record.
 */
const signingKeysOf = new WeakMap<Readonly<Record<string, string>>, SigningKeys>();

function signingKeysFor(secrets: Readonly<Record<string, string>>): SigningKeys {
  const secret = secrets['signingSecret'];
  const prevSecret = secrets[PREVIOUS_SECRET];
  const prevUntil = secrets[PREVIOUS_UNTIL];
  const known = signingKeysOf.get(secrets);
  if (known && known.secret === secret && known.prevSecret === prevSecret && known.prevUntil === prevUntil) return known;
  const cur = secret ? signingKey(secret) : null;
  const until = Number(prevUntil);
  const prev = cur && prevSecret && Number.isFinite(until) ? signingKey(prevSecret) : null;
  const keys: SigningKeys = {
    secret,
    prevSecret,
    prevUntil,
    invalid: !!secret && !cur,
    current: cur ? hmacKey(cur) : null,
    previous: cur && prev && !prev.equals(cur) ? hmacKey(prev) : null,
    until,
  };
  signingKeysOf.set(secrets, keys);
  return keys;
}

/** How long the previous signing secret keeps signing after a rotation (24 h): receivers switch within it. */
export const SIGNING_SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;
export const PREVIOUS_SECRET = 'previousSigningSecret';
export const PREVIOUS_UNTIL = 'previousSigningSecretUntil';

/**
 * The secrets to store when an update replaces `current` with `next` at `now` (pure). A changed signing
 * secret keeps the old one for the overlap; an unchanged one keeps a still-running overlap; no signing
 * secret (signing turned off) keeps none. Only one previous secret: a second rotation within the overlap
 * drops the oldest.
 */
export function rotateSigningSecret(
  current: Readonly<Record<string, string>>,
  next: Readonly<Record<string, string>>,
  now: number,
  overlapMs: number = SIGNING_SECRET_OVERLAP_MS,
): Record<string, string> {
  const { [PREVIOUS_SECRET]: _p, [PREVIOUS_UNTIL]: _u, ...rest } = next;
  void _p;
  void _u;
  const out: Record<string, string> = { ...rest };
  const newSecret = next['signingSecret'];
  const oldSecret = current['signingSecret'];
  if (!newSecret) return out;
  if (oldSecret && oldSecret !== newSecret) {
    out[PREVIOUS_SECRET] = oldSecret;
    out[PREVIOUS_UNTIL] = String(now + overlapMs);
    return out;
  }
  const prev = current[PREVIOUS_SECRET];
  const until = Number(current[PREVIOUS_UNTIL]);
  if (prev && prev !== newSecret && Number.isFinite(until) && until > now) {
    out[PREVIOUS_SECRET] = prev;
    out[PREVIOUS_UNTIL] = String(until);
  }
  return out;
}

/** The signing keys in force at `now`: the current one, then the previous one during its overlap. */
export function signingKeysAt(secrets: Readonly<Record<string, string>>, now: number): Buffer[] {
  const keys: Buffer[] = [];
  const cur = secrets['signingSecret'] ? signingKey(secrets['signingSecret']) : null;
  if (cur) keys.push(cur);
  const prev = secrets[PREVIOUS_SECRET];
  const until = Number(secrets[PREVIOUS_UNTIL]);
  if (cur && prev && Number.isFinite(until) && now < until) {
    const k = signingKey(prev);
    if (k && !k.equals(cur)) keys.push(k);
  }
  return keys;
}

/**
 * The URL (egress policy's early check) and signing key of a webhook integration (`secrets.url`,
 * `secrets.signingSecret`), or why the delivery is dead. Shared with GENERIC_WEBHOOK.
 */
export function webhookTarget(n: Notification, egress: EgressPolicy): { url: string; signed: boolean } | { dead: DeliveryResult } {
  const url = n.integration.secrets['url'];
  const bad = checkTenantUrl(url, 'webhook URL', egress);
  if (bad || !url) return { dead: { outcome: 'dead', error: bad ?? 'webhook URL is not configured' } };
  const keys = signingKeysFor(n.integration.secrets);
  if (keys.invalid) return { dead: { outcome: 'dead', error: 'signing secret is not valid (whsec_ must be followed by base64)' } };
  return { url, signed: keys.current !== null };
}

/**
 * The Standard Webhooks headers of one attempt at `now`: webhook-id (the delivery id), webhook-timestamp and, when
 * signed, webhook-signature (during a rotation's overlap both signatures, space-separated). Shared with
 * GENERIC_WEBHOOK.
 */
export function standardWebhookHeaders(n: Notification, body: string, now: number, signed: boolean): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  const headers: Record<string, string> = { 'webhook-id': n.id, 'webhook-timestamp': String(timestamp) };
  if (signed) {
    // signingKeysAt's keys: the current one, then the previous one during its overlap
    const keys = signingKeysFor(n.integration.secrets);
    if (keys.current) {
      const first = signWebhook(keys.current, n.id, timestamp, body);
      headers['webhook-signature'] =
        keys.previous && now < keys.until ? `${first} ${signWebhook(keys.previous, n.id, timestamp, body)}` : first;
    } else headers['webhook-signature'] = '';
  }
  return headers;
}

function createWebhookNotifier(opts: IntegrationOptions): Notifier {
  const clock = opts.clock ?? Date.now;
  const egress = opts.egress ?? DEFAULT_EGRESS;
  return {
    type: 'WEBHOOK',
    async send(n: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
      const target = webhookTarget(n, egress);
      if ('dead' in target) return target.dead;
      const { url, signed } = target;
      const body = JSON.stringify(buildCloudEvent(n));
      const headers = standardWebhookHeaders(n, body, clock(), signed);
      // the overlap's end is a timestamp, not a secret: keep it out of the redaction fragments
      const { [PREVIOUS_UNTIL]: _until, ...secretValues } = n.integration.secrets;
      void _until;
      return postAndClassify(
        { url, body, contentType: CLOUDEVENTS_CONTENT_TYPE, headers, secrets: Object.values(secretValues) },
        { timeoutMs: opts.timeoutMs, userAgent: opts.userAgent, clock, signal, dispatcher: egress.dispatcher() },
      );
    },
  };
}

/**
 * Rate: a receiver of the tenant's own, whose capacity no vendor documents: 20/s, burst 40 keeps a storm from
 * flooding a small service while 200 notifications still drain in seconds; rateLimit.perSecond 0 lifts it for a
 * receiver that takes more.
 */
export const webhook: IntegrationDescriptor = {
  type: 'WEBHOOK',
  ...INTEGRATION_META.WEBHOOK,
  deriveConfig: (secrets) => ({ signed: secrets['signingSecret'] !== undefined }),
  // a new signing secret: the old one keeps signing too for the overlap (receivers rotate without loss)
  updateSecrets: (current, next, now) => rotateSigningSecret(current, next, now),
  orderMode: 'in-order',
  rateLimit: { ratePerSec: 20, burst: 40 },
  createNotifier: createWebhookNotifier,
};
