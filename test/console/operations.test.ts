/**
 * Every GraphQL operation the console sends, checked against the hub's schema: a renamed field or argument fails
 * here instead of in a browser. Operations are the console's `query …` / `mutation …` template literals.
 */
import { buildSchema, parse, validate } from 'graphql';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../../src/console');
const schema = buildSchema(readFileSync(join(import.meta.dirname, '../../src/http/graphql/schema.graphql'), 'utf8'));

function operations(): [string, string][] {
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.tsx') || f.endsWith('.ts'));
  const out: [string, string][] = [];
  for (const f of files) {
    const src = readFileSync(join(root, f), 'utf8');
    for (const m of src.matchAll(/`((?:query|mutation)\s[^`]*)`/g)) {
      // the templates page builds its selection from the part names: expand that one interpolation
      const text = m[1]!.replace(/\$\{PART_KEYS[^}]*\}\)\.join\(' '\)\}/, 'default { title text body } WEBHOOK { title text body }');
      if (text.includes('${')) continue;
      out.push([`${f}: ${/^(?:query|mutation)\s+(\w+)/.exec(text)?.[1] ?? '?'}`, text]);
    }
  }
  return out;
}

describe('console GraphQL operations', () => {
  const ops = operations();
  it('finds the operations', () => expect(ops.length).toBeGreaterThan(20));
  it.each(ops)('%s is valid against schema.graphql', (_name, text) => {
    expect(validate(schema, parse(text)).map((e) => e.message)).toEqual([]);
  });
});
