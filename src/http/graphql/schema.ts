import { readFileSync } from 'node:fs';
import { GraphQLError, GraphQLScalarType, Kind, buildSchema, valueFromASTUntyped, type GraphQLSchema } from 'graphql';
import { uuidProblem } from '../../validation/formats.js';

export const SDL = readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8');

function parseUuid(v: unknown): string {
  const problem = typeof v === 'string' ? uuidProblem(v) : 'must be a string';
  if (typeof v !== 'string' || problem)
    throw new GraphQLError(`UUID cannot represent ${JSON.stringify(v)}: ${problem}`, {
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
