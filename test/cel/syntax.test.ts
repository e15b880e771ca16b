import { parse } from '@bufbuild/cel';
import { describe, expect, it } from 'vitest';
import { findSyntaxProblem } from '../../src/cel/syntax.js';
import { positionAt } from '../../src/cel/position.js';

/** Valid CEL the diagnosis must never flag (it must be at least as permissive as the real parser). */
const VALID = [
  "type.endsWith('.notready')",
  "type.endsWith('.notready') && (data.clusterId == 'a' || data.clusterId == 'b')",
  "data.SANs['DNS Names'].exists(n, n.endsWith('.example.com'))",
  '!has(data.resourceId) || -data.ruleId < -1.5e3',
  "data.ruleId in [1, 2, 3,] && {'a': 1, 'b': 2,}['a'] == 1",
  'data.x ? data.y : data.z ? 1 : 2',
  'r"raw \\d+" == R\'x\' && b"bytes" != B\'\' && br\'\\x\' == br"y"',
  "'''triple\n'quoted''' + \"\"\"and \"double\" \"\"\" == ''",
  "'escapes \\n \\t \\\\ \\' \\x41 \\u00e9 \\U0001F600 \\101' != ''",
  '0x1F == 31 && 1u == 0x1u && .5 < 1.0 && 2e10 > 1E-3',
  'google.protobuf.Duration{seconds: 1} == duration("1s")',
  '.data.clusterName == "x" // trailing comment\n',
  "// leading comment\ntype == 'x'",
  '[1, 2].map(x, x > 1, x * 2).filter(y, y % 2 == 0).size() == 1',
  '!!true && --1 == 1',
  'a.b.c(d, e)[f].g',
];

describe('syntax diagnosis agrees with @bufbuild/cel on valid expressions', () => {
  it.each(VALID)('%j', (expression) => {
    expect(() => parse(expression)).not.toThrow();
    expect(findSyntaxProblem(expression)).toBeUndefined();
  });
});

describe('syntax diagnosis finds the first bad token where @bufbuild/cel reports a misleading position', () => {
  it.each<[string, string, string, RegExp]>([
    ['type.endsWith(', '1:5', '1:15', /expected '\)' to close '\(' at 1:14/],
    ["type.endsWith('.notready') &&", '1:28', '1:30', /unexpected end of expression, expected an operand/],
    ["data.clusterName == 'prod' && data.issuerName = 'x'", '1:47', '1:47', /use '=='/],
    ['data.ruleId == 3 || ', '1:18', '1:21', /expected an operand/],
    ['[1, 2].exists(x, x > 1', '1:7', '1:23', /expected '\)' to close '\(' at 1:14/],
    ["{'a': 1", '1:8', '1:8', /expected '}' to close '{' at 1:1/],
    ['x.y.', '1:4', '1:5', /expected a field or method name/],
    ['a ? b', '1:3', '1:6', /expected ':'/],
    ['x & y', '1:3', '1:3', /use '&&'/],
    ['x # y', '1:3', '1:3', /unexpected character "#"/],
    ["'multi\nline'", '1:1', '1:1', /unterminated string/],
  ])('%j: parser says %s, we say %s', (expression, parserPosition, ours, reason) => {
    let parserError: unknown;
    try {
      parse(expression);
    } catch (e) {
      parserError = e;
    }
    expect(parserError).toBeInstanceOf(Error);
    const parserOffset = (parserError as { location: { start: { offset: number } } }).location.start.offset;
    const fmt = (offset: number) => {
      const p = positionAt(expression, offset);
      return `${p.line}:${p.column}`;
    };
    expect(fmt(parserOffset)).toBe(parserPosition);
    const problem = findSyntaxProblem(expression);
    expect(problem).toBeDefined();
    expect(fmt(problem!.offset)).toBe(ours);
    expect(problem!.reason).toMatch(reason);
  });
});

describe('positionAt', () => {
  it.each<[string, number, number, number]>([
    ['abc', 0, 1, 1],
    ['abc', 3, 1, 4],
    ['ab\ncd', 3, 2, 1],
    ['ab\ncd', 5, 2, 3],
    ['a\n\nb', 3, 3, 1],
  ])('%j @ %d → %d:%d', (source, offset, line, column) => {
    expect(positionAt(source, offset)).toEqual({ line, column });
  });
});
