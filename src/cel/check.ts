/**
 * Compile-time checks of a parsed filter (@bufbuild/cel 0.6 exports no type checker): identifiers, `data`
 * paths against the family's field tree, the function allowlist, comprehension nesting and a coarse type
 * inference that rejects results and operands which can never be bool.
 */
import { joinFieldPath, type ObjectFieldNode } from '../events/field-tree.js';
import type { EventTypeId } from '../events/families.js';
import { startOffset, type Node } from './ast.js';
import { FilterCompileError } from './errors.js';
import { COMPREHENSION_MACROS, FUNCTION_RULES, LITERAL_CHECKED, MACROS, TYPE_NAMES, isOperator, operatorSymbol } from './functions.js';
import { memberNameOffset } from './position.js';
import { T, accepts, describeType, fromField, join, listOf, type StaticType } from './static-types.js';

export interface CheckOptions {
  source: string;
  eventTypeId: EventTypeId;
  /** Allowed `data` paths of the family. */
  dataTree: ObjectFieldNode;
  maxComprehensionDepth: number;
  /** Validates a string literal passed to `matches`, `timestamp` or `duration`; returns a reason when invalid. */
  checkLiteral: (fn: string, value: string) => string | undefined;
}

type Scope = ReadonlyMap<string, StaticType>;

/** Throws FilterCompileError for the first problem found. */
export function checkFilterTree(root: Node, options: CheckOptions): void {
  const checker = new Checker(options);
  const result = checker.typeOf(root, new Map(), 0);
  if (!accepts(['bool'], result)) {
    checker.fail(startOffset(root), `a filter must evaluate to a bool, but this expression yields ${describeType(result)}`);
  }
}

class Checker {
  private readonly data: StaticType;

  constructor(private readonly o: CheckOptions) {
    this.data = { kind: 'object', path: '', node: o.dataTree };
  }

  fail(offset: number, reason: string): never {
    throw FilterCompileError.at(this.o.source, offset, reason);
  }

  typeOf(node: Node, scope: Scope, depth: number): StaticType {
    switch (node.kind) {
      case 'literal':
        return T[node.literal.type];
      case 'ident':
        return this.ident(node, scope);
      case 'select':
        return this.member(this.typeOf(node.operand, scope, depth), node.field, this.nameOffset(node.offset));
      case 'list': {
        const elems = node.elements.map((e) => this.typeOf(e, scope, depth));
        return listOf(elems.reduce<StaticType | undefined>((a, b) => (a ? join(a, b) : b), undefined) ?? T.dyn);
      }
      case 'map':
        for (const { key, value } of node.entries) {
          this.typeOf(key, scope, depth);
          this.typeOf(value, scope, depth);
        }
        return T.map;
      case 'message':
        return this.fail(node.offset, `message construction (${node.name}{...}) is not allowed`);
      case 'call':
        if (node.macro) return this.macro(node, scope, depth);
        if (node.fn === '_[_]') return this.index(node, scope, depth);
        return this.call(node, scope, depth);
    }
  }

  private ident(node: Node & { kind: 'ident' }, scope: Scope): StaticType {
    const bound = scope.get(node.name);
    if (bound) return bound;
    if (node.name === 'type') return T.string;
    if (node.name === 'data') return this.data;
    if (TYPE_NAMES.has(node.name)) return T.type;
    return this.fail(node.offset, `unknown identifier '${node.name}'; filters can use 'type' and 'data'`);
  }

  /** `operand.field` (or `operand['field']`): schema objects only have their own fields. */
  private member(operand: StaticType, field: string, offset: number): StaticType {
    switch (operand.kind) {
      case 'object': {
        const path = joinFieldPath(operand.path, field);
        const child = operand.node.fields.get(field);
        if (!child) return this.fail(offset, `event data of ${this.o.eventTypeId} has no field '${path}'`);
        return fromField(child, path);
      }
      case 'map':
      case 'dyn':
        return T.dyn;
      default:
        return this.fail(offset, `cannot select field '${field}' of a ${describeType(operand)}`);
    }
  }

  private index(node: Node & { kind: 'call' }, scope: Scope, depth: number): StaticType {
    const [operandNode, keyNode] = node.args;
    if (!operandNode || !keyNode) return this.fail(node.offset, 'malformed index expression');
    const operand = this.typeOf(operandNode, scope, depth);
    if (operand.kind === 'object') {
      if (keyNode.kind !== 'literal' || keyNode.literal.type !== 'string') {
        return this.fail(startOffset(keyNode), `fields of ${describeType(operand)} must be named by a string literal`);
      }
      return this.member(operand, keyNode.literal.value, keyNode.offset);
    }
    const key = this.typeOf(keyNode, scope, depth);
    if (operand.kind === 'list') {
      if (!accepts(['int', 'uint', 'double'], key)) {
        this.fail(startOffset(keyNode), `a list index must be a number, not ${describeType(key)}`);
      }
      return operand.elem;
    }
    if (operand.kind === 'map' || operand.kind === 'dyn') return T.dyn;
    return this.fail(node.offset, `cannot index a ${describeType(operand)}`);
  }

  private call(node: Node & { kind: 'call' }, scope: Scope, depth: number): StaticType {
    const name = isOperator(node.fn) ? `'${operatorSymbol(node.fn)}'` : `'${node.fn}'`;
    const at = this.nameOffset(node.offset);
    if (MACROS.has(node.fn)) return this.fail(at, `invalid use of the ${name} macro`);
    const rule = Object.hasOwn(FUNCTION_RULES, node.fn) ? FUNCTION_RULES[node.fn] : undefined;
    if (!rule) return this.fail(at, `function ${name} is not allowed in filters`);
    const isMethod = node.target !== undefined;
    const arities = isMethod ? rule.method : rule.global;
    if (!arities) {
      return this.fail(
        at,
        isMethod ? `${name} cannot be called as a method` : `${name} must be called as a method, e.g. x.${node.fn}(...)`,
      );
    }
    if (!arities.includes(node.args.length)) {
      return this.fail(at, `${name} takes ${arities.join(' or ')} argument(s), not ${node.args.length}`);
    }
    const operands = node.target ? [node.target, ...node.args] : node.args;
    const types = operands.map((n) => this.typeOf(n, scope, depth));
    types.forEach((t, i) => {
      const allowed = i === 0 ? rule.subject : rule.rest;
      if (allowed && !accepts(allowed, t)) {
        const what = isOperator(node.fn) ? `operand of ${name}` : i === 0 && isMethod ? `receiver of ${name}` : `argument of ${name}`;
        this.fail(operands[i] ? startOffset(operands[i]) : at, `${what} must be ${allowed.join(' or ')}, not ${describeType(t)}`);
      }
    });
    if (LITERAL_CHECKED.has(node.fn)) this.checkLiteralArgument(node.fn, operands[operands.length - 1]);
    const result = rule.result(types);
    return typeof result === 'string' ? this.fail(at, result) : result;
  }

  private checkLiteralArgument(fn: string, arg: Node | undefined): void {
    if (arg?.kind !== 'literal' || arg.literal.type !== 'string') return;
    const problem = this.o.checkLiteral(fn, arg.literal.value);
    if (problem) this.fail(arg.offset, problem);
  }

  private macro(node: Node & { kind: 'call' }, scope: Scope, depth: number): StaticType {
    const at = this.nameOffset(node.offset);
    if (node.fn === 'has') {
      const [field] = node.args;
      if (field?.kind !== 'select') return this.fail(at, 'has() needs a field selection, e.g. has(data.resourceId)');
      this.typeOf(field, scope, depth);
      return T.bool;
    }
    if (!COMPREHENSION_MACROS.has(node.fn) || !node.target) return this.fail(at, `macro '${node.fn}' is not allowed in filters`);
    const [variable, ...body] = node.args;
    if (variable?.kind !== 'ident' || body.length === 0) return this.fail(at, `invalid use of the '${node.fn}' macro`);
    if (depth + 1 > this.o.maxComprehensionDepth) {
      return this.fail(
        at,
        `comprehensions (${[...COMPREHENSION_MACROS].join(', ')}) may be nested at most ${this.o.maxComprehensionDepth} deep`,
      );
    }
    const elem = this.elementType(this.typeOf(node.target, scope, depth), startOffset(node.target));
    const inner = new Map(scope).set(variable.name, elem);
    const bodyTypes = body.map((b) => this.typeOf(b, inner, depth + 1));
    const predicates = node.fn === 'map' ? body.slice(0, -1) : body;
    predicates.forEach((p, i) => {
      const t = bodyTypes[i] ?? T.dyn;
      if (!accepts(['bool'], t)) this.fail(startOffset(p), `the condition of '${node.fn}' must be a bool, not ${describeType(t)}`);
    });
    if (node.fn === 'map') return listOf(bodyTypes[bodyTypes.length - 1] ?? T.dyn);
    if (node.fn === 'filter') return listOf(elem);
    return T.bool;
  }

  private elementType(range: StaticType, offset: number): StaticType {
    switch (range.kind) {
      case 'list':
        return range.elem;
      case 'object':
        return T.string;
      case 'map':
      case 'dyn':
        return T.dyn;
      default:
        return this.fail(offset, `cannot iterate over a ${describeType(range)}`);
    }
  }

  private nameOffset(offset: number): number {
    return memberNameOffset(this.o.source, offset);
  }
}
