/**
 * examples/ does what its comments say: every object passes its CRD schema, every provider and router is created
 * in the real service through the operator's own mapping (desiredIntegration/desiredRouter + the GraphQL client),
 * and simulateRouting of a catalogue of events shows each router matching exactly the events its comment
 * promises. Incident routers must route `.active` wherever they route `.notready` (else incidents never resolve).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  validateMonitoringSpec,
  validateProviderSpec,
  validateRouterSpec,
  type NotificationProviderSpec,
  type NotificationRouterSpec,
} from '../../src/api/index.js';
import { desiredIntegration, desiredMonitoring, desiredRouter, resolveSecrets, secretRefsOf } from '../../src/operator/desired.js';
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

const DIR = join(import.meta.dirname, '../../examples');

interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: unknown;
  stringData?: Record<string, string>;
}

const docs: Doc[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .flatMap((f) => parseAllDocuments(readFileSync(join(DIR, f), 'utf8')).map((d) => d.toJS() as Doc | null))
  .filter((d): d is Doc => d !== null);
const ofKind = (k: string) => docs.filter((d) => d.kind === k);

// The events the examples talk about. Pairs (.notready/.active) share the resource so an incident could resolve.
const ISSUER_ID = {
  prodEu: '9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c41',
  staging: '9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c42',
  payments: '9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c43',
};
const issuerAt = (clusterName: string, namespace: string, issuerName: string, resourceId: string) => ({
  clusterName,
  namespace,
  issuerName,
  resourceId,
});
const certAt = (clusterName: string) => ({ clusterName, namespace: 'shop', certificateName: 'shop-tls' });
const EVENTS: Record<string, InternalEvent> = {
  'issuer-notready prod-eu-1 letsencrypt-prod': issuerNotReady(issuerAt('prod-eu-1', 'cert-manager', 'letsencrypt-prod', ISSUER_ID.prodEu)),
  'issuer-active prod-eu-1 letsencrypt-prod': issuerActive(issuerAt('prod-eu-1', 'cert-manager', 'letsencrypt-prod', ISSUER_ID.prodEu)),
  'issuer-notready staging ca-issuer': issuerNotReady(issuerAt('staging', 'cert-manager', 'ca-issuer', ISSUER_ID.staging)),
  'issuer-active staging ca-issuer': issuerActive(issuerAt('staging', 'cert-manager', 'ca-issuer', ISSUER_ID.staging)),
  'issuer-notready prod-us-1 payments': issuerNotReady(issuerAt('prod-us-1', 'payments', 'payments-ca', ISSUER_ID.payments)),
  'issuer-active prod-us-1 payments': issuerActive(issuerAt('prod-us-1', 'payments', 'payments-ca', ISSUER_ID.payments)),
  'cert-notready prod': certificateResourceNotReady(certAt('prod')),
  'cert-active prod': certificateResourceActive(certAt('prod')),
  'cert-notready staging': certificateResourceNotReady(certAt('staging')),
  'cert-active staging': certificateResourceActive(certAt('staging')),
  'expiry checkout rule 1': expiringCertificate({ applicationIds: ['checkout'], ruleId: 1, threshold: 30 }),
  'expiry checkout rule 3': expiringCertificate({ applicationIds: ['checkout'], ruleId: 3, threshold: 7 }),
  'expiry billing rule 2': expiringCertificate({ applicationIds: ['billing'], ruleId: 2, threshold: 14 }),
  'expiry billing rule 3': expiringCertificate({ applicationIds: ['billing'], ruleId: 3, threshold: 7 }),
};
const all = (prefix: string) => Object.keys(EVENTS).filter((k) => k.startsWith(prefix));

/** What each router's comment in examples/03-routers.yaml promises: exactly these events of the catalogue. */
const PROMISED: Record<string, string[]> = {
  'issuers-all': all('issuer-'),
  'issuers-oncall': all('issuer-'),
  'issuers-oncall-prod-clusters': [...all('issuer-notready prod-'), ...all('issuer-active prod-')],
  'issuers-unhealthy-in-payments': ['issuer-notready prod-us-1 payments'],
  'issuer-letsencrypt-restored': ['issuer-active prod-eu-1 letsencrypt-prod'],
  'certificates-restored': all('cert-active'),
  'certificates-oncall-prod': ['cert-notready prod', 'cert-active prod'],
  'certificates-restored-prod': ['cert-active prod'],
  'expiry-all': all('expiry '),
  'expiry-checkout-app': all('expiry checkout'),
  'expiry-last-warning': ['expiry checkout rule 3', 'expiry billing rule 3'],
};

describe('examples/', () => {
  let svc: TestService;
  let api: GraphQLServiceApi;
  const providerType = new Map<string, NotificationProviderSpec['type']>();
  const integrationOf = new Map<string, string>();
  /** router name → names of the catalogue events simulateRouting matched */
  const matched = new Map<string, string[]>(Object.keys(PROMISED).map((n) => [n, []]));

  beforeAll(async () => {
    svc = await startTestService('sqlite');
    api = new GraphQLServiceApi({ url: svc.url, apiKey: KEY_A });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('every provider, router and MonitoringConfig passes its CRD schema and is accepted by the service', async () => {
    const secrets = new Map(
      ofKind('Secret').map((s) => [
        s.metadata.name,
        { data: Object.fromEntries(Object.entries(s.stringData ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) },
      ]),
    );
    for (const p of ofKind('NotificationProvider')) {
      const v = validateProviderSpec(p.spec);
      expect(v.ok, `${p.metadata.name}: ${v.ok ? '' : v.errors.join('; ')}`).toBe(true);
      if (!v.ok) continue;
      const o = { kind: 'NotificationProvider', namespace: p.metadata.namespace!, name: p.metadata.name };
      const resolved = resolveSecrets(secretRefsOf(v.value), o.namespace, (n) => secrets.get(n) as never);
      expect(resolved.ok, `${p.metadata.name}: secrets`).toBe(true);
      if (!resolved.ok) continue;
      const created = await api.createIntegration(desiredIntegration(o, v.value, resolved.values));
      providerType.set(p.metadata.name, v.value.type);
      integrationOf.set(p.metadata.name, created.id);
    }
    for (const r of ofKind('NotificationRouter')) {
      const v = validateRouterSpec(r.spec);
      expect(v.ok, `${r.metadata.name}: ${v.ok ? '' : v.errors.join('; ')}`).toBe(true);
      if (!v.ok) continue;
      const integ = integrationOf.get(v.value.providerRef.name);
      expect(integ, `${r.metadata.name}: providerRef ${v.value.providerRef.name}`).toBeDefined();
      await api.createRouter(
        desiredRouter({ kind: 'NotificationRouter', namespace: r.metadata.namespace!, name: r.metadata.name }, v.value, integ!),
      );
    }
    const [mc] = ofKind('MonitoringConfig');
    const mv = validateMonitoringSpec(mc!.spec);
    expect(mv.ok).toBe(true);
    if (mv.ok) await api.putMonitoringConfig(desiredMonitoring(mv.value));
    expect((await api.listRouters()).length).toBe(ofKind('NotificationRouter').length);
  });

  it('every router of the examples has its promise in this test (a new example needs one)', () => {
    expect(
      ofKind('NotificationRouter')
        .map((r) => r.metadata.name)
        .sort(),
    ).toEqual(Object.keys(PROMISED).sort());
  });

  it('every router matches exactly the events its comment promises', async () => {
    // Teams is disabled in the example ("receives nothing until enabled"): check that, then enable it to test its filter
    const disabled = await simulate(EVENTS['cert-active prod']!);
    expect(disabled.get('certificates-restored-prod')).toBe('INTEGRATION_DISABLED');
    await api.updateIntegration(integrationOf.get('teams')!, { enabled: true });

    for (const [name, event] of Object.entries(EVENTS)) {
      for (const [router, verdict] of await simulate(event)) {
        expect(['MATCHED', 'FILTER_FALSE'], `${router} on ${name}`).toContain(verdict);
        if (verdict === 'MATCHED') matched.get(router)!.push(name);
      }
    }
    for (const [router, want] of Object.entries(PROMISED)) expect(matched.get(router)!.sort(), router).toEqual([...want].sort());
  });

  it('incident routers route .active wherever they route .notready (their incidents resolve)', () => {
    for (const r of ofKind('NotificationRouter')) {
      const spec = r.spec as NotificationRouterSpec;
      if (providerType.get(spec.providerRef.name) !== 'IncidentManagement' || spec.eventTypeId === 'cert-expiry-ext-notification-config')
        continue;
      const got = matched.get(r.metadata.name) ?? [];
      expect(got.length, `${r.metadata.name} matched nothing`).toBeGreaterThan(0);
      for (const e of got.filter((n) => n.includes('-notready'))) {
        expect(got, `${r.metadata.name}: ${e} without its resolve`).toContain(e.replace('-notready', '-active'));
      }
    }
  });

  async function simulate(event: InternalEvent): Promise<Map<string, string>> {
    const r = await svc
      .gql()
      .request<{ simulateRouting: { routers: { verdict: string; error: string | null; router: { name: string } }[] } }>(
        `query($e: EventInput!) { simulateRouting(event: $e) { routers { verdict error router { name } } } }`,
        { e: event },
      );
    return new Map(r.simulateRouting.routers.map((x) => [x.router.name.replace(/^cert-alerts\//, ''), x.verdict]));
  }
});
