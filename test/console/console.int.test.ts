/**
 * The web console in a real browser (Debian's Chromium driven by playwright-core) against the real hub started
 * in-process (SQLite), serving the console built by scripts/build.mjs: log in, create a webhook integration to a
 * loopback receiver, a router with a bad then a good filter, post a health event and an inventory report as an
 * agent would, see the inventory and the delivery (with its resource and cluster), dead-letter a delivery and retry
 * it from the page, a silence from a duration preset, a template previewed on a sample event, the read scope's view,
 * and deletes (one refused with the hub's message) down to the empty states. Every page's screenshot goes to test-results/console/<page>.png; no console error is allowed.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without type declarations
import { buildConsole } from '../../scripts/build.mjs';
import { CLUSTER_PROD, issuerNotReady } from '../fixtures/events.js';
import { COMPANY_A, KEY_A, startTestService, type TestService } from '../support/service.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const READ_KEY = 'read-key-company-a-console-0123';
const SHOTS = join(import.meta.dirname, '../../test-results/console');
const DAY = 86_400_000;

/** The loopback receiver of the webhook integration: answers `status` and counts the requests. */
class Receiver {
  status = 200;
  hits = 0;
  private server: Server | undefined;
  url = '';
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        this.hits++;
        res.writeHead(this.status, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }
  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

let work: string;
let svc: TestService;
let context: BrowserContext;
let page: Page;
const receiver = new Receiver();
const consoleErrors: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
  work = mkdtempSync(join(tmpdir(), 'cmn-console-'));
  const ui = await (buildConsole as (outdir: string) => Promise<string>)(join(work, 'build'));
  const keys = join(work, 'keys.yaml');
  writeFileSync(keys, `keys:\n  - { key: ${READ_KEY}, companyId: ${COMPANY_A}, scope: read }\n`);
  await receiver.start();
  svc = await startTestService('sqlite', ['--api-keys-file', keys], { consoleDir: ui });
  mkdirSync(SHOTS, { recursive: true });
  context = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') consoleErrors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  // which request a "Failed to load resource" error was about (the browser's message names no URL)
  page.on('response', (r) => {
    if (r.status() >= 400)
      consoleErrors.push(`HTTP ${r.status()} ${r.request().method()} ${r.url()} ${r.request().postData()?.slice(0, 300) ?? ''}`);
  });
}, 180_000);

afterAll(async () => {
  await context?.close();
  await svc?.close();
  await receiver.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const go = async (route: string) => {
  await page.getByRole('link', { name: route, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: route }).waitFor();
};
const post = async (path: string, body: unknown) => {
  const r = await svc.rest(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(r.status, `${path}: ${await r.clone().text()}`).toBeLessThan(300);
};

/** Clicks the page's Refresh button until `locator` shows up (the hub works asynchronously: delivery worker). */
async function refreshUntil(selector: string): Promise<void> {
  await expect
    .poll(
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForLoadState('networkidle');
        return page.locator(selector).count();
      },
      { timeout: 30_000, interval: 250 },
    )
    .toBeGreaterThan(0);
}

function certificate(name: string, days: number) {
  return {
    namespace: 'web',
    secretName: `${name}-tls`,
    certificateName: name,
    certificateUid: randomUUID(),
    serial: randomUUID().replace(/-/g, '').toUpperCase(),
    notBefore: new Date(Date.now() - 60 * DAY).toISOString(),
    notAfter: new Date(Date.now() + days * DAY + 3_600_000).toISOString(),
    subject: `CN=${name}.example.com`,
    commonName: `${name}.example.com`,
    dnsNames: [`${name}.example.com`],
    issuer: 'CN=Example CA, O=Example',
    issuerRef: { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
    ready: days < 0 ? { status: 'False', reason: 'Expired' } : { status: 'True', reason: 'Ready' },
    applicationIds: name === 'payments' ? ['payments-app'] : [],
    labels: { app: name },
    chainNotAfter: new Date(Date.now() + 900 * DAY).toISOString(),
  };
}

describe('web console (Chromium)', () => {
  it('logs in with the keyboard; the key is kept in sessionStorage only, never in the URL', async () => {
    const res = await page.goto(`${svc.url}/ui/`);
    expect(res?.status()).toBe(200);
    await page.getByLabel('API key').waitFor();
    await shot('login');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.id')).toBe('api-key');
    await page.keyboard.type(KEY_A);
    await page.keyboard.press('Enter');
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    expect(await page.getByTestId('viewer').textContent()).toContain('admin');
    expect(page.url()).not.toContain(KEY_A);
    const storage = await page.evaluate(() => ({ session: JSON.stringify(sessionStorage), local: JSON.stringify(localStorage) }));
    expect(storage.session).toContain(KEY_A);
    expect(storage.local).not.toContain(KEY_A);
  });

  it('creates a webhook integration and test-sends to the receiver', async () => {
    await go('Integrations');
    // the empty state says what to do
    await page
      .locator('p.empty', { hasText: 'No integration yet' })
      .getByText(/Create one above/)
      .waitFor();
    await page.getByText('New integration').click();
    const form = page.getByRole('form', { name: 'New integration' });
    await form.getByLabel('Type').selectOption('WEBHOOK');
    await form.getByLabel('Name').fill('receiver');
    await form.getByLabel('URL').fill(receiver.url);
    // our own receiver: no rate limit
    await form.getByLabel('Rate limit: sends per second').fill('0');
    await form.getByRole('button', { name: 'Create integration' }).click();
    await page.locator('tr[data-integration="receiver"]').waitFor();
    expect(await page.locator('tr[data-integration="receiver"]').textContent()).toContain('rate unlimited');
    const before = receiver.hits;
    await page.getByRole('button', { name: 'Send test to receiver' }).click();
    const result = page.locator('tr[data-integration="receiver"] .test-result');
    await result.waitFor();
    expect(await result.textContent()).toMatch(/DELIVERED.*HTTP 200 in \d+ ms/);
    expect(receiver.hits).toBe(before + 1);
    await shot('integrations');
  });

  it('refuses a bad router filter with its position as you type, then creates the router with a good one', async () => {
    await go('Routers');
    await page.getByRole('button', { name: 'New router' }).click();
    const form = page.getByRole('form', { name: 'New router' });
    await form.getByLabel('Name').fill('issuers to receiver');
    await form.getByLabel('Event family').selectOption('certmgr-issuer-health-notification-config');
    await form.getByLabel('Integration', { exact: true }).selectOption({ label: 'receiver (WEBHOOK)' });
    const filter = form.getByLabel('Filter (CEL over type and data)');
    await filter.fill('data.namespace == "cert-manager" &&\n  data.issuerName ==');
    const error = page.getByTestId('filter-error');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/Line 2, column \d+/);
    expect(await error.locator('pre').textContent()).toMatch(/data\.issuerName ==\n\s+\^/);
    expect(await filter.getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByRole('button', { name: 'Create router' }).isDisabled()).toBe(true);
    await shot('routers-filter-error');

    await filter.fill('data.namespace == "cert-manager" && type.endsWith(".notready")');
    await page.getByText('Filter valid').waitFor();
    await form.getByRole('button', { name: 'Create router' }).click();
    await page.locator('tr[data-router="issuers to receiver"]').waitFor();

    // try it: the sample issuer .notready event matches the new router
    const tryIt = page.getByRole('form', { name: 'Try routing' });
    await tryIt.getByLabel('Event type').selectOption('evt.healthstatus.certmgr-issuer.notready');
    await tryIt.getByRole('button', { name: 'Simulate' }).click();
    const sim = page.locator('.simulation tr', { hasText: 'issuers to receiver' });
    await sim.waitFor();
    expect(await sim.textContent()).toContain('MATCHED');
    await shot('routers');
  });

  it('shows the inventory an agent reports, filtered and sorted by days left, with the timeline and what its endpoints serve', async () => {
    // no inventory yet: the page says where it comes from
    await go('Certificates');
    await page.locator('p.empty', { hasText: 'No certificate yet: an agent or serve --kube on reports certificates' }).waitFor();
    await go('Clusters');
    // shop was renewed 12 minutes ago and one of its endpoints still serves the certificate from before
    const renewed = { ...certificate('shop', 40), notBefore: new Date(Date.now() - 12 * 60_000 - 20_000).toISOString() };
    const checkedAt = new Date(Date.now() - 60_000).toISOString();
    const endpoint = (host: string, status: string, servedSerial: string) => ({
      host,
      address: '127.0.0.1:8443',
      source: { kind: 'Ingress', namespace: 'web', name: 'shop' },
      status,
      servedSerial,
      servedNotAfter: new Date(Date.now() + 5 * DAY).toISOString(),
      checkedAt,
    });
    const shop = {
      ...renewed,
      serving: [endpoint('shop.example.com', 'ok', renewed.serial), endpoint('www.shop.example.com', 'stale', '0BEF0AE01D')],
    };
    const api = { ...certificate('api', 12), serving: [endpoint('api.example.com', 'ok', 'A1')] };
    await post('/v1/inventory', {
      protocol: 1,
      cluster: CLUSTER_PROD,
      agentVersion: '0.1.0',
      epoch: randomUUID(),
      seq: 1,
      kind: 'snapshot',
      final: true,
      upserts: [shop, certificate('payments', 5), certificate('legacy', -2), api, certificate('docs', 200)],
      deletes: [],
    });
    await go('Certificates');
    const rows = page.locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(5);
    expect(await rows.locator('td:first-child').allTextContents()).toEqual(['-2', '5', '12', '40', '200']);
    expect(await page.locator('svg[role="img"]').getAttribute('aria-label')).toContain('expired: 1');
    // the Served column: the worst verdict at a glance, the endpoints unfolded under a problem
    const served = (name: string) => page.locator(`tr[data-certificate="${name}-tls"] td.served-cell`);
    await served('shop').locator('li').first().waitFor();
    expect(await served('shop').locator('summary').textContent()).toMatch(/^stale — renewed 12m 2\ds ago2 endpoints$/);
    expect(await served('shop').locator('li').allTextContents()).toEqual([
      expect.stringMatching(
        /^www\.shop\.example\.com at 127\.0\.0\.1:8443: stale, serves 0BEF0AE01D \(until .* UTC\), checked 1m( \d+s)? ago$/,
      ),
      expect.stringMatching(/^shop\.example\.com at 127\.0\.0\.1:8443: ok, serves /),
    ]);
    expect(await served('api').textContent()).toBe('ok1 endpoint');
    expect(await served('docs').textContent()).toBe('—');
    await shot('certificates');
    await page.getByLabel('Served').selectOption('PROBLEM');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().getAttribute('data-certificate')).toBe('shop-tls');
    await page.getByLabel('Served').selectOption('OK');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.locator('tr[data-certificate="api-tls"]').waitFor();
    expect(await rows.count()).toBe(1);
    await page.getByLabel('Served').selectOption('');

    await page.getByLabel('Expiring within (days)').fill('14');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => rows.count()).toBe(3);
    await page.getByLabel('Search').fill('payments');
    await expect.poll(() => rows.count()).toBe(1);

    await go('Clusters');
    await page.locator('tr', { hasText: CLUSTER_PROD.name }).waitFor();
    await shot('clusters');
  });

  it('dead-letters a delivery (receiver 400), retries it from the page (receiver 200) and sees it DELIVERED', async () => {
    receiver.status = 400;
    await post('/v1/events', issuerNotReady());
    await go('Deliveries');
    await page.getByLabel('Status').selectOption('DEAD');
    await refreshUntil('tr[data-delivery] .tag-dead');
    const dead = page.locator('tr[data-delivery]', { hasText: 'issuers to receiver' });
    expect(await dead.textContent()).toContain('HTTP 400');
    // which resource and cluster the row is about, from its event
    expect(await dead.locator('.resource').textContent()).toBe('Issuer cert-manager/letsencrypt-prod');
    expect(await dead.locator('.cluster').textContent()).toBe(` in ${CLUSTER_PROD.name}`);
    await shot('deliveries-dead');

    receiver.status = 200;
    const hits = receiver.hits;
    await dead.getByRole('button', { name: /^Retry delivery/ }).click();
    await page.getByRole('status').filter({ hasText: 'again' }).waitFor();
    await page.getByLabel('Status').selectOption('DELIVERED');
    await refreshUntil('tr[data-delivery] .tag-delivered');
    expect(receiver.hits).toBeGreaterThan(hits);
    await page.getByLabel('Status').selectOption('');
    await refreshUntil('tr[data-delivery] .tag-delivered');
    await shot('deliveries');

    await go('Health');
    const row = page.locator('tbody tr', { hasText: 'letsencrypt-prod' });
    await row.waitFor();
    expect(await row.textContent()).toContain('DELIVERED');
    await shot('health');
  });

  it('creates and expires a silence, creates a template', async () => {
    await go('Silences');
    await page.getByText('New silence').click();
    const form = page.getByRole('form', { name: 'New silence' });
    await form.getByLabel(/^Matcher/).fill('data.namespace == "kube-system"');
    // a duration preset fills Ends at: a week from now (the start is empty)
    const before = Date.now();
    await form.getByRole('button', { name: 'Lasts 1w' }).click();
    const endsAt = Date.parse(`${await form.getByLabel('Ends at (UTC)').inputValue()}Z`);
    expect(endsAt).toBeGreaterThanOrEqual(Math.floor((before + 7 * DAY) / 60_000) * 60_000);
    expect(endsAt).toBeLessThanOrEqual(Date.now() + 7 * DAY);
    await form.getByLabel('Comment').fill('node upgrades');
    await form.getByRole('button', { name: 'Create silence' }).click();
    const row = page.locator('tbody tr', { hasText: 'node upgrades' });
    await row.locator('.tag-active').waitFor();
    await shot('silences');
    await row.getByRole('button', { name: /^Expire/ }).click();
    await row.locator('.tag-expired').waitFor();

    await go('Templates');
    await page.locator('p.empty', { hasText: 'No template yet' }).waitFor();
    await page.getByRole('button', { name: 'New template' }).click();
    const t = page.getByRole('form', { name: 'New template' });
    await t.getByLabel('Name').fill('short');
    // the preview renders through the hub: a part that does not compile is refused with its field and position
    const preview = t.getByRole('article', { name: 'Template preview' });
    await t.getByLabel('Title (Liquid)').fill('{{ event.type ');
    await preview.getByRole('button', { name: 'Preview' }).click();
    expect(await preview.getByRole('alert').textContent()).toMatch(/^parts\.default\.title: line 1, column \d+/);
    await t.getByLabel('Title (Liquid)').fill('{{ event.type }} in {{ event.data.clusterName }}');
    await preview.getByLabel('Sample event').selectOption('evt.healthstatus.certmgr-issuer.notready');
    await preview.getByRole('button', { name: 'Preview' }).click();
    const title = preview.locator('pre[data-field="title"]');
    await title.waitFor();
    expect(await title.textContent()).toBe('evt.healthstatus.certmgr-issuer.notready in prod-eu-west-1');
    await shot('templates-preview');
    await t.getByRole('button', { name: 'Create template' }).click();
    await page.locator('tbody tr', { hasText: 'short' }).waitFor();
    await shot('templates');
  });

  it('edits, disables and enables the router; try-it on a recent stored event', async () => {
    await go('Routers');
    const row = page.locator('tr[data-router="issuers to receiver"]');
    await row.getByRole('button', { name: 'Edit issuers to receiver' }).click();
    const form = page.getByRole('form', { name: 'Edit router issuers to receiver' });
    await form.getByLabel('Filter (CEL over type and data)').fill('type.endsWith(".notready")');
    await page.getByText('Filter valid').waitFor();
    await form.getByRole('button', { name: 'Save router' }).click();
    await row.locator('code', { hasText: 'type.endsWith(".notready")' }).waitFor();
    await row.getByRole('button', { name: 'Disable issuers to receiver' }).click();
    await row.locator('.tag-disabled').waitFor();
    await row.getByRole('button', { name: 'Enable issuers to receiver' }).click();
    await row.locator('.tag-enabled').waitFor();

    // the issuer event posted above, as the hub stored it
    const tryIt = page.getByRole('form', { name: 'Try routing' });
    const recent = tryIt.getByLabel('Or a recent event');
    await expect.poll(() => recent.locator('option').count()).toBeGreaterThan(1);
    await recent.selectOption({ index: 1 });
    expect(await tryIt.getByLabel('Event data (JSON)').inputValue()).toContain('letsencrypt-prod');
    await tryIt.getByRole('button', { name: 'Simulate' }).click();
    const sim = page.locator('.simulation tr', { hasText: 'issuers to receiver' });
    await sim.waitFor();
    expect(await sim.textContent()).toContain('MATCHED');
  });

  it('logs out (the key is gone), and a read key sees no create, edit or retry controls', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(KEY_A);

    await page.getByLabel('API key').fill(READ_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    expect(await page.getByTestId('viewer').textContent()).toContain('read');
    await go('Integrations');
    await page.locator('tr[data-integration="receiver"]').waitFor();
    expect(await page.getByText('New integration').count()).toBe(0);
    expect(await page.getByRole('button', { name: /Send test|^Delete/ }).count()).toBe(0);
    await go('Routers');
    await page.locator('tr[data-router="issuers to receiver"]').waitFor();
    expect(await page.getByRole('button', { name: /New router|Edit|Disable|^Delete/ }).count()).toBe(0);
    await go('Deliveries');
    await page.locator('tr[data-delivery]').first().waitFor();
    expect(await page.getByRole('button', { name: /Retry/ }).count()).toBe(0);
  });

  it('deletes: an integration a router uses is refused with the hub message; then the router, the integration and the template', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('API key').fill(KEY_A);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages', exact: true }).waitFor();

    // asks first; Cancel keeps everything
    await go('Integrations');
    const integration = page.locator('tr[data-integration="receiver"]');
    await integration.getByRole('button', { name: 'Delete integration receiver' }).click();
    const ask = integration.getByRole('group', { name: 'Confirm deleting integration receiver' });
    expect(await ask.textContent()).toContain('Delete integration receiver?');
    await ask.getByRole('button', { name: 'Cancel' }).click();
    await integration.getByRole('button', { name: 'Delete integration receiver' }).click();
    await ask.getByRole('button', { name: 'Yes, delete' }).click();
    const refused = integration.getByRole('alert');
    await refused.waitFor();
    expect(await refused.textContent()).toMatch(
      /^integration\(s\) still used by routers: .*\(issuers to receiver\).*delete or re-point those routers first$/,
    );
    await shot('integrations-delete-refused');
    expect(await page.locator('tr[data-integration="receiver"]').count()).toBe(1);

    await go('Routers');
    const router = page.locator('tr[data-router="issuers to receiver"]');
    await router.getByRole('button', { name: 'Delete router issuers to receiver' }).click();
    await router.getByRole('button', { name: 'Yes, delete' }).click();
    await page.locator('p.empty', { hasText: 'No router yet' }).waitFor();
    expect(await router.count()).toBe(0);

    await go('Integrations');
    await integration.getByRole('button', { name: 'Delete integration receiver' }).click();
    await integration.getByRole('button', { name: 'Yes, delete' }).click();
    await page.locator('p.empty', { hasText: 'No integration yet' }).waitFor();

    await go('Templates');
    const template = page.locator('tr[data-template="short"]');
    await template.getByRole('button', { name: 'Delete template short' }).click();
    await template.getByRole('button', { name: 'Yes, delete' }).click();
    await page.locator('p.empty', { hasText: 'No template yet' }).waitFor();
    await shot('templates-empty');
  });

  it('wrote no error to the browser console', () => {
    expect(consoleErrors).toEqual([]);
  });
});
