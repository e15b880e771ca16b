/** Synthetic open health episodes (what the controller stores after a `.notready`), for state tests and bench/health-state.ts. */
import type { HealthState } from '../../src/emitter/health/diff.js';

const uid = (i: number): string => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

/** Certificate `team-<i % 50>/cert-<i>` not ready since 2026-11-26, with `dnsNames` names (default 2). */
export function notReadyCertificate(i: number, dnsNames = 2): { key: string; state: HealthState } {
  const namespace = `team-${i % 50}`;
  const name = `cert-${i}`;
  return {
    key: `Certificate/${namespace}/${name}`,
    state: {
      uid: uid(i),
      unhealthySince: Date.parse('2026-11-26T10:00:00Z'),
      notified: true,
      notifiedTransition: '2026-11-26T10:00:00Z',
      id: {
        kind: 'Certificate',
        namespace,
        name,
        uid: uid(i),
        issuerName: 'letsencrypt-prod',
        subject: {
          commonName: `${name}.example.com`,
          countries: [],
          localities: [],
          organizationalUnits: [],
          organizations: [],
          provinces: [],
        },
        SANs: { 'DNS Names': Array.from({ length: dnsNames }, (_, j) => `${j === 0 ? '' : `alt-${j}.`}${name}.${namespace}.example.com`) },
      },
    },
  };
}
