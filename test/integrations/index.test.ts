import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNotifier, DEFAULT_INCIDENT_EVENTS_URL, DEFAULT_TIMEOUT_MS, integrationOptions } from '../../src/integrations/index.js';
import { INTEGRATION_TYPES } from '../../src/store/types.js';
import { EVENTS, integration, notification, opts, startReceiver, type Receiver } from './helpers.js';

describe('createNotifier', () => {
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());

  it.each(INTEGRATION_TYPES)('returns a %s notifier', (type) => {
    expect(createNotifier(type, opts()).type).toBe(type);
  });

  it('refuses a notification of another integration type without sending', async () => {
    const n = notification(integration('SLACK', { webhookUrl: `${rx.url}/x` }), EVENTS['evt.healthstatus.certmgr-issuer.notready']);
    const r = await createNotifier('WEBHOOK', opts()).send(n);
    expect(r).toEqual({ outcome: 'dead', error: 'integration type SLACK cannot be sent by the WEBHOOK notifier' });
    expect(rx.requests).toHaveLength(0);
  });

  it('turns an unexpected exception into retry with secrets redacted', async () => {
    const secret = `${rx.url}/hook/VERY-SECRET-TOKEN`;
    const data = new Proxy(
      {},
      {
        get() {
          throw new Error(`boom while posting to ${secret}`);
        },
      },
    );
    const n = notification(integration('WEBHOOK', { url: secret }), { type: 'evt.healthstatus.certmgr-issuer.notready', data });
    const r = await createNotifier('WEBHOOK', opts()).send(n);
    expect(r.outcome).toBe('retry');
    expect(r.error).toBe('internal error: boom while posting to [REDACTED]');
  });
});

describe('integrationOptions', () => {
  it('fills the documented defaults', () => {
    expect(integrationOptions()).toEqual({
      incidentEventsUrl: DEFAULT_INCIDENT_EVENTS_URL,
      timeoutMs: DEFAULT_TIMEOUT_MS,
      userAgent: 'certmgr-notify',
    });
    expect(DEFAULT_INCIDENT_EVENTS_URL).toBe('https://events.pagerduty.com');
    expect(DEFAULT_TIMEOUT_MS).toBe(10_000);
    expect(integrationOptions({ timeoutMs: 5, smtpUrl: 'smtp://x' })).toMatchObject({ timeoutMs: 5, smtpUrl: 'smtp://x' });
  });
});
