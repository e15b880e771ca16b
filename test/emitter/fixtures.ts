/**
 * Builders of cert-manager objects for the emitter's tests (our own fixtures, modelled on the shapes in
 * cert-manager's own sample manifests; never loaded from them) and self-signed certificates.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CertManagerCondition, CertManagerObject } from '../../src/emitter/health/observe.js';

export const UID_A = '43ced989-723b-4eac-bad0-f8bead6976df';
export const UID_B = '2a7c9f3e-5b61-4a0d-8e0c-7d3f1e9b6c42';
export const CLUSTER = { id: '6f1c2b3a-1111-4c2d-9e8f-0a1b2c3d4e5f', name: 'prod' };

export const iso = (ms: number): string => new Date(ms).toISOString();

/** The emitter's retry backoffs in the integration tests: short, so a failed list, patch or send is retried within the test. */
export const TEST_EMITTER_BACKOFFS = {
  informerBackoff: { baseMs: 100, maxMs: 1_000 },
  queueBackoff: { baseMs: 50, maxMs: 1_000 },
  sendBackoff: { baseMs: 50, maxMs: 500 },
};

export function ready(
  status: 'True' | 'False' | 'Unknown',
  at: number,
  reason = status === 'True' ? 'Ready' : 'DoesNotExist',
  message = '',
  observedGeneration = 1,
): CertManagerCondition {
  return { type: 'Ready', status, reason, message, lastTransitionTime: iso(at), observedGeneration };
}

export function issuing(status: 'True' | 'False', at: number, reason = 'DoesNotExist'): CertManagerCondition {
  return {
    type: 'Issuing',
    status,
    reason,
    message: 'Issuing certificate as Secret does not exist',
    lastTransitionTime: iso(at),
    observedGeneration: 1,
  };
}

export interface ObjOpts {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  created?: number;
  conditions?: CertManagerCondition[];
  status?: Record<string, unknown>;
  spec?: Record<string, unknown>;
}

export function certificate(o: ObjOpts = {}): CertManagerObject {
  return {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: {
      name: o.name ?? 'web-tls',
      namespace: o.namespace ?? 'shop',
      uid: o.uid ?? UID_A,
      generation: o.generation ?? 1,
      ...(o.created !== undefined ? { creationTimestamp: new Date(o.created) } : {}),
    },
    spec: {
      secretName: o.name ?? 'web-tls',
      commonName: 'shop.example.com',
      dnsNames: ['shop.example.com', 'www.shop.example.com'],
      subject: { organizations: ['Example Corp'], countries: ['DE'] },
      issuerRef: { name: 'letsencrypt-prod', kind: 'ClusterIssuer', group: 'cert-manager.io' },
      ...o.spec,
    },
    status: { ...(o.conditions ? { conditions: o.conditions } : {}), ...o.status },
  };
}

export function issuer(kind: 'Issuer' | 'ClusterIssuer', o: ObjOpts = {}): CertManagerObject {
  return {
    apiVersion: 'cert-manager.io/v1',
    kind,
    metadata: {
      name: o.name ?? (kind === 'Issuer' ? 'letsencrypt-staging' : 'ca-issuer'),
      ...(kind === 'Issuer' ? { namespace: o.namespace ?? 'cert-manager' } : {}),
      uid: o.uid ?? UID_B,
      generation: o.generation ?? 1,
      ...(o.created !== undefined ? { creationTimestamp: new Date(o.created) } : {}),
    },
    spec: o.spec ?? { ca: { secretName: 'ca-key-pair' } },
    status: { ...(o.conditions ? { conditions: o.conditions } : {}), ...o.status },
  };
}

export interface SelfSigned {
  pem: string;
  keyPem: string;
  serial: string;
}

/**
 * A self-signed certificate from openssl (node:crypto cannot create X.509): valid `days` from now
 * (notAfter = now + days), CN and DNS SANs as given.
 */
export function selfSigned(opts: { cn: string; dns?: string[]; days: number; serial?: string }): SelfSigned {
  const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-cert-'));
  try {
    const args = [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      join(dir, 'tls.key'),
      '-out',
      join(dir, 'tls.crt'),
      '-days',
      String(opts.days),
      '-subj',
      `/O=Example Corp/CN=${opts.cn}`,
      ...(opts.dns?.length ? ['-addext', `subjectAltName=${opts.dns.map((d) => `DNS:${d}`).join(',')}`] : []),
      ...(opts.serial ? ['-set_serial', opts.serial] : []),
    ];
    execFileSync('openssl', args, { stdio: 'pipe' });
    const pem = readFileSync(join(dir, 'tls.crt'), 'utf8');
    const serial = execFileSync('openssl', ['x509', '-noout', '-serial', '-in', join(dir, 'tls.crt')], { encoding: 'utf8' })
      .trim()
      .replace(/^serial=/, '');
    return { pem, keyPem: readFileSync(join(dir, 'tls.key'), 'utf8'), serial };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
