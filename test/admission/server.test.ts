/** The HTTPS server: routes, bounds, and certificate reloading (no apiserver). */
import { mkdir, rename, symlink, writeFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdmissionWebhook, type RunningAdmissionWebhook } from '../../src/admission/index.js';
import { waitFor } from '../support/kube.js';
import { certDir, createTestCa, type TestCa } from './tls.js';

const logger = pino({ level: process.env['CERTMGR_NOTIFY_TEST_LOGS'] ? 'debug' : 'silent' });

interface Reply {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

function call(
  wh: RunningAdmissionWebhook,
  ca: string,
  method: string,
  path: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`${wh.url}${path}`, { method, ca, headers, timeout: 5000 }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (data += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

/** SHA-256 fingerprint of the certificate the server presents (trusting `ca`). */
function servedFingerprint(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, ca }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.on('error', reject);
  });
}

const routerReview = (filter: string) =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'abc',
      kind: { group: 'notify.certmgr.io', version: 'v1alpha1', kind: 'NotificationRouter' },
      operation: 'CREATE',
      namespace: 'ns',
      name: 'r',
      object: { spec: { eventTypeId: 'certmgr-issuer-health-notification-config', providerRef: { name: 'p' }, filter } },
    },
  });

describe('admission webhook server', () => {
  let ca: TestCa;
  let dir: string;
  let wh: RunningAdmissionWebhook;
  const registry = new Registry();
  const json = { 'content-type': 'application/json' };

  beforeAll(async () => {
    ca = await createTestCa();
    dir = await certDir(await ca.issue());
    wh = await startAdmissionWebhook({
      port: 0,
      host: '127.0.0.1',
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
      logger,
      registry,
      certPollMs: 60_000,
      maxBodyBytes: 64 * 1024,
    });
  });
  afterAll(async () => {
    await wh?.close();
    await rm(dir, { recursive: true, force: true });
    await rm(ca.dir, { recursive: true, force: true });
  });

  it('GET /healthz', async () => {
    const r = await call(wh, ca.caPem, 'GET', '/healthz');
    expect(r).toMatchObject({ status: 200, body: 'ok' });
    expect(wh.url).toBe(`https://127.0.0.1:${wh.port}`);
  });

  it('POST /validate answers an AdmissionReview (deny and allow)', async () => {
    const bad = await call(wh, ca.caPem, 'POST', '/validate', routerReview('type.endsWith('), json);
    expect(bad.status).toBe(200);
    expect(bad.headers['content-type']).toBe('application/json');
    expect(JSON.parse(bad.body)).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: 'abc',
        allowed: false,
        status: {
          code: 400,
          reason: 'BadRequest',
          message: "spec.filter: line 1, column 15: syntax error: unexpected end of expression, expected ')' to close '(' at 1:14",
        },
      },
    });
    const good = await call(wh, ca.caPem, 'POST', '/validate?timeout=5s', routerReview("type.endsWith('.ready')"), {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(JSON.parse(good.body)).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'abc', allowed: true },
    });
    const metrics = await registry.getSingleMetricAsString('certmgr_notify_webhook_admission_requests_total');
    expect(metrics).toContain('kind="NotificationRouter",operation="CREATE",result="denied"} 1');
    expect(metrics).toContain('kind="NotificationRouter",operation="CREATE",result="allowed"} 1');
  });

  it.each([
    ['not JSON', 'POST', '/validate', '{', json, 400, /not JSON/],
    ['not an AdmissionReview', 'POST', '/validate', '{"kind":"Pod"}', json, 400, /apiVersion must be/],
    ['wrong content type', 'POST', '/validate', routerReview('true'), { 'content-type': 'text/plain' }, 415, /application\/json/],
    ['GET /validate', 'GET', '/validate', undefined, {}, 405, /method/],
    ['POST /healthz', 'POST', '/healthz', '', json, 405, /method/],
    ['unknown path', 'GET', '/mutate', undefined, {}, 404, /not found/],
  ] as const)('%s → HTTP %s', async (_name, method, path, body, headers, status, msg) => {
    const r = await call(wh, ca.caPem, method, path, body, headers);
    expect(r.status).toBe(status);
    expect(r.body).toMatch(msg);
  });

  it('bounds the body: 413 by Content-Length and while streaming', async () => {
    const big = Buffer.alloc(65 * 1024, ' ');
    const declared = await call(wh, ca.caPem, 'POST', '/validate', big, json);
    expect(declared.status).toBe(413);
    // chunked: no Content-Length, the limit is hit while reading
    const streamed = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${wh.url}/validate`,
        { method: 'POST', ca: ca.caPem, headers: { ...json, 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (e) =>
        (e as NodeJS.ErrnoException).code === 'ECONNRESET' || (e as NodeJS.ErrnoException).code === 'EPIPE' ? undefined : reject(e),
      );
      for (let i = 0; i < 10; i++) req.write(Buffer.alloc(16 * 1024, ' '));
      req.end();
    });
    expect(streamed).toBe(413);
    // still serving
    expect((await call(wh, ca.caPem, 'GET', '/healthz')).status).toBe(200);
  });

  it('reloads a rotated certificate; a half-written pair keeps the old one', async () => {
    const before = await servedFingerprint(wh.port, ca.caPem);
    expect(before).toBe(wh.certificate().fingerprint);
    const next = await ca.issue();
    // the key first: key and certificate do not match until the certificate is written too
    await writeFile(join(dir, 'tls.key'), next.key);
    expect(await wh.reloadCertificate()).toBe(false);
    expect(await servedFingerprint(wh.port, ca.caPem)).toBe(before);
    await writeFile(join(dir, 'tls.crt'), next.cert);
    // the directory watch picks it up (the poll is 60 s here)
    const after = await waitFor(
      'the new certificate is served',
      async () => {
        const fp = await servedFingerprint(wh.port, ca.caPem);
        return fp !== before ? fp : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(after).toBe(wh.certificate().fingerprint);
    expect((await call(wh, ca.caPem, 'GET', '/healthz')).status).toBe(200);
  });

  it("follows the kubelet's atomic symlink swap of a Secret volume", async () => {
    // <dir>/tls.crt -> ..data/tls.crt, ..data -> ..v1; an update writes ..v2 and renames a new link over ..data
    const vol = join(ca.dir, 'volume');
    await mkdir(join(vol, '..v1'), { recursive: true });
    const first = await ca.issue();
    await writeFile(join(vol, '..v1', 'tls.crt'), first.cert);
    await writeFile(join(vol, '..v1', 'tls.key'), first.key);
    await symlink('..v1', join(vol, '..data'));
    await symlink(join('..data', 'tls.crt'), join(vol, 'tls.crt'));
    await symlink(join('..data', 'tls.key'), join(vol, 'tls.key'));
    const w = await startAdmissionWebhook({
      port: 0,
      host: '127.0.0.1',
      certFile: join(vol, 'tls.crt'),
      keyFile: join(vol, 'tls.key'),
      logger,
      certPollMs: 60_000,
    });
    try {
      const before = await servedFingerprint(w.port, ca.caPem);
      const second = await ca.issue();
      await mkdir(join(vol, '..v2'));
      await writeFile(join(vol, '..v2', 'tls.crt'), second.cert);
      await writeFile(join(vol, '..v2', 'tls.key'), second.key);
      await symlink('..v2', join(vol, '..data_tmp'));
      await rename(join(vol, '..data_tmp'), join(vol, '..data'));
      await waitFor('the swapped certificate is served', async () => (await servedFingerprint(w.port, ca.caPem)) !== before, {
        timeoutMs: 10_000,
      });
    } finally {
      await w.close();
    }
  });

  it('fails to start without a usable certificate, naming the file', async () => {
    await expect(
      startAdmissionWebhook({ port: 0, host: '127.0.0.1', certFile: join(dir, 'nope.crt'), keyFile: join(dir, 'tls.key'), logger }),
    ).rejects.toThrow(/cannot read the webhook certificate .*nope\.crt: ENOENT/);
    const other = await ca.issue();
    const mismatched = await certDir({ cert: other.cert, key: (await ca.issue()).key });
    await expect(
      startAdmissionWebhook({
        port: 0,
        host: '127.0.0.1',
        certFile: join(mismatched, 'tls.crt'),
        keyFile: join(mismatched, 'tls.key'),
        logger,
      }),
    ).rejects.toThrow(/do not load: .*key values mismatch/);
    await rm(mismatched, { recursive: true, force: true });
  });
});
