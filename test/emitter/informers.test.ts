/**
 * The cert-manager informers' transform keeps what the decisions read: observe() (health), the policy and the
 * inventory's facts give the same answers on the kept form as on the whole object, and what nobody reads
 * (managedFields, kubectl's copy, other annotations, labels, other conditions, other spec fields) is gone.
 */
import { describe, expect, it } from 'vitest';
import { certManagerFacts } from '../../src/emitter/informers.js';
import { HEALTH_KINDS, observe, type CertManagerObject, type HealthKind } from '../../src/emitter/health/observe.js';
import { certificateFactsOf, type TlsSecretFacts } from '../../src/emitter/inventory/facts.js';
import { resourcePolicyOf } from '../../src/emitter/policy.js';
import { UID_B, certificate, issuer, issuing, ready } from './fixtures.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const HOUR = 3_600_000;

/** What the apiserver adds around the fields the fixtures set. */
function fat(o: CertManagerObject): CertManagerObject {
  return {
    ...o,
    metadata: {
      ...o.metadata,
      resourceVersion: '4711',
      labels: { app: 'shop', 'app.kubernetes.io/instance': 'shop-prod' },
      annotations: {
        ...o.metadata?.annotations,
        'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(o),
        'meta.helm.sh/release-name': 'shop',
      },
      managedFields: [
        {
          manager: 'cert-manager-certificates-readiness',
          operation: 'Update',
          apiVersion: 'cert-manager.io/v1',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:status': { '.': {} } },
        },
      ],
      finalizers: ['example.com/keep'],
    },
    spec: {
      ...o.spec,
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      usages: ['digital signature'],
      duration: '2160h0m0s',
    },
    status: {
      ...o.status,
      conditions: [
        ...(o.status?.conditions ?? []),
        { type: 'Other', status: 'True', reason: 'X', message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z' },
      ],
      notBefore: '2026-01-01T00:00:00Z',
      renewalTime: '2026-03-01T00:00:00Z',
      revision: 3,
    },
  };
}

const cases: { name: string; kind: HealthKind; obj: CertManagerObject }[] = [
  {
    name: 'ready certificate',
    kind: 'Certificate',
    obj: certificate({ conditions: [ready('True', NOW - HOUR)], status: { notAfter: '2026-06-01T00:00:00Z' } }),
  },
  {
    name: 'failing certificate',
    kind: 'Certificate',
    obj: certificate({ conditions: [ready('False', NOW - HOUR, 'Failed', 'the ACME order failed')] }),
  },
  {
    name: 'issuing certificate',
    kind: 'Certificate',
    obj: certificate({ conditions: [ready('False', NOW - HOUR), issuing('True', NOW - HOUR)], status: { failedIssuanceAttempts: 0 } }),
  },
  {
    name: 'failed issuance',
    kind: 'Certificate',
    obj: certificate({ conditions: [ready('False', NOW - HOUR), issuing('True', NOW - HOUR)], status: { failedIssuanceAttempts: 2 } }),
  },
  {
    name: 'expired but Ready',
    kind: 'Certificate',
    obj: certificate({ conditions: [ready('True', NOW - 100 * HOUR)], status: { notAfter: '2026-02-01T00:00:00Z' } }),
  },
  {
    name: 'stale condition',
    kind: 'Certificate',
    obj: certificate({ generation: 3, conditions: [ready('False', NOW - HOUR, 'Failed', '', 2)] }),
  },
  { name: 'no condition, created', kind: 'Certificate', obj: certificate({ created: NOW - 2 * HOUR }) },
  {
    name: 'annotated certificate',
    kind: 'Certificate',
    obj: {
      ...certificate({ conditions: [ready('False', NOW - HOUR)] }),
      metadata: {
        ...certificate().metadata,
        annotations: {
          'notify.certmgr.io/ignore': 'yes?',
          'notify.certmgr.io/runbook-url': 'https://runbooks.example.com/tls',
          'notify.certmgr.io/application-ids': 'a1, a2',
        },
      },
    },
  },
  {
    name: 'secretTemplate policy',
    kind: 'Certificate',
    obj: certificate({
      conditions: [ready('True', NOW - HOUR)],
      spec: {
        secretTemplate: {
          annotations: { 'notify.certmgr.io/expiry-thresholds': '7,3', 'notify.certmgr.io/application-ids': 'x', other: 'y' },
          labels: { a: 'b' },
        },
      },
    }),
  },
  {
    name: 'no subject, no SANs',
    kind: 'Certificate',
    obj: certificate({
      conditions: [ready('Unknown', NOW - HOUR)],
      spec: { subject: undefined, dnsNames: undefined, commonName: undefined },
    }),
  },
  {
    name: 'issuer',
    kind: 'Issuer',
    obj: issuer('Issuer', { conditions: [ready('False', NOW - HOUR, 'ErrRegisterACMEAccount', 'no account')] }),
  },
  {
    name: 'ignored cluster issuer',
    kind: 'ClusterIssuer',
    obj: {
      ...issuer('ClusterIssuer', { uid: UID_B, conditions: [ready('True', NOW - HOUR)] }),
      metadata: { name: 'ca', uid: UID_B, annotations: { 'notify.certmgr.io/ignore': 'true' } },
    },
  },
  {
    name: 'renewal failing while Ready',
    kind: 'Certificate',
    obj: certificate({
      conditions: [
        ready('True', NOW - 100 * HOUR),
        {
          type: 'Issuing',
          status: 'False',
          reason: 'Failed',
          message: 'The certificate request has failed to complete and will be retried: 429 urn:ietf:params:acme:error:rateLimited',
          lastTransitionTime: new Date(NOW - HOUR).toISOString(),
          observedGeneration: 1,
        },
      ],
      status: { failedIssuanceAttempts: 3, lastFailureTime: new Date(NOW - HOUR).toISOString(), notAfter: '2026-06-01T00:00:00Z' },
    }),
  },
  {
    name: 'renewal retrying after failures while Ready',
    kind: 'Certificate',
    obj: certificate({
      conditions: [ready('True', NOW - 100 * HOUR), issuing('True', NOW - HOUR, 'Renewing')],
      status: { failedIssuanceAttempts: 1, lastFailureTime: new Date(NOW - 2 * HOUR).toISOString(), notAfter: '2026-06-01T00:00:00Z' },
    }),
  },
  {
    name: 'renewal overdue, issuance in progress (fat() sets renewalTime 12 h ago)',
    kind: 'Certificate',
    obj: certificate({
      conditions: [ready('True', NOW - 100 * HOUR), issuing('True', NOW - 11 * HOUR, 'Renewing')],
      status: { notAfter: '2026-06-01T00:00:00Z' },
    }),
  },
  {
    name: 'issued (server-side apply keeps Issuing=False Issued)',
    kind: 'Certificate',
    obj: certificate({
      conditions: [
        ready('True', NOW - HOUR),
        { ...issuing('False', NOW - HOUR, 'Issued'), message: 'The certificate has been successfully issued' },
      ],
      status: { notAfter: '2026-06-01T00:00:00Z' },
    }),
  },
];

const secretOf = (cert: CertManagerObject): TlsSecretFacts => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'web-tls', namespace: 'shop', annotations: { 'cert-manager.io/certificate-name': cert.metadata?.name ?? '' } },
  chain: null,
});

describe('certManagerFacts: the cached form of cert-manager objects', () => {
  it.each(cases)('$name: health, policy and inventory decide the same on the kept fields', ({ kind, obj }) => {
    const whole = fat(obj);
    const kept = certManagerFacts(whole);
    expect(resourcePolicyOf(kept, undefined, kind)).toEqual(resourcePolicyOf(whole, undefined, kind));
    const policy = resourcePolicyOf(whole, undefined, kind);
    expect(observe(kind, kept, NOW, policy)).toEqual(observe(kind, whole, NOW, policy));
    if (kind === 'Certificate') expect(certificateFactsOf(secretOf(whole), kept)).toEqual(certificateFactsOf(secretOf(whole), whole));
  });

  it('drops what nobody reads, keeps the version ListWatch compares', () => {
    const whole = fat(cases[7]!.obj);
    const kept = certManagerFacts(whole);
    expect(kept.metadata).toEqual({
      name: 'web-tls',
      namespace: 'shop',
      uid: whole.metadata?.uid,
      resourceVersion: '4711',
      generation: 1,
      annotations: {
        'notify.certmgr.io/ignore': 'yes?',
        'notify.certmgr.io/runbook-url': 'https://runbooks.example.com/tls',
        'notify.certmgr.io/application-ids': 'a1, a2',
      },
    });
    expect(Object.keys(kept.spec ?? {}).sort()).toEqual(['commonName', 'dnsNames', 'issuerRef', 'secretName', 'subject']);
    expect(kept.status?.conditions?.map((c) => c.type)).toEqual(['Ready']);
    expect(Object.keys(kept.status ?? {})).toEqual(['conditions', 'renewalTime']);
    expect(JSON.stringify(kept).length).toBeLessThan(JSON.stringify(whole).length / 2);
  });

  it('metadata is built when read and the last one kept: interleaved reads of two records each get their own; it cannot be changed', () => {
    const a = certManagerFacts(fat(cases[7]!.obj));
    const b = certManagerFacts(certificate({ name: 'api-tls' }));
    const first = a.metadata;
    expect(a.metadata).toBe(first); // read again in a row: the same object, nothing built
    expect(b.metadata?.name).toBe('api-tls');
    expect(a.metadata).toEqual(first); // built again after b's, equal
    expect(a.metadata).not.toBe(b.metadata);
    expect(Object.isFrozen(a.metadata)).toBe(true);
    expect(() => {
      (a.metadata as { name?: string }).name = 'other';
    }).toThrow(TypeError);
    expect(a.metadata?.name).toBe('web-tls');
  });

  it('every kind goes through unchanged in kind and apiVersion', () => {
    for (const kind of HEALTH_KINDS) {
      const o = kind === 'Certificate' ? certificate() : issuer(kind);
      expect(certManagerFacts(o)).toMatchObject({ apiVersion: 'cert-manager.io/v1', kind });
    }
  });
});
