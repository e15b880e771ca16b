/**
 * Served truth end to end: a REAL kube-apiserver + etcd (cert-manager CRDs), the emitter with its serving prober,
 * the in-process service and a loopback webhook. Loopback TLS servers (one per Ingress, all on 127.0.0.1) are the
 * endpoints; each Ingress carries `notify.certmgr.io/probe-address`. The test plays cert-manager as its
 * controllers write: the issuing controller writes the Secret (tls.crt, annotated cert-manager.io/certificate-name)
 * and the readiness controller the Certificate's status (Ready=True, notBefore, notAfter, renewalTime, revision).
 * Real certificates with exact dates come from `openssl ca` (test/support/openssl-ca.ts).
 *
 * - `web`: renewed while its endpoint keeps serving the certificate from before (same subject and SANs, earlier
 *   notAfter) → ServingStale, naming the host, address, served and expected serials and the pod mounting the
 *   Secret; the endpoint switching to the Secret's certificate → `.active` ServingOk.
 * - `api`: its endpoint serves a foreign certificate (an ingress controller's default one) → ServingMismatch.
 * - `pay`: its endpoint serves an expired certificate → ServingExpired.
 * - `legacy-tls`: a TLS Secret no Certificate manages, its endpoint serving another certificate → its own event.
 * - `fine`: its endpoint serves its Secret's certificate → silent: asserted after the others arrived and every
 *   endpoint was probed again, every event accepted and every delivery done, never by a timer alone.
 * The hub's inventory shows the verdicts (GraphQL `serving { … }` and the CSV's serving columns), and the console's
 * certificates page (Chromium) the stale one at a glance.
 * Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecureContext, createServer, type SecureContext, type Server } from 'node:tls';
import type { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without type declarations
import { buildConsole } from '../../scripts/build.mjs';
import type { RunningEmitter } from '../../src/emitter/index.js';
import type { Receiver } from '../integrations/helpers.js';
import { applyManifest, waitFor } from '../support/kube.js';
import { COMPANY_A, KEY_A, type TestService } from '../support/service.js';
import {
  applyCertificate,
  createRouter,
  startKubeWorld,
  updateStatus,
  upToDate,
  webhookIntegration,
  type KubeWorld,
} from '../emitter/kube-fixtures.js';
import { sign, tlsSecret, type Pem } from '../support/openssl-ca.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const NS = 'shop';
const DAY = 86_400_000;
const CLUSTER = 'served';
const NOTREADY = 'evt.healthstatus.certmgr-certificate-resource.notready';
const ACTIVE = 'evt.healthstatus.certmgr-certificate-resource.active';

interface Payload {
  eventType: string;
  reason: string | null;
  summary: string;
  resource: { kind: string; namespace: string; name: string } | null;
}

interface EventData {
  certificateName: string;
  namespace: string;
  clusterName: string;
  statusReason: string;
  statusMessage: string;
}

interface ServedEndpoint {
  host: string;
  address: string | null;
  status: string;
  servedSerial: string | null;
  servedNotAfter: string | null;
  checkedAt: string | null;
}

interface InventoryCertificate {
  secretName: string;
  certificateName: string | null;
  servingStatus: string | null;
  servingEndpointCount: number;
  serving: ServedEndpoint[];
}

const serialOf = (p: Pem): string => new X509Certificate(p.pem).serialNumber.toUpperCase();
/** notAfter as the inventory gives it (ISO with milliseconds) */
const notAfterOf = (p: Pem): string => new X509Certificate(p.pem).validToDate.toISOString();
/** notAfter as messages give it (whole seconds) */
const notAfterText = (p: Pem): string => notAfterOf(p).replace(/\.\d{3}Z$/, 'Z');

/** RFC 4180 records (quoted cells with commas, doubled quotes; CRLF between records). */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      record.push(cell);
      cell = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      records.push([...record, cell]);
      record = [];
      cell = '';
      i++;
    } else cell += ch;
  }
  return records;
}

/** One loopback TLS endpoint whose served certificate the test switches. */
interface Endpoint {
  server: Server;
  address: string;
  serve(p: Pem): void;
}

async function startEndpoint(first: Pem): Promise<Endpoint> {
  let ctx: SecureContext = createSecureContext({ key: first.keyPem, cert: first.pem });
  const server = createServer({ key: first.keyPem, cert: first.pem, SNICallback: (_name, cb) => cb(null, ctx) });
  server.on('tlsClientError', () => {});
  server.on('secureConnection', (s) => s.on('error', () => {}).end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    serve: (p) => void (ctx = createSecureContext({ key: p.keyPem, cert: p.pem })),
  };
}

describe.skipIf(skip)('served truth: what endpoints serve held against their Secrets (real apiserver + emitter + service)', () => {
  let world: KubeWorld | undefined;
  let svc: TestService;
  let hook: Receiver;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;
  let emitter: RunningEmitter | undefined;
  let work: string | undefined;
  const endpoints = new Map<string, Endpoint>();
  const now = Date.now();
  const leaf = (cn: string, notBefore: number, notAfter: number): Pem => sign({ cn: `${cn}.shop.example`, notBefore, notAfter });
  // before the renewal (50 of 80 days gone) and after it; the same subject and SANs
  const webOld = leaf('web', now - 50 * DAY, now + 30 * DAY);
  const webNew = leaf('web', now - 60_000, now + 90 * DAY);
  const api = leaf('api', now - 10 * DAY, now + 80 * DAY);
  const pay = leaf('pay', now - 10 * DAY, now + 80 * DAY);
  const payExpired = leaf('pay', now - 100 * DAY, now - 10 * DAY);
  const fine = leaf('fine', now - 10 * DAY, now + 80 * DAY);
  const legacy = leaf('legacy', now - 10 * DAY, now + 300 * DAY);
  // what an ingress controller serves for a host it has no certificate for
  const fake = sign({
    cn: 'Kubernetes Ingress Controller Fake Certificate',
    dnsNames: ['ingress.local'],
    notBefore: now - DAY,
    notAfter: now + 365 * DAY,
  });

  /** the readiness controller: Ready=True for the certificate in the Secret (read, change, PUT /status) */
  async function certificateReady(name: string, crt: Pem, revision: number): Promise<void> {
    const x = new X509Certificate(crt.pem);
    const notBefore = x.validFromDate.getTime();
    const notAfter = x.validToDate.getTime();
    await updateStatus(custom, { plural: 'certificates', namespace: NS, name }, (o) => {
      upToDate(o, { notBefore, notAfter, renewalTime: notAfter - (notAfter - notBefore) / 3 });
      o.status!.revision = revision;
    });
  }

  /** A Certificate, its Secret as the issuing controller writes it, its Ingress and a loopback endpoint serving `served`. */
  async function site(o: { name: string; secret: Pem; served: Pem; managed: boolean }): Promise<void> {
    const host = `${o.name}.shop.example`;
    const secretName = `${o.name}-tls`;
    const ep = await startEndpoint(o.served);
    endpoints.set(o.name, ep);
    if (o.managed)
      await applyCertificate(kc, {
        name: o.name,
        namespace: NS,
        spec: { secretName, dnsNames: [host], issuerRef: { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' } },
      });
    await applyManifest(
      kc,
      tlsSecret(NS, secretName, o.secret, o.managed ? { annotations: { 'cert-manager.io/certificate-name': o.name } } : {}),
    );
    if (o.managed) await certificateReady(o.name, o.secret, 1);
    await applyManifest(kc, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: o.name, namespace: NS, annotations: { 'notify.certmgr.io/probe-address': ep.address } },
      spec: {
        tls: [{ hosts: [host], secretName }],
        rules: [
          { host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: o.name, port: { number: 80 } } } }] } },
        ],
      },
    } as never);
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'cmn-served-truth-'));
    const ui = await (buildConsole as (outdir: string) => Promise<string>)(join(work, 'build'));
    world = await startKubeWorld({ namespaces: [NS], serviceOptions: { consoleDir: ui } });
    ({ svc, kc, custom } = world);
    hook = world.hooks[0]!;

    // routers filter serving reasons like any other (docs/serving.md)
    await createRouter(svc, {
      name: 'served certificates',
      eventTypeId: 'certmgr-cert-resource-health-notification-config',
      integrationId: await webhookIntegration(svc, 'serving', `${hook.url}/serving`),
      filter: "data.statusReason.startsWith('Serving')",
    });

    // before the agent starts: every endpoint serves its Secret's certificate but three
    await site({ name: 'web', secret: webOld, served: webOld, managed: true });
    await site({ name: 'api', secret: api, served: fake, managed: true });
    await site({ name: 'pay', secret: pay, served: payExpired, managed: true });
    await site({ name: 'fine', secret: fine, served: fine, managed: true });
    await site({ name: 'legacy', secret: legacy, served: fake, managed: false });
    // a workload mounting web's Secret (no scheduler here: the pod stays Pending, the look-up only reads its
    // spec; no controller-manager either: its service account is created by hand)
    await applyManifest(kc, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: NS } } as never);
    await applyManifest(kc, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-0', namespace: NS },
      spec: {
        automountServiceAccountToken: false,
        containers: [{ name: 'web', image: 'nginx', volumeMounts: [{ name: 'tls', mountPath: '/tls' }] }],
        volumes: [{ name: 'tls', secret: { secretName: 'web-tls' } }],
      },
    } as never);

    emitter = await world.startEmitter({
      clusterName: CLUSTER,
      // long enough for the reload hint's pod look-up (milliseconds here) to be in the first message
      gracePeriodMs: 2000,
      unknownGracePeriodMs: 1000,
      issuingGracePeriodMs: 1000,
      inventoryBatchMs: 100,
      servingProbeIntervalMs: 500,
      servingProbe: { reloadGraceMs: 2000, renewalProbeDelayMs: 200 },
    });
  }, 10 * 60_000);

  afterAll(async () => {
    await world?.stop();
    for (const ep of endpoints.values()) await new Promise((r) => ep.server.close(r));
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const payloads = (): Payload[] => hook.requests.map((r) => (JSON.parse(r.body) as { data: Payload }).data);
  const about = (name: string): Payload[] => payloads().filter((p) => p.resource?.name === name);
  const events = async (type: string): Promise<EventData[]> =>
    (await svc.store.listEvents(COMPANY_A, { type }, null, 1000)).map((e) => e.data as unknown as EventData);
  const eventOf = async (type: string, name: string, reason: string): Promise<EventData> =>
    waitFor(`${type} ${reason} of ${name} accepted`, async () =>
      (await events(type)).find((d) => d.certificateName === name && d.statusReason === reason),
    ) as Promise<EventData>;

  async function inventory(): Promise<Map<string, InventoryCertificate>> {
    const r = await svc.gql().request<{ certificates: { nodes: InventoryCertificate[] } }>(
      `query($f: CertificateFilter) { certificates(filter: $f, first: 100) { nodes {
        secretName certificateName servingStatus servingEndpointCount
        serving { host address status servedSerial servedNotAfter checkedAt }
      } } }`,
      { f: { namespace: NS } },
    );
    return new Map(r.certificates.nodes.map((c) => [c.secretName, c]));
  }

  /** every endpoint probed `rounds` more times, every event accepted, every delivery done */
  async function settled(rounds: number): Promise<void> {
    const probes = () => emitter!.stats().serving?.probes ?? 0;
    const seen = probes();
    await waitFor(`${rounds} more rounds of probes`, () => probes() >= seen + rounds * endpoints.size, { timeoutMs: 30_000 });
    await waitFor('the health queue empty, every event accepted', () => {
      const s = emitter!.stats();
      return s.pendingEvents === 0 && (s.queues['health']?.length ?? 0) === 0 && (s.queues['health']?.delayed ?? 0) === 0;
    });
    await waitFor('every delivery done', async () =>
      (await svc.store.listDeliveries(COMPANY_A, { limit: 500 })).every((d) => d.status === 'DELIVERED'),
    );
  }

  it('mismatch, expired and an unmanaged Secret are notified; the endpoint serving its Secret’s certificate is silent', async () => {
    const apiEvent = await eventOf(NOTREADY, 'api', 'ServingMismatch');
    const host = (n: string) => `${n}.shop.example`;
    const addr = (n: string) => endpoints.get(n)!.address;
    expect(apiEvent).toMatchObject({ namespace: NS, clusterName: CLUSTER });
    for (const part of [
      `${host('api')} (${addr('api')}, Ingress ${NS}/api) serves another certificate, serial ${serialOf(fake)} (notAfter ${notAfterText(fake)})`,
      'Kubernetes Ingress Controller Fake Certificate',
      `expected the certificate in Secret ${NS}/api-tls, serial ${serialOf(api)} (notAfter ${notAfterText(api)})`,
    ])
      expect(apiEvent.statusMessage).toContain(part);

    const payEvent = await eventOf(NOTREADY, 'pay', 'ServingExpired');
    expect(payEvent.statusMessage).toContain(
      `${host('pay')} (${addr('pay')}, Ingress ${NS}/pay) serves an expired certificate, serial ${serialOf(payExpired)} (notAfter ${notAfterText(payExpired)})`,
    );
    expect(payEvent.statusMessage).toContain(`expected the certificate in Secret ${NS}/pay-tls, serial ${serialOf(pay)}`);

    // no Certificate manages legacy-tls: the Secret is the resource
    const legacyEvent = await eventOf(NOTREADY, 'legacy-tls', 'ServingMismatch');
    expect(legacyEvent.statusMessage).toContain(`${host('legacy')} (${addr('legacy')}, Ingress ${NS}/legacy) serves another certificate`);
    expect(legacyEvent.statusMessage).toContain(`Secret ${NS}/legacy-tls, serial ${serialOf(legacy)}`);

    // at the webhook, through the router's Serving filter
    await waitFor('three notifications at the webhook', () => payloads().length >= 3);
    for (const [name, reason] of [
      ['api', 'ServingMismatch'],
      ['pay', 'ServingExpired'],
      ['legacy-tls', 'ServingMismatch'],
    ] as const)
      expect(about(name)).toEqual([expect.objectContaining({ eventType: NOTREADY, reason })]);

    // the hub's inventory: every endpoint and what it serves
    const byName = await waitFor('the verdicts in the inventory', async () => {
      const inv = await inventory();
      const ok = ['api-tls', 'pay-tls', 'fine-tls', 'legacy-tls', 'web-tls'].every((s) =>
        ['OK', 'MISMATCH', 'EXPIRED'].includes(inv.get(s)?.servingStatus ?? ''),
      );
      return ok ? inv : undefined;
    });
    const endpointOf = (secret: string, served: Pem | null, status: string) => ({
      secretName: secret,
      servingStatus: status,
      servingEndpointCount: 1,
      serving: [
        {
          host: host(secret.replace(/-tls$/, '')),
          address: addr(secret.replace(/-tls$/, '')),
          status,
          servedSerial: served ? serialOf(served) : null,
          servedNotAfter: served ? notAfterOf(served) : null,
          checkedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        },
      ],
    });
    expect(byName.get('api-tls')).toMatchObject({ ...endpointOf('api-tls', fake, 'MISMATCH'), certificateName: 'api' });
    expect(byName.get('pay-tls')).toMatchObject(endpointOf('pay-tls', payExpired, 'EXPIRED'));
    expect(byName.get('legacy-tls')).toMatchObject({ ...endpointOf('legacy-tls', fake, 'MISMATCH'), certificateName: null });
    expect(byName.get('fine-tls')).toMatchObject(endpointOf('fine-tls', fine, 'OK'));
    expect(byName.get('web-tls')).toMatchObject(endpointOf('web-tls', webOld, 'OK'));

    // the CSV's serving columns
    const csv = await (await svc.rest(`/v1/inventory/certificates.csv?namespace=${NS}`)).text();
    const [cols, ...rows] = parseCsv(csv);
    const col = (row: string[], name: string) => row[cols!.indexOf(name)];
    const row = (secret: string) => rows.find((r) => col(r, 'secretName') === secret)!;
    expect(cols!).toEqual(expect.arrayContaining(['servingStatus', 'servingEndpointCount', 'servingProblems']));
    expect([col(row('api-tls'), 'servingStatus'), col(row('api-tls'), 'servingProblems')]).toEqual(['MISMATCH', `${host('api')}=MISMATCH`]);
    expect([col(row('pay-tls'), 'servingStatus'), col(row('pay-tls'), 'servingProblems')]).toEqual(['EXPIRED', `${host('pay')}=EXPIRED`]);
    expect([
      col(row('fine-tls'), 'servingStatus'),
      col(row('fine-tls'), 'servingEndpointCount'),
      col(row('fine-tls'), 'servingProblems'),
    ]).toEqual(['OK', '1', '']);

    // silence: after the others, every endpoint probed twice more and everything delivered, nothing about fine or web
    await settled(2);
    expect(about('fine')).toEqual([]);
    expect(about('web')).toEqual([]);
    expect((await events(NOTREADY)).map((d) => d.certificateName).sort()).toEqual(['api', 'legacy-tls', 'pay']);
  });

  it('a renewal whose endpoint keeps the certificate from before is ServingStale; serving the new one resolves it', async () => {
    // the issuing controller writes the renewed certificate into the Secret, the readiness controller the status
    await applyManifest(kc, tlsSecret(NS, 'web-tls', webNew, { annotations: { 'cert-manager.io/certificate-name': 'web' } }));
    await certificateReady('web', webNew, 2);

    const stale = await eventOf(NOTREADY, 'web', 'ServingStale');
    for (const part of [
      `web.shop.example (${endpoints.get('web')!.address}, Ingress ${NS}/web) serves an older certificate with the same names, serial ${serialOf(webOld)} (notAfter ${notAfterText(webOld)})`,
      `expected the certificate in Secret ${NS}/web-tls, serial ${serialOf(webNew)} (notAfter ${notAfterText(webNew)})`,
      'Pod/web-0',
      'never restarts anything',
    ])
      expect(stale.statusMessage).toContain(part);
    await waitFor('ServingStale at the webhook', () => about('web').length >= 1);
    expect(about('web')).toEqual([expect.objectContaining({ eventType: NOTREADY, reason: 'ServingStale' })]);
    const inv = await waitFor('stale in the inventory', async () => {
      const c = (await inventory()).get('web-tls');
      return c?.servingStatus === 'STALE' ? c : undefined;
    });
    expect(inv.serving[0]).toMatchObject({ status: 'STALE', servedSerial: serialOf(webOld), servedNotAfter: notAfterOf(webOld) });

    // the console's certificates page: the renewal not reloaded at a glance, the endpoint unfolded
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(20_000);
      await page.goto(`${svc.url}/ui/`);
      await page.getByLabel('API key').fill(KEY_A);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('link', { name: 'Certificates', exact: true }).click();
      const served = (secret: string) => page.locator(`tr[data-certificate="${secret}"] td.served-cell`);
      await served('web-tls').locator('li').first().waitFor();
      expect(await served('web-tls').locator('summary').textContent()).toMatch(/^stale — renewed \d+m( \d+s)? ago1 endpoint$/);
      expect(await served('web-tls').locator('li').allTextContents()).toEqual([
        expect.stringMatching(
          new RegExp(
            `^web\\.shop\\.example at ${endpoints.get('web')!.address}: stale, serves ${serialOf(webOld)} \\(until .* UTC\\), checked `,
          ),
        ),
      ]);
      expect(await served('api-tls').locator('summary').textContent()).toMatch(/^mismatch/);
      expect(await served('pay-tls').locator('summary').textContent()).toMatch(/^expired/);
      expect(await served('fine-tls').textContent()).toBe('ok1 endpoint');
    } finally {
      await browser.close();
    }

    // the consumer reloads: the endpoint serves the Secret's certificate
    endpoints.get('web')!.serve(webNew);
    const ok = await eventOf(ACTIVE, 'web', 'ServingOk');
    expect(ok.statusMessage).toContain(`web.shop.example serves the certificate in Secret ${NS}/web-tls again, serial ${serialOf(webNew)}`);
    await waitFor('the .active at the webhook', () => about('web').length >= 2);
    expect(about('web').map((p) => [p.eventType, p.reason])).toEqual([
      [NOTREADY, 'ServingStale'],
      [ACTIVE, 'ServingOk'],
    ]);
    await waitFor('ok in the inventory', async () => (await inventory()).get('web-tls')?.servingStatus === 'OK');

    // once per episode: nothing more about web, and still nothing about fine
    await settled(2);
    expect(about('web')).toHaveLength(2);
    expect(about('fine')).toEqual([]);
  });
});
