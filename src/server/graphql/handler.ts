import { GraphQLError } from 'graphql';
import { createHandler } from 'graphql-http/lib/use/express';
import type { RequestHandler, Request, Response } from 'express';
import type { Logger } from 'pino';
import { ServiceError, ValidationErrors } from '../../service/errors.js';
import { buildApiSchema } from './schema.js';
import { rootValue } from './resolvers.js';

/** Maps any error to a GraphQL error with `extensions.code`; unexpected errors are logged and masked. */
export function formatError(err: Readonly<GraphQLError | Error>, log?: Logger): GraphQLError {
  const ge = err instanceof GraphQLError ? err : new GraphQLError(err.message, { originalError: err });
  const orig = ge.originalError;
  if (orig instanceof ValidationErrors) {
    const first = orig.errors[0];
    return new GraphQLError(orig.message, {
      nodes: ge.nodes ?? null,
      path: ge.path ?? null,
      extensions: { code: 'BAD_USER_INPUT', ...(first?.field ? { field: first.field } : {}), errors: orig.errors },
    });
  }
  if (orig instanceof ServiceError) {
    return new GraphQLError(orig.message, {
      nodes: ge.nodes ?? null,
      path: ge.path ?? null,
      extensions: { code: orig.code, ...(orig.field ? { field: orig.field } : {}), ...(orig.details ?? {}) },
    });
  }
  if (orig instanceof GraphQLError && orig.extensions.code) {
    return new GraphQLError(ge.message, { nodes: ge.nodes ?? null, path: ge.path ?? null, extensions: { ...orig.extensions } });
  }
  if (ge.extensions.code) return ge;
  if (!ge.path) {
    // request-level: parse, validation, variable coercion
    return new GraphQLError(ge.message, { nodes: ge.nodes ?? null, extensions: { code: orig ? 'BAD_USER_INPUT' : 'GRAPHQL_VALIDATION_FAILED' } });
  }
  log?.error({ err: orig ?? ge }, 'graphql resolver failed');
  return new GraphQLError('internal error', { nodes: ge.nodes ?? null, path: ge.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } });
}

export function graphqlHandler(logger: Logger): RequestHandler {
  const handler = createHandler<Record<PropertyKey, unknown>>({
    schema: buildApiSchema(),
    rootValue,
    context: (req) => (req.context as { res: Response }).res.locals.ctx as unknown as Record<PropertyKey, unknown>,
    formatError: (e) => formatError(e, logger),
  });
  return (req: Request, res: Response, next) => {
    const op = (req.body as { operationName?: unknown } | undefined)?.operationName;
    if (typeof op === 'string') res.locals.log = res.locals.log.child({ operationName: op.slice(0, 100) });
    return handler(req, res, next);
  };
}
