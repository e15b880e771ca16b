/**
 * Rotating a webhook signing secret: so that a receiver still on the old one keeps accepting messages until it
 * switches, the previous secret signs too for
 * SIGNING_SECRET_OVERLAP_MS (two space-separated `v1,` signatures, Standard Webhooks), verified here with the
 * standardwebhooks library: old and new verify during the overlap, only the new after it (clock passed in).
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createNotifier } from '../../src/integrations/index.js';
import {
  PREVIOUS_SECRET,
  PREVIOUS_UNTIL,
  SIGNING_SECRET_OVERLAP_MS,
  rotateSigningSecret,
  signingKeysAt,
} from '../../src/integrations/webhook.js';
import { startTestService, type TestService } from '../support/service.js';
import { EVENTS, integration, notification, opts, startReceiver, type Receiver } from './helpers.js';

const OLD = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const NEW = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
const H = SIGNING_SECRET_OVERLAP_MS;

describe('rotateSigningSecret (pure)', () => {
  const url = 'https://hooks.example.com/x';
  it.each<[string, Record<string, string>, Record<string, string>, number, Record<string, string>]>([
    ['first secret: nothing previous', { url }, { url, signingSecret: NEW }, 1000, { url, signingSecret: NEW }],
    [
      'changed: the old one is kept for the overlap',
      { url, signingSecret: OLD },
      { url, signingSecret: NEW },
      1000,
      { url, signingSecret: NEW, [PREVIOUS_SECRET]: OLD, [PREVIOUS_UNTIL]: String(1000 + H) },
    ],
    [
      'unchanged (operator re-sends): a running overlap is kept as is',
      { url, signingSecret: NEW, [PREVIOUS_SECRET]: OLD, [PREVIOUS_UNTIL]: String(5000) },
      { url, signingSecret: NEW },
      4000,
      { url, signingSecret: NEW, [PREVIOUS_SECRET]: OLD, [PREVIOUS_UNTIL]: '5000' },
    ],
    [
      'unchanged after the overlap: the previous one is dropped',
      { url, signingSecret: NEW, [PREVIOUS_SECRET]: OLD, [PREVIOUS_UNTIL]: '5000' },
      { url, signingSecret: NEW },
      5000,
      { url, signingSecret: NEW },
    ],
    [
      'rotated twice within the overlap: only the one just replaced is kept',
      { url, signingSecret: NEW, [PREVIOUS_SECRET]: OLD, [PREVIOUS_UNTIL]: '5000' },
      { url, signingSecret: 'whsec_third0000000000000000000000' },
      2000,
      { url, signingSecret: 'whsec_third0000000000000000000000', [PREVIOUS_SECRET]: NEW, [PREVIOUS_UNTIL]: String(2000 + H) },
    ],
    [
      'rotated back to the previous one: the replaced one becomes previous',
      { url, signingSecret: NEW, [PREVIOUS_SECRET]: OLD, [PREVIOUS_UNTIL]: '5000' },
      { url, signingSecret: OLD },
      2000,
      { url, signingSecret: OLD, [PREVIOUS_SECRET]: NEW, [PREVIOUS_UNTIL]: String(2000 + H) },
    ],
    ['signing turned off: nothing previous', { url, signingSecret: OLD }, { url }, 1000, { url }],
    [
      'a caller cannot inject a previous secret',
      { url, signingSecret: OLD },
      { url, signingSecret: OLD, [PREVIOUS_SECRET]: NEW, [PREVIOUS_UNTIL]: '9999999999999' },
      1000,
      { url, signingSecret: OLD },
    ],
  ])('%s', (_name, current, next, now, want) => {
    expect(rotateSigningSecret(current, next, now)).toEqual(want);
  });

  it('signingKeysAt: both keys strictly before the end, only the current one from the end on', () => {
    const s = { signingSecret: NEW, [PREVIOUS_SECRET]: OLD, [PREVIOUS_UNTIL]: '5000' };
    expect(signingKeysAt(s, 4999)).toHaveLength(2);
    expect(signingKeysAt(s, 5000)).toHaveLength(1);
    expect(signingKeysAt({ [PREVIOUS_SECRET]: OLD, [PREVIOUS_UNTIL]: '5000' }, 1)).toHaveLength(0);
  });
});

describe('webhook-signature during and after a rotation (loopback receiver, standardwebhooks)', () => {
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver((_r, res) => res.writeHead(204).end());
  });
  afterAll(() => rx.close());
  beforeEach(() => {
    rx.requests.length = 0;
  });

  const verifies = (secret: string) => {
    const r = rx.requests.at(-1)!;
    try {
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  };

  it('old and new verify within the overlap; only the new one after it', async () => {
    // realistic times (the library checks webhook-timestamp against its own clock, ±5 min)
    const t0 = Date.now();
    const rotatedAt = t0 - H + 60_000; // the overlap ends one minute after t0
    const secrets = rotateSigningSecret(
      { url: `${rx.url}/in`, signingSecret: OLD },
      { url: `${rx.url}/in`, signingSecret: NEW },
      rotatedAt,
    );
    const n = notification(integration('WEBHOOK', secrets), EVENTS['evt.healthstatus.certmgr-issuer.notready']);

    expect(await createNotifier('WEBHOOK', opts({ clock: () => t0 })).send(n)).toMatchObject({ outcome: 'delivered' });
    expect(String(rx.requests.at(-1)!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifies(NEW)).toBe(true);
    expect(verifies(OLD)).toBe(true);

    expect(await createNotifier('WEBHOOK', opts({ clock: () => t0 + 120_000 })).send(n)).toMatchObject({ outcome: 'delivered' });
    expect(String(rx.requests.at(-1)!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifies(NEW)).toBe(true);
    expect(verifies(OLD)).toBe(false);
  });

  it.each(['sqlite', 'postgres'] as const)(
    'through the service (%s): updateIntegration with a new secret, then testIntegration carries both signatures',
    async (kind) => {
      const svc: TestService = await startTestService(kind);
      try {
        const gql = svc.gql();
        const c = await gql.request<{ createWebhookIntegration: { id: string } }>(
          `mutation($url: String!, $s: String!) { createWebhookIntegration(input: { name: "hook", url: $url, signingSecret: $s }) { id } }`,
          { url: `${rx.url}/in`, s: OLD },
        );
        const id = c.createWebhookIntegration.id;
        const update = (s: string) =>
          gql.request(
            `mutation($id: UUID!, $url: String!, $s: String!) { updateIntegration(id: $id, input: { webhookParams: { url: $url, signingSecret: $s } }) { id } }`,
            {
              id,
              url: `${rx.url}/in`,
              s,
            },
          );
        const test = () =>
          gql.request<{ testIntegration: { outcome: string } }>(`mutation($id: UUID!) { testIntegration(id: $id) { outcome } }`, { id });

        expect((await test()).testIntegration.outcome).toBe('delivered');
        expect(verifies(OLD)).toBe(true);
        expect(verifies(NEW)).toBe(false);

        await update(NEW);
        expect((await test()).testIntegration.outcome).toBe('delivered');
        expect(verifies(NEW)).toBe(true);
        expect(verifies(OLD)).toBe(true);

        // the operator re-sends the same values on every Secret change: the overlap continues
        await update(NEW);
        expect((await test()).testIntegration.outcome).toBe('delivered');
        expect(verifies(OLD)).toBe(true);

        // the secrets never come back through the API
        const all = JSON.stringify(await gql.request(`{ integrations { nodes { id name webhookSigned } } }`));
        expect(all).not.toContain(OLD.slice(6));
        expect(all).not.toContain(NEW.slice(6));
      } finally {
        await svc.close();
      }
    },
  );
});
