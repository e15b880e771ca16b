/** The agent's only HTTP surface: `/healthz`, `/readyz`, `/metrics`. No API, no key. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { ConfigError } from '../config.js';

export type Readiness = { ready: true } | { ready: false; reason: string };

const json = (status: number, body: unknown): [number, Record<string, string>, string] => [
  status,
  { 'content-type': 'application/json' },
  JSON.stringify(body),
];

export async function startOpsServer(o: {
  port: number;
  host: string;
  registry: Registry;
  readiness: () => Readiness;
}): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const server: Server = createServer({ requestTimeout: 10_000, headersTimeout: 10_000 }, (req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      let answer: [number, Record<string, string>, string];
      if (req.method !== 'GET' && req.method !== 'HEAD')
        answer = json(405, { errors: [{ code: 'METHOD_NOT_ALLOWED', message: 'GET only' }] });
      else if (path === '/healthz') answer = json(200, { status: 'ok' });
      else if (path === '/readyz') {
        const r = o.readiness();
        answer = r.ready ? json(200, { status: 'ready' }) : json(503, { status: 'not ready', reason: r.reason });
      } else if (path === '/metrics') answer = [200, { 'content-type': o.registry.contentType }, await o.registry.metrics()];
      else answer = json(404, { errors: [{ code: 'NOT_FOUND', message: 'the agent serves /healthz, /readyz and /metrics only' }] });
      res.writeHead(answer[0], answer[1]).end(req.method === 'HEAD' ? undefined : answer[2]);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'EADDRINUSE' || e.code === 'EACCES' || e.code === 'EADDRNOTAVAIL'
          ? new ConfigError(`cannot listen on ${o.host}:${o.port} (--host/--port): ${e.code}`)
          : e,
      ),
    );
    server.listen(o.port, o.host, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  const host = o.host === '0.0.0.0' || o.host === '::' ? '127.0.0.1' : o.host;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
