import { GraphQLError, Kind, parse, type DocumentNode } from 'graphql';
import { createHandler } from 'graphql-http';
import type { RequestHandler, Request, Response } from 'express';
import type { Logger } from 'pino';
import { ServiceError, ValidationErrors, type FieldError } from '../../model/errors.js';
import { boundedErr, capText, sendGraphqlError, storeInputError } from '../errors.js';
import { RETRY_AFTER_SECONDS, isStoreUnavailable } from '../limits.js';
import { allowed, forbiddenMessage, type ApiOperation } from '../auth.js';
import { buildApiSchema } from './schema.js';
import { rootValue } from './resolvers.js';
import { GRAPHQL_LIMITS, measureRequest, parseLimited, type GraphqlLimits } from './cost.js';
import { requestSemaphoreOf, withStoreGate } from '../store-gate.js';
import { CompanyBusyError } from '../../store/concurrency.js';
import type { ServiceContext } from '../../service/context.js';

/**
 * Maps any error to a GraphQL error with `extensions.code`; unexpected errors are logged and masked. Messages
 * (and the field paths and messages of `extensions.errors`) are capped: graphql-js quotes input in full
 * ("Variable \"$ids\" got invalid value …").
 */
export function formatError(err: Readonly<GraphQLError | Error>, log?: Logger): GraphQLError {
  return capGraphqlError(formatUncapped(err, log));
}

function capGraphqlError(e: GraphQLError): GraphQLError {
  const ext = { ...e.extensions };
  if (typeof ext.field === 'string') ext.field = capText(ext.field);
  if (Array.isArray(ext.errors))
    ext.errors = (ext.errors as FieldError[]).map((x) => ({
      ...x,
      message: capText(x.message),
      field: x.field === undefined ? undefined : capText(x.field),
    }));
  return new GraphQLError(capText(e.message), {
    nodes: e.nodes ?? null,
    source: e.source ?? null,
    positions: e.positions ?? null,
    path: e.path ?? null,
    extensions: ext,
  });
}

function formatUncapped(err: Readonly<GraphQLError | Error>, log?: Logger): GraphQLError {
  const ge = err instanceof GraphQLError ? err : new GraphQLError(err.message, { originalError: err });
  const orig = ge.originalError;
  if (orig instanceof ValidationErrors) {
    const first = orig.errors[0];
    return new GraphQLError(orig.message, {
      nodes: ge.nodes ?? null,
      path: ge.path ?? null,
      extensions: { code: 'BAD_USER_INPUT', field: first?.field || undefined, errors: orig.errors },
    });
  }
  if (orig instanceof ServiceError) {
    return new GraphQLError(orig.message, {
      nodes: ge.nodes ?? null,
      path: ge.path ?? null,
      extensions: { code: orig.code, field: orig.field || undefined, ...(orig.details ?? {}) },
    });
  }
  if (orig instanceof GraphQLError && orig.extensions.code) {
    // a scalar's own error (UUID) raised while coercing a variable: same redaction as below
    return new GraphQLError(ge.path ? ge.message : redactRequestError(ge.message, orig.message), {
      nodes: ge.nodes ?? null,
      path: ge.path ?? null,
      extensions: { ...orig.extensions },
    });
  }
  if (ge.extensions.code) {
    // a scalar's error reported as is by validation (our UUID literal parser): same redaction
    if (ge.path) return ge;
    return new GraphQLError(redactRequestError(ge.message, undefined), {
      nodes: ge.nodes ?? null,
      source: ge.source ?? null,
      positions: ge.positions ?? null,
      extensions: { ...ge.extensions },
    });
  }
  const input = storeInputError(orig);
  if (input) return new GraphQLError(input.message, { nodes: ge.nodes ?? null, path: ge.path ?? null, extensions: { code: input.code } });
  if (isStoreUnavailable(orig)) {
    log?.warn({ err: orig }, 'store unavailable');
    return new GraphQLError('the store is unavailable; retry later', {
      nodes: ge.nodes ?? null,
      path: ge.path ?? null,
      extensions: { code: 'SERVICE_UNAVAILABLE' },
    });
  }
  if (!ge.path) {
    // request-level: parse, validation, variable coercion
    const message = redactRequestError(ge.message, orig?.message);
    return new GraphQLError(message, {
      nodes: ge.nodes ?? null,
      extensions: { code: orig ? 'BAD_USER_INPUT' : 'GRAPHQL_VALIDATION_FAILED' },
    });
  }
  log?.error({ err: boundedErr(orig ?? ge) }, 'graphql resolver failed');
  return new GraphQLError('internal error', { nodes: ge.nodes ?? null, path: ge.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } });
}

/** Request-level errors (no path): variable coercion or validation of literals; values are dropped from both. */
function redactRequestError(message: string, reason: string | undefined): string {
  return message.startsWith('Variable "$') && reason !== undefined ? redactVariableError(message, reason) : redactLiteralError(message);
}

/**
 * graphql-js variable coercion errors quote the rejected value (`Variable "$i" got invalid value { IntegrationKey:
 * ["…"] } at "i.incidentMgmtParams.IntegrationKey"; String cannot represent a non string value: ["…"]`), so a
 * secret sent with the wrong type or shape (routing key, webhook URL, signing secret) was reflected. This keeps
 * the variable, the path and the reason, and drops every value. `reason` is the inner error's message, which ends
 * `message` (graphql-js: `${prefix}; ${reason}`). Other messages pass unchanged.
 */
export function redactVariableError(message: string, reason: string): string {
  const head = /^Variable "\$([_A-Za-z][_0-9A-Za-z]*)" got invalid value /.exec(message);
  if (!head || !message.endsWith(`; ${reason}`)) return message;
  const prefix = message.slice(0, message.length - reason.length - 2);
  // the path graphql-js appends after the value: names and [indexes] only, so anchoring at the end is unambiguous
  const at = / at "([_A-Za-z][_0-9A-Za-z]*(?:\.[_A-Za-z][_0-9A-Za-z]*|\[\d+\])*)"$/.exec(prefix);
  return `Variable "$${head[1]}" got invalid value${at ? ` at "${at[1]}"` : ''}; ${redactCoercionReason(reason)}`;
}

/** The reason without the value: scalar parse errors end in `: <value>`; enum and UUID errors quote it. */
export function redactCoercionReason(reason: string): string {
  const represent = /^(.*?\bcannot represent)\b(.*)$/s.exec(reason);
  if (represent) {
    // `String cannot represent a non string value: X`, `UUID cannot represent "X": must be …`
    const kind = /^( an? [a-z0-9 -]+ value| non[a-z0-9 -]+ value| value)/.exec(represent[2]!)?.[1] ?? ' the value';
    // our UUID scalar: `UUID cannot represent <JSON>: <problem>`; problems start with "must" and hold no ': must '
    const cut = reason.lastIndexOf(': must ');
    const why = reason.startsWith('UUID ') && cut >= 0 ? reason.slice(cut + 2) : undefined;
    return `${represent[1]}${kind}${why ? `: ${why}` : ''}`;
  }
  const en = /^Value .* does not exist in "([_A-Za-z][_0-9A-Za-z]*)" enum\.(.*)$/s.exec(reason);
  if (en) return `Value does not exist in "${en[1]}" enum.${en[2]}`;
  return reason;
}

/**
 * The same for literals written in the document: validation (ValuesOfCorrectTypeRule) prints the literal
 * (`String cannot represent a non string value: ["…"]`, `Expected value of type "T!", found "…".`).
 */
export function redactLiteralError(message: string): string {
  const expected = /^Expected value of type "([^"]+)", found (.*)\.$/s.exec(message);
  if (expected) return expected[2] === 'null' ? message : `Expected value of type "${expected[1]}", found a value of another type.`;
  return redactCoercionReason(message);
}

/**
 * What a request would do, for the key's scope: `mutation` when the operation that would run (by `operationName`,
 * else any in the document: with several and no name nothing runs) is a mutation or subscription, else `query`.
 */
export function graphqlOperation(doc: DocumentNode, operationName: unknown): ApiOperation {
  const ops = doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const run = typeof operationName === 'string' ? ops.filter((o) => o.name?.value === operationName) : ops;
  return run.some((o) => o.operation !== 'query') ? 'mutation' : 'query';
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Error codes that, when they are every error of a request that resolved nothing, set its HTTP status. */
const WHOLE_REQUEST_ERRORS: readonly [code: string, status: number, retryAfterSeconds: number][] = [
  ['SERVICE_UNAVAILABLE', 503, RETRY_AFTER_SECONDS],
  ['TOO_MANY_REQUESTS', 429, 1],
];

/**
 * POST /graphql. Our own thin adapter over graphql-http's core handler (its express adapter re-reads the consumed
 * stream when the parsed body is falsy, so `null`, `0`, `false` and `""` were never answered), with the request
 * cost checked before validation and execution, and one company's requests run a few at a time (COMPANY_GRAPHQL_LIMITS)
 * with their store calls through the company's store share (store-gate.ts).
 */
export function graphqlHandler(logger: Logger, limits: GraphqlLimits = GRAPHQL_LIMITS): RequestHandler {
  const schema = buildApiSchema();
  const handle = createHandler<Request, { res: Response }, Record<PropertyKey, unknown>>({
    schema,
    rootValue,
    // bounded again here: the pre-check below already parsed it within the same limit
    parse: (source) => parse(source, { maxTokens: limits.maxTokens }),
    context: (req) => withStoreGate(req.context.res.locals.ctx as ServiceContext) as unknown as Record<PropertyKey, unknown>,
    formatError: (e) => formatError(e, logger),
  });
  return async (req: Request, res: Response) => {
    const body: unknown = req.body;
    if (!isPlainObject(body) || typeof body.query !== 'string')
      return sendGraphqlError(res, 400, 'BAD_REQUEST', 'the request body must be a JSON object with a "query" string');
    const op = body.operationName;
    if (typeof op === 'string') res.locals.log = res.locals.log.child({ operationName: op.slice(0, 100) });
    // Scope refusals are request-level, like UNAUTHENTICATED: HTTP 403 and FORBIDDEN before anything runs.
    const scope = res.locals.scope;
    const forbid = (what: ApiOperation) => {
      res.locals.log.info({ scope, operation: what }, 'graphql request refused: API key scope');
      sendGraphqlError(res, 403, 'FORBIDDEN', forbiddenMessage(scope, what));
    };
    // a key that may run no GraphQL operation (agent) is refused whatever the document
    if (!allowed(scope, 'query') && !allowed(scope, 'mutation')) return forbid('query');
    const parsed = parseLimited(body.query, limits);
    if ('violation' in parsed) {
      const v = parsed.violation;
      return sendGraphqlError(res, 400, 'QUERY_TOO_COMPLEX', v.message, { limit: v.limit, max: v.max, actual: v.actual });
    }
    if ('doc' in parsed) {
      const what = graphqlOperation(parsed.doc, op);
      if (!allowed(scope, what)) return forbid(what);
      const m = measureRequest(
        schema,
        parsed.doc,
        typeof op === 'string' ? op : undefined,
        isPlainObject(body.variables) ? body.variables : undefined,
        limits,
      );
      if ('violation' in m) {
        const v = m.violation;
        res.locals.log.info({ limit: v.limit, actual: v.actual }, 'graphql request rejected by the cost limit');
        return sendGraphqlError(res, 400, 'QUERY_TOO_COMPLEX', v.message, { limit: v.limit, max: v.max, actual: v.actual });
      }
    } // a syntax error is reported by graphql-http as usual
    let answer: Awaited<ReturnType<typeof handle>>;
    try {
      const ctx = res.locals.ctx as ServiceContext;
      answer = await requestSemaphoreOf(ctx.store).run(ctx.companyId, () =>
        handle({ url: req.url, method: req.method, headers: req.headers, body, raw: req, context: { res } }),
      );
    } catch (e) {
      if (!(e instanceof CompanyBusyError)) throw e;
      res.setHeader('Retry-After', '1');
      return sendGraphqlError(
        res,
        429,
        'TOO_MANY_REQUESTS',
        `too many GraphQL requests of this company at once (${e.limits.running} running and ${e.limits.queued} waiting); retry later`,
      );
    }
    const [out, init] = answer;
    if (res.headersSent) return; // the request deadline answered first
    let status = init.status;
    // every error is "store unavailable" (or "this company's store share is full") and nothing resolved: say so
    // at the HTTP level too
    for (const [code, httpStatus, retryAfter] of WHOLE_REQUEST_ERRORS)
      if (status === 200 && out?.includes(`"${code}"`)) {
        const r = JSON.parse(out) as { data?: unknown; errors?: { extensions?: { code?: unknown } }[] };
        if (r.data == null && r.errors?.length && r.errors.every((e) => e.extensions?.code === code)) {
          status = httpStatus;
          res.setHeader('Retry-After', String(retryAfter));
        }
      }
    res.writeHead(status, init.statusText, init.headers).end(out);
  };
}
