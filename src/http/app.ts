/**
 * The HTTP surface: REST monitoring configuration, GraphQL, health and metrics. A factory with no listen(),
 * so tests and the CLI compose it the same way.
 */
import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Store } from '../store/types.js';
import { serviceContext, type ServiceContext, type ServiceRuntime } from '../service/context.js';
import { ingestDepsOf } from '../service/runtime.js';
import { acceptEvents } from '../ingest/pipeline.js';
import { parseEvents } from '../ingest/parse.js';
import { ServiceError, ValidationErrors } from '../model/errors.js';
import { ApiKeyRing, API_KEY_HEADER, allowed, forbiddenMessage, type ApiOperation } from './auth.js';
import type { ApiKeyScope } from '../config.js';
import { boundedErr, capText, sendError, storeInputError, sendErrors, sendGraphqlError } from './errors.js';
import {
  BODY_LIMIT,
  INVENTORY_BODY_LIMIT,
  MAX_JSON_DEPTH,
  RETRY_AFTER_SECONDS,
  deadlineAnswer,
  isStoreUnavailable,
  jsonDepthViolation,
  routeLabel,
} from './limits.js';
import { createHttpMetrics, type HttpMetrics } from './metrics.js';
import { monitoringRouter } from './rest/monitoring-config.js';
import { exportCertificatesCsv, postInventory } from './rest/inventory.js';
import { INVENTORY_INFLIGHT, InflightLimiter } from './inflight.js';
import { graphqlHandler } from './graphql/handler.js';
import { mountConsole } from './console.js';

export interface AppDeps {
  store: Store;
  keys: ApiKeyRing;
  logger: Logger;
  metrics?: HttpMetrics;
  now?: () => number;
  /** Invoked after committed configuration changes (routing index invalidation). */
  onChange?: ServiceContext['onChange'];
  /** Routing and delivery parts; without them POST /v1/events answers 404. */
  runtime?: ServiceRuntime;
  /**
   * Every request is answered within this many ms: 408 REQUEST_TIMEOUT while its body is still arriving, else 503
   * DEADLINE_EXCEEDED (serve: requestTimeout in --limits-file, whose table holds the default).
   */
  requestTimeoutMs: number;
  /** Per-company quotas (defaults: DEFAULT_QUOTAS). */
  quotas?: ServiceContext['quotas'];
  /** Inventory: when a cluster's agent counts as silent (clusterSilenceAfter in --limits-file). */
  clusterSilenceAfterMs?: number;
  /** The web console's built files , served at /ui; absent: no console routes. */
  consoleDir?: string;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      ctx: ServiceContext;
      /** The scope of the request's API key (set with ctx). */
      scope: ApiKeyScope;
      log: Logger;
      requestId: string;
    }
  }
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

export function createApp(deps: AppDeps): express.Express {
  const metrics = deps.metrics ?? createHttpMetrics();
  const { requestTimeoutMs } = deps;
  const now = deps.now ?? Date.now;
  const app = express();
  // Strict routes (set before the first route): '/HEALTHZ' and '/healthz/' are 404, not aliases, so every
  // answered path has exactly one spelling and one metrics label.
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  // request id, per-request logger, access log and metrics
  app.use((req, res, next) => {
    const incoming = req.header('x-request-id');
    const requestId = incoming && REQUEST_ID_RE.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader('x-request-id', requestId);
    const log = deps.logger.child({ requestId });
    res.locals.log = log;
    const start = process.hrtime.bigint();
    const path = req.path; // captured now: mounted routers rewrite req.path while they run
    res.on('finish', () => {
      // the matched route pattern (bounded label set); unmatched paths are 'other'
      const route = routeLabel(req.route ? { baseUrl: req.baseUrl, routePath: (req.route as { path?: unknown }).path } : undefined);
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      metrics.requests.inc({ method: req.method, route, status: String(res.statusCode) });
      metrics.duration.observe({ method: req.method, route }, seconds);
      if (route !== '/healthz' && route !== '/readyz' && route !== '/metrics')
        log.info({ method: req.method, path: capText(path), status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
    });
    next();
  });

  // Per-request deadline: whatever a handler waits for (a blackholed database, a lock), the client gets an
  // answer. The handler keeps running; its late answer is dropped (sendErrors / the error handler check headersSent).
  // A body still arriving at the deadline is the client's slowness: 408 (deadlineAnswer).
  app.use((req, res, next) => {
    const timer = setTimeout(() => {
      if (res.writableEnded) return;
      const answer = deadlineAnswer(req.complete);
      res.locals.log.warn(
        { method: req.method, path: capText(req.path), timeoutMs: requestTimeoutMs, status: answer.status },
        'request deadline exceeded',
      );
      if (res.headersSent) return void res.destroy();
      let msg: string;
      if (answer.closeConnection) {
        res.setHeader('Connection', 'close');
        msg = `the request was not received within ${requestTimeoutMs} ms`;
      } else {
        res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
        msg = `no answer within ${requestTimeoutMs} ms; retry later`;
      }
      if (req.path === '/graphql') sendGraphqlError(res, answer.status, answer.code, msg);
      else sendError(res, answer.status, answer.code, msg);
    }, requestTimeoutMs);
    timer.unref();
    res.on('close', () => clearTimeout(timer));
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    try {
      await deps.store.ping();
      res.json({ status: 'ready' });
    } catch (e) {
      // unauthenticated endpoint: the driver's message carries host, port or user; it goes to the log only
      res.locals.log.warn({ err: e }, 'readiness check failed');
      if (!res.headersSent) res.status(503).json({ status: 'not ready', reason: 'store unavailable' });
    }
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  const isGraphql = (req: Request) => req.path === '/graphql';

  const authed: express.RequestHandler = (req, res, next) => {
    // tenant data (and refusals of a key): no browser, proxy or CDN may keep a copy
    res.setHeader('Cache-Control', 'no-store');
    const id = deps.keys.identify(req.header(API_KEY_HEADER));
    if (!id) {
      const msg = req.header(API_KEY_HEADER) ? `invalid ${API_KEY_HEADER} header` : `missing ${API_KEY_HEADER} header`;
      if (isGraphql(req)) sendGraphqlError(res, 401, 'UNAUTHENTICATED', msg);
      else sendError(res, 401, 'UNAUTHENTICATED', msg);
      return;
    }
    const { companyId, scope } = id;
    res.locals.scope = scope;
    res.locals.ctx = serviceContext(deps.store, companyId, {
      scope,
      caller: id.keyId,
      now,
      onChange: deps.onChange,
      runtime: deps.runtime,
      quotas: deps.quotas,
      clusterSilenceAfterMs: deps.clusterSilenceAfterMs,
    });
    res.locals.log = res.locals.log.child({ companyId });
    next();
  };

  /** 403 before the body is read when the key's scope does not allow what the request does. */
  const may =
    (op: (req: Request) => ApiOperation): express.RequestHandler =>
    (req, res, next) => {
      const what = op(req);
      if (allowed(res.locals.scope, what)) return next();
      res.locals.log.info({ scope: res.locals.scope, operation: what }, 'request refused: API key scope');
      sendError(res, 403, 'FORBIDDEN', forbiddenMessage(res.locals.scope, what));
    };
  const restOperation = (req: Request): ApiOperation => (req.method === 'GET' || req.method === 'HEAD' ? 'query' : 'mutation');

  const defaultJson = express.json({ limit: BODY_LIMIT, type: ['application/json', 'application/*+json'], strict: false });
  const inventoryJson = express.json({ limit: INVENTORY_BODY_LIMIT, type: ['application/json', 'application/*+json'], strict: false });
  const jsonBody: express.RequestHandler[] = [
    (req, res, next) => {
      if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE') return next();
      const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
      // GraphQL over HTTP: request bodies are application/json only (application/graphql-response+json is a
      // response type); REST also takes application/*+json.
      const types = isGraphql(req) ? ['application/json'] : ['application/json', 'application/*+json'];
      if (hasBody && !req.is(types)) {
        const got = (req.headers['content-type'] ?? 'none').slice(0, 100);
        const msg = `Content-Type must be ${types.join(' or ')}, got ${got}`;
        if (isGraphql(req)) sendGraphqlError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', msg);
        else sendError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', msg);
        return;
      }
      next();
    },
    // an inventory report carries up to 1,000 certificates' facts: more than the 1 MiB other bodies get
    (req, res, next) => (req.path === '/v1/inventory' ? inventoryJson : defaultJson)(req, res, next),
    (req, res, next) => {
      const where = jsonDepthViolation(req.body);
      if (where === null) return next();
      const msg = `JSON nested deeper than ${MAX_JSON_DEPTH} levels at ${where.length > 200 ? where.slice(0, 200) + '…' : where}`;
      if (isGraphql(req)) sendGraphqlError(res, 400, 'BAD_USER_INPUT', msg);
      else sendError(res, 400, 'BAD_USER_INPUT', msg, where.slice(0, 200));
    },
  ];

  app.use('/outagedetection/v1/inventorymonitoringconfig', authed, may(restOperation), ...jsonBody, monitoringRouter());
  app.post('/graphql', authed, ...jsonBody, graphqlHandler(deps.logger));
  app.all('/graphql', (req, res) => {
    res.setHeader('Allow', 'POST');
    sendGraphqlError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on /graphql; use POST`);
  });
  // inventory (docs/inventory.md): agents report, queries read
  const inventoryInflight = new InflightLimiter(INVENTORY_INFLIGHT);
  const holdInflight =
    (handler: (req: Request, res: Response) => Promise<void>) =>
    async (req: Request, res: Response): Promise<void> => {
      res.locals.applying = true;
      try {
        await handler(req, res);
      } finally {
        (res.locals.releaseInflight as (() => void) | undefined)?.();
      }
    };
  app.post(
    '/v1/inventory',
    authed,
    may(() => 'inventory'),
    // before the body is read: the slot bounds the memory of bodies being read and applied. It is held until the
    // apply ends, not until the response: after a deadline's 503 or a client's disconnect the apply goes on.
    (req, res, next) => {
      const slot = inventoryInflight.acquire(res.locals.ctx.companyId);
      if (!slot.ok) {
        res.setHeader('Retry-After', '1');
        return sendError(res, 429, 'TOO_MANY_REQUESTS', `inventory report refused: ${slot.reason}; send it again after Retry-After`);
      }
      res.locals.releaseInflight = slot.release;
      // a request that ends before its apply starts (body too large, cut off) frees its slot here
      res.on('close', () => {
        if (!res.locals.applying) slot.release();
      });
      next();
    },
    ...jsonBody,
    holdInflight(
      postInventory(
        deps.runtime
          ? {
              logLimiter: deps.runtime.logLimiter,
              // the .active of a cluster that was silent goes through the ingestion of POST /v1/events
              ingest: ingestDepsOf(deps.runtime, deps.logger),
            }
          : {},
      ),
    ),
  );
  app.all('/v1/inventory', (req, res) => {
    res.setHeader('Allow', 'POST');
    sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on /v1/inventory; use POST`);
  });
  app.get('/v1/inventory/certificates.csv', authed, may(restOperation), exportCertificatesCsv);
  app.all('/v1/inventory/certificates.csv', (req, res) => {
    res.setHeader('Allow', 'GET, HEAD');
    sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on /v1/inventory/certificates.csv; use GET`);
  });
  if (deps.runtime) {
    const rt = deps.runtime;
    app.post(
      '/v1/events',
      authed,
      may(() => 'events'),
      ...jsonBody,
      async (req, res) => {
        try {
          const events = parseEvents(req.body);
          const accepted = await acceptEvents(res.locals.ctx, events, ingestDepsOf(rt, res.locals.log));
          res.status(202).json({ events: accepted });
        } catch (e) {
          if (e instanceof ValidationErrors) return sendErrors(res, 400, e.errors);
          if (e instanceof ServiceError) return sendError(res, 400, e.code, e.message, e.field);
          throw e;
        }
      },
    );
    app.all('/v1/events', (req, res) => {
      res.setHeader('Allow', 'POST');
      sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on /v1/events; use POST`);
    });
  }

  // the web console: static files, no key (the page sends one with each API call)
  if (deps.consoleDir !== undefined) mountConsole(app, deps.consoleDir);

  app.use((req, res) => sendError(res, 404, 'NOT_FOUND', `no such endpoint: ${req.method} ${req.path}`));

  // body-parser and unexpected errors
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string; status?: number; message?: string };
    if (res.headersSent) {
      // answered already (deadline): only record it
      (res.locals.log ?? deps.logger).warn({ err: boundedErr(err) }, 'error after the answer was sent');
      return;
    }
    const gql = isGraphql(req);
    const send = (status: number, code: string, message: string) =>
      gql ? sendGraphqlError(res, status, code, message) : sendError(res, status, code, message);
    if (e.type === 'entity.too.large')
      return send(413, 'PAYLOAD_TOO_LARGE', `request body exceeds ${req.path === '/v1/inventory' ? INVENTORY_BODY_LIMIT : BODY_LIMIT}`);
    if (e.type === 'entity.parse.failed') return send(400, 'MALFORMED_JSON', `request body is not valid JSON: ${e.message ?? ''}`.trim());
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported')
      return send(415, 'UNSUPPORTED_MEDIA_TYPE', e.message ?? 'unsupported encoding');
    if (err instanceof URIError || (e.status === 400 && /^Failed to decode param/.test(e.message ?? '')))
      return send(400, 'MALFORMED_PATH', 'the path is not valid percent-encoding (RFC 3986)');
    const input = storeInputError(err);
    if (input) return send(input.status, input.code, input.message);
    if (isStoreUnavailable(err)) {
      (res.locals.log ?? deps.logger).warn({ err }, 'store unavailable');
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      return send(503, 'SERVICE_UNAVAILABLE', 'the store is unavailable; retry later');
    }
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) return send(e.status, 'BAD_REQUEST', e.message ?? 'bad request');
    (res.locals.log ?? deps.logger).error({ err: boundedErr(err) }, 'unhandled error');
    send(500, 'INTERNAL', 'internal error');
  });
  return app;
}
