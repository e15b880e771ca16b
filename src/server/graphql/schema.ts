import { readFileSync } from 'node:fs';
import { GraphQLError, GraphQLScalarType, Kind, buildSchema, valueFromASTUntyped, type GraphQLSchema } from 'graphql';
import { UUID_RE } from '../../service/validate.js';

export const SDL = readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8');

function parseUuid(v: unknown): string {
  if (typeof v !== 'string' || !UUID_RE.test(v))
    throw new GraphQLError(`UUID cannot represent ${JSON.stringify(v)}: expected a UUID like 123e4567-e89b-12d3-a456-426614174000`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  return v.toLowerCase();
}

/** Builds the executable schema: SDL plus the UUID scalar's parsing. */
export function buildApiSchema(): GraphQLSchema {
  const schema = buildSchema(SDL);
  const uuid = schema.getType('UUID') as GraphQLScalarType;
  uuid.parseValue = parseUuid;
  uuid.serialize = (v: unknown) => String(v);
  uuid.parseLiteral = (ast) => {
    if (ast.kind !== Kind.STRING)
      throw new GraphQLError(`UUID cannot represent a non-string literal`, { extensions: { code: 'BAD_USER_INPUT' } });
    return parseUuid(ast.value);
  };
  const json = schema.getType('JSON') as GraphQLScalarType;
  json.parseValue = (v: unknown) => v;
  json.serialize = (v: unknown) => v;
  json.parseLiteral = (ast, variables) => valueFromASTUntyped(ast, variables);
  return schema;
}
