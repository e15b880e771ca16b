/**
 * Checked filters compiled to plain JavaScript closures (no eval, no `new Function`), doing what
 * @bufbuild/cel 0.6.1's planned program does, for the subset filters use in practice. @bufbuild/cel stays the
 * reference: whatever is not covered here makes the whole filter run on the interpreter (`compileToJs` returns
 * undefined), and test/cel/compile-js.prop.test.ts compares both on random allowed expressions and events.
 *
 * Values are the event's own JSON values, never wrapped: string, double (number), int (bigint, literals and
 * int()), bool, null, list (array), map (plain object, from the event only). Outcomes of a closure:
 *  - a value (true/false for a well-typed filter);
 *  - ERR, a CEL error value: produced exactly where the interpreter produces an error *value*, so that `&&`,
 *    `||`, the ternary and the comprehensions absorb or propagate it as CEL does;
 *  - a thrown BAIL (or any exception): "not sure", e.g. a value the interpreter would refuse to convert (it
 *    throws, and a throw is not absorbed by `||`). Never absorbed.
 * The caller re-runs the interpreter for anything but true/false, so errors keep their reference message.
 */
import { RE2JS } from '@bufbuild/re2';
import type { Literal, Node } from './ast.js';

/** The CEL error value of a compiled closure (its message comes from re-running the interpreter). */
export const ERR: unique symbol = Symbol('cel error');

/** Thrown when the compiled code cannot be sure of the interpreter's outcome. */
class Bail {}
const BAIL = new Bail();

/**
 * A compiled node: `(data, vars) => value | ERR`, throws when unsure. Two plain arguments rather than a context
 * object, so an evaluation allocates nothing (vars: one slot per comprehension variable; unused without one).
 */
type Fn = (d: Data, v: unknown[]) => unknown;
/** Event data that passed isEventData: a plain object (a CEL map). */
type Data = Record<string, unknown>;

/**
 * The closure of a filter for one event type of its family: `(data) => value | ERR`, throws when unsure. `data`
 * must pass isEventData (the caller checks it once per evaluation, before picking the closure of the type).
 */
export type CompiledJs = (data: Data) => unknown;

class Unsupported extends Error {}

/**
 * The closures of a checked filter, one per type of `types` (the event family's, in order), or undefined when the
 * filter uses something this compiler does not cover. Each is specialised to its type: `type` is a constant there,
 * so `type.endsWith('.notready') && …` costs nothing at run time (false for the other type, dropped for this one).
 */
export function compileToJs(root: Node, types: readonly string[]): CompiledJs[] | undefined {
  try {
    // one closure for every type when the filter does not read `type`
    if (!readsType(root)) {
      const fn = compileFor(root, undefined);
      return types.map(() => fn);
    }
    return types.map((t) => compileFor(root, t));
  } catch (e) {
    if (e instanceof Unsupported) return undefined;
    throw e;
  }
}

function compileFor(root: Node, type: string | undefined): CompiledJs {
  const compiler = new Compiler(type);
  const fn = compiler.compile(root, new Map());
  if (compiler.isConstant(fn)) {
    constantClosures.add(fn as CompiledJs);
    return fn as CompiledJs;
  }
  const slots = compiler.slots;
  // only comprehensions need variable slots: otherwise the root closure is called as it is
  if (slots === 0) return fn as CompiledJs;
  return (d) => fn(d, new Array<unknown>(slots));
}

/**
 * A closure of one of the usual filter shapes, `data.f <op> literal` (the field readable as `d[f]`, see
 * plainReadable): src/cel/filter.ts fuses it into the evaluation itself (no call into the closure, no try), for
 * the values it is sure of; any other value goes through the closure.
 *  - num: `data.f == n` / `!=` with n exactly a double (an int literal within ±2^53, or a double literal): for a
 *    number v, `(v === value) !== negate` (int/double equality is numeric; NaN equals nothing);
 *  - str: `data.f == 's'` / `!=`: for a string v, `(v === value) !== negate`;
 *  - strIn: `data.f in ['a', …]`: for a string v, `values.has(v)`;
 *  - contains / startsWith / endsWith with a literal argument: for a string v, the String method;
 *  - litIn: `'s' in data.f`: for a list of strings, whether it holds `value`.
 */
export type Leaf =
  | { kind: 'num'; field: string; value: number; negate: boolean }
  | { kind: 'str'; field: string; value: string; negate: boolean }
  | { kind: 'strIn'; field: string; values: ReadonlySet<string> }
  | { kind: 'contains' | 'startsWith' | 'endsWith'; field: string; value: string }
  | { kind: 'litIn'; field: string; value: string };

const leaves = new WeakMap<Fn, Leaf>();

/** The shape of a filter's closure when it is one of the fused leaves (see Leaf), else undefined. */
export function leafOf(fn: CompiledJs): Leaf | undefined {
  return leaves.get(fn as Fn);
}

function leaf(fn: Fn, shape: Leaf): Fn {
  leaves.set(fn, shape);
  return fn;
}

/** Closures whose value does not depend on the event's data (a filter settled by `type` alone, or by literals). */
const constantClosures = new WeakSet<CompiledJs>();

/**
 * The value of a closure that reads no data (e.g. `type.endsWith('.notready') && …` for the other type), else
 * undefined. The interpreter binds `data` lazily and short-circuits like the closures, so for such a closure it does
 * not read the data either: the value holds for any data, even data that isEventData refuses.
 */
export function constantValue(fn: CompiledJs): unknown {
  return constantClosures.has(fn) ? fn({}) : undefined;
}

/**
 * Whether the event's data is what the interpreter reads as a map and the compiled closures expect: a plain object
 * (a validated event's always is). Anything else (null, a list, a class instance) is left to the interpreter.
 */
export function isEventData(d: unknown): d is Data {
  return typeof d === 'object' && d !== null && protoOf(d) === Object.prototype;
}

/**
 * An object's prototype, read through Object.prototype's `__proto__` accessor: V8 inlines it, whereas
 * Object.getPrototypeOf is a call into C++ (costlier than a whole hand-written predicate). An
 * own `__proto__` key (JSON.parse makes one) hides the accessor: the answer is then not Object.prototype, so such
 * data goes to the interpreter, the safe side. Only JavaScript code defining `__proto__` on a prototype could
 * make it lie; event data is JSON.
 */
function protoOf(o: object): unknown {
  return (o as { __proto__?: unknown }).__proto__;
}

function readsType(node: Node): boolean {
  switch (node.kind) {
    case 'ident':
      return node.name === 'type';
    case 'select':
      return readsType(node.operand);
    case 'list':
      return node.elements.some(readsType);
    case 'call':
      return (node.target !== undefined && readsType(node.target)) || node.args.some(readsType);
    default:
      return false;
  }
}

/**
 * Whether a field can be read as `o[name]`: on a plain object (all the maps here), a name that is not a property of
 * Object.prototype reads the object's own property or undefined, as Object.hasOwn would tell. (Assumes nobody adds
 * properties to Object.prototype at run time, which would break far more than this.)
 */
const plainReadable = (name: string): boolean => !(name in Object.prototype);

const NO_VARS: unknown[] = [];
/** 2^53: every integer up to it is exactly a double. */
const MAX_EXACT = 9007199254740992n;
const MAX_INT = 9223372036854775807n;
const MIN_INT = -9223372036854775808n;

type Scope = ReadonlyMap<string, number>;

class Compiler {
  slots = 0;
  /** Closures of the parts that do not depend on the event's data (their value, computed once here). */
  private readonly constants = new Map<Fn, unknown>();
  /** Closures that give only true, false or ERR (or throw): a junction of one of them needs no bool check. */
  private readonly bools = new Set<Fn>();

  /** type: the event type this closure is for (`type` is a constant), undefined when the filter does not read it. */
  constructor(private readonly type: string | undefined) {}

  compile(node: Node, scope: Scope): Fn {
    const fn = this.compileNode(node, scope);
    if (this.constants.has(fn) || !this.closed(node, scope)) return fn;
    // a part without data or loop variables: evaluate it once, now (it is pure); unsure stays to run time
    let value: unknown;
    try {
      value = fn({}, NO_VARS);
    } catch {
      return fn;
    }
    const c = this.constant(value);
    if (typeof value === 'boolean' || value === ERR) this.bools.add(c);
    return c;
  }

  isConstant(fn: Fn): boolean {
    return this.constants.has(fn);
  }

  private constant(value: unknown): Fn {
    const fn: Fn = () => value;
    this.constants.set(fn, value);
    return fn;
  }

  private bool(fn: Fn): Fn {
    this.bools.add(fn);
    return fn;
  }

  /** Whether the node's value is the same for every event (no data, no loop variable, no macro). */
  private closed(node: Node, scope: Scope): boolean {
    switch (node.kind) {
      case 'literal':
        return true;
      case 'ident':
        return node.name === 'type' && !scope.has('type') && this.type !== undefined;
      case 'select':
        return this.closed(node.operand, scope);
      case 'list':
        return node.elements.every((e) => this.closed(e, scope));
      case 'call':
        return (
          !node.macro && (node.target === undefined || this.closed(node.target, scope)) && node.args.every((a) => this.closed(a, scope))
        );
      default:
        return false;
    }
  }

  /** The field name of `data.name` (data not shadowed) when it can be read directly. */
  private dataField(node: Node | undefined, scope: Scope): string | undefined {
    if (node?.kind !== 'select' || node.operand.kind !== 'ident' || node.operand.name !== 'data' || scope.has('data')) return undefined;
    return plainReadable(node.field) ? node.field : undefined;
  }

  private compileNode(node: Node, scope: Scope): Fn {
    switch (node.kind) {
      case 'literal':
        return this.constant(literal(node.literal));
      case 'ident':
        return this.ident(node.name, scope);
      case 'select': {
        const field = node.field;
        const direct = this.dataField(node, scope);
        // `data.field`, the usual filter: a direct read of the checked data
        if (direct !== undefined) return (d) => checkedField(d[direct]);
        if (node.operand.kind === 'ident' && node.operand.name === 'data' && !scope.has('data')) return (d) => select(d, field);
        const operand = this.compile(node.operand, scope);
        if (plainReadable(field)) return (d, v) => selectPlain(operand(d, v), field);
        return (d, v) => select(operand(d, v), field);
      }
      case 'list': {
        if (node.elements.every((e) => e.kind === 'literal')) {
          // never mutated: list results are always fresh arrays
          return this.constant(node.elements.map((e) => literal((e as Node & { kind: 'literal' }).literal)));
        }
        const elements = node.elements.map((e) => this.compile(e, scope));
        return (d, v) => {
          const out: unknown[] = [];
          for (const e of elements) {
            const x = e(d, v);
            if (x === ERR) return ERR;
            out.push(x);
          }
          return out;
        };
      }
      case 'call':
        return node.macro ? this.macro(node, scope) : this.call(node, scope);
      default:
        throw new Unsupported();
    }
  }

  private ident(name: string, scope: Scope): Fn {
    const slot = scope.get(name);
    if (slot !== undefined) return (_d, v) => v[slot];
    if (name === 'type') {
      if (this.type === undefined) throw new Error('compiled without the event type');
      return this.constant(this.type);
    }
    if (name === 'data') return (d) => d;
    // type names (`int`, `string`, ...) are type values: not represented here
    throw new Unsupported();
  }

  private call(node: Node & { kind: 'call' }, scope: Scope): Fn {
    const operands = node.target ? [node.target, ...node.args] : node.args;
    switch (node.fn) {
      case '_&&_':
        return this.junction(
          operands.map((o) => this.compile(o, scope)),
          false,
        );
      case '_||_':
        return this.junction(
          operands.map((o) => this.compile(o, scope)),
          true,
        );
      case '_?_:_': {
        const [cond, t, f] = this.all(operands, scope, 3) as [Fn, Fn, Fn];
        if (this.constants.has(cond)) {
          const v = this.constants.get(cond);
          return v === true ? t : v === false ? f : this.constant(ERR);
        }
        return (d, vars) => {
          const v = cond(d, vars);
          return v === true ? t(d, vars) : v === false ? f(d, vars) : ERR;
        };
      }
      case '_[_]': {
        const [operand, key] = this.all(operands, scope, 2) as [Fn, Fn];
        return (d, v) => {
          const o = operand(d, v);
          if (o === ERR) return ERR;
          const k = key(d, v);
          return k === ERR ? ERR : index(o, k);
        };
      }
      case '_==_':
      case '_!=_':
        return this.bool(this.equality(node.fn === '_!=_', operands, scope));
      case '_<_':
        return this.bool(binary(this.all(operands, scope, 2), (x, y) => relate(x, y, lt)));
      case '_<=_':
        return this.bool(binary(this.all(operands, scope, 2), (x, y) => relate(x, y, le)));
      case '_>_':
        return this.bool(binary(this.all(operands, scope, 2), (x, y) => relate(x, y, gt)));
      case '_>=_':
        return this.bool(binary(this.all(operands, scope, 2), (x, y) => relate(x, y, ge)));
      case '@in':
        return this.bool(this.membership(operands, scope));
      case '!_':
        return this.bool(unary(this.all(operands, scope, 1), (x) => (typeof x === 'boolean' ? !x : ERR)));
      case '-_':
        return unary(this.all(operands, scope, 1), negate);
      case '_+_':
        return binary(this.all(operands, scope, 2), add);
      case '_-_':
        return binary(this.all(operands, scope, 2), (x, y) =>
          numeric(
            x,
            y,
            (a, b) => a - b,
            (a, b) => a - b,
          ),
        );
      case '_*_':
        return binary(this.all(operands, scope, 2), (x, y) =>
          numeric(
            x,
            y,
            (a, b) => a * b,
            (a, b) => a * b,
          ),
        );
      case '_/_':
        return binary(this.all(operands, scope, 2), divide);
      case '_%_':
        return binary(this.all(operands, scope, 2), modulo);
      case 'size':
        return unary(this.all(operands, scope, 1), size);
      case 'contains':
      case 'startsWith':
      case 'endsWith':
        return this.bool(this.stringMethod(node.fn, operands, scope));
      case 'matches':
        return this.bool(this.matches(operands, scope));
      case 'int':
        return unary(this.all(operands, scope, 1), toInt);
      case 'double':
        return unary(this.all(operands, scope, 1), toDouble);
      case 'string':
        return unary(this.all(operands, scope, 1), toStr);
      case 'bool':
        return unary(this.all(operands, scope, 1), toBool);
      case 'dyn':
        return unary(this.all(operands, scope, 1), (x) => x);
      default:
        // uint, type, timestamp, duration and their getters: values not represented here
        throw new Unsupported();
    }
  }

  private all(nodes: readonly Node[], scope: Scope, n: number): Fn[] {
    if (nodes.length !== n) throw new Unsupported();
    return nodes.map((o) => this.compile(o, scope));
  }

  /**
   * `&&` (decisive = false) and `||` (decisive = true) with CEL's error absorption: any operand equal to `decisive`
   * decides, whatever the others are (errors included); otherwise an error or non-bool operand makes an error.
   * Constant operands are settled here: a decisive one ends the junction (the operands before it still run, for
   * their "unsure"), the others drop out.
   */
  private junction(all: Fn[], decisive: boolean): Fn {
    const fns: Fn[] = [];
    for (const f of all) {
      if (!this.constants.has(f)) fns.push(f);
      else if (this.constants.get(f) === decisive) {
        if (fns.length === 0) return this.constant(decisive);
        fns.push(f);
        break;
      } else if (this.constants.get(f) !== !decisive) fns.push(f);
    }
    const [a, b] = fns;
    if (a === undefined) return this.constant(!decisive);
    if (fns.length === 1) return this.bools.has(a) ? a : this.bool(asBool(a));
    if (fns.length === 2 && b) return this.bool(decisive ? or2(a, b) : and2(a, b));
    return this.bool(
      decisive
        ? (d, v) => {
            let failed = false;
            for (const f of fns) {
              const x = f(d, v);
              if (x === true) return true;
              if (x !== false) failed = true;
            }
            return failed ? ERR : false;
          }
        : (d, v) => {
            let failed = false;
            for (const f of fns) {
              const x = f(d, v);
              if (x === false) return false;
              if (x !== true) failed = true;
            }
            return failed ? ERR : true;
          },
    );
  }

  private equality(negate: boolean, operands: readonly Node[], scope: Scope): Fn {
    const [a, b] = operands;
    if (operands.length !== 2 || !a || !b) throw new Unsupported();
    // the spec patterns: `data.field == 'literal'`, `data.field == 3`
    if (b.kind === 'literal' && b.literal.type === 'string') {
      const s = b.literal.value;
      const field = this.dataField(a, scope);
      if (field !== undefined) {
        const fn: Fn = negate
          ? (d) => {
              const v = d[field];
              return typeof v === 'string' ? v !== s : strNe(checkedField(v), s);
            }
          : (d) => {
              const v = d[field];
              return typeof v === 'string' ? v === s : strEq(checkedField(v), s);
            };
        return leaf(fn, { kind: 'str', field, value: s, negate });
      }
      const lhs = this.compile(a, scope);
      return negate ? (d, v) => strNe(lhs(d, v), s) : (d, v) => strEq(lhs(d, v), s);
    }
    if (b.kind === 'literal' && (b.literal.type === 'int' || b.literal.type === 'double')) {
      const n = b.literal.value;
      const field = this.dataField(a, scope);
      // `number == bigint` is a slow runtime call in V8: compare as a double when the literal is exactly one
      const x = typeof n === 'bigint' ? (n >= -MAX_EXACT && n <= MAX_EXACT ? Number(n) : undefined) : n;
      if (x !== undefined && field !== undefined) {
        const fn: Fn = negate
          ? (d) => {
              const v = d[field];
              return typeof v === 'number' ? v !== x : numNe(checkedField(v), n);
            }
          : (d) => {
              const v = d[field];
              return typeof v === 'number' ? v === x : numEq(checkedField(v), n);
            };
        return leaf(fn, { kind: 'num', field, value: x, negate });
      }
      const lhs = this.compile(a, scope);
      return negate ? (d, v) => numNe(lhs(d, v), n) : (d, v) => numEq(lhs(d, v), n);
    }
    return binary(this.all(operands, scope, 2), negate ? (x, y) => !equals(x, y) : equals);
  }

  private membership(operands: readonly Node[], scope: Scope): Fn {
    const [a, b] = operands;
    if (operands.length !== 2 || !a || !b) throw new Unsupported();
    if (b.kind === 'list' && b.elements.length > 0 && b.elements.every((e) => e.kind === 'literal' && e.literal.type === 'string')) {
      const set = new Set(b.elements.map((e) => (e as { literal: { value: string } }).literal.value));
      const field = this.dataField(a, scope);
      // a string is only equal to a string; anything else is in no list of strings
      if (field !== undefined) {
        const fn: Fn = (d) => {
          const v = d[field];
          return typeof v === 'string' ? set.has(v) : checkedField(v) === ERR ? ERR : false;
        };
        return leaf(fn, { kind: 'strIn', field, values: set });
      }
      const lhs = this.compile(a, scope);
      return (d, vars) => {
        const v = lhs(d, vars);
        return v === ERR ? ERR : typeof v === 'string' && set.has(v);
      };
    }
    if (a.kind === 'literal' && a.literal.type === 'string') {
      const lit = a.literal.value;
      const field = this.dataField(b, scope);
      const rhs = field === undefined ? this.compile(b, scope) : undefined;
      const fn: Fn = (d, vars) => {
        const l = rhs === undefined ? d[field as string] : rhs(d, vars);
        if (!Array.isArray(l)) return l === ERR ? ERR : inOp(lit, rhs === undefined ? checkedField(l) : l);
        // a string equals only the same string; the others are converted in order, as the interpreter does
        for (const e of l as unknown[]) {
          if (e === lit) return true;
          if (typeof e !== 'string') checked(e);
        }
        return false;
      };
      return field === undefined ? fn : leaf(fn, { kind: 'litIn', field, value: lit });
    }
    return binary(this.all(operands, scope, 2), inOp);
  }

  private stringMethod(fn: 'contains' | 'startsWith' | 'endsWith', operands: readonly Node[], scope: Scope): Fn {
    const lit = operands[1]?.kind === 'literal' && operands[1].literal.type === 'string' ? operands[1].literal.value : undefined;
    const field = this.dataField(operands[0], scope);
    if (lit !== undefined && field !== undefined && operands.length === 2) {
      const shape: Leaf = { kind: fn, field, value: lit };
      switch (fn) {
        case 'contains':
          return leaf((d) => {
            const s = d[field];
            return typeof s === 'string' ? s.includes(lit) : notString(s);
          }, shape);
        case 'startsWith':
          return leaf((d) => {
            const s = d[field];
            return typeof s === 'string' ? s.startsWith(lit) : notString(s);
          }, shape);
        case 'endsWith':
          return leaf((d) => {
            const s = d[field];
            return typeof s === 'string' ? s.endsWith(lit) : notString(s);
          }, shape);
      }
    }
    const [receiver, arg] = this.all(operands, scope, 2) as [Fn, Fn];
    if (lit !== undefined) {
      switch (fn) {
        case 'contains':
          return (d, v) => {
            const s = receiver(d, v);
            return typeof s === 'string' ? s.includes(lit) : ERR;
          };
        case 'startsWith':
          return (d, v) => {
            const s = receiver(d, v);
            return typeof s === 'string' ? s.startsWith(lit) : ERR;
          };
        case 'endsWith':
          return (d, v) => {
            const s = receiver(d, v);
            return typeof s === 'string' ? s.endsWith(lit) : ERR;
          };
      }
    }
    const op = { contains: String.prototype.includes, startsWith: String.prototype.startsWith, endsWith: String.prototype.endsWith }[fn];
    return binary([receiver, arg], (s, a) => (typeof s === 'string' && typeof a === 'string' ? op.call(s, a) : ERR));
  }

  private matches(operands: readonly Node[], scope: Scope): Fn {
    const [receiver, arg] = this.all(operands, scope, 2) as [Fn, Fn];
    const pattern = operands[1];
    if (pattern?.kind === 'literal' && pattern.literal.type === 'string') {
      // the filter owns its literal's regex: it is freed with the filter, never held by a shared cache
      const re = compileRegexUncached(pattern.literal.value);
      return (d, v) => {
        const s = receiver(d, v);
        return typeof s !== 'string' ? ERR : re === undefined ? ERR : re.test(s);
      };
    }
    return binary([receiver, arg], (s, p) => {
      if (typeof s !== 'string' || typeof p !== 'string') return ERR;
      const re = compileRegex(p);
      return re === undefined ? ERR : re.test(s);
    });
  }

  private macro(node: Node & { kind: 'call' }, scope: Scope): Fn {
    if (node.fn === 'has') {
      const [field] = node.args;
      if (field?.kind !== 'select') throw new Unsupported();
      const operand = this.compile(field.operand, scope);
      const name = field.field;
      return this.bool((d, v) => has(operand(d, v), name));
    }
    const [variable, ...body] = node.args;
    if (!node.target || variable?.kind !== 'ident') throw new Unsupported();
    const range = this.compile(node.target, scope);
    const slot = this.slots++;
    const inner = new Map(scope).set(variable.name, slot);
    const fns = body.map((b) => this.compile(b, inner));
    const [first, second] = fns;
    if (!first) throw new Unsupported();
    const loop = (kernel: (d: Data, v: unknown[], items: readonly unknown[]) => unknown): Fn => {
      return (d, v) => {
        const items = iterItems(range(d, v));
        return items === ERR ? ERR : kernel(d, v, items);
      };
    };
    switch (node.fn) {
      case 'exists':
        if (fns.length !== 1) throw new Unsupported();
        return this.bool(
          loop((d, v, items) => {
            // accu = accu || test, while accu is not true (an error does not stop the loop)
            let accu: unknown = false;
            for (const item of items) {
              if (accu === true) break;
              v[slot] = item;
              const t = first(d, v);
              accu = t === true ? true : accu === false && t === false ? false : ERR;
            }
            return accu;
          }),
        );
      case 'all':
        if (fns.length !== 1) throw new Unsupported();
        return this.bool(
          loop((d, v, items) => {
            let accu: unknown = true;
            for (const item of items) {
              if (accu === false) break;
              v[slot] = item;
              const t = first(d, v);
              accu = t === false ? false : accu === true && t === true ? true : ERR;
            }
            return accu;
          }),
        );
      case 'exists_one':
        if (fns.length !== 1) throw new Unsupported();
        return this.bool(
          loop((d, v, items) => {
            let count = 0;
            let failed = false;
            for (const item of items) {
              v[slot] = item;
              const t = first(d, v);
              if (t === true) count++;
              else if (t !== false) failed = true;
            }
            return failed ? ERR : count === 1;
          }),
        );
      case 'filter':
        if (fns.length !== 1) throw new Unsupported();
        return loop((d, v, items) => {
          const out: unknown[] = [];
          let failed = false;
          for (const item of items) {
            v[slot] = item;
            const t = first(d, v);
            if (t === true) out.push(item);
            else if (t !== false) failed = true;
          }
          return failed ? ERR : out;
        });
      case 'map':
        if (fns.length === 1) {
          return loop((d, v, items) => {
            const out: unknown[] = [];
            for (const item of items) {
              v[slot] = item;
              // accu + [f(x)]: once accu is an error, f is no longer evaluated
              const x = first(d, v);
              if (x === ERR) return ERR;
              out.push(x);
            }
            return out;
          });
        }
        if (fns.length !== 2 || !second) throw new Unsupported();
        return loop((d, v, items) => {
          const out: unknown[] = [];
          let failed = false;
          for (const item of items) {
            v[slot] = item;
            const t = first(d, v);
            if (t === true) {
              if (failed) continue;
              const x = second(d, v);
              if (x === ERR) failed = true;
              else out.push(x);
            } else if (t !== false) failed = true;
          }
          return failed ? ERR : out;
        });
      default:
        throw new Unsupported();
    }
  }
}

function literal(l: Literal): unknown {
  switch (l.type) {
    case 'bool':
    case 'int':
    case 'double':
    case 'string':
      return l.value;
    case 'null':
      return null;
    default:
      // uint and bytes values are not represented here
      throw new Unsupported();
  }
}

/** `a && b` (see Compiler.junction). */
function and2(a: Fn, b: Fn): Fn {
  return (d, v) => {
    const x = a(d, v);
    if (x === false) return false;
    const y = b(d, v);
    if (y === false) return false;
    return x === true && y === true ? true : ERR;
  };
}

/** `a || b` (see Compiler.junction). */
function or2(a: Fn, b: Fn): Fn {
  return (d, v) => {
    const x = a(d, v);
    if (x === true) return true;
    const y = b(d, v);
    if (y === true) return true;
    return x === false && y === false ? false : ERR;
  };
}

/** A junction of one operand: its bool, else an error. */
function asBool(a: Fn): Fn {
  return (d, v) => {
    const x = a(d, v);
    return x === true || x === false ? x : ERR;
  };
}

/** A strict call: an error operand is the result (operands evaluated left to right, stopping at an error). */
function unary(fns: Fn[], op: (x: unknown) => unknown): Fn {
  const [a] = fns as [Fn];
  return (d, v) => {
    const x = a(d, v);
    return x === ERR ? ERR : op(x);
  };
}

function binary(fns: Fn[], op: (x: unknown, y: unknown) => unknown): Fn {
  const [a, b] = fns as [Fn, Fn];
  return (d, v) => {
    const x = a(d, v);
    if (x === ERR) return ERR;
    const y = b(d, v);
    return y === ERR ? ERR : op(x, y);
  };
}

function strEq(v: unknown, s: string): unknown {
  if (v === ERR) return ERR;
  return v === s;
}

function strNe(v: unknown, s: string): unknown {
  if (v === ERR) return ERR;
  return v !== s;
}

function numEq(v: unknown, n: number | bigint): unknown {
  if (v === ERR) return ERR;
  // numbers are equal across int and double; nothing else equals a number
  return (typeof v === 'number' || typeof v === 'bigint') && v == n;
}

function numNe(v: unknown, n: number | bigint): unknown {
  const eq = numEq(v, n);
  return eq === ERR ? ERR : !eq;
}

/**
 * A value read from the event as the interpreter converts it; anything it would refuse (it throws) bails.
 * typeof tests rather than a switch on typeof: V8 compiles these to type checks, the switch to a builtin call.
 */
function checked(v: unknown): unknown {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return v;
  if (typeof v === 'object' && (v === null || Array.isArray(v) || protoOf(v) === Object.prototype)) return v;
  throw BAIL;
}

/** A map's field as read (`map[name]`, undefined when absent): missing is an error, as in the interpreter. */
function checkedField(v: unknown): unknown {
  return v === undefined ? ERR : checked(v);
}

/** A string method's receiver that is not a string (read raw from the data): an error, or unsure. */
function notString(v: unknown): unknown {
  checkedField(v);
  return ERR;
}

/** A map of the event (every object value reaching here passed `checked`). */
function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function select(o: unknown, field: string): unknown {
  if (isMap(o)) return checkedField(Object.hasOwn(o, field) ? o[field] : undefined);
  return ERR;
}

/** select for a name that passed plainReadable. */
function selectPlain(o: unknown, field: string): unknown {
  return isMap(o) ? checkedField(o[field]) : ERR;
}

function has(o: unknown, field: string): unknown {
  if (o === ERR) return ERR;
  if (!isMap(o)) return false;
  const v = Object.hasOwn(o, field) ? o[field] : undefined;
  if (v === undefined) return false;
  checked(v);
  // @bufbuild/cel: a map has a key when its value is not null
  return v !== null;
}

function index(o: unknown, k: unknown): unknown {
  switch (typeof k) {
    case 'string':
      return select(o, k);
    case 'number':
      if (Array.isArray(o)) {
        if (k < 0 || k >= o.length) return ERR;
        // the interpreter throws for a fraction (or NaN) inside the bounds
        if (!Number.isInteger(k)) throw BAIL;
        return checked(o[k]);
      }
      return ERR;
    case 'bigint':
      if (Array.isArray(o)) {
        const i = Number(k);
        return i < 0 || i >= o.length ? ERR : checked(o[i]);
      }
      return ERR;
    default:
      throw BAIL;
  }
}

function equals(a: unknown, b: unknown): boolean {
  const ta = typeof a;
  const tb = typeof b;
  if (ta !== 'object' && a === b) return true;
  if ((ta === 'number' || ta === 'bigint') && (tb === 'number' || tb === 'bigint')) return a == b;
  if (ta !== 'object' || a === null) return a === b;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!equals(checked(a[i]), checked(b[i]))) return false;
    return true;
  }
  if (!isMap(b)) return false;
  const keys = Object.keys(a as object);
  if (keys.length !== Object.keys(b).length) return false;
  for (const k of keys) {
    const va = checked((a as Record<string, unknown>)[k]);
    const vb = Object.hasOwn(b, k) ? b[k] : undefined;
    if (vb === undefined || !equals(va, checked(vb))) return false;
  }
  return true;
}

const lt = (x: never, y: never): boolean => x < y;
const le = (x: never, y: never): boolean => x <= y;
const gt = (x: never, y: never): boolean => x > y;
const ge = (x: never, y: never): boolean => x >= y;

function relate(a: unknown, b: unknown, f: (x: never, y: never) => boolean): unknown {
  const ta = typeof a;
  const tb = typeof b;
  if (ta === tb) return ta === 'string' || ta === 'number' || ta === 'bigint' || ta === 'boolean' ? f(a as never, b as never) : ERR;
  // int against double compares as doubles, like the interpreter
  if (ta === 'bigint' && tb === 'number') return f(Number(a) as never, b as never);
  if (ta === 'number' && tb === 'bigint') return f(a as never, Number(b) as never);
  return ERR;
}

function inOp(a: unknown, b: unknown): unknown {
  if (Array.isArray(b)) {
    for (const e of b) if (equals(checked(e), a)) return true;
    return false;
  }
  if (!isMap(b)) return ERR;
  switch (typeof a) {
    case 'string': {
      const v = Object.hasOwn(b, a) ? b[a] : undefined;
      if (v === undefined) return false;
      checked(v);
      return v !== null;
    }
    case 'number':
    case 'bigint':
    case 'boolean':
      // event maps only have string keys
      return false;
    default:
      return ERR;
  }
}

function safeInt(v: bigint): unknown {
  return v >= MIN_INT && v <= MAX_INT ? v : ERR;
}

function numeric(a: unknown, b: unknown, int: (x: bigint, y: bigint) => bigint, dbl: (x: number, y: number) => number): unknown {
  if (typeof a === 'bigint' && typeof b === 'bigint') return safeInt(int(a, b));
  if (typeof a === 'number' && typeof b === 'number') return dbl(a, b);
  return ERR;
}

function add(a: unknown, b: unknown): unknown {
  if (typeof a === 'string' && typeof b === 'string') return a + b;
  if (Array.isArray(a) && Array.isArray(b)) return [...(a as unknown[]), ...(b as unknown[])];
  return numeric(
    a,
    b,
    (x, y) => x + y,
    (x, y) => x + y,
  );
}

function divide(a: unknown, b: unknown): unknown {
  if (typeof a === 'bigint' && typeof b === 'bigint') return b === 0n ? ERR : safeInt(a / b);
  if (typeof a === 'number' && typeof b === 'number') return a / b;
  return ERR;
}

function modulo(a: unknown, b: unknown): unknown {
  if (typeof a === 'bigint' && typeof b === 'bigint') return b === 0n ? ERR : a % b;
  return ERR;
}

function negate(a: unknown): unknown {
  if (typeof a === 'bigint') return safeInt(-a);
  if (typeof a === 'number') return -a;
  return ERR;
}

function size(x: unknown): unknown {
  if (typeof x === 'string') {
    // code points, like the interpreter's [...x].length
    let n = 0;
    for (let i = 0; i < x.length; i++) {
      const u = x.charCodeAt(i);
      if (u < 0xdc00 || u > 0xdfff || i === 0) n++;
      else {
        const prev = x.charCodeAt(i - 1);
        if (prev < 0xd800 || prev > 0xdbff) n++;
      }
    }
    return BigInt(n);
  }
  if (Array.isArray(x)) return BigInt(x.length);
  if (isMap(x)) return BigInt(Object.keys(x).length);
  return ERR;
}

/** The items a comprehension iterates: a list's elements (all converted first, like Array.from), a map's keys. */
function iterItems(range: unknown): readonly unknown[] | typeof ERR {
  if (Array.isArray(range)) {
    for (const e of range as unknown[]) checked(e);
    return range as unknown[];
  }
  if (isMap(range)) return Object.keys(range);
  return ERR;
}

function toInt(x: unknown): unknown {
  switch (typeof x) {
    case 'bigint':
      return x;
    case 'number':
      return Number.isFinite(x) && x > Number(MIN_INT) && x < Number(MAX_INT) ? BigInt(Math.trunc(x)) : ERR;
    case 'string': {
      let v: bigint;
      try {
        v = BigInt(x);
      } catch {
        return ERR;
      }
      return safeInt(v);
    }
    default:
      return ERR;
  }
}

function toDouble(x: unknown): unknown {
  switch (typeof x) {
    case 'number':
      return x;
    case 'bigint':
    case 'string':
      return Number(x);
    default:
      return ERR;
  }
}

function toStr(x: unknown): unknown {
  switch (typeof x) {
    case 'string':
      return x;
    case 'boolean':
    case 'bigint':
    case 'number':
      return x.toString();
    default:
      return ERR;
  }
}

const STRING_BOOLS: ReadonlyMap<string, boolean> = new Map([
  ...['true', 'True', 'TRUE', 't', '1'].map((s) => [s, true] as const),
  ...['false', 'False', 'FALSE', 'f', '0'].map((s) => [s, false] as const),
]);

function toBool(x: unknown): unknown {
  if (typeof x === 'boolean') return x;
  if (typeof x === 'string') return STRING_BOOLS.get(x) ?? ERR;
  return ERR;
}

interface Regex {
  test(s: string): boolean;
}

function compileRegexUncached(pattern: string): Regex | undefined {
  try {
    return RE2JS.compile(pattern);
  } catch {
    return undefined;
  }
}

/**
 * Patterns that are not literals (read from the event) compiled recently, least recently used first: the
 * interpreter compiles on every call. A compiled program takes about a hundred times its pattern's length in heap,
 * so the cache is bounded by entries and by pattern characters, and holds nothing of any one filter.
 */
const regexCache = new Map<string, Regex | undefined>();
const REGEX_CACHE_MAX_ENTRIES = 64;
const REGEX_CACHE_MAX_CHARS = 16_384;
let regexCacheChars = 0;

function compileRegex(pattern: string): Regex | undefined {
  if (regexCache.has(pattern)) {
    const hit = regexCache.get(pattern);
    regexCache.delete(pattern);
    regexCache.set(pattern, hit);
    return hit;
  }
  const re = compileRegexUncached(pattern);
  if (pattern.length > REGEX_CACHE_MAX_CHARS) return re;
  regexCache.set(pattern, re);
  regexCacheChars += pattern.length;
  for (const oldest of regexCache.keys()) {
    if (regexCache.size <= REGEX_CACHE_MAX_ENTRIES && regexCacheChars <= REGEX_CACHE_MAX_CHARS) break;
    regexCache.delete(oldest);
    regexCacheChars -= oldest.length;
  }
  return re;
}

/** The shared regex cache's size (tests: what outlives the filters that used it). */
export function regexCacheStats(): { entries: number; chars: number } {
  return { entries: regexCache.size, chars: regexCacheChars };
}
