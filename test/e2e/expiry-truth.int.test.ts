/**
 * Expiry reports told from the cluster's own TLS Secrets, through the whole path: real X.509 certificates
 * (openssl) in TLS Secrets of a REAL kube-apiserver + etcd (cert-manager CRDs) → the emitter's inventory reporter
 * (agent facts) → the in-process service's POST /v1/inventory → its expiry scan (expiryScanInterval 1s) →
 * delivery to a loopback webhook. The service's scanner runs on real time, so the certificates' own dates put
 * them in (or out of) their windows: `openssl ca` signs with a notBefore in the past where a test needs one.
 * Absence is asserted after the expected report arrived and two more complete scans, never by a timer alone.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { X509Certificate } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS } from '../../src/expiry/decide.js';
import { WEAK_LINK_RULE_ID } from '../../src/expiry/weak-link.js';
import type { Received, Receiver } from '../integrations/helpers.js';
import { applyManifest, waitFor } from '../support/kube.js';
import { COMPANY_A, type TestService } from '../support/service.js';
import { applyCertificate, createRouter, startKubeWorld, webhookIntegration, type KubeWorld } from '../emitter/kube-fixtures.js';
import { sign, tlsSecret } from '../support/openssl-ca.js';
import { limitsFile } from '../support/limits.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const H = 3_600_000;

interface Hook {
  data: { eventId: string; message: string; expiration: { ruleId: number; threshold: number; certificateName?: string } };
}

describe.skipIf(skip)('expiry from the cluster’s TLS Secrets to the webhook (real apiserver + emitter + service)', () => {
  let world: KubeWorld | undefined;
  let svc: TestService;
  let hook: Receiver;
  let kc: KubeConfig;

  beforeAll(async () => {
    world = await startKubeWorld({
      namespaces: ['cert-manager', 'shop', 'mesh'],
      serviceArgs: [...limitsFile({ expiryScanInterval: '1s' })],
    });
    ({ svc, kc } = world);
    hook = world.hooks[0]!;
    // one router per rule, each to its own path: the company's 30/14/7 (rules 1..3) about the same Secrets go nowhere
    for (const [rule, path] of [
      [WEAK_LINK_RULE_ID, '/ca-outlived'],
      [2001, '/own-share'],
    ] as const) {
      await createRouter(svc, {
        name: `rule ${rule}`,
        eventTypeId: 'cert-expiry-ext-notification-config',
        integrationId: await webhookIntegration(svc, `hook${path}`, `${hook.url}${path}`),
        filter: `data.ruleId == ${rule}`,
      });
    }
    await world.startEmitter({ clusterName: 'truth', resyncMs: 1_000, inventoryBatchMs: 100 });
  }, 10 * 60_000);

  afterAll(async () => {
    await world?.stop();
  });

  const at = (path: string): Hook[] => hook.requests.filter((r: Received) => r.path === path).map((r) => JSON.parse(r.body) as Hook);
  const metric = async (re: RegExp) => Number(re.exec(await (await fetch(`${svc.url}/metrics`)).text())?.[1] ?? 0);
  /** two more complete scans of every company after this call: what they would send is sent (or accepted) by then */
  async function twoMoreScans(): Promise<void> {
    const scans = () => metric(/^certmgr_notify_expiry_company_scans_total\{outcome="scanned"\} (\d+)/m);
    const seen = await scans();
    await waitFor('two more expiry scans', async () => (await scans()) >= seen + 2, { timeoutMs: 30_000 });
    await waitFor('every delivery done', async () =>
      (await svc.store.listDeliveries(COMPANY_A, { limit: 500 })).every((d) => d.status === 'DELIVERED'),
    );
  }

  it('a root CA expiring before 3 of the 4 leaves it signed: one rule-900 report naming the 3, not the fourth', async () => {
    const now = Date.now();
    const root = sign({ cn: 'Internal Root CA', notBefore: now - H, notAfter: now + 20 * DAY_MS, ca: true });
    const leaf = (cn: string, days: number) => sign({ cn, notBefore: now - H, notAfter: now + days * DAY_MS, issuer: root });
    const leaves = { api: leaf('api.shop.example', 80), web: leaf('web.shop.example', 85), pay: leaf('pay.shop.example', 90) };
    const early = leaf('early.shop.example', 10); // expires before the CA: not outliving it
    for (const l of Object.values(leaves)) expect(new X509Certificate(l.pem).verify(new X509Certificate(root.pem).publicKey)).toBe(true);

    // the `ca` Issuer's key pair Secret, then the Secrets of the Certificates it issued
    await applyManifest(kc, tlsSecret('cert-manager', 'root-ca', root));
    for (const [name, crt] of [...Object.entries(leaves), ['early', early] as const])
      await applyManifest(
        kc,
        tlsSecret('shop', `${name}-tls`, crt, { ca: root, annotations: { 'cert-manager.io/certificate-name': name } }),
      );

    const report = await waitFor('the CA report at the webhook', () => at('/ca-outlived')[0], { timeoutMs: 60_000 });
    expect(report!.data.expiration).toMatchObject({ ruleId: WEAK_LINK_RULE_ID, threshold: 0, certificateName: 'root-ca' });
    expect(report!.data.message).toContain('CA certificate cert-manager/root-ca (id ');
    expect(report!.data.message).toContain('before 3 certificates it signed');
    // latest notAfter first
    expect(report!.data.message).toMatch(/Certificate shop\/pay, .*; Certificate shop\/web, .*; Certificate shop\/api, /);
    expect(report!.data.message).not.toContain('shop/early');
    expect((await svc.store.getEvent(COMPANY_A, report!.data.eventId))?.data).toMatchObject({
      ruleId: WEAK_LINK_RULE_ID,
      certificateName: 'root-ca',
      namespace: 'cert-manager',
      clusterName: 'truth',
      daysUntilExpiry: 19, // 20 days less the time to the scan, rounded down
      notAfter: new X509Certificate(root.pem).validToDate.toISOString(),
      outlivingCount: 3,
      outlivingCertificates: ['truth/shop/pay', 'truth/shop/web', 'truth/shop/api'],
    });

    await twoMoreScans();
    expect(at('/ca-outlived')).toHaveLength(1); // once per CA and notAfter, not per scan
  });

  it('a 6-day certificate with 33% already inside its share is warned (rule 2001); one not yet inside stays silent', async () => {
    const now = Date.now();
    // 5 of 6 days gone: 1 day left, inside 33% (47.52 h); annotated on the Certificate, its Secret names it
    const inside = sign({ cn: 'inside.mesh.example', notBefore: now - 5 * DAY_MS, notAfter: now + DAY_MS });
    // 1 hour gone: about 6 days left, outside 33%; annotated on the Secret (no Certificate manages it)
    const outside = sign({ cn: 'outside.mesh.example', notBefore: now - H, notAfter: now + 6 * DAY_MS - H });
    await applyCertificate(kc, {
      name: 'inside',
      namespace: 'mesh',
      annotations: { 'notify.certmgr.io/expiry-thresholds': '33%' },
      spec: {
        secretName: 'inside-tls',
        duration: '144h',
        dnsNames: ['inside.mesh.example'],
        issuerRef: { name: 'mesh-ca', kind: 'Issuer' },
      },
    });
    await applyManifest(kc, tlsSecret('mesh', 'inside-tls', inside, { annotations: { 'cert-manager.io/certificate-name': 'inside' } }));
    await applyManifest(kc, tlsSecret('mesh', 'outside-tls', outside, { annotations: { 'notify.certmgr.io/expiry-thresholds': '33%' } }));

    const warned = await waitFor('the 33% warning at the webhook', () => at('/own-share')[0], { timeoutMs: 60_000 });
    expect(warned!.data.expiration).toMatchObject({ ruleId: 2001, threshold: 2, certificateName: 'inside' });
    expect(warned!.data.message).toContain('Threshold 2 days (33% of a lifetime of 6 days, rule 2001)');
    expect((await svc.store.getEvent(COMPANY_A, warned!.data.eventId))?.data).toMatchObject({
      ruleId: 2001,
      threshold: 2,
      thresholdPercent: 33,
      certificateName: 'inside',
      namespace: 'mesh',
      clusterName: 'truth',
      daysUntilExpiry: 0, // less than a day left
    });
    // both rows carry their own thresholds: the silence of `outside` is its share, not a lost annotation
    const rows = await svc.store.listInventory(COMPANY_A, {}, null, 100);
    expect(rows.filter((r) => r.namespace === 'mesh').map((r) => [r.secretName, r.expiryThresholds])).toEqual(
      expect.arrayContaining([
        ['inside-tls', ['33%']],
        ['outside-tls', ['33%']],
      ]),
    );

    await twoMoreScans();
    expect(at('/own-share').map((h) => h.data.expiration.certificateName)).toEqual(['inside']);
  });
});
