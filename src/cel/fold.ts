/**
 * Compile-time evaluation of the parts of a filter that use only literals (`1 / 0 == 0`, `int('x')`,
 * `uint(-1)`, `[1][1]`): such a part gives the same result for every event, so when it fails the filter can
 * never do what its author meant. It is rejected with the position of the failing part instead of failing
 * (silently, as a warning) on every event.
 *
 * Only maximal literal-only subtrees are evaluated, with the same engine as at run time; `false && 1 / 0 == 0`
 * evaluates to false and is kept, like CEL's short-circuit keeps it at run time.
 */
import { isCelError, plan, type CelEnv, type CelError, type parse } from '@bufbuild/cel';
import { childrenOf, type Node, type SourceTree } from './ast.js';
import { FilterCompileError } from './errors.js';
import { safeEvalReason } from './eval-error.js';
import { TYPE_NAMES } from './functions.js';
import { memberNameOffset, skipWhitespace } from './position.js';

type ParsedExpr = ReturnType<typeof parse>;
type Expr = ParsedExpr['expr'];

/** Throws FilterCompileError for the first literal-only part that fails to evaluate. */
export function foldLiterals(tree: SourceTree, parsed: ParsedExpr, source: string, env: CelEnv): void {
  let exprs: Map<bigint, Expr> | undefined;
  const closed = new Set<Node>();
  const fails = (node: Node): CelError | undefined => {
    if (node.kind === 'literal' || node.kind === 'ident') return undefined;
    exprs ??= indexExprs(parsed.expr);
    const expr = exprs.get(node.id);
    const result = expr && plan(env, expr)();
    return isCelError(result) ? result : undefined;
  };
  /** The innermost failing literal-only part under a failing one (the engine does not always say where). */
  const blame = (node: Node, err: CelError): never => {
    for (const child of childrenOf(node)) {
      const e = closed.has(child) ? fails(child) : undefined;
      if (e) return blame(child, e);
    }
    // operators are positioned at the blank before them, methods at their `.`
    const offset =
      node.kind === 'call' && node.target !== undefined ? memberNameOffset(source, node.offset) : skipWhitespace(source, node.offset);
    throw FilterCompileError.at(
      source,
      offset,
      `${safeEvalReason(err)}: this part of the filter uses only literals and fails for every event`,
    );
  };
  const check = (node: Node): void => {
    const err = fails(node);
    if (err) blame(node, err);
  };
  /** The free variables of `node` (`enclosing`: loop variables bound around it); checks its maximal closed parts. */
  const freeVars = (node: Node, enclosing: ReadonlySet<string>): Set<string> => {
    if (node.kind === 'ident') {
      return enclosing.has(node.name) || !TYPE_NAMES.has(node.name) ? new Set([node.name]) : new Set();
    }
    const parts: { child: Node; free: Set<string> }[] = [];
    const variable = node.kind === 'call' && node.macro && node.args[0]?.kind === 'ident' ? node.args[0] : undefined;
    if (node.kind === 'call' && variable) {
      if (node.target) parts.push({ child: node.target, free: freeVars(node.target, enclosing) });
      const inner = new Set(enclosing).add(variable.name);
      // a body that reads the loop variable is not closed on its own, but the macro may be
      for (const body of node.args.slice(1)) parts.push({ child: body, free: freeVars(body, inner) });
    } else {
      for (const child of childrenOf(node)) parts.push({ child, free: freeVars(child, enclosing) });
    }
    const range = node.kind === 'call' ? node.target : undefined;
    const free = new Set<string>();
    for (const p of parts) for (const name of p.free) if (!variable || p.child === range || name !== variable.name) free.add(name);
    if (free.size === 0) closed.add(node);
    if (free.size > 0) {
      // this node reads the event: its closed children are maximal literal-only parts
      for (const p of parts) if (p.free.size === 0) check(p.child);
    }
    return free;
  };
  if (freeVars(tree.root, new Set()).size === 0) check(tree.root);
}

/** Every expression of the parsed tree (including inside macro expansions) by id. */
function indexExprs(root: Expr | undefined): Map<bigint, Expr> {
  const out = new Map<bigint, Expr>();
  const stack: (Expr | undefined)[] = [root];
  while (stack.length > 0) {
    const e = stack.pop();
    if (!e) continue;
    out.set(e.id, e);
    const k = e.exprKind;
    switch (k.case) {
      case 'selectExpr':
        stack.push(k.value.operand);
        break;
      case 'callExpr':
        stack.push(k.value.target, ...k.value.args);
        break;
      case 'listExpr':
        stack.push(...k.value.elements);
        break;
      case 'structExpr':
        for (const entry of k.value.entries) {
          if (entry.keyKind.case === 'mapKey') stack.push(entry.keyKind.value);
          stack.push(entry.value);
        }
        break;
      case 'comprehensionExpr':
        stack.push(k.value.iterRange, k.value.accuInit, k.value.loopCondition, k.value.loopStep, k.value.result);
        break;
      default:
        break;
    }
  }
  return out;
}
