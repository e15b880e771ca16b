import { describe, expect, it } from 'vitest';
import { certificateRef, runbookUrlOf, viewOf } from '../../src/model/event-view.js';
import { APP_ID, CERT_ID, CLUSTER_ID, EVENTS } from '../integrations/helpers.js';

const RUNBOOK = 'https://runbooks.example/cert-manager/issuer-not-ready';

describe('viewOf', () => {
  it('normalizes a certificate event', () => {
    const v = viewOf(EVENTS['evt.healthstatus.certmgr-certificate-resource.notready']);
    expect(v).toMatchObject({
      kind: 'certificate',
      state: 'unhealthy',
      cluster: { id: CLUSTER_ID, name: 'prod' },
      resource: { namespace: 'shop', name: 'shop-tls', id: null },
      reason: 'DoesNotExist',
      certificate: { issuerName: 'letsencrypt-prod', dnsNames: ['shop.example.com', 'www.shop.example.com'] },
    });
  });

  it('reads threshold and ruleId given as numeric strings', () => {
    const v = viewOf({ type: 'evt.policy.expiringcertificates.failed', data: { threshold: '14', ruleId: '7' } });
    expect(v).toMatchObject({ threshold: 14, ruleId: 7 });
  });
});

describe('certificateRef (expiration identity)', () => {
  it('prefers an explicit certificateId', () => {
    expect(certificateRef({ certificateId: 'abc', message: `id ${CERT_ID}` })).toBe('abc');
  });
  it('takes the UUID in the message that is not an application id', () => {
    expect(certificateRef(EVENTS['evt.policy.expiringcertificates.failed'].data)).toBe(CERT_ID);
    expect(certificateRef({ applicationIds: [APP_ID], message: `application ${APP_ID.toUpperCase()} cert ${CERT_ID}` })).toBe(CERT_ID);
  });
  it('falls back to the name, then to a hash of the message', () => {
    expect(certificateRef({ name: 'n1', message: 'no ids here' })).toBe('name:n1');
    const a = certificateRef({ message: 'm1' });
    expect(a).toMatch(/^message:[0-9a-f]{32}$/);
    expect(certificateRef({ message: 'm2' })).not.toBe(a);
  });
});

describe('runbookUrlOf', () => {
  it.each([
    [RUNBOOK, RUNBOOK],
    ['http://wiki.internal/rb?id=1#x', 'http://wiki.internal/rb?id=1#x'],
    ['https://x.example/a"onmouseover="b<c>', 'https://x.example/a%22onmouseover=%22b%3Cc%3E'],
    ['javascript:alert(1)', null],
    ['data:text/html,hi', null],
    ['/relative', null],
    ['https://x.example/a b', null],
    ['https://x.example/\u0000', null],
    [`https://x.example/${'a'.repeat(2048)}`, null],
    [42, null],
  ])('%s -> %s', (raw, url) => {
    expect(runbookUrlOf({ runbookUrl: raw })).toBe(url);
  });

  it('is read for every event kind', () => {
    for (const type of Object.keys(EVENTS) as (keyof typeof EVENTS)[]) {
      expect(viewOf({ type, data: { runbookUrl: RUNBOOK } }).runbookUrl).toBe(RUNBOOK);
    }
  });
});
