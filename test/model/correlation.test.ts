import { describe, expect, it } from 'vitest';
import { correlationKeyOf } from '../../src/model/correlation.js';
import { viewOf } from '../../src/model/event-view.js';
import { CERT_ID, CLUSTER_ID, EVENTS } from '../integrations/helpers.js';

describe('correlationKeyOf', () => {
  const key = (type: keyof typeof EVENTS, data?: Record<string, unknown>) =>
    correlationKeyOf(viewOf({ type, data: data ?? EVENTS[type].data }));

  it('is shared by unhealthy and restored events of the same resource', () => {
    expect(key('evt.healthstatus.certmgr-issuer.notready')).toBe(`certmgr:issuer:${CLUSTER_ID}:cert-manager:letsencrypt-prod`);
    expect(key('evt.healthstatus.certmgr-issuer.active')).toBe(key('evt.healthstatus.certmgr-issuer.notready'));
    expect(key('evt.healthstatus.certmgr-certificate-resource.active')).toBe(key('evt.healthstatus.certmgr-certificate-resource.notready'));
  });

  it('differs by kind, cluster, namespace and name', () => {
    const base = EVENTS['evt.healthstatus.certmgr-issuer.notready'].data;
    const k = key('evt.healthstatus.certmgr-issuer.notready');
    expect(key('evt.healthstatus.certmgr-certificate-resource.notready', { ...base, certificateName: base['issuerName'] })).not.toBe(k);
    expect(key('evt.healthstatus.certmgr-issuer.notready', { ...base, clusterId: 'other' })).not.toBe(k);
    expect(key('evt.healthstatus.certmgr-issuer.notready', { ...base, namespace: 'other' })).not.toBe(k);
    expect(key('evt.healthstatus.certmgr-issuer.notready', { ...base, issuerName: 'other' })).not.toBe(k);
    // The status text does not matter.
    expect(key('evt.healthstatus.certmgr-issuer.notready', { ...base, statusMessage: 'new text', statusReason: 'Other' })).toBe(k);
  });

  it('is per certificate and rule for expiration', () => {
    const base = EVENTS['evt.policy.expiringcertificates.failed'].data;
    const k = key('evt.policy.expiringcertificates.failed');
    expect(k).toBe(`certmgr:certificateExpiration:${CERT_ID}:rule:2`);
    expect(key('evt.policy.expiringcertificates.failed', { ...base, notificationDate: '2026-03-02T09:00:00Z', threshold: 29 })).toBe(k);
    expect(key('evt.policy.expiringcertificates.failed', { ...base, ruleId: 3 })).not.toBe(k);
    expect(
      key('evt.policy.expiringcertificates.failed', {
        ...base,
        message: String(base['message']).replace(CERT_ID, '00000000-0000-4000-8000-000000000000'),
      }),
    ).not.toBe(k);
  });

  it('hashes keys longer than 255 characters', () => {
    const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, issuerName: 'i'.repeat(253), namespace: 'n'.repeat(63) };
    const k = key('evt.healthstatus.certmgr-issuer.notready', data);
    expect(k).toMatch(/^certmgr:issuer:sha256:[0-9a-f]{64}$/);
    expect(key('evt.healthstatus.certmgr-issuer.active', data)).toBe(k);
  });
});
