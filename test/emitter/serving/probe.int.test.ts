/**
 * probeTls against real loopback servers: a TLS server per certificate (openssl-made, as the inventory tests
 * make them), chosen by SNI; a port nobody listens on; a TCP server that never answers; one that answers
 * plain text; one that closes at once.
 */
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, createSecureContext, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseChain } from '../../../src/emitter/inventory/facts.js';
import { probeTls } from '../../../src/emitter/serving/probe.js';
import { selfSigned, type SelfSigned } from '../fixtures.js';

const servers: Server[] = [];
const sockets = new Set<Socket>();

async function listen(s: Server): Promise<number> {
  servers.push(s);
  s.on('connection', (c: Socket) => (sockets.add(c), c.on('close', () => sockets.delete(c))));
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
}

afterAll(async () => {
  for (const c of sockets) c.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

let web: SelfSigned;
let api: SelfSigned;
let odd: SelfSigned;
let tlsPort: number;
/** the server names handshakes asked for (SNICallback runs only when the client sends one) */
const asked: string[] = [];

beforeAll(async () => {
  web = selfSigned({ cn: 'web.example.com', dns: ['web.example.com', 'www.example.com'], days: 30 });
  api = selfSigned({ cn: 'api.example.com', dns: ['api.example.com'], days: 60, serial: '0x0ABCDEF123' });
  // a multi-valued RDN: the fast DER reader leaves it to X509Certificate
  odd = selfSigned({ cn: 'odd.example.com/OU=Ops+L=Here', dns: ['odd.example.com'], days: 10 });
  const contexts = new Map([
    ['web.example.com', web],
    ['api.example.com', api],
    ['odd.example.com', odd],
  ]);
  const server = createTlsServer({
    key: web.keyPem,
    cert: web.pem,
    SNICallback: (name, cb) => {
      asked.push(name);
      const c = contexts.get(name);
      cb(null, c ? createSecureContext({ key: c.keyPem, cert: c.pem }) : undefined);
    },
  });
  server.on('secureConnection', (s: TLSSocket) => s.on('error', () => {}));
  tlsPort = await listen(server);
});

const chainOf = (pem: string) => {
  const c = parseChain(pem)!;
  return {
    serial: c.serial,
    issuer: c.issuer,
    subject: c.subject,
    dnsNames: c.dnsNames,
    notBefore: Date.parse(c.notBefore),
    notAfter: Date.parse(c.notAfter),
  };
};

describe('probeTls', () => {
  it('reads the leaf served for the SNI host: what the inventory reads of the same certificate', async () => {
    for (const [host, cert] of [
      ['web.example.com', web],
      ['api.example.com', api],
      ['odd.example.com', odd],
    ] as const) {
      const out = await probeTls({ host, address: `127.0.0.1:${tlsPort}` }, { timeoutMs: 5_000 });
      expect(out).toEqual({ kind: 'served', leaf: chainOf(cert.pem) });
      expect(asked.splice(0)).toEqual([host]);
    }
    expect(chainOf(api.pem).serial).toBe('0ABCDEF123');
  });

  it('sends no SNI for an IP literal host; the server answers with its default certificate', async () => {
    const out = await probeTls({ host: '127.0.0.1', address: `127.0.0.1:${tlsPort}` }, { timeoutMs: 5_000 });
    expect(out).toEqual({ kind: 'served', leaf: chainOf(web.pem) });
    expect(asked.splice(0)).toEqual([]);
  });

  it('a host with a trailing dot is sent without it', async () => {
    const out = await probeTls({ host: 'api.example.com.', address: `127.0.0.1:${tlsPort}` }, { timeoutMs: 5_000 });
    expect(out).toEqual({ kind: 'served', leaf: chainOf(api.pem) });
    expect(asked.splice(0)).toEqual(['api.example.com']);
  });

  it('a port nobody listens on: connection refused', async () => {
    const s = createTcpServer();
    const port = await listen(s);
    await new Promise((r) => s.close(r));
    expect(await probeTls({ host: 'web.example.com', address: `127.0.0.1:${port}` }, { timeoutMs: 5_000 })).toEqual({
      kind: 'failed',
      error: 'connection refused',
    });
  });

  it('a server that accepts and never answers: timed out after the timeout', async () => {
    const port = await listen(createTcpServer(() => {}));
    expect(await probeTls({ host: 'web.example.com', address: `127.0.0.1:${port}` }, { timeoutMs: 300 })).toEqual({
      kind: 'failed',
      error: 'timed out after 300ms',
    });
  });

  it('a server that speaks plain HTTP: TLS handshake failed with OpenSSL’s reason', async () => {
    const port = await listen(createTcpServer((c) => c.end('HTTP/1.1 400 Bad Request\r\n\r\n')));
    const out = await probeTls({ host: 'web.example.com', address: `127.0.0.1:${port}` }, { timeoutMs: 5_000 });
    expect(out.kind).toBe('failed');
    expect(out.kind === 'failed' && out.error).toMatch(/^TLS handshake failed: \S/);
    expect(out.kind === 'failed' && out.error).not.toContain('\n');
  });

  it('a server that closes the connection at once: TLS handshake failed', async () => {
    const port = await listen(createTcpServer((c) => c.destroy()));
    const out = await probeTls({ host: 'web.example.com', address: `127.0.0.1:${port}` }, { timeoutMs: 5_000 });
    expect(out).toMatchObject({ kind: 'failed', error: expect.stringMatching(/^TLS handshake failed: connection (reset|closed)$/) });
  });

  it('an abort ends a probe at once', async () => {
    const port = await listen(createTcpServer(() => {}));
    const ac = new AbortController();
    const p = probeTls({ host: 'web.example.com', address: `127.0.0.1:${port}` }, { timeoutMs: 60_000, signal: ac.signal });
    ac.abort();
    expect(await p).toEqual({ kind: 'failed', error: 'aborted' });
    const aborted = AbortSignal.abort();
    expect(await probeTls({ host: 'x', address: `127.0.0.1:${port}` }, { timeoutMs: 60_000, signal: aborted })).toEqual({
      kind: 'failed',
      error: 'aborted',
    });
  });

  it('the endpoint sees a completed handshake, not one aborted: a probe leaves no handshake error in its log', async () => {
    // a TLS 1.3 server completes its side when the client's Finished arrives; a socket destroyed at secureConnect
    // may never send it, and servers log each such probe (Go's "http: TLS handshake error … EOF")
    const seen = { completed: 0, failed: [] as string[] };
    const server = createTlsServer({ key: web.keyPem, cert: web.pem });
    server.on('secureConnection', (s: TLSSocket) => {
      seen.completed++;
      s.on('error', () => {}).end();
    });
    server.on('tlsClientError', (e: Error) => seen.failed.push(e.message));
    const port = await listen(server);
    for (let i = 0; i < 5; i++)
      expect(await probeTls({ host: 'web.example.com', address: `127.0.0.1:${port}` }, { timeoutMs: 5_000 })).toMatchObject({
        kind: 'served',
      });
    await waitForCount(() => seen.completed + seen.failed.length, 5);
    expect(seen).toEqual({ completed: 5, failed: [] });
  });

  it('an address that is not host:port fails without connecting', async () => {
    expect(await probeTls({ host: 'web.example.com', address: 'web.example.com' }, { timeoutMs: 5_000 })).toEqual({
      kind: 'failed',
      error: 'not an address (host:port): web.example.com',
    });
  });
});

/** Polls until `count()` reaches `n` (each server-side outcome is an event after the client's end). */
async function waitForCount(count: () => number, n: number): Promise<void> {
  for (let i = 0; count() < n; i++) {
    if (i > 500) throw new Error(`only ${count()} of ${n} server-side outcomes`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
