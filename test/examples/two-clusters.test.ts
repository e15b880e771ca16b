/**
 * examples/two-clusters/routing.yaml does what its comments say: per-cluster routing on a hub. Its providers and
 * routers pass their CRD schemas and are created in the real service through the operator's own mapping, and
 * simulateRouting shows each router matching exactly the events of the clusters its comment promises.
 * (examples.test.ts reads only the top level of examples/: this folder holds Helm values too.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { validateProviderSpec, validateRouterSpec } from '../../src/api/index.js';
import { desiredIntegration, desiredRouter, resolveSecrets, secretRefsOf } from '../../src/operator/desired.js';
import { GraphQLServiceApi } from '../../src/client/service-api.js';
import type { InternalEvent } from '../../src/events/families.js';
import {
  certificateResourceActive,
  certificateResourceNotReady,
  expiringCertificate,
  issuerActive,
  issuerNotReady,
} from '../fixtures/events.js';
import { KEY_A, startTestService, type TestService } from '../support/service.js';

const FILE = join(import.meta.dirname, '../../examples/two-clusters/routing.yaml');

interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: unknown;
  stringData?: Record<string, string>;
}
const docs = parseAllDocuments(readFileSync(FILE, 'utf8'))
  .map((d) => d.toJS() as Doc | null)
  .filter((d): d is Doc => d !== null);
const ofKind = (k: string) => docs.filter((d) => d.kind === k);

// what the agents of cluster-a and cluster-b (and a third cluster no router names) would post
const CLUSTERS = ['cluster-a', 'cluster-b', 'cluster-c'] as const;
const EVENTS: Record<string, InternalEvent> = {
  ...Object.fromEntries(
    CLUSTERS.flatMap((c) => [
      [`issuer-notready ${c}`, issuerNotReady({ clusterName: c })],
      [`issuer-active ${c}`, issuerActive({ clusterName: c })],
      [`cert-notready ${c}`, certificateResourceNotReady({ clusterName: c })],
      [`cert-active ${c}`, certificateResourceActive({ clusterName: c })],
    ]),
  ),
  'expiry checkout': expiringCertificate({ applicationIds: ['checkout'] }),
  'expiry billing': expiringCertificate({ applicationIds: ['billing'] }),
};

/** What each router's comment in routing.yaml promises: exactly these events. */
const PROMISED: Record<string, string[]> = {
  'cluster-a-issuers-oncall': ['issuer-notready cluster-a', 'issuer-active cluster-a'],
  'cluster-a-certificates-oncall': ['cert-notready cluster-a', 'cert-active cluster-a'],
  'cluster-b-issuers-slack': ['issuer-notready cluster-b', 'issuer-active cluster-b'],
  'cluster-b-certificates-slack': ['cert-notready cluster-b'],
  'checkout-expiry-slack': ['expiry checkout'],
};

describe('examples/two-clusters/routing.yaml', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService('sqlite');
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('every router has its promise here (a new example router needs one)', () => {
    expect(
      ofKind('NotificationRouter')
        .map((r) => r.metadata.name)
        .sort(),
    ).toEqual(Object.keys(PROMISED).sort());
  });

  it('is accepted by the service, and each router matches exactly the clusters and events its comment promises', async () => {
    const api = new GraphQLServiceApi({ url: svc.url, apiKey: KEY_A });
    const secrets = new Map(
      ofKind('Secret').map((s) => [
        s.metadata.name,
        { data: Object.fromEntries(Object.entries(s.stringData ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) },
      ]),
    );
    const integrationOf = new Map<string, string>();
    for (const p of ofKind('NotificationProvider')) {
      const v = validateProviderSpec(p.spec);
      if (!v.ok) throw new Error(`${p.metadata.name}: ${v.errors.join('; ')}`);
      const resolved = resolveSecrets(secretRefsOf(v.value), p.metadata.namespace!, (n) => secrets.get(n) as never);
      if (!resolved.ok) throw new Error(`${p.metadata.name}: secrets`);
      const o = { kind: 'NotificationProvider', namespace: p.metadata.namespace!, name: p.metadata.name };
      integrationOf.set(p.metadata.name, (await api.createIntegration(desiredIntegration(o, v.value, resolved.values))).id);
    }
    for (const r of ofKind('NotificationRouter')) {
      const v = validateRouterSpec(r.spec);
      if (!v.ok) throw new Error(`${r.metadata.name}: ${v.errors.join('; ')}`);
      const integ = integrationOf.get(v.value.providerRef.name);
      expect(integ, `${r.metadata.name}: providerRef ${v.value.providerRef.name}`).toBeDefined();
      await api.createRouter(
        desiredRouter({ kind: 'NotificationRouter', namespace: r.metadata.namespace!, name: r.metadata.name }, v.value, integ!),
      );
    }

    const matched = new Map<string, string[]>(Object.keys(PROMISED).map((n) => [n, []]));
    for (const [name, event] of Object.entries(EVENTS)) {
      const r = await svc
        .gql()
        .request<{ simulateRouting: { routers: { verdict: string; router: { name: string } }[] } }>(
          `query($e: EventInput!) { simulateRouting(event: $e) { routers { verdict router { name } } } }`,
          { e: event },
        );
      for (const x of r.simulateRouting.routers) {
        expect(['MATCHED', 'FILTER_FALSE'], `${x.router.name} on ${name}`).toContain(x.verdict);
        if (x.verdict === 'MATCHED') matched.get(x.router.name.replace(/^cert-alerts\//, ''))!.push(name);
      }
    }
    for (const [router, want] of Object.entries(PROMISED)) expect(matched.get(router)!.sort(), router).toEqual([...want].sort());
  });
});
