/**
 * Short, safe descriptions of evaluation failures. @bufbuild/cel messages can quote runtime values
 * ("Cannot convert SECRETVAL to a BigInt", "field not found: <map key>"), and event data may carry sensitive
 * text, so only known-safe messages pass through and everything else maps to a fixed phrase. A name quoted
 * in our output always comes from the expression, never from the event.
 */
import type { CelError } from '@bufbuild/cel';
import type { Node, SourceTree } from './ast.js';
import { memberNameOffset, positionAt } from './position.js';

const SAFE_OVERLOAD = /^found no matching overload for '[^'\s]{1,40}' applied to '[\w.(), ]{0,120}'$/;
const FIELD_NOT_FOUND = /^field not found: ([\s\S]*)$/;

const PHRASES: readonly [RegExp, string][] = [
  [/out of bounds/i, 'list index out of bounds'],
  [/divide by zero|division by zero/i, 'division by zero'],
  [/modulus by zero|modulo by zero/i, 'modulus by zero'],
  [/overflow/i, 'numeric overflow'],
  [/regexp|regular expression/i, 'invalid regular expression'],
  [/timestamp/i, 'invalid timestamp'],
  [/duration/i, 'invalid duration'],
  [/convert|conversion/i, 'type conversion failed'],
  [/type mismatch|iterable/i, 'type mismatch'],
];

export function describeEvalError(err: CelError, tree: SourceTree, source: string): string {
  const id = err.exprId;
  const node = id === undefined ? undefined : tree.nodes.get(id);
  const offset = id === undefined ? undefined : tree.offsets.get(id);
  const missing = FIELD_NOT_FOUND.exec(err.message);
  if (missing) {
    const access = node && findAccess(tree, node, missing[1] ?? '', source);
    if (access) return format(source, access.offset, `event data has no '${access.key}'`);
    return format(source, offset, 'no such field or key');
  }
  if (SAFE_OVERLOAD.test(err.message)) return format(source, offset, err.message.replace(/^found /, ''));
  const phrase = PHRASES.find(([pattern]) => pattern.test(err.message))?.[1] ?? 'evaluation failed';
  return format(source, offset, phrase);
}

function format(source: string, offset: number | undefined, reason: string): string {
  if (offset === undefined) return `evaluation error: ${reason}`;
  const { line, column } = positionAt(source, offset);
  return `evaluation error at ${line}:${column}: ${reason}`;
}

interface Access {
  key: string;
  offset: number;
}

/**
 * The member access of the expression that names `key` and failed. @bufbuild/cel reports a missing key of an
 * attribute chain such as `data.SANs['DNS Names']` at the chain's root identifier, so for an identifier the
 * chains rooted at it are searched. Only keys written in the expression can match.
 */
function findAccess(tree: SourceTree, failed: Node, key: string, source: string): Access | undefined {
  const candidates = failed.kind === 'ident' ? [...tree.nodes.values()].filter((n) => chainRoot(n) === failed) : [failed];
  for (const n of candidates.sort((a, b) => a.offset - b.offset)) {
    const access = memberAccess(n, source);
    if (access?.key === key) return access;
  }
  return undefined;
}

function memberAccess(n: Node, source: string): Access | undefined {
  if (n.kind === 'select') return { key: n.field, offset: memberNameOffset(source, n.offset) };
  const key = n.kind === 'call' && n.fn === '_[_]' && !n.macro ? n.args[1] : undefined;
  if (key?.kind === 'literal' && key.literal.type === 'string') return { key: key.literal.value, offset: key.offset };
  return undefined;
}

function chainRoot(n: Node): Node | undefined {
  let current: Node | undefined = n;
  while (current) {
    if (current.kind === 'ident') return current === n ? undefined : current;
    if (current.kind === 'select') current = current.operand;
    else if (current.kind === 'call' && current.fn === '_[_]' && !current.macro) current = current.args[0];
    else return undefined;
  }
  return undefined;
}

/** The safe phrase for an evaluation error, without position (for compile-time folding). */
export function safeEvalReason(err: CelError): string {
  if (SAFE_OVERLOAD.test(err.message)) return err.message.replace(/^found /, '');
  return PHRASES.find(([pattern]) => pattern.test(err.message))?.[1] ?? 'evaluation failed';
}
