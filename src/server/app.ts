/**
 * The HTTP surface: REST monitoring configuration, GraphQL, health and metrics. A factory with no listen(),
 * so tests and the CLI compose it the same way.
 */
import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Store } from '../store/types.js';
import { serviceContext, type ServiceContext, type ServiceRuntime } from '../service/context.js';
import { acceptEvents, parseEvents } from '../service/events.js';
import { ServiceError, ValidationErrors } from '../service/errors.js';
import { ApiKeyRing, API_KEY_HEADER } from './auth.js';
import { sendError, sendErrors, sendGraphqlError } from './errors.js';
import { createHttpMetrics, type HttpMetrics } from './metrics.js';
import { monitoringRouter } from './rest/monitoring-config.js';
import { graphqlHandler } from './graphql/handler.js';

export const BODY_LIMIT = '1mb';

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
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      ctx: ServiceContext;
      log: Logger;
      requestId: string;
    }
  }
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

function routeLabel(path: string): string {
  if (path.startsWith('/outagedetection/v1/inventorymonitoringconfig/')) return '/outagedetection/v1/inventorymonitoringconfig/:type';
  if (['/graphql', '/healthz', '/readyz', '/metrics', '/v1/events'].includes(path)) return path;
  return 'other';
}

export function createApp(deps: AppDeps): express.Express {
  const metrics = deps.metrics ?? createHttpMetrics();
  const app = express();
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
      const route = routeLabel(path);
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      metrics.requests.inc({ method: req.method, route, status: String(res.statusCode) });
      metrics.duration.observe({ method: req.method, route }, seconds);
      if (route !== '/healthz' && route !== '/readyz' && route !== '/metrics')
        log.info({ method: req.method, path, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
    });
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
      res.status(503).json({ status: 'not ready', reason: (e as Error).message });
    }
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  const isGraphql = (req: Request) => req.path === '/graphql';

  const authed: express.RequestHandler = (req, res, next) => {
    const companyId = deps.keys.companyOf(req.header(API_KEY_HEADER));
    if (!companyId) {
      const msg = req.header(API_KEY_HEADER) ? `invalid ${API_KEY_HEADER} header` : `missing ${API_KEY_HEADER} header`;
      if (isGraphql(req)) sendGraphqlError(res, 401, 'UNAUTHENTICATED', msg);
      else sendError(res, 401, 'UNAUTHENTICATED', msg);
      return;
    }
    res.locals.ctx = serviceContext(deps.store, companyId, {
      ...(deps.now ? { now: deps.now } : {}),
      ...(deps.onChange ? { onChange: deps.onChange } : {}),
      ...(deps.runtime ? { runtime: deps.runtime } : {}),
    });
    res.locals.log = res.locals.log.child({ companyId });
    next();
  };

  const jsonBody: express.RequestHandler[] = [
    (req, res, next) => {
      if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE') return next();
      const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
      if (hasBody && !req.is(['application/json', 'application/*+json'])) {
        const msg = `Content-Type must be application/json, got ${req.headers['content-type'] ?? 'none'}`;
        if (isGraphql(req)) sendGraphqlError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', msg);
        else sendError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', msg);
        return;
      }
      next();
    },
    express.json({ limit: BODY_LIMIT, type: ['application/json', 'application/*+json'], strict: false }),
  ];

  app.use('/outagedetection/v1/inventorymonitoringconfig', authed, ...jsonBody, monitoringRouter());
  app.post('/graphql', authed, ...jsonBody, graphqlHandler(deps.logger));
  app.all('/graphql', (req, res) => {
    res.setHeader('Allow', 'POST');
    sendGraphqlError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on /graphql; use POST`);
  });
  if (deps.runtime) {
    const rt = deps.runtime;
    app.post('/v1/events', authed, ...jsonBody, async (req, res) => {
      try {
        const events = parseEvents(req.body);
        const accepted = await acceptEvents(res.locals.ctx, events, {
          snapshots: rt.snapshots,
          metrics: rt.routingMetrics,
          log: res.locals.log,
          ...(rt.logLimiter ? { logLimiter: rt.logLimiter } : {}),
          onAccepted: rt.kickDelivery,
        });
        res.status(202).json({ events: accepted });
      } catch (e) {
        if (e instanceof ValidationErrors) return sendErrors(res, 400, e.errors);
        if (e instanceof ServiceError) return sendError(res, 400, e.code, e.message, e.field);
        throw e;
      }
    });
    app.all('/v1/events', (req, res) => {
      res.setHeader('Allow', 'POST');
      sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on /v1/events; use POST`);
    });
  }

  app.use((req, res) => sendError(res, 404, 'NOT_FOUND', `no such endpoint: ${req.method} ${req.path}`));

  // body-parser and unexpected errors
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string; status?: number; message?: string };
    const gql = isGraphql(req);
    const send = (status: number, code: string, message: string) =>
      gql ? sendGraphqlError(res, status, code, message) : sendError(res, status, code, message);
    if (e.type === 'entity.too.large') return send(413, 'PAYLOAD_TOO_LARGE', `request body exceeds ${BODY_LIMIT}`);
    if (e.type === 'entity.parse.failed') return send(400, 'MALFORMED_JSON', `request body is not valid JSON: ${e.message ?? ''}`.trim());
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') return send(415, 'UNSUPPORTED_MEDIA_TYPE', e.message ?? 'unsupported encoding');
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) return send(e.status, 'BAD_REQUEST', e.message ?? 'bad request');
    (res.locals.log ?? deps.logger).error({ err }, 'unhandled error');
    send(500, 'INTERNAL', 'internal error');
  });
  return app;
}
