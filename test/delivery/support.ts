/** Shared pieces of the delivery tests: real stores, loopback receivers, seeding, waiting. */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { EgressPolicy, parseEgressAllow } from '../../src/integrations/egress.js';
import type { Logger } from '../../src/log/logger.js';
import { openStore } from '../../src/store/index.js';
import type { EventRecord, IntegrationRecord, IntegrationType, NewDelivery, Store } from '../../src/store/types.js';
import { dropSchema, randomSchema, testDatabaseUrl } from '../support/postgres.js';
import { EVENTS } from '../integrations/helpers.js';

export interface Engine {
  name: string;
  /** A store URL + schema another process can open too. */
  location(): { url: string; schema?: string };
  open(): Promise<Store>;
  cleanup(): Promise<void>;
}

/** A fresh SQLite file per open() call (unless `shared`), or one PostgreSQL schema per engine. */
function sqliteEngine(): Engine {
  const dir = mkdtempSync(join(tmpdir(), 'certmgr-notify-delivery-'));
  let path = join(dir, `${randomUUID()}.db`);
  return {
    name: 'sqlite file',
    location: () => ({ url: `sqlite:${path}` }),
    async open() {
      path = join(dir, `${randomUUID()}.db`);
      const s = await openStore(`sqlite:${path}`);
      await s.migrate();
      return s;
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresEngine(): Engine {
  const url = testDatabaseUrl();
  const schemas: string[] = [];
  let current = '';
  return {
    name: 'postgres',
    location: () => ({ url, schema: current }),
    async open() {
      // One schema per open(): PostgreSQL tests must not claim each other's rows.
      current = randomSchema('t_delivery');
      schemas.push(current);
      const s = await openStore(url, { schema: current });
      await s.migrate();
      return s;
    },
    async cleanup() {
      for (const s of schemas) await dropSchema(url, s);
    },
  };
}

export const ENGINES: ReadonlyArray<() => Engine> = [sqliteEngine, postgresEngine];

// ---- receivers -----------------------------------------------------------------------------------

export interface Hit {
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** webhook-id header */
  id: string;
}

export type HitHandler = (hit: Hit, res: ServerResponse, nth: number) => void;

export interface Receiver {
  url: string;
  port: number;
  hits: Hit[];
  handle(h: HitHandler): void;
  /** Requests per webhook-id. */
  countById(): Map<string, number>;
  close(): Promise<void>;
}

/** The receivers are on loopback, which the egress deny-list refuses unless allowed. */
export const LOOPBACK_EGRESS = new EgressPolicy(parseEgressAllow(['127.0.0.1/32']));

/** A real HTTP server on 127.0.0.1 (port 0 = any free port). Answers 200 "ok" unless told otherwise. */
export async function startReceiver(opts: { port?: number; handler?: HitHandler } = {}): Promise<Receiver> {
  let handler: HitHandler = opts.handler ?? ((_h, res) => res.end('ok'));
  const hits: Hit[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const hit: Hit = {
        at: Date.now(),
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        id: String(req.headers['webhook-id'] ?? ''),
      };
      hits.push(hit);
      handler(hit, res, hits.filter((h) => h.id === hit.id).length);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    hits,
    handle: (h) => {
      handler = h;
    },
    countById() {
      const m = new Map<string, number>();
      for (const h of hits) m.set(h.id, (m.get(h.id) ?? 0) + 1);
      return m;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ---- seeding ---------------------------------------------------------------------------------------

export const WHSEC = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
/** A token in the webhook URL: must never show up in logs or errors. */
export const URL_TOKEN = 'tok3n-s3cr3t-in-url';

export async function createWebhookIntegration(
  store: Store,
  companyId: string,
  url: string,
  over: Partial<IntegrationRecord> = {},
): Promise<IntegrationRecord> {
  const t = Date.now();
  return store.createIntegration({
    id: randomUUID(),
    companyId,
    name: 'ops webhook',
    type: 'WEBHOOK' as IntegrationType,
    enabled: true,
    config: {},
    secrets: { url: `${url}/hook?token=${URL_TOKEN}`, signingSecret: WHSEC },
    managedBy: null,
    createdAt: t,
    updatedAt: t,
    ...over,
  });
}

/** Accepts `events` events with `perEvent` deliveries each to the integration, the way ingestion does. */
export async function seedDeliveries(
  store: Store,
  integration: Pick<IntegrationRecord, 'id' | 'companyId'>,
  events: number,
  perEvent = 1,
): Promise<NewDelivery[]> {
  const all: NewDelivery[] = [];
  const routers = Array.from({ length: perEvent }, (_, i) => ({ id: randomUUID(), name: `router ${i}` }));
  for (let e = 0; e < events; e++) {
    const t = Date.now();
    const template = EVENTS['evt.healthstatus.certmgr-issuer.notready'];
    const ev: EventRecord = { id: randomUUID(), companyId: integration.companyId, type: template.type, data: template.data, receivedAt: t };
    const ds: NewDelivery[] = routers.map((r) => ({
      id: randomUUID(),
      companyId: integration.companyId,
      eventId: ev.id,
      routerId: r.id,
      routerName: r.name,
      integrationId: integration.id,
      createdAt: t,
    }));
    await store.transaction(async (tx) => {
      await tx.insertEvent(ev);
      await tx.insertDeliveries(ds);
    });
    all.push(...ds);
  }
  return all;
}

// ---- waiting, logging ------------------------------------------------------------------------------

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface CapturedLog {
  logger: Logger;
  lines: Array<Record<string, unknown>>;
  text(): string;
}

export function captureLog(level = 'debug'): CapturedLog {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      raw.push(chunk.toString('utf8'));
      cb();
    },
  });
  const logger = pino({ level }, stream);
  return {
    logger,
    get lines() {
      return raw
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    },
    text: () => raw.join(''),
  };
}
